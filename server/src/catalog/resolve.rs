//! From a stored tenant to the settings it runs with: the one road, whoever
//! takes it.

use std::sync::Arc;

use super::{effective_config, Catalog, SecretSet, TenantRecord};
use crate::tenant::TenantSettings;
use crate::{egress::AddressPolicy, error::Error};

/// Why a stored tenant cannot run.
#[derive(Debug, thiserror::Error)]
pub enum Unrunnable {
    /// A setting is out of range (the message names it as the config file
    /// does: `rate_limit.per_sec`).
    #[error("{0}")]
    Invalid(String),
    /// Its record or secrets cannot be read.
    #[error("stored record cannot be read: {0}")]
    Unreadable(Error),
    /// Starting it failed.
    #[error("{0}")]
    Failed(Error),
}

/// Resolves stored tenants under the operator's caps.
///
/// From a stored tenant to the settings it runs with: the one road, taken
/// by the control plane (create, update, rotate, revoke), at boot and by
/// the catalog follower, so a tenant stored here or by another replica runs
/// under the same body cap and destination address policy.
#[derive(Clone)]
pub struct Resolver {
    /// `limits.tenant_max_body_bytes`.
    body_cap: usize,
    /// Where destinations set over the API may point (`[forward] allow_networks`).
    address_policy: Arc<AddressPolicy>,
}

impl Resolver {
    /// A resolver capping bodies at `body_cap` and holding destinations to
    /// `address_policy`.
    pub fn new(body_cap: usize, address_policy: Arc<AddressPolicy>) -> Resolver {
        Resolver {
            body_cap,
            address_policy,
        }
    }

    /// Where destinations set over the API may point.
    pub fn address_policy(&self) -> &Arc<AddressPolicy> {
        &self.address_policy
    }

    /// The settings `record` and `secrets` run with.
    pub fn settings(
        &self,
        record: &TenantRecord,
        secrets: &SecretSet,
    ) -> Result<TenantSettings, Unrunnable> {
        let settings =
            TenantSettings::resolve_under(&effective_config(record, secrets), self.body_cap)
                .map_err(|e| Unrunnable::Invalid(e.to_string()))?;
        Ok(settings.with_address_policy(&self.address_policy))
    }

    /// The settings tenant `id` runs with as stored now (`None`: it is not
    /// stored).
    pub fn stored(
        &self,
        catalog: &Catalog,
        id: &str,
    ) -> Result<Option<TenantSettings>, Unrunnable> {
        match catalog.get(id).map_err(Unrunnable::Unreadable)? {
            Some((record, secrets)) => self.settings(&record, &secrets).map(Some),
            None => Ok(None),
        }
    }
}
