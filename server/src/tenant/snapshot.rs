//! What a tenant's deliveries are checked against and written to, as one
//! immutable [`Snapshot`] its actor publishes whole.

use std::sync::{Arc, PoisonError, RwLock};

use hookd_sdk::signature::Secret;

use super::replay::{bounded_by_id, content_idem_key, ReplayKeys};
use crate::contracts::TenantContracts;
use crate::routes::handle::RouteHandle;
use crate::tenant::TenantSettings;

/// One consistent set of a tenant's state; replaced whole by its actor.
///
/// What a tenant's deliveries are checked against and written to: its
/// settings, signing keys, contracts and routes as one immutable
/// [`Snapshot`], published whole by the tenant's actor (the only writer)
/// and read without a hop by the HTTP workers and the control plane.
pub struct Snapshot {
    settings: Arc<TenantSettings>,
    /// Current secret, then the previous one if any.
    keys: Vec<Secret>,
    /// When the previous secret stops being accepted (Unix seconds).
    previous_expires_at: Option<i64>,
    contracts: Arc<TenantContracts>,
    /// Its routes, the default one (its own data) first.
    routes: Arc<[RouteHandle]>,
}

impl Snapshot {
    /// The snapshot of `settings` with `contracts` in force.
    pub(super) fn of(
        settings: Arc<TenantSettings>,
        contracts: Arc<TenantContracts>,
        routes: Arc<[RouteHandle]>,
    ) -> Snapshot {
        let mut keys = vec![settings.current.clone()];
        let mut previous_expires_at = None;
        if let Some((previous, expiry)) = &settings.previous {
            keys.push(previous.clone());
            previous_expires_at = *expiry;
        }
        Snapshot {
            settings,
            keys,
            previous_expires_at,
            contracts,
            routes,
        }
    }

    /// The tenant's settings.
    pub fn settings(&self) -> &Arc<TenantSettings> {
        &self.settings
    }

    /// The tenant's contracts in force.
    pub fn contracts(&self) -> &Arc<TenantContracts> {
        &self.contracts
    }

    /// The tenant's routes, the default one (its own data) first.
    pub fn routes(&self) -> &Arc<[RouteHandle]> {
        &self.routes
    }

    /// The secrets a delivery may be signed with right now: the current one,
    /// then the previous one while its overlap is open.
    pub(super) fn live_keys(&self, now_secs: i64) -> &[Secret] {
        let previous_live =
            self.keys.len() > 1 && self.previous_expires_at.is_none_or(|t| now_secs < t);
        &self.keys[..if previous_live { 2 } else { 1 }]
    }

    /// The content key of the idempotency log, for schemes that sign no
    /// timestamp.
    pub(super) fn content_idem_key(&self, keys: &ReplayKeys) -> Option<Vec<u8>> {
        keys.content
            .as_ref()
            .filter(|_| !bounded_by_id(self.settings.scheme))
            .map(|key| content_idem_key(key))
    }
}

/// The cell a tenant's snapshot is published in. Readers take the snapshot
/// in force; only the tenant's actor replaces it.
pub(super) struct Published(RwLock<Arc<Snapshot>>);

impl Published {
    /// The cell of a tenant starting with `first`.
    pub(super) fn new(first: Snapshot) -> Published {
        Published(RwLock::new(Arc::new(first)))
    }

    /// The snapshot in force now.
    pub(super) fn load(&self) -> Arc<Snapshot> {
        self.0
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Puts `next` in force for every reader from now on. Called by the
    /// tenant's actor only.
    pub(super) fn publish(&self, next: Snapshot) {
        *self.0.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(next);
    }
}
