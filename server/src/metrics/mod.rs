//! Prometheus metrics of one server, kept with `prometheus-client`, and their
//! scrape.

mod alerts;
pub mod forward_window;
mod handshakes;
pub mod process;
pub mod readings;
mod routes;
mod scrape;
mod senders;
pub mod window;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

pub use alerts::AlertMetrics;
pub use handshakes::HandshakeMetrics;
use prometheus_client::{
    metrics::{
        counter::Counter, exemplar::HistogramWithExemplars, family::Family, gauge::Gauge,
        info::Info,
    },
    registry::{Registry, Unit},
};
pub use readings::{read_storage, StorageReadings, TenantSource};
pub use routes::{BreakerGauge, ConcurrencyGauge, RouteMetrics, TransformRun};
pub use scrape::{scrape, Format};
pub use senders::{SenderMetrics, Senders, TypeOutcome};

use crate::{config::MetricsConfig, error::ErrorCode, ids::TenantId};

/// The label every tenant past the cap, and every unknown tenant id, shares.
pub const OTHER_TENANT: &str = "other";

/// Bucket bounds (seconds) of `hookd_ingest_duration_seconds`: the ingest
/// path is sub-millisecond to a few ms, more under a slow disk.
pub const INGEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Bucket bounds (seconds) of `hookd_forward_duration_seconds`: destinations
/// answer in milliseconds to the 30 s default timeout.
pub const FORWARD_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// The commit hookd was built from (`git rev-parse HEAD` at build time, or
/// `HOOKD_BUILD_COMMIT`; "unknown" without either).
pub const BUILD_COMMIT: &str = env!("HOOKD_BUILD_COMMIT");

/// A label set: names and values, in the order they are written.
type Labels = Vec<(&'static str, String)>;
/// The exemplar of a latency observation: the trace it belongs to.
type TraceExemplar = Vec<(&'static str, String)>;
/// A latency histogram whose buckets keep the trace id of their last
/// observation.
type Latency = HistogramWithExemplars<TraceExemplar>;
/// A family of latency histograms, all with the same buckets.
type LatencyFamily = Family<Labels, Latency, fn() -> Latency>;

fn ingest_histogram() -> Latency {
    HistogramWithExemplars::new(INGEST_BUCKETS.iter().copied())
}

fn forward_histogram() -> Latency {
    HistogramWithExemplars::new(FORWARD_BUCKETS.iter().copied())
}

/// How an ingest request ended, the `outcome` label of
/// `hookd_ingest_duration_seconds`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum IngestResult {
    /// A new delivery, answered 202.
    Accepted,
    /// A copy of an accepted event, answered 200.
    Duplicate,
    /// Refused with an error code.
    Rejected,
}

impl IngestResult {
    const ALL: [IngestResult; 3] = [
        IngestResult::Accepted,
        IngestResult::Duplicate,
        IngestResult::Rejected,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            IngestResult::Accepted => "accepted",
            IngestResult::Duplicate => "duplicate",
            IngestResult::Rejected => "rejected",
        }
    }
}

/// The families hookd updates as things happen, registered once.
struct Families {
    accepted: Family<Labels, Counter>,
    duplicates: Family<Labels, Counter>,
    rejected: Family<Labels, Counter>,
    forwards: Family<Labels, Counter>,
    forward_latency: LatencyFamily,
    breakers_open: Family<Labels, Gauge>,
    concurrency_limits: Family<Labels, Gauge>,
    transform_runs: Family<Labels, Counter>,
    unrecorded: Family<Labels, Counter>,
    handshakes: Family<Labels, Counter>,
    alerts_open: Family<Labels, Gauge>,
    alert_notifications: Family<Labels, Counter>,
}

/// The `kind` label of `hookd_rejections_unrecorded_total`, in the order of
/// [`TenantMetrics::unrecorded`]'s argument: a bad or missing signature, or
/// content refused after a valid one.
const REFUSAL_KINDS: [&str; 2] = ["signature", "content"];

/// The handles of one `tenant` label: one tenant, or every tenant counted
/// as `other`. Every series of the label exists from the start, at 0; its
/// routes' forwarding handles are [`RouteMetrics`].
pub struct TenantMetrics {
    label: String,
    accepted: Counter,
    duplicates: Counter,
    rejected: [Counter; ErrorCode::ALL.len()],
    /// Breakers open on any of its routes (not exported: each route's is).
    breakers_open: Gauge,
    unrecorded: [Counter; REFUSAL_KINDS.len()],
    /// The route labels handed out under it, `default` aside.
    routes: Mutex<Vec<String>>,
    handshakes: HandshakeMetrics,
    alerts: AlertMetrics,
}

impl TenantMetrics {
    fn new(label: &str, families: &Families) -> Self {
        let tenant = || vec![("tenant", label.to_owned())];
        let with = |key: &'static str, value: &str| {
            let mut labels = tenant();
            labels.push((key, value.to_owned()));
            labels
        };
        TenantMetrics {
            label: label.to_owned(),
            accepted: families.accepted.get_or_create_owned(&tenant()),
            duplicates: families.duplicates.get_or_create_owned(&tenant()),
            rejected: ErrorCode::ALL.map(|code| {
                families
                    .rejected
                    .get_or_create_owned(&with("code", code.as_str()))
            }),
            breakers_open: Gauge::default(),
            unrecorded: REFUSAL_KINDS
                .map(|kind| families.unrecorded.get_or_create_owned(&with("kind", kind))),
            routes: Mutex::default(),
            handshakes: HandshakeMetrics::new(label, families.handshakes.clone()),
            alerts: AlertMetrics::new(
                label,
                families.alerts_open.clone(),
                families.alert_notifications.clone(),
            ),
        }
    }

    /// The `tenant` label value.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Its handshakes.
    pub fn handshakes(&self) -> &HandshakeMetrics {
        &self.handshakes
    }

    /// Its alerts.
    pub fn alerts(&self) -> &AlertMetrics {
        &self.alerts
    }

    /// Counts a new delivery.
    pub fn accepted(&self) {
        self.accepted.inc();
    }

    /// Counts a duplicate.
    pub fn duplicate(&self) {
        self.duplicates.inc();
    }

    /// Counts a rejection with its error code.
    pub fn rejected(&self, code: ErrorCode) {
        let slot = ErrorCode::ALL
            .iter()
            .position(|c| *c == code)
            .expect("every code is in ErrorCode::ALL");
        self.rejected[slot].inc();
    }

    /// Counts a refusal answered but not recorded for the dashboard because
    /// the tenant's recording budget was spent; `signature_valid` picks the
    /// `kind`.
    pub fn unrecorded(&self, signature_valid: bool) {
        self.unrecorded[usize::from(signature_valid)].inc();
    }

    /// Whether a circuit breaker of a route counted under this label is
    /// open now.
    pub fn breaker_open(&self) -> bool {
        self.breakers_open.get() > 0
    }
}

fn exemplar(trace_id: Option<String>) -> Option<TraceExemplar> {
    trace_id.map(|id| vec![("trace_id", id)])
}

/// Which tenants have a label of their own.
#[derive(Default)]
struct TenantLabels {
    /// Tenant id -> its label's handles; a tenant keeps its label across
    /// restarts and reconfiguration.
    by_tenant: HashMap<TenantId, Arc<TenantMetrics>>,
    /// How many labels besides `other` were handed out.
    own_labels: usize,
}

/// Every metric of one server.
///
/// Prometheus metrics of one server, kept with `prometheus-client`:
/// counters and histograms updated where things happen (each tenant label's
/// handles are looked up once, when the tenant starts), gauges read from
/// storage and `/proc` at scrape time ([`readings`], [`process`]), and the
/// tenant-label cap. `scrape` renders the Prometheus text format, or
/// OpenMetrics (with trace-id exemplars on the latency histograms) for a
/// scraper that asks for it.
pub struct Metrics {
    config: MetricsConfig,
    registry: Registry,
    families: Families,
    tenants: Mutex<TenantLabels>,
    other: Arc<TenantMetrics>,
    ingest_latency: [Latency; IngestResult::ALL.len()],
    senders: Senders,
    windows: window::IngestWindows,
}

/// Registers every metric family in `registry`, with its help text: the
/// build info, the tenants' `families` and the `ingest` latencies.
fn register(registry: &mut Registry, families: &Families, ingest: &LatencyFamily) {
    registry.register(
        "hookd_build",
        "The version and commit hookd was built from",
        Info::new(vec![
            ("version", env!("CARGO_PKG_VERSION")),
            ("commit", BUILD_COMMIT),
        ]),
    );
    registry.register(
        "hookd_deliveries_accepted",
        "Deliveries acknowledged as new events (HTTP 202)",
        families.accepted.clone(),
    );
    registry.register(
        "hookd_deliveries_duplicate",
        "Copies of already accepted events (HTTP 200, duplicate)",
        families.duplicates.clone(),
    );
    registry.register(
        "hookd_deliveries_rejected",
        "Deliveries refused, by error code (docs/error-codes.md); every code from the start",
        families.rejected.clone(),
    );
    registry.register(
        "hookd_forward_attempts",
        "Forward attempts by route and what followed: delivered, retry, dead, dropped or transform_failed",
        families.forwards.clone(),
    );
    registry.register_with_unit(
        "hookd_forward_duration",
        "Duration of forward attempts, until the destination answered or failed",
        Unit::Seconds,
        families.forward_latency.clone(),
    );
    registry.register_with_unit(
        "hookd_ingest_duration",
        "Duration of POST /hooks requests, durable write included, by outcome",
        Unit::Seconds,
        ingest.clone(),
    );
    registry.register(
        "hookd_circuit_breaker_open",
        "Routes whose destination's circuit breaker is open or half-open (forwarding paused)",
        families.breakers_open.clone(),
    );
    registry.register(
        "hookd_route_concurrency_limit",
        "Forwards a route may have in flight now: its adaptive limit, or max_in_flight (docs/routes.md#adaptive-concurrency); routes sharing a label sum",
        families.concurrency_limits.clone(),
    );
    registry.register(
        "hookd_transform_runs",
        "Runs of a route's transform by outcome: ok (sent), dropped or failed",
        families.transform_runs.clone(),
    );
    registry.register(
        "hookd_handshakes",
        "Provider handshakes (docs/providers.md) by handshake and outcome: answered or refused; never stored as events",
        families.handshakes.clone(),
    );
    registry.register(
        "hookd_rejections_unrecorded",
        "Refusals answered but not recorded for ListRejections: the tenant's recording budget ([limits.rejection_records]) was spent",
        families.unrecorded.clone(),
    );
    registry.register(
        "hookd_alerts_open",
        "Alerts open or acknowledged now, by type (docs/alerts.md)",
        families.alerts_open.clone(),
    );
    registry.register(
        "hookd_alert_notifications",
        "Alert notifications by type and outcome: queued to a sink, or failed to queue",
        families.alert_notifications.clone(),
    );
}

impl Metrics {
    /// Empty metrics, with the label cap of `config`.
    pub fn new(config: &MetricsConfig) -> Self {
        let families = Families {
            accepted: Family::default(),
            duplicates: Family::default(),
            rejected: Family::default(),
            forwards: Family::default(),
            forward_latency: Family::new_with_constructor(forward_histogram),
            breakers_open: Family::default(),
            concurrency_limits: Family::default(),
            transform_runs: Family::default(),
            unrecorded: Family::default(),
            handshakes: Family::default(),
            alerts_open: Family::default(),
            alert_notifications: Family::default(),
        };
        let ingest: LatencyFamily = Family::new_with_constructor(ingest_histogram);
        let mut registry = Registry::default();
        register(&mut registry, &families, &ingest);
        let other = Arc::new(TenantMetrics::new(OTHER_TENANT, &families));
        Metrics {
            config: config.clone(),
            ingest_latency: IngestResult::ALL
                .map(|r| ingest.get_or_create_owned(&vec![("outcome", r.as_str().to_owned())])),
            registry,
            families,
            tenants: Mutex::default(),
            other,
            senders: Senders::default(),
            windows: window::IngestWindows::default(),
        }
    }

    /// The handles `tenant` records to: its own label while fewer than
    /// `max_tenant_labels` tenants have one, `other` after that. Called when
    /// a tenant starts, never for a request, so a sender cannot mint labels.
    pub fn tenant(&self, tenant: &TenantId) -> Arc<TenantMetrics> {
        let mut tenants = self.tenants.lock().expect("metrics lock");
        if let Some(found) = tenants.by_tenant.get(tenant) {
            return found.clone();
        }
        let entry = if tenants.own_labels < self.config.max_tenant_labels
            && tenant.as_str() != OTHER_TENANT
        {
            tenants.own_labels += 1;
            Arc::new(TenantMetrics::new(tenant.as_str(), &self.families))
        } else {
            self.other.clone()
        };
        tenants.by_tenant.insert(tenant.clone(), entry.clone());
        entry
    }

    /// The forwarding handles of route `route` of the tenant counted under
    /// `tenant`, its route label bounded per tenant label. Called when a
    /// tenant starts, never for a request.
    pub fn route(&self, tenant: &Arc<TenantMetrics>, route: &str) -> Arc<RouteMetrics> {
        Arc::new(RouteMetrics::new(tenant.clone(), route, &self.families))
    }

    /// Clock skew and event types of what each `tenant` label's senders send.
    pub fn senders(&self) -> &Senders {
        &self.senders
    }

    /// Each running tenant's ingest counts of the last day, by minute.
    pub fn windows(&self) -> &window::IngestWindows {
        &self.windows
    }

    /// The counters of requests no running tenant answers (unknown ids).
    /// The handles of requests no running tenant answers (unknown ids).
    pub fn other(&self) -> &Arc<TenantMetrics> {
        &self.other
    }

    /// Records how long an ingest request took, with its trace id (if
    /// sampled) as the exemplar of its bucket.
    pub fn ingest_latency(
        &self,
        result: IngestResult,
        elapsed: Duration,
        trace_id: Option<String>,
    ) {
        self.ingest_latency[result as usize].observe(
            elapsed.as_secs_f64(),
            exemplar(trace_id),
            None,
        );
    }

    /// Whether `/metrics` is served on the public HTTP address: enabled,
    /// and no separate `metrics.addr` is set.
    pub fn on_public_port(&self) -> bool {
        self.config.enabled && self.config.addr.is_none()
    }

    /// The registry of everything updated as it happens.
    fn registry(&self) -> &Registry {
        &self.registry
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;

    pub(crate) fn config(max_tenant_labels: usize) -> MetricsConfig {
        MetricsConfig {
            enabled: true,
            max_tenant_labels,
            addr: None,
            scan_limit: crate::config::DEPRECATED_SCAN_LIMIT_DEFAULT,
        }
    }

    #[test]
    fn tenants_past_the_cap_share_other_and_keep_their_label() {
        let m = Metrics::new(&config(2));
        let a = m.tenant(&TenantId::try_from("a").unwrap());
        assert_eq!(m.tenant(&TenantId::try_from("b").unwrap()).label(), "b");
        assert_eq!(
            m.tenant(&TenantId::try_from("c").unwrap()).label(),
            OTHER_TENANT
        );
        assert_eq!(
            m.tenant(&TenantId::try_from("other").unwrap()).label(),
            OTHER_TENANT
        );
        assert!(Arc::ptr_eq(
            &a,
            &m.tenant(&TenantId::try_from("a").unwrap())
        ));
        assert_eq!(m.tenants.lock().unwrap().own_labels, 2, "a and b");
    }
}
