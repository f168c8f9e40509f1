//! A running tenant's routes and what they make of an accepted event.

use std::sync::{
    atomic::{AtomicBool, Ordering},
    Arc,
};

use tokio::sync::Notify;

use hookd_proto::domain::DEFAULT_ROUTE;

use super::hold::Hold;
use crate::{
    error::Result,
    ids::{DeliveryId, TenantId},
    metrics::{Metrics, RouteMetrics, TenantMetrics},
    routes::{
        filter::Passes,
        settings::{ForwardSettings, RouteSettings},
    },
    store::{
        api::{Receipt, RouteCopy},
        records::RouteOutcome,
        Store, TenantStore,
    },
};

/// One route of a running tenant.
///
/// A running tenant's routes and what they make of an accepted event: each
/// route has its own storage scope (the default
/// route's is the tenant's own), the wake of its own dispatcher and that
/// dispatcher, so a slow or failing destination only ever holds up its own
/// route's deliveries.
#[derive(Clone)]
pub struct RouteHandle {
    /// Its name (`default` for the tenant's own destination).
    pub name: String,
    /// Its deliveries in storage.
    pub data: TenantStore,
    /// Wakes its dispatcher when work is queued.
    pub wake: Arc<Wake>,
    /// An operator's hold on it, kept across changes of its settings.
    pub hold: Arc<Hold>,
    /// Its forwarding metrics and the labels of its queue gauges.
    pub metrics: Arc<RouteMetrics>,
}

impl RouteHandle {
    /// The routes of a tenant starting with the other routes `others`: the
    /// default one on `data` (the tenant's own) first, their metrics under
    /// the tenant's label `tenant`.
    pub(crate) fn first(
        sources: (&Store, &Metrics),
        others: &[RouteSettings],
        data: &TenantStore,
        tenant: &Arc<TenantMetrics>,
    ) -> Result<Vec<RouteHandle>> {
        let default = RouteHandle {
            name: DEFAULT_ROUTE.to_owned(),
            data: data.clone(),
            wake: Arc::default(),
            hold: Arc::default(),
            metrics: sources.1.route(tenant, DEFAULT_ROUTE),
        };
        RouteHandle::all(sources, others, tenant, &[default])
    }

    /// The default route (`running[0]`) and then `others`;
    /// those already `running` (same name, same scope) keep their handle,
    /// so their dispatcher's wake and counters carry on.
    pub(crate) fn all(
        (store, metrics): (&Store, &Metrics),
        others: &[RouteSettings],
        tenant: &Arc<TenantMetrics>,
        running: &[RouteHandle],
    ) -> Result<Vec<RouteHandle>> {
        let mut routes = vec![running[0].clone()];
        for route in others {
            let kept = running
                .iter()
                .skip(1)
                .find(|r| r.name == route.name && *r.scope() == route.scope);
            let handle = match kept {
                Some(kept) => kept.clone(),
                None => RouteHandle {
                    name: route.name.clone(),
                    data: store.tenant(&route.scope)?,
                    wake: Arc::default(),
                    hold: Arc::default(),
                    metrics: metrics.route(tenant, &route.name),
                },
            };
            routes.push(handle);
        }
        Ok(routes)
    }

    /// The storage scope of this route.
    pub fn scope(&self) -> &TenantId {
        self.data.tenant()
    }
}

/// What wakes a route's dispatcher: work queued, or an operator's retry
/// now, which also lets an open breaker send its probe at once.
#[derive(Debug, Default)]
pub struct Wake {
    notify: Notify,
    retry_now: AtomicBool,
}

impl Wake {
    /// Work was queued.
    pub fn queued(&self) {
        self.notify.notify_one();
    }

    /// An operator made waiting deliveries due: the destination is said to
    /// be back.
    pub fn retry_now(&self) {
        self.retry_now.store(true, Ordering::SeqCst);
        self.notify.notify_one();
    }

    /// Until the next [`Wake::queued`] or [`Wake::retry_now`] (one that
    /// came while nobody waited counts).
    pub async fn notified(&self) {
        self.notify.notified().await;
    }

    /// Whether a retry now came since the last call.
    pub fn take_retry_now(&self) -> bool {
        self.retry_now.swap(false, Ordering::SeqCst)
    }
}

/// The forwarding of each route, the default one's (`default`) first, then
/// `others`' (`None`: pulled), in the order of [`RouteHandle::all`].
pub(crate) fn forwarding<'a>(
    default: Option<&'a ForwardSettings>,
    others: &'a [RouteSettings],
) -> Vec<Option<&'a ForwardSettings>> {
    std::iter::once(default)
        .chain(others.iter().map(|r| r.forward.as_ref()))
        .collect()
}

/// What a tenant's routes make of an accepted event.
pub(crate) struct FanOut {
    /// A delivery for each other route whose filter passes the event (or
    /// that has none).
    pub(crate) copies: Vec<RouteCopy>,
    /// How the default route's delivery is written.
    pub(crate) receipt: Receipt,
    /// What each route made of it, the default route first; empty for a
    /// tenant without other routes.
    pub(crate) routes: Vec<RouteOutcome>,
}

/// The copies, the default route's receipt and each route's outcome that
/// `passes` (the filters' verdicts on the event) make over the other
/// routes `others`, the default route's
/// delivery being `default_id`. Each copy's id is due at `due_ms` (when
/// the event was accepted) plus its
/// route's delay and shares its place with the copies made just before it
/// ([`DeliveryId::sharing`]): an engine may file the copies of one place
/// as one queue entry.
pub(crate) fn fan_out(
    others: &[RouteSettings],
    passes: &Passes,
    (default_id, due_ms): (&DeliveryId, i64),
) -> FanOut {
    let default_passes = passes.default;
    let passes = &passes.routes;
    let copies: Vec<RouteCopy> = others
        .iter()
        .zip(passes)
        .filter(|(_, passes)| **passes)
        .map(|(route, _)| RouteCopy {
            route: route.name.clone(),
            scope: route.scope.clone(),
            delivery_id: DeliveryId::sharing(due_ms + route.delay_ms),
            due_ms: due_ms + route.delay_ms,
        })
        .collect();
    let receipt = match (default_passes, copies.is_empty()) {
        (true, _) => Receipt::Queued,
        (false, false) => Receipt::Filtered,
        (false, true) => Receipt::Unrouted,
    };
    let mut routes = Vec::new();
    if !others.is_empty() {
        routes.push(RouteOutcome {
            route: DEFAULT_ROUTE.to_owned(),
            delivery_id: Some(default_id.clone()),
            filtered: !default_passes,
        });
        let mut got = copies.iter();
        for (route, passes) in others.iter().zip(passes) {
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
