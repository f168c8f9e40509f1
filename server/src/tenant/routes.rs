//! A running tenant's routes: each has its own storage scope (the default
//! route's is the tenant's own), the wake of its own dispatcher and that
//! dispatcher, so a slow or failing destination only ever holds up its own
//! route's deliveries.

use std::sync::Arc;

use tokio::sync::Notify;

use hookd_proto::domain::DEFAULT_ROUTE;

use super::filters::Passes;

use crate::{
    config::{ForwardSettings, TenantSettings},
    error::Result,
    ids::{DeliveryId, TenantId},
    metrics::{Metrics, RouteMetrics, TenantMetrics},
    store::{
        api::{Receipt, RouteCopy},
        records::RouteOutcome,
        Store, TenantStore,
    },
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
    /// Its forwarding metrics and the labels of its queue gauges.
    pub metrics: Arc<RouteMetrics>,
}

impl RouteHandle {
    /// The routes of `settings`, the default one (on `default`, the
    /// tenant's own data) first, their metrics under the tenant's label
    /// `tenant`; those also among `previous` keep their wake ([`wake_of`]).
    pub(super) fn all(
        (store, metrics): (&Store, &Metrics),
        settings: &TenantSettings,
        default: TenantStore,
        tenant: &Arc<TenantMetrics>,
        previous: &[RouteHandle],
    ) -> Result<Vec<RouteHandle>> {
        let mut routes = vec![RouteHandle {
            name: DEFAULT_ROUTE.to_owned(),
            data: default,
            wake: wake_of(previous, DEFAULT_ROUTE),
            metrics: metrics.route(tenant, DEFAULT_ROUTE),
        }];
        for route in &settings.routes {
            routes.push(RouteHandle {
                name: route.name.clone(),
                data: store.tenant(&route.scope)?,
                wake: wake_of(previous, &route.name),
                metrics: metrics.route(tenant, &route.name),
            });
        }
        Ok(routes)
    }

    /// The storage scope of this route.
    pub fn scope(&self) -> &TenantId {
        self.data.tenant()
    }
}

/// The wake of route `name` among the `previous` routes of a tenant started
/// anew, or a new one: a delivery the previous gate is still committing then
/// wakes the new dispatcher of its route.
pub(super) fn wake_of(previous: &[RouteHandle], name: &str) -> Arc<Notify> {
    previous
        .iter()
        .find(|r| r.name == name)
        .map_or_else(|| Arc::new(Notify::new()), |r| r.wake.clone())
}

/// The forwarding of each route of `settings` (default first; `None`:
/// pulled), in the order of [`RouteHandle::all`].
pub(super) fn forwarding(settings: &TenantSettings) -> Vec<Option<&ForwardSettings>> {
    std::iter::once(settings.forward.as_ref())
        .chain(settings.routes.iter().map(|r| r.forward.as_ref()))
        .collect()
}

/// What a tenant's routes make of an accepted event.
pub(super) struct FanOut {
    /// A delivery for each other route whose filter passes the event (or
    /// that has none).
    pub(super) copies: Vec<RouteCopy>,
    /// How the default route's delivery is written.
    pub(super) receipt: Receipt,
    /// What each route made of it, the default route first; empty for a
    /// tenant without other routes.
    pub(super) routes: Vec<RouteOutcome>,
}

/// The copies, the default route's receipt and each route's outcome that
/// `passes` (the filters' verdicts on the event) make, the default route's
/// delivery being `default_id`. Each copy's id is due at `due_ms` and
/// shares its place with the copies made just before it
/// ([`DeliveryId::sharing`]): an engine may file the copies of one place
/// as one queue entry.
pub(super) fn fan_out(
    settings: &TenantSettings,
    passes: &Passes,
    (default_id, due_ms): (&DeliveryId, i64),
) -> FanOut {
    let default_passes = passes.default;
    let passes = &passes.routes;
    let copies: Vec<RouteCopy> = settings
        .routes
        .iter()
        .zip(passes)
        .filter(|(_, passes)| **passes)
        .map(|(route, _)| RouteCopy {
            route: route.name.clone(),
            scope: route.scope.clone(),
            delivery_id: DeliveryId::sharing(due_ms),
        })
        .collect();
    let receipt = match (default_passes, copies.is_empty()) {
        (true, _) => Receipt::Queued,
        (false, false) => Receipt::Filtered,
        (false, true) => Receipt::Unrouted,
    };
    let mut routes = Vec::new();
    if !settings.routes.is_empty() {
        routes.push(RouteOutcome {
            route: DEFAULT_ROUTE.to_owned(),
            delivery_id: Some(default_id.clone()),
            filtered: !default_passes,
        });
        let mut got = copies.iter();
        for (route, passes) in settings.routes.iter().zip(passes) {
            routes.push(RouteOutcome {
                route: route.name.clone(),
                delivery_id: passes
                    .then(|| got.next().map(|c| c.delivery_id.clone()))
                    .flatten(),
                filtered: !passes,
            });
        }
    }
    FanOut {
        copies,
        receipt,
        routes,
    }
}
