//! Event contracts over the control plane: checked, saved durably and put in
//! force; the config file's are listed but read-only here.

use std::sync::Arc;

use hookd_control::{
    model::{ContractCheck, ContractDef, ContractList, ContractView, ViolationView},
    Error as ApiError, Result as ApiResult,
};

use super::{api, Backend};
use crate::{
    catalog::contracts::{ContractStore, NewContract},
    contracts::{Contract, ContractSource, ContractSpec, TenantContracts, MAX_CONTRACTS},
    ingest::BodyError,
    tenant::TenantHandle,
};

impl Backend {
    fn running(&self, tenant_id: &str) -> ApiResult<TenantHandle> {
        self.registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    fn contracts_of(&self, tenant_id: &str) -> ApiResult<Arc<TenantContracts>> {
        Ok(self.running(tenant_id)?.snapshot().contracts().clone())
    }

    /// The contracts saved over the control plane.
    fn saved_contracts(&self) -> ApiResult<ContractStore> {
        ContractStore::open(&*self.services.store).map_err(api)
    }

    /// Refuses a change to a (type, version) the config file declares.
    fn writable(
        &self,
        handle: &TenantHandle,
        event_type: &str,
        version: Option<&str>,
    ) -> ApiResult<()> {
        if handle
            .settings()
            .contracts
            .contracts
            .iter()
            .any(|c| c.key() == (event_type, version))
        {
            return Err(ApiError::FailedPrecondition(format!(
                "the contract for {event_type:?}{} is declared in the config file; change it there and restart hookd",
                version.map(|v| format!(" version {v:?}")).unwrap_or_default()
            )));
        }
        Ok(())
    }

    /// Refuses a new (type, version) when the tenant holds
    /// [`MAX_CONTRACTS`] already; a new revision of one is fine.
    fn room_for(&self, tenant_id: &str, event_type: &str, version: Option<&str>) -> ApiResult<()> {
        let set = self.contracts_of(tenant_id)?;
        if set.len() >= MAX_CONTRACTS && set.find_exact(event_type, version).is_none() {
            return Err(ApiError::FailedPrecondition(format!(
                "a tenant holds at most {MAX_CONTRACTS} contracts; delete one first"
            )));
        }
        Ok(())
    }

    /// Checks, compiles and saves `def`; the caller then puts the compiled
    /// contract in force.
    ///
    /// Event contracts over the control plane: checked against the cost bounds
    /// and the tenant's cap, saved durably in the contract store, and put in
    /// force as compiled for the check (the tenant's other contracts are kept
    /// as they are). Contracts from the config file are listed but read-only
    /// here.
    pub(super) fn save_contract(
        &self,
        tenant_id: &str,
        def: ContractDef,
    ) -> ApiResult<(ContractView, Contract)> {
        let handle = self.running(tenant_id)?;
        self.writable(&handle, &def.event_type, def.version.as_deref())?;
        self.room_for(tenant_id, &def.event_type, def.version.as_deref())?;
        let spec = ContractSpec {
            event_type: def.event_type,
            version: def.version,
            schema: def.schema,
            example: def.example,
        };
        // Compiled here to refuse a bad contract before it is saved, and put
        // in force as it is once it is.
        let source = ContractSource::Api {
            revision: 0,
            updated_at_ms: self.now_ms(),
        };
        let checked = Contract::compile(spec.clone(), &handle.settings().contracts.policy, source)
            .map_err(|e| ApiError::InvalidArgument(format!("contract.{e}")))?;
        let record = self
            .saved_contracts()?
            .put(
                &handle.settings().id,
                NewContract {
                    event_type: spec.event_type,
                    version: spec.version,
                    schema: spec.schema,
                    example: spec.example,
                },
                self.now_ms(),
            )
            .map_err(api)?;
        tracing::info!(tenant = %tenant_id, event_type = %record.event_type, version = record.version.as_deref().unwrap_or(""), revision = record.revision, "contract saved");
        let view = ContractView {
            contract: ContractDef {
                event_type: record.event_type,
                version: record.version,
                schema: record.schema,
                example: record.example,
            },
            revision: record.revision,
            updated_at_ms: record.updated_at_ms,
            from_config: false,
            required_fields: checked.required().to_vec(),
        };
        Ok((view, checked))
    }

    /// Deletes a saved contract; the caller then reloads the set.
    pub(super) fn remove_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> ApiResult<()> {
        let handle = self.running(tenant_id)?;
        self.writable(&handle, event_type, version)?;
        let removed = self
            .saved_contracts()?
            .delete(&handle.settings().id, event_type, version)
            .map_err(api)?;
        if !removed {
            return Err(no_contract(event_type, version));
        }
        tracing::info!(tenant = %tenant_id, event_type = %event_type, version = version.unwrap_or(""), "contract deleted");
        Ok(())
    }

    /// Puts the tenant's saved contracts in force, reusing those compiled
    /// and `fresh` (the one just saved).
    pub(super) fn reload_contracts(
        &self,
        tenant_id: &str,
        fresh: Option<Contract>,
    ) -> ApiResult<()> {
        self.running(tenant_id)?
            .reload_contracts(fresh)
            .map_err(api)
    }

    pub(super) fn contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> ApiResult<ContractView> {
        self.contracts_of(tenant_id)?
            .contracts()
            .iter()
            .find(|c| c.key() == (event_type, version))
            .map(|c| view(c))
            .ok_or_else(|| no_contract(event_type, version))
    }

    pub(super) fn contract_list(&self, tenant_id: &str) -> ApiResult<ContractList> {
        let set = self.contracts_of(tenant_id)?;
        let policy = set.policy();
        Ok(ContractList {
            contracts: set.contracts().iter().map(|c| view(c)).collect(),
            type_field: policy.type_field.clone(),
            version_field: policy.version_field.clone(),
            unknown_event_types: policy.unknown.as_str().to_owned(),
        })
    }

    pub(super) fn check_payload(
        &self,
        tenant_id: &str,
        payload: &[u8],
    ) -> ApiResult<ContractCheck> {
        let verdict = self.contracts_of(tenant_id)?.check(payload);
        let mut check = ContractCheck {
            event_type: verdict.event_type,
            ..ContractCheck::default()
        };
        let Err(refusal) = verdict.result else {
            return Ok(check);
        };
        let answer =
            crate::error::ApiError::from(crate::ingest::IngestError::Body(refusal.clone()));
        check.code = Some(answer.code.as_str().to_owned());
        check.message = answer.message;
        match refusal {
            BodyError::ContractViolation {
                version,
                violations,
                total,
                ..
            } => {
                check.version = version;
                check.violations_total = u32::try_from(total).unwrap_or(u32::MAX);
                check.violations = violations
                    .into_iter()
                    .map(|v| ViolationView {
                        pointer: v.pointer,
                        keyword: v.keyword,
                        expected: v.expected,
                    })
                    .collect();
            }
            BodyError::UnknownEventType { version, .. }
            | BodyError::ContractCheckTooCostly { version, .. } => check.version = version,
            _ => {}
        }
        Ok(check)
    }
}

fn no_contract(event_type: &str, version: Option<&str>) -> ApiError {
    ApiError::NotFound(format!(
        "contract for {event_type:?}{}",
        version
            .map(|v| format!(" version {v:?}"))
            .unwrap_or_default()
    ))
}

fn view(contract: &Contract) -> ContractView {
    let spec = contract.spec();
    let (revision, updated_at_ms, from_config) = match contract.source() {
        ContractSource::Config => (0, 0, true),
        ContractSource::Api {
            revision,
            updated_at_ms,
        } => (revision, updated_at_ms, false),
    };
    ContractView {
        contract: ContractDef {
            event_type: spec.event_type.clone(),
            version: spec.version.clone(),
            schema: spec.schema.clone(),
            example: spec.example.clone(),
        },
        revision,
        updated_at_ms,
        from_config,
        required_fields: contract.required().to_vec(),
    }
}
