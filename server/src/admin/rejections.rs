//! `ListRejections` over the store's `rejections` tree.

use hookd_control::{
    model::{Page, PageRequest, RejectionFilter, RejectionView},
    Result as ApiResult,
};

use super::{api, Backend};
use crate::store::api::{self as store_api, Rejection};

impl Backend {
    pub(super) fn rejections(
        &self,
        tenant_id: &str,
        filter: RejectionFilter,
        page: PageRequest,
    ) -> ApiResult<Page<RejectionView>> {
        self.tenant(tenant_id)?;
        let filter = store_api::RejectionFilter {
            request_id: filter.request_id,
            signature_valid: filter.signature_valid,
        };
        let (items, next_token) = self
            .services
            .store
            .rejections()
            .and_then(|r| {
                r.list(
                    tenant_id,
                    &filter,
                    page.size as usize,
                    page.token.as_deref(),
                )
            })
            .map_err(api)?;
        Ok(Page {
            items: items.into_iter().map(view).collect(),
            next_token,
        })
    }
}

fn view(r: Rejection) -> RejectionView {
    RejectionView {
        tenant_id: r.tenant_id,
        at_ms: r.at_ms,
        request_id: r.request_id,
        code: r.code,
        reason: r.reason,
        signature_valid: r.signature_valid,
        body_bytes: r.body_bytes,
        body: r.body,
    }
}
