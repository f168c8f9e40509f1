//! A running tenant's routes: each has its own storage scope (the default
//! route's is the tenant's own), the wake of its own dispatcher and that
//! dispatcher, so a slow or failing destination only ever holds up its own
//! route's deliveries.

use std::sync::Arc;

use tokio::sync::Notify;

use crate::{
    config::{ForwardSettings, TenantSettings},
    error::Result,
    ids::TenantId,
    store::{Store, TenantStore},
};

/// One route of a running tenant.
#[derive(Clone)]
pub struct RouteHandle {
    /// Its name (`default` for the tenant's own destination).
    pub name: String,
    /// Its deliveries in storage.
    pub data: TenantStore,
    /// Wakes its dispatcher when work is queued.
    pub wake: Arc<Notify>,
}

impl RouteHandle {
    /// The routes of `settings`, the default one (on `default`) first.
    pub(super) fn all(
        store: &Store,
        settings: &TenantSettings,
        default: RouteHandle,
    ) -> Result<Vec<RouteHandle>> {
        let mut routes = vec![default];
        for route in &settings.routes {
            routes.push(RouteHandle {
                name: route.name.clone(),
                data: store.tenant(&route.scope)?,
                wake: Arc::new(Notify::new()),
            });
        }
        Ok(routes)
    }

    /// The storage scope of this route.
    pub fn scope(&self) -> &TenantId {
        self.data.tenant()
    }
}

/// The forwarding of each route of `settings` (default first; `None`:
/// pulled), in the order of [`RouteHandle::all`].
pub(super) fn forwarding(settings: &TenantSettings) -> Vec<Option<&ForwardSettings>> {
    std::iter::once(settings.forward.as_ref())
        .chain(settings.routes.iter().map(|r| r.forward.as_ref()))
        .collect()
}
