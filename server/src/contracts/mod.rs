//! Event contracts: per tenant, a JSON Schema (draft 2020-12) for each event
//! type and optional version, read from body fields the tenant names.

mod budget;
mod check;
mod compile;
mod cost;
#[cfg(test)]
mod tests;

use std::{path::PathBuf, sync::Arc};

pub use check::TenantContracts;
pub use compile::{Contract, ContractSource, ContractSpec};
use serde::{Deserialize, Serialize};

use crate::error::InvalidSetting;

/// Most violations listed in one refusal; the rest are only counted.
pub const MAX_VIOLATIONS: usize = 20;
/// Longest JSON pointer or expectation text in a refusal, in bytes.
pub const MAX_VIOLATION_TEXT: usize = 256;
/// Largest schema or example accepted, in bytes.
pub const MAX_CONTRACT_BYTES: usize = 64 * 1024;
/// Longest event type name.
pub const MAX_TYPE_LEN: usize = 128;
/// Longest version text.
pub const MAX_VERSION_LEN: usize = 64;
/// Most contracts one tenant holds (its config file's and those saved).
pub const MAX_CONTRACTS: usize = 100;

/// What happens to a delivery whose event type (and version) has no
/// contract.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum UnknownEventTypes {
    /// Accepted unchecked (adding a contract later never breaks a sender).
    #[default]
    Accept,
    /// Refused with 422 `UNKNOWN_EVENT_TYPE`.
    Reject,
}

impl UnknownEventTypes {
    /// The config value.
    pub fn as_str(self) -> &'static str {
        match self {
            UnknownEventTypes::Accept => "accept",
            UnknownEventTypes::Reject => "reject",
        }
    }
}

/// How a tenant's bodies name their event type and version, and what
/// happens to types without a contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Policy {
    /// Top-level body field holding the event type.
    pub type_field: String,
    /// Top-level body field holding the version (a string or an integer).
    pub version_field: String,
    /// Types without a contract: accepted or refused.
    pub unknown: UnknownEventTypes,
}

impl Default for Policy {
    fn default() -> Self {
        Policy {
            type_field: DEFAULT_TYPE_FIELD.to_owned(),
            version_field: DEFAULT_VERSION_FIELD.to_owned(),
            unknown: UnknownEventTypes::Accept,
        }
    }
}

/// Default body field of the event type.
pub const DEFAULT_TYPE_FIELD: &str = "type";
/// Default body field of the version.
pub const DEFAULT_VERSION_FIELD: &str = "version";

/// One `[[tenants.contracts]]` entry of the config file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContractConfig {
    /// The event type this contract covers (the value of `type_field`).
    #[serde(rename = "type")]
    pub event_type: String,
    /// The version it covers (the value of `version_field`); none covers
    /// every version without a contract of its own.
    #[serde(default)]
    pub version: Option<String>,
    /// The JSON Schema, inline.
    #[serde(default)]
    pub schema: Option<String>,
    /// A file holding the JSON Schema.
    #[serde(default)]
    pub schema_file: Option<PathBuf>,
    /// One real payload; it must validate when the config is loaded.
    pub example: String,
}

impl ContractConfig {
    /// The contract as written, its schema read from `schema_file` when
    /// given; errors name the key.
    pub fn spec(&self) -> Result<ContractSpec, InvalidSetting> {
        let schema = match (&self.schema, &self.schema_file) {
            (Some(schema), None) => schema.clone(),
            (None, Some(path)) => std::fs::read_to_string(path).map_err(|e| {
                InvalidSetting::new(
                    "schema_file",
                    format!("cannot read {}: {e}", path.display()),
                )
            })?,
            (None, None) => {
                return Err(InvalidSetting::new(
                    "schema",
                    "one of schema or schema_file is required",
                ))
            }
            (Some(_), Some(_)) => {
                return Err(InvalidSetting::new(
                    "schema",
                    "give only one of schema or schema_file",
                ))
            }
        };
        Ok(ContractSpec {
            event_type: self.event_type.clone(),
            version: self.version.clone(),
            schema,
            example: self.example.clone(),
        })
    }
}

/// A tenant's contract policy and the contracts of its config file,
/// compiled when the config is loaded.
#[derive(Debug, Clone, Default)]
pub struct ConfigContracts {
    /// How types and versions are read, and what happens to unknown ones.
    pub policy: Policy,
    /// The config file's contracts (read-only over the API).
    pub contracts: Vec<Arc<Contract>>,
}

impl ConfigContracts {
    /// Compiles `configs` under `policy`; an error names the entry and key
    /// (`contracts[1] (order.paid): example: ...`).
    pub fn compile(policy: Policy, configs: &[ContractConfig]) -> Result<Self, InvalidSetting> {
        if policy.type_field.is_empty() {
            return Err(InvalidSetting::new("type_field", "must not be empty"));
        }
        if policy.version_field.is_empty() {
            return Err(InvalidSetting::new("version_field", "must not be empty"));
        }
        if configs.len() > MAX_CONTRACTS {
            return Err(InvalidSetting::new(
                "contracts",
                format!(
                    "a tenant holds at most {MAX_CONTRACTS} contracts, got {}",
                    configs.len()
                ),
            ));
        }
        let mut contracts: Vec<Arc<Contract>> = Vec::with_capacity(configs.len());
        for (i, config) in configs.iter().enumerate() {
            let place = format!("contracts[{i}] ({})", config.event_type);
            let contract = config
                .spec()
                .and_then(|spec| Contract::compile(spec, &policy, ContractSource::Config))
                .map_err(|e| e.within(&place))?;
            if contracts.iter().any(|c| c.key() == contract.key()) {
                return Err(InvalidSetting::new(
                    place,
                    "a contract for this type and version is already declared",
                ));
            }
            contracts.push(Arc::new(contract));
        }
        Ok(ConfigContracts { policy, contracts })
    }
}
