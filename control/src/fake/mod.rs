//! An in-memory [`ControlBackend`] for tests: the one fake control plane, used
//! by this crate's, the SDK's and hookctl's tests.

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Mutex,
    },
};

use tokio::sync::broadcast;

mod alerts;
mod backend;
mod keys;
mod redeliver;
mod replays;
mod routes;
mod server;

pub use alerts::{alert, ACKNOWLEDGED_AT_MS, GENERATED_SINK_SECRET};
pub use server::FakeServer;

use crate::{
    error::{Error, Result},
    model::{
        AlertView, DeadLetterView, DeliveryEventView, DeliveryView, PageRequest, ProvidedSecret,
        RouteView, Scheme, Selection, TenantView,
    },
};

/// The admin's bearer token.
pub const ADMIN: &str = "admin-token";
/// A bearer token scoped to tenant `acme`.
pub const ACME: &str = "acme-token";

/// The fake backend; see the module documentation.
///
/// An in-memory [`ControlBackend`] for tests: a few tenants, fixed tokens,
/// deliveries and dead letters the test seeds, an event bus the test feeds,
/// an optional cap on page sizes (to make clients page), and a log of which
/// methods ran so a test can prove a refused call never reached the backend.
/// The one fake control plane: this crate's tests use it, and so do the
/// SDK's and hookctl's, through the `fake` feature and [`FakeServer`].
pub struct FakeBackend {
    tenants: Mutex<BTreeMap<String, TenantView>>,
    deliveries: Mutex<Vec<DeliveryView>>,
    dead_letters: Mutex<Vec<DeadLetterView>>,
    /// (tenant, route) of every route besides the default ones.
    route_names: Mutex<Vec<(String, String)>>,
    selections: Mutex<Vec<Selection>>,
    calls: Mutex<Vec<&'static str>>,
    ready: AtomicBool,
    page_limit: AtomicU32,
    routes: routes::FakeRoutes,
    replays: replays::FakeReplays,
    alerts: alerts::FakeAlerts,
    keys: keys::FakeKeys,
    /// Events sent here reach watchers.
    pub events: broadcast::Sender<DeliveryEventView>,
}

impl Default for FakeBackend {
    fn default() -> Self {
        FakeBackend::new()
    }
}

impl FakeBackend {
    /// Tenants `acme` (pull mode) and `globex` (push mode), no deliveries.
    pub fn new() -> Self {
        let tenants = [
            ("acme", None),
            ("globex", Some("https://globex.test/hooks")),
        ]
        .into_iter()
        .map(|(id, url)| (id.to_owned(), tenant(id, url.map(str::to_owned))))
        .collect();
        FakeBackend {
            tenants: Mutex::new(tenants),
            deliveries: Mutex::new(Vec::new()),
            dead_letters: Mutex::new(Vec::new()),
            route_names: Mutex::new(Vec::new()),
            selections: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
            ready: AtomicBool::new(true),
            page_limit: AtomicU32::new(u32::MAX),
            routes: routes::FakeRoutes::default(),
            replays: replays::FakeReplays::default(),
            alerts: alerts::FakeAlerts::default(),
            keys: keys::FakeKeys::default(),
            events: broadcast::channel(4).0,
        }
    }

    /// What `is_ready` answers from now on.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Adds tenant `tenant_id` (pull mode without a `destination_url`).
    pub fn add_tenant(&self, tenant_id: &str, destination_url: Option<&str>) {
        let view = tenant(tenant_id, destination_url.map(str::to_owned));
        self.tenants
            .lock()
            .unwrap()
            .insert(tenant_id.to_owned(), view);
    }

    /// Adds a delivery.
    pub fn add_delivery(&self, delivery: DeliveryView) {
        self.deliveries.lock().unwrap().push(delivery);
    }

    /// Adds a dead letter.
    pub fn add_dead_letter(&self, dead: DeadLetterView) {
        self.dead_letters.lock().unwrap().push(dead);
    }

    /// Gives tenant `tenant_id` route `route` besides its default one.
    pub fn add_route(&self, tenant_id: &str, route: &str) {
        self.route_names
            .lock()
            .unwrap()
            .push((tenant_id.to_owned(), route.to_owned()));
    }

    /// Adds an alert (see [`alert`]).
    pub fn add_alert(&self, alert: AlertView) {
        self.alerts.add(alert);
    }

    /// The selections `redeliver` and `purge_dead_letters` were given, in
    /// order.
    pub fn selections(&self) -> Vec<Selection> {
        self.selections.lock().unwrap().clone()
    }

    /// Pages of tenants, dead letters and alerts hold at most `limit` items,
    /// whatever the caller asks for, so a client must follow page tokens.
    pub fn limit_pages(&self, limit: u32) {
        self.page_limit.store(limit.max(1), Ordering::Relaxed);
    }

    fn page_size(&self, page: &PageRequest) -> usize {
        page.size.min(self.page_limit.load(Ordering::Relaxed)) as usize
    }

    /// Backend methods called so far, in order (not `authenticate`).
    pub fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }

    fn called(&self, method: &'static str) {
        self.calls.lock().unwrap().push(method);
    }

    /// What the default route's change does to its tenant, as in hookd: the
    /// route is the tenant's own destination and concurrency.
    fn keep_default_route(&self, route: &RouteView) {
        if let Some(view) = self.tenants.lock().unwrap().get_mut(&route.tenant_id) {
            view.destination_url = route.destination_url.clone();
            view.max_in_flight = route.max_in_flight;
        }
    }

    fn tenant(&self, tenant_id: &str) -> Result<TenantView> {
        self.tenants
            .lock()
            .unwrap()
            .get(tenant_id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("no tenant has the id \"{tenant_id}\"")))
    }
}

/// The secret an answer shows, as hookd does: none when the caller
/// supplied it, else `generated`.
fn shown(supplied: Option<ProvidedSecret>, generated: &str) -> String {
    match supplied {
        Some(_) => String::new(),
        None => generated.to_owned(),
    }
}

/// A tenant as the fake keeps it: Standard Webhooks, enabled, created at a
/// fixed time.
pub fn tenant(tenant_id: &str, destination_url: Option<String>) -> TenantView {
    TenantView {
        tenant_id: tenant_id.into(),
        scheme: Scheme::Standard,
        hmac: None,
        tolerance_secs: 300,
        destination_url,
        enabled: true,
        max_body_bytes: 1 << 20,
        required_fields: vec![],
        from_config: false,
        max_in_flight: 16,
        rate_limit: None,
        event_id_field: None,
        public_url: None,
        has_verify_token: false,
        created_at_ms: 1_700_000_000_000,
    }
}
