//! `ContractService` calls: save, read, list and delete a tenant's event contracts,
//! and check a sample payload against them without sending it.

use hookd_proto::v1::{
    Contract, ContractInfo, DeleteContractRequest, GetContractRequest, ListContractsRequest,
    ListContractsResponse, PutContractRequest, ValidateRequest, ValidateResponse,
};

use super::{ClientError, HookdClient};

impl HookdClient {
    /// Saves `contract` for `tenant_id` as a new revision of its type and version; it
    /// applies to deliveries checked from when this returns.
    pub async fn put_contract(
        &self,
        tenant_id: impl Into<String>,
        contract: Contract,
    ) -> Result<ContractInfo, ClientError> {
        let request = PutContractRequest {
            tenant_id: tenant_id.into(),
            contract: Some(contract),
        };
        let saved = self.contracts.clone().put_contract(request).await?;
        Ok(saved.into_inner().contract.unwrap_or_default())
    }

    /// The contract in force for `event_type` and `version` (empty: the unversioned one).
    pub async fn get_contract(
        &self,
        tenant_id: impl Into<String>,
        event_type: impl Into<String>,
        version: impl Into<String>,
    ) -> Result<ContractInfo, ClientError> {
        let request = GetContractRequest {
            tenant_id: tenant_id.into(),
            r#type: event_type.into(),
            version: version.into(),
        };
        let got = self.contracts.clone().get_contract(request).await?;
        Ok(got.into_inner().contract.unwrap_or_default())
    }

    /// Every contract of the tenant, with the fields its bodies name their type and
    /// version in and what happens to types without a contract.
    pub async fn list_contracts(
        &self,
        tenant_id: impl Into<String>,
    ) -> Result<ListContractsResponse, ClientError> {
        let request = ListContractsRequest {
            tenant_id: tenant_id.into(),
        };
        Ok(self
            .contracts
            .clone()
            .list_contracts(request)
            .await?
            .into_inner())
    }

    /// Deletes a contract saved over the API.
    pub async fn delete_contract(
        &self,
        tenant_id: impl Into<String>,
        event_type: impl Into<String>,
        version: impl Into<String>,
    ) -> Result<(), ClientError> {
        let request = DeleteContractRequest {
            tenant_id: tenant_id.into(),
            r#type: event_type.into(),
            version: version.into(),
        };
        self.contracts.clone().delete_contract(request).await?;
        Ok(())
    }

    /// What ingest's contract check would answer for `payload`; nothing is stored or
    /// sent.
    pub async fn validate_payload(
        &self,
        tenant_id: impl Into<String>,
        payload: impl Into<Vec<u8>>,
    ) -> Result<ValidateResponse, ClientError> {
        let request = ValidateRequest {
            tenant_id: tenant_id.into(),
            payload: payload.into(),
        };
        Ok(self.contracts.clone().validate(request).await?.into_inner())
    }
}
