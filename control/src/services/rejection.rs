//! `hookd.v1.RejectionService`: the requests a tenant refused, for the
//! admin or the tenant's own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, rejection_service_server::RejectionService};
use tonic::{Request, Response, Status};

use crate::{
    auth::authorize_tenant,
    backend::ControlBackend,
    convert,
    model::{RejectionFilter, RejectionView},
};

/// Serves RejectionService from a backend.
pub(crate) struct RejectionApi<B> {
    backend: Arc<B>,
}

impl<B> RejectionApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        RejectionApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> RejectionService for RejectionApi<B> {
    async fn list_rejections(
        &self,
        request: Request<pb::ListRejectionsRequest>,
    ) -> Result<Response<pb::ListRejectionsResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let req = request.into_inner();
        let signature_valid = match req.kind() {
            pb::RejectionKind::Unspecified => None,
            pb::RejectionKind::Content => Some(true),
            pb::RejectionKind::Signature => Some(false),
        };
        let filter = RejectionFilter {
            request_id: Some(req.request_id).filter(|id| !id.is_empty()),
            signature_valid,
        };
        let page = convert::page(req.page_size, req.page_token);
        let listed = self
            .backend
            .list_rejections(&tenant_id, filter, page)
            .await?;
        Ok(Response::new(pb::ListRejectionsResponse {
            rejections: listed.items.into_iter().map(rejection).collect(),
            next_page_token: listed.next_token.unwrap_or_default(),
        }))
    }
}

fn rejection(r: RejectionView) -> pb::Rejection {
    let kind = if r.signature_valid {
        pb::RejectionKind::Content
    } else {
        pb::RejectionKind::Signature
    };
    pb::Rejection {
        tenant_id: r.tenant_id,
        rejected_at_unix_ms: r.at_ms,
        request_id: r.request_id,
        code: r.code,
        reason: r.reason,
        kind: kind.into(),
        body_bytes: r.body_bytes,
        body: r.body,
    }
}
