//! The server's side of the control plane: [`Backend`] implements
//! `hookd_control::ControlBackend` over the registry, the catalog of
//! API-created tenants and the delivery store.

mod deliveries;
mod tenants;

use std::collections::HashSet;

use hookd_control::{
    model::{
        CreatedTenant, CreatedToken, DeadLetterFilter, DeadLetterView, DeliveryStatus,
        DeliveryView, NewTenant, Page, PageRequest, Principal, PulledDelivery, RotatedSecret,
        SecretInfo, Selection, TenantPatch, TenantView, TokenInfo,
    },
    ControlBackend, Error as ApiError, EventStream, Result as ApiResult,
};
use subtle::ConstantTimeEq;

use crate::{catalog::Catalog, error::Error, tenant::Registry};

/// Implements the control plane over the running server.
pub struct Backend {
    registry: Registry,
    catalog: Catalog,
    /// Tenants declared in the config file: read-only over the API.
    config_tenants: HashSet<String>,
    admin_token: String,
}

impl Backend {
    /// A backend over `registry`; `config_tenants` are the ids declared in
    /// the config file.
    pub fn new(
        registry: Registry,
        catalog: Catalog,
        config_tenants: HashSet<String>,
        admin_token: String,
    ) -> Self {
        Backend {
            registry,
            catalog,
            config_tenants,
            admin_token,
        }
    }

    fn now_ms(&self) -> i64 {
        self.registry.clock().now_ms()
    }
}

/// Maps a server error to what the control plane reports.
fn api(e: Error) -> ApiError {
    match e {
        Error::NotFound(what) => ApiError::NotFound(what),
        Error::Precondition(why) => ApiError::FailedPrecondition(why),
        Error::Config(why) => ApiError::InvalidArgument(why),
        Error::CommitterGone | Error::Storage(_) | Error::Io(_) => {
            ApiError::Unavailable(format!("storage: {e}"))
        }
        Error::Corrupt(_) => ApiError::Internal(e.to_string()),
    }
}

#[tonic::async_trait]
impl ControlBackend for Backend {
    fn is_ready(&self) -> bool {
        self.registry.store().is_healthy() && self.registry.all_running()
    }

    fn authenticate(&self, bearer_token: &str) -> Option<Principal> {
        if bool::from(bearer_token.as_bytes().ct_eq(self.admin_token.as_bytes())) {
            return Some(Principal::Admin);
        }
        match self.catalog.token_tenant(bearer_token) {
            Ok(tenant) => tenant.map(Principal::Tenant),
            Err(e) => {
                tracing::error!(error = %e, "token lookup failed");
                None
            }
        }
    }

    async fn create_tenant(&self, tenant: NewTenant) -> ApiResult<CreatedTenant> {
        self.create(tenant)
    }

    async fn get_tenant(&self, tenant_id: &str) -> ApiResult<TenantView> {
        self.view(tenant_id)
    }

    async fn list_tenants(&self, page: PageRequest) -> ApiResult<Page<TenantView>> {
        self.list(page)
    }

    async fn update_tenant(&self, tenant_id: &str, patch: TenantPatch) -> ApiResult<TenantView> {
        self.update(tenant_id, patch)
    }

    async fn delete_tenant(&self, tenant_id: &str) -> ApiResult<()> {
        self.delete(tenant_id)
    }

    async fn rotate_secret(&self, tenant_id: &str, overlap_secs: u64) -> ApiResult<RotatedSecret> {
        self.rotate(tenant_id, overlap_secs)
    }

    async fn list_secrets(&self, tenant_id: &str) -> ApiResult<Vec<SecretInfo>> {
        self.secrets(tenant_id)
    }

    async fn revoke_secret(&self, tenant_id: &str, kid: &str) -> ApiResult<()> {
        self.revoke(tenant_id, kid)
    }

    async fn create_token(&self, tenant_id: &str, description: &str) -> ApiResult<CreatedToken> {
        self.registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))?;
        let (record, token) = self
            .catalog
            .create_token(tenant_id, description, self.now_ms())
            .map_err(api)?;
        Ok(CreatedToken {
            token_id: record.token_id,
            token,
        })
    }

    async fn list_tokens(&self, tenant_id: Option<&str>) -> ApiResult<Vec<TokenInfo>> {
        let tokens = self.catalog.list_tokens(tenant_id).map_err(api)?;
        Ok(tokens
            .into_iter()
            .map(|t| TokenInfo {
                token_id: t.token_id,
                tenant_id: t.tenant_id,
                description: t.description,
                created_at_ms: t.created_at_ms,
            })
            .collect())
    }

    async fn revoke_token(&self, token_id: &str) -> ApiResult<()> {
        match self.catalog.revoke_token(token_id).map_err(api)? {
            true => Ok(()),
            false => Err(ApiError::NotFound(format!("token {token_id}"))),
        }
    }

    async fn list_deliveries(
        &self,
        tenant_id: &str,
        status: Option<DeliveryStatus>,
        page: PageRequest,
    ) -> ApiResult<Page<DeliveryView>> {
        self.deliveries(tenant_id, status, page)
    }

    async fn get_delivery(&self, tenant_id: &str, delivery_id: &str) -> ApiResult<DeliveryView> {
        self.delivery(tenant_id, delivery_id)
    }

    async fn list_dead_letters(
        &self,
        tenant_id: &str,
        filter: DeadLetterFilter,
        page: PageRequest,
    ) -> ApiResult<Page<DeadLetterView>> {
        self.dead_letters(tenant_id, filter, page)
    }

    async fn redeliver(&self, tenant_id: &str, selection: Selection) -> ApiResult<Vec<String>> {
        self.redeliver_selection(tenant_id, selection).await
    }

    async fn purge_dead_letters(&self, tenant_id: &str, selection: Selection) -> ApiResult<u64> {
        self.purge(tenant_id, selection).await
    }

    async fn watch(&self, tenant_id: Option<&str>) -> ApiResult<EventStream> {
        Ok(self.watch_events(tenant_id))
    }

    async fn pull(
        &self,
        tenant_id: &str,
        max: u32,
        visibility_secs: u32,
    ) -> ApiResult<Vec<PulledDelivery>> {
        self.pull_deliveries(tenant_id, max, visibility_secs).await
    }

    async fn ack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> ApiResult<u32> {
        self.ack_deliveries(tenant_id, delivery_ids).await
    }

    async fn nack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> ApiResult<()> {
        self.nack_deliveries(tenant_id, delivery_ids).await
    }
}
