//! `hookd.v1.TenantService`: tenant lifecycle. Create and delete are admin
//! only; a tenant-scoped token reads and updates its own tenant.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, tenant_service_server::TenantService};
use tonic::{Request, Response, Status};

use crate::{
    auth::{authenticate, authorize_tenant, require_admin},
    backend::ControlBackend,
    convert,
    error::Error,
    model::{NewTenant, Page, Principal, TenantPatch},
};

/// Serves TenantService from a backend.
pub(crate) struct TenantApi<B> {
    backend: Arc<B>,
}

impl<B> TenantApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        TenantApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> TenantService for TenantApi<B> {
    async fn create_tenant(
        &self,
        request: Request<pb::CreateTenantRequest>,
    ) -> Result<Response<pb::CreateTenantResponse>, Status> {
        require_admin(&authenticate(&*self.backend, &request)?)?;
        let tenant = NewTenant::try_from(request.into_inner())?;
        let created = self.backend.create_tenant(tenant).await?;
        Ok(Response::new(created.into()))
    }

    async fn get_tenant(
        &self,
        request: Request<pb::GetTenantRequest>,
    ) -> Result<Response<pb::Tenant>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let tenant = self.backend.get_tenant(&tenant_id).await?;
        Ok(Response::new(tenant.into()))
    }

    async fn list_tenants(
        &self,
        request: Request<pb::ListTenantsRequest>,
    ) -> Result<Response<pb::ListTenantsResponse>, Status> {
        let principal = authenticate(&*self.backend, &request)?;
        let r = request.into_inner();
        let page = convert::page(r.page_size, r.page_token);
        let page = match principal {
            Principal::Admin => self.backend.list_tenants(page).await?,
            Principal::Tenant(own) => {
                if page.token.is_some() {
                    return Err(Error::InvalidArgument(
                        "page_token is not from a previous response".into(),
                    )
                    .into());
                }
                let items = match self.backend.get_tenant(&own).await {
                    Ok(tenant) => vec![tenant],
                    Err(Error::NotFound(_)) => vec![],
                    Err(e) => return Err(e.into()),
                };
                Page {
                    items,
                    next_token: None,
                }
            }
        };
        Ok(Response::new(pb::ListTenantsResponse {
            tenants: page.items.into_iter().map(Into::into).collect(),
            next_page_token: page.next_token.unwrap_or_default(),
        }))
    }

    async fn update_tenant(
        &self,
        request: Request<pb::UpdateTenantRequest>,
    ) -> Result<Response<pb::Tenant>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let patch = TenantPatch::try_from(request.into_inner())?;
        let tenant = self.backend.update_tenant(&tenant_id, patch).await?;
        Ok(Response::new(tenant.into()))
    }

    async fn delete_tenant(
        &self,
        request: Request<pb::DeleteTenantRequest>,
    ) -> Result<Response<pb::DeleteTenantResponse>, Status> {
        require_admin(&authenticate(&*self.backend, &request)?)?;
        let tenant_id = convert::tenant_id(&request.get_ref().tenant_id)?;
        self.backend.delete_tenant(&tenant_id).await?;
        Ok(Response::new(pb::DeleteTenantResponse {}))
    }
}
