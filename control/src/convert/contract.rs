//! Contracts between `hookd.v1` and the domain: the empty version means
//! "none", and a put must carry a type, a schema and an example.

use hookd_proto::v1 as pb;

use super::{non_empty, required};
use crate::{
    model::{ContractCheck, ContractDef, ContractList, ContractView, ViolationView},
    Result,
};

/// The contract of a put request; type, schema and example are required.
pub(crate) fn contract_def(contract: Option<pb::Contract>) -> Result<ContractDef> {
    let c = contract.unwrap_or_default();
    Ok(ContractDef {
        event_type: required("contract.type", &c.r#type)?,
        version: non_empty(c.version),
        schema: required("contract.schema", &c.schema)?,
        example: required("contract.example", &c.example)?,
    })
}

/// The (type, version) a get or delete names; the type is required.
pub(crate) fn contract_key(event_type: &str, version: String) -> Result<(String, Option<String>)> {
    Ok((required("type", event_type)?, non_empty(version)))
}

impl From<ContractDef> for pb::Contract {
    fn from(c: ContractDef) -> Self {
        pb::Contract {
            r#type: c.event_type,
            version: c.version.unwrap_or_default(),
            schema: c.schema,
            example: c.example,
        }
    }
}

impl From<ContractView> for pb::ContractInfo {
    fn from(v: ContractView) -> Self {
        pb::ContractInfo {
            contract: Some(v.contract.into()),
            revision: v.revision,
            updated_at_unix_ms: v.updated_at_ms,
            from_config: v.from_config,
            required_fields: v.required_fields,
        }
    }
}

impl From<ContractList> for pb::ListContractsResponse {
    fn from(l: ContractList) -> Self {
        pb::ListContractsResponse {
            contracts: l.contracts.into_iter().map(Into::into).collect(),
            type_field: l.type_field,
            version_field: l.version_field,
            unknown_event_types: l.unknown_event_types,
        }
    }
}

impl From<ContractCheck> for pb::ValidateResponse {
    fn from(c: ContractCheck) -> Self {
        pb::ValidateResponse {
            valid: c.code.is_none(),
            code: c.code.unwrap_or_default(),
            message: c.message,
            r#type: c.event_type.unwrap_or_default(),
            version: c.version.unwrap_or_default(),
            violations: c
                .violations
                .into_iter()
                .map(|v: ViolationView| pb::ContractViolation {
                    pointer: v.pointer,
                    keyword: v.keyword,
                    expected: v.expected,
                })
                .collect(),
            violations_total: c.violations_total,
        }
    }
}
