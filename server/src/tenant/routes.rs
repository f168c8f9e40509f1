//! A running tenant's routes: each has its own storage scope (the default
//! route's is the tenant's own), the wake of its own dispatcher and that
//! dispatcher, so a slow or failing destination only ever holds up its own
//! route's deliveries.

use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use tokio::sync::Notify;

use hookd_proto::domain::DEFAULT_ROUTE;

use crate::{
    config::{ForwardSettings, TenantSettings},
    error::Result,
    ids::{DeliveryId, TenantId},
    ingest::Ingest,
    metrics::{Metrics, RouteMetrics, TenantMetrics},
    routes::filter::FilterInput,
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

/// Runs the event through the filters of the tenant's routes, the default
/// one (whose delivery is `default_id`) included. `read` is the headers and
/// the body as filters see it (a form's JSON view); both are read only when
/// one of its routes has a filter. Each copy's id is due at `due_ms` and
/// shares its place with the copies made just before it
/// ([`DeliveryId::sharing`]): an engine may file the copies of one place
/// as one queue entry.
pub(super) fn fan_out(
    settings: &TenantSettings,
    msg: &Ingest,
    read: (&HeaderMap, &[u8]),
    (default_id, due_ms): (&DeliveryId, i64),
) -> FanOut {
    let (default_passes, passes) = passing(settings, msg, read);
    let copies: Vec<RouteCopy> = settings
        .routes
        .iter()
        .zip(&passes)
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
        for (route, passes) in settings.routes.iter().zip(&passes) {
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

/// Whether the default route's filter passes the event, and each other
/// route's (in order).
fn passing(
    settings: &TenantSettings,
    msg: &Ingest,
    (headers, body): (&HeaderMap, &[u8]),
) -> (bool, Vec<bool>) {
    let filters =
        std::iter::once(&settings.filter).chain(settings.routes.iter().map(|r| &r.filter));
    if filters.clone().all(Option::is_none) {
        return (true, vec![true; settings.routes.len()]);
    }
    let body: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let header_pairs: Vec<(&str, &str)> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let query: Vec<(std::borrow::Cow<'_, str>, std::borrow::Cow<'_, str>)> =
        form_urlencoded::parse(msg.query.as_bytes()).collect();
    let query_pairs: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    let path = format!("/hooks/{}", settings.id);
    let input = FilterInput {
        body: &body,
        headers: &header_pairs,
        path: &path,
        query: &query_pairs,
    };
    let mut passes = filters.map(|filter| filter.as_ref().is_none_or(|f| f.matches(&input)));
    let default = passes.next().unwrap_or(true);
    (default, passes.collect())
}
