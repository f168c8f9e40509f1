//! A running tenant's routes: each has its own storage scope (the default
//! route's is the tenant's own), the wake of its own dispatcher and that
//! dispatcher, so a slow or failing destination only ever holds up its own
//! route's deliveries.

use std::sync::Arc;

use actix_web::http::header::HeaderMap;
use tokio::sync::Notify;

use crate::{
    config::{ForwardSettings, RouteSettings, TenantSettings},
    error::Result,
    ids::{DeliveryId, TenantId},
    ingest::Ingest,
    routes::filter::FilterInput,
    store::{api::RouteCopy, Store, TenantStore},
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
    /// The routes of `settings`, the default one (on `default`) first;
    /// those also among `previous` keep their wake ([`wake_of`]).
    pub(super) fn all(
        store: &Store,
        settings: &TenantSettings,
        default: RouteHandle,
        previous: &[RouteHandle],
    ) -> Result<Vec<RouteHandle>> {
        let mut routes = vec![default];
        for route in &settings.routes {
            routes.push(RouteHandle {
                name: route.name.clone(),
                data: store.tenant(&route.scope)?,
                wake: wake_of(previous, &route.name),
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

/// A delivery for each of the tenant's other routes whose filter the event
/// passes (or that has none). The body and headers are read for the
/// filters only when one of its routes has a filter.
pub(super) fn route_copies(
    settings: &TenantSettings,
    msg: &Ingest,
    headers: &HeaderMap,
) -> Vec<RouteCopy> {
    let copy = |route: &RouteSettings| RouteCopy {
        route: route.name.clone(),
        scope: route.scope.clone(),
        delivery_id: DeliveryId::generate(),
    };
    if settings.routes.iter().all(|r| r.filter.is_none()) {
        return settings.routes.iter().map(copy).collect();
    }
    let body: serde_json::Value = serde_json::from_slice(&msg.body).unwrap_or_default();
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
    settings
        .routes
        .iter()
        .filter(|route| route.filter.as_ref().is_none_or(|f| f.matches(&input)))
        .map(copy)
        .collect()
}
