//! Prometheus metrics of one server: counters and histograms updated with
//! relaxed atomics where things happen, gauges (queue depth, dead letters)
//! kept by storage as entries come and go, and the tenant-label cap.

mod histogram;
mod render;

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicI64, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

pub use histogram::{Histogram, FORWARD_BUCKETS, INGEST_BUCKETS};
pub use render::scrape;

use crate::{config::MetricsConfig, error::ErrorCode, ids::TenantId};

/// The label every tenant past the cap, and every unknown tenant id, shares.
pub const OTHER_TENANT: &str = "other";

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

/// What a forward attempt led to, the `outcome` label of
/// `hookd_forward_attempts_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ForwardOutcome {
    /// The destination took it.
    Delivered,
    /// Failed; another attempt is scheduled.
    Retry,
    /// Failed for good: dead-lettered.
    Dead,
}

impl ForwardOutcome {
    const ALL: [ForwardOutcome; 3] = [
        ForwardOutcome::Delivered,
        ForwardOutcome::Retry,
        ForwardOutcome::Dead,
    ];

    /// The label value.
    pub fn as_str(self) -> &'static str {
        match self {
            ForwardOutcome::Delivered => "delivered",
            ForwardOutcome::Retry => "retry",
            ForwardOutcome::Dead => "dead",
        }
    }
}

/// The counters of one `tenant` label: one tenant, or every tenant counted
/// as `other`.
pub struct TenantMetrics {
    label: String,
    accepted: AtomicU64,
    duplicates: AtomicU64,
    rejected: [AtomicU64; ErrorCode::ALL.len()],
    forwards: [AtomicU64; ForwardOutcome::ALL.len()],
    forward_latency: Histogram,
    breakers_open: AtomicI64,
}

impl TenantMetrics {
    fn new(label: &str) -> Self {
        TenantMetrics {
            label: label.to_owned(),
            accepted: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            rejected: std::array::from_fn(|_| AtomicU64::new(0)),
            forwards: std::array::from_fn(|_| AtomicU64::new(0)),
            forward_latency: Histogram::new(FORWARD_BUCKETS),
            breakers_open: AtomicI64::new(0),
        }
    }

    /// The `tenant` label value.
    pub fn label(&self) -> &str {
        &self.label
    }

    /// Counts a new delivery.
    pub fn accepted(&self) {
        self.accepted.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a duplicate.
    pub fn duplicate(&self) {
        self.duplicates.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts a rejection with its error code.
    pub fn rejected(&self, code: ErrorCode) {
        let slot = ErrorCode::ALL
            .iter()
            .position(|c| *c == code)
            .expect("every code is in ErrorCode::ALL");
        self.rejected[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// Accepted, duplicates, and the codes refused at least once with their
    /// counts, since start.
    pub fn ingest_counts(&self) -> (u64, u64, Vec<(ErrorCode, u64)>) {
        let rejected = ErrorCode::ALL
            .iter()
            .zip(&self.rejected)
            .map(|(code, n)| (*code, n.load(Ordering::Relaxed)))
            .filter(|(_, n)| *n > 0)
            .collect();
        (
            self.accepted.load(Ordering::Relaxed),
            self.duplicates.load(Ordering::Relaxed),
            rejected,
        )
    }

    /// Whether a circuit breaker counted under this label is open now.
    pub fn breaker_open(&self) -> bool {
        self.breakers_open.load(Ordering::Relaxed) > 0
    }

    /// Counts a forward attempt and its duration.
    pub fn forwarded(&self, outcome: ForwardOutcome, elapsed: Duration) {
        self.forwards[outcome as usize].fetch_add(1, Ordering::Relaxed);
        self.forward_latency.observe(elapsed);
    }
}

/// Counts one dispatcher's circuit breaker in its label's
/// `hookd_circuit_breaker_open` while it is not closed; a dispatcher that
/// stops (tenant removed or restarted) takes its count with it.
pub struct BreakerGauge {
    metrics: Arc<TenantMetrics>,
    open: bool,
}

impl BreakerGauge {
    /// A gauge for a closed breaker.
    pub fn new(metrics: Arc<TenantMetrics>) -> Self {
        BreakerGauge {
            metrics,
            open: false,
        }
    }

    /// Records whether the breaker is open (or half-open) now.
    pub fn set(&mut self, open: bool) {
        if open != self.open {
            let delta = if open { 1 } else { -1 };
            self.metrics
                .breakers_open
                .fetch_add(delta, Ordering::Relaxed);
            self.open = open;
        }
    }
}

impl Drop for BreakerGauge {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Every metric of one server.
pub struct Metrics {
    config: MetricsConfig,
    /// Tenant id -> its label's counters; a tenant keeps its label across
    /// restarts and reconfiguration.
    tenants: Mutex<HashMap<TenantId, Arc<TenantMetrics>>>,
    /// Labelled entries in the order they were handed out, `other` first.
    labels: Mutex<Vec<Arc<TenantMetrics>>>,
    other: Arc<TenantMetrics>,
    ingest_latency: [Histogram; IngestResult::ALL.len()],
}

impl Metrics {
    /// Empty metrics, with the label cap of `config`.
    pub fn new(config: &MetricsConfig) -> Self {
        let other = Arc::new(TenantMetrics::new(OTHER_TENANT));
        Metrics {
            config: config.clone(),
            tenants: Mutex::default(),
            labels: Mutex::new(vec![other.clone()]),
            other,
            ingest_latency: std::array::from_fn(|_| Histogram::new(INGEST_BUCKETS)),
        }
    }

    /// The counters `tenant` records to: its own label while fewer than
    /// `max_tenant_labels` tenants have one, `other` after that. Called when
    /// a tenant starts, never for a request, so a sender cannot mint labels.
    pub fn tenant(&self, tenant: &TenantId) -> Arc<TenantMetrics> {
        let mut tenants = self.tenants.lock().expect("metrics lock");
        if let Some(found) = tenants.get(tenant) {
            return found.clone();
        }
        let mut labels = self.labels.lock().expect("metrics lock");
        let entry = if labels.len() - 1 < self.config.max_tenant_labels
            && tenant.as_str() != OTHER_TENANT
        {
            let entry = Arc::new(TenantMetrics::new(tenant.as_str()));
            labels.push(entry.clone());
            entry
        } else {
            self.other.clone()
        };
        tenants.insert(tenant.clone(), entry.clone());
        entry
    }

    /// The counters of requests no running tenant answers (unknown ids).
    pub fn other(&self) -> &Arc<TenantMetrics> {
        &self.other
    }

    /// Records how long an ingest request took.
    pub fn ingest_latency(&self, result: IngestResult, elapsed: Duration) {
        self.ingest_latency[result as usize].observe(elapsed);
    }

    /// Whether `/metrics` is served on the public HTTP address: enabled,
    /// and no separate `metrics.addr` is set.
    pub fn on_public_port(&self) -> bool {
        self.config.enabled && self.config.addr.is_none()
    }

    fn labelled(&self) -> Vec<Arc<TenantMetrics>> {
        let mut labels = self.labels.lock().expect("metrics lock").clone();
        labels.sort_by(|a, b| a.label.cmp(&b.label));
        labels
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(max_tenant_labels: usize) -> MetricsConfig {
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
        let labels: Vec<String> = m.labelled().iter().map(|t| t.label.clone()).collect();
        assert_eq!(labels, ["a", "b", "other"]);
    }

    #[test]
    fn breaker_gauge_counts_open_breakers_and_forgets_dropped_ones() {
        let m = Metrics::new(&config(0));
        let (mut one, mut two) = (
            BreakerGauge::new(m.other().clone()),
            BreakerGauge::new(m.other().clone()),
        );
        one.set(true);
        one.set(true);
        two.set(true);
        assert_eq!(m.other().breakers_open.load(Ordering::Relaxed), 2);
        two.set(false);
        drop(one);
        assert_eq!(m.other().breakers_open.load(Ordering::Relaxed), 0);
    }
}
