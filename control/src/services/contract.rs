//! `hookd.v1.ContractService`: a tenant's event contracts, for the admin or
//! the tenant's own token.

use std::sync::Arc;

use hookd_proto::v1::{self as pb, contract_service_server::ContractService};
use tonic::{Request, Response, Status};

use crate::{auth::authorize_tenant, backend::ControlBackend, convert};

/// Serves ContractService from a backend.
///
/// `hookd.v1.ContractService`: a tenant's event contracts, for the admin or
/// the tenant's own token. Saving, deleting and checking are the backend's;
/// this layer authorizes and converts.
pub(crate) struct ContractApi<B> {
    backend: Arc<B>,
}

impl<B> ContractApi<B> {
    /// A service sharing `backend` with the others.
    pub(crate) fn new(backend: Arc<B>) -> Self {
        ContractApi { backend }
    }
}

#[tonic::async_trait]
impl<B: ControlBackend> ContractService for ContractApi<B> {
    async fn put_contract(
        &self,
        request: Request<pb::PutContractRequest>,
    ) -> Result<Response<pb::PutContractResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let contract = convert::contract_def(request.into_inner().contract)?;
        let view = self.backend.put_contract(&tenant_id, contract).await?;
        Ok(Response::new(pb::PutContractResponse {
            contract: Some(view.into()),
        }))
    }

    async fn get_contract(
        &self,
        request: Request<pb::GetContractRequest>,
    ) -> Result<Response<pb::GetContractResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let r = request.into_inner();
        let (event_type, version) = convert::contract_key(&r.r#type, r.version)?;
        let view = self
            .backend
            .get_contract(&tenant_id, &event_type, version.as_deref())
            .await?;
        Ok(Response::new(pb::GetContractResponse {
            contract: Some(view.into()),
        }))
    }

    async fn list_contracts(
        &self,
        request: Request<pb::ListContractsRequest>,
    ) -> Result<Response<pb::ListContractsResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let list = self.backend.list_contracts(&tenant_id).await?;
        Ok(Response::new(list.into()))
    }

    async fn delete_contract(
        &self,
        request: Request<pb::DeleteContractRequest>,
    ) -> Result<Response<pb::DeleteContractResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let r = request.into_inner();
        let (event_type, version) = convert::contract_key(&r.r#type, r.version)?;
        self.backend
            .delete_contract(&tenant_id, &event_type, version.as_deref())
            .await?;
        Ok(Response::new(pb::DeleteContractResponse {}))
    }

    async fn validate(
        &self,
        request: Request<pb::ValidateRequest>,
    ) -> Result<Response<pb::ValidateResponse>, Status> {
        let tenant_id = authorize_tenant(&*self.backend, &request, &request.get_ref().tenant_id)?;
        let payload = request.into_inner().payload;
        let check = self.backend.validate_payload(&tenant_id, payload).await?;
        Ok(Response::new(check.into()))
    }
}
