//! The forwarding handles of one route, labelled by its tenant's `tenant`
//! label and a `route` label.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use hookd_proto::domain::DEFAULT_ROUTE;
use prometheus_client::metrics::{counter::Counter, gauge::Gauge};

use super::forward_window::ForwardWindow;
use super::{exemplar, Families, Latency, TenantMetrics, OTHER_TENANT};
use crate::{config::MAX_ROUTES, store::lifecycle::Next};

/// Route labels one tenant label holds, `default` included; the next share
/// [`OTHER_ROUTE`].
pub const MAX_ROUTE_LABELS: usize = MAX_ROUTES;

/// The route label past the cap.
pub const OTHER_ROUTE: &str = "other";

/// How a route's transform run ended, the `outcome` label of
/// `hookd_transform_runs_total`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransformRun {
    /// It returned a request, which was sent.
    Ok,
    /// It dropped the event for the route.
    Dropped,
    /// It threw, overran its budget or returned a bad request.
    Failed,
}

impl TransformRun {
    /// Every label, in declaration order.
    const LABELS: [&'static str; 3] = ["ok", "dropped", "failed"];

    /// The run an attempt's outcome shows, for a route with a transform.
    pub fn of(next: &Next) -> TransformRun {
        match next {
            Next::Dropped => TransformRun::Dropped,
            Next::TransformFailed { .. } => TransformRun::Failed,
            Next::Delivered | Next::Retry { .. } | Next::Dead { .. } => TransformRun::Ok,
        }
    }
}

/// The handles of one (`tenant`, `route`) label pair. Every series of it
/// exists from the start, at 0.
///
/// The forwarding handles of one route: attempts by outcome, their latency,
/// open circuit breakers, the concurrency limit and transform runs, labelled by its tenant's
/// `tenant` label and a `route` label. Route labels are bounded per tenant
/// label ([`MAX_ROUTE_LABELS`], then `other`); the routes of tenants past
/// the tenant-label cap share `route="other"` (their default routes
/// `route="default"`), so no route name of theirs becomes a label.
pub struct RouteMetrics {
    tenant: Arc<TenantMetrics>,
    route: String,
    forwards: [Counter; Next::LABELS.len()],
    forward_latency: Latency,
    breakers_open: Gauge,
    concurrency_limit: Gauge,
    /// This route's own limit (its label may be shared); 0: no dispatcher.
    own_limit: AtomicUsize,
    transforms: [Counter; TransformRun::LABELS.len()],
    /// Its outcomes of the last day by minute, for the metrics query.
    window: ForwardWindow,
}

impl RouteMetrics {
    /// The handles of route `route` of the tenant counted under `tenant`.
    pub(super) fn new(tenant: Arc<TenantMetrics>, route: &str, families: &Families) -> Self {
        let label = route_label(&tenant, route);
        let labels = || {
            vec![
                ("tenant", tenant.label().to_owned()),
                ("route", label.clone()),
            ]
        };
        let with = |value: &str| {
            let mut labels = labels();
            labels.push(("outcome", value.to_owned()));
            labels
        };
        RouteMetrics {
            forwards: Next::LABELS.map(|o| families.forwards.get_or_create_owned(&with(o))),
            forward_latency: families.forward_latency.get_or_create_owned(&labels()),
            breakers_open: families.breakers_open.get_or_create_owned(&labels()),
            concurrency_limit: families.concurrency_limits.get_or_create_owned(&labels()),
            own_limit: AtomicUsize::new(0),
            transforms: TransformRun::LABELS
                .map(|o| families.transform_runs.get_or_create_owned(&with(o))),
            route: label,
            tenant,
            window: ForwardWindow::default(),
        }
    }

    /// The `tenant` label value.
    pub fn tenant_label(&self) -> &str {
        self.tenant.label()
    }

    /// The `route` label value.
    pub fn route_label(&self) -> &str {
        &self.route
    }

    /// Counts a forward attempt recorded at `now_ms` and its duration,
    /// with the attempt's trace id (if sampled) as the exemplar of its
    /// bucket.
    pub fn forwarded(
        &self,
        (outcome, now_ms): (&Next, i64),
        elapsed: std::time::Duration,
        trace_id: Option<String>,
    ) {
        self.forwards[outcome.index()].inc();
        self.forward_latency
            .observe(elapsed.as_secs_f64(), exemplar(trace_id), None);
        self.window.record(outcome, elapsed, now_ms);
    }

    /// Its outcomes of the last day, by minute.
    pub fn window(&self) -> &ForwardWindow {
        &self.window
    }

    /// The concurrency limit this route's dispatcher runs with now; `None`
    /// while none runs (a pulled route, or a tenant not forwarding here).
    pub fn concurrency_limit(&self) -> Option<usize> {
        Some(self.own_limit.load(Ordering::Relaxed)).filter(|limit| *limit > 0)
    }

    /// Counts one run of the route's transform.
    pub fn transformed(&self, run: TransformRun) {
        self.transforms[run as usize].inc();
    }
}

/// The route label `route` of a tenant counted under `tenant` gets: its
/// name while the tenant label holds fewer than [`MAX_ROUTE_LABELS`] (a
/// route keeps its label), `other` past that and for every route but the
/// default one under the shared `other` tenant label.
fn route_label(tenant: &TenantMetrics, route: &str) -> String {
    if route == DEFAULT_ROUTE {
        return route.to_owned();
    }
    if tenant.label() == OTHER_TENANT {
        return OTHER_ROUTE.to_owned();
    }
    let mut routes = tenant.routes.lock().expect("metrics lock");
    if routes.iter().any(|r| r == route) {
        return route.to_owned();
    }
    if routes.len() + 1 < MAX_ROUTE_LABELS && route != OTHER_ROUTE {
        routes.push(route.to_owned());
        return route.to_owned();
    }
    OTHER_ROUTE.to_owned()
}

/// Counts one dispatcher's circuit breaker in its route's
/// `hookd_circuit_breaker_open` (and its tenant's count) while it is not
/// closed; a dispatcher that stops (tenant removed or restarted) takes its
/// count with it.
pub struct BreakerGauge {
    metrics: Arc<RouteMetrics>,
    open: bool,
}

impl BreakerGauge {
    /// A gauge for a closed breaker.
    pub fn new(metrics: Arc<RouteMetrics>) -> Self {
        BreakerGauge {
            metrics,
            open: false,
        }
    }

    /// Records whether the breaker is open (or half-open) now.
    pub fn set(&mut self, open: bool) {
        if open != self.open {
            let delta = if open { 1 } else { -1 };
            self.metrics.breakers_open.inc_by(delta);
            self.metrics.tenant.breakers_open.inc_by(delta);
            self.open = open;
        }
    }
}

impl Drop for BreakerGauge {
    fn drop(&mut self) {
        self.set(false);
    }
}

/// Shows one dispatcher's concurrency limit in its route's
/// `hookd_route_concurrency_limit` (routes sharing a label sum) and to
/// [`RouteMetrics::concurrency_limit`]; a dispatcher that stops takes its
/// share with it.
pub struct ConcurrencyGauge {
    metrics: Arc<RouteMetrics>,
    shown: usize,
}

impl ConcurrencyGauge {
    /// A gauge showing nothing yet.
    pub fn new(metrics: Arc<RouteMetrics>) -> Self {
        ConcurrencyGauge { metrics, shown: 0 }
    }

    /// Shows `limit`.
    pub fn set(&mut self, limit: usize) {
        if limit != self.shown {
            let delta = limit as i64 - self.shown as i64;
            self.metrics.concurrency_limit.inc_by(delta);
            self.metrics.own_limit.store(limit, Ordering::Relaxed);
            self.shown = limit;
        }
    }
}

impl Drop for ConcurrencyGauge {
    fn drop(&mut self) {
        self.set(0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ids::TenantId, metrics::Metrics};

    #[test]
    fn route_labels_are_bounded_per_tenant_and_shared_past_the_tenant_cap() {
        let m = Metrics::new(&crate::metrics::tests::config(1));
        let acme = m.tenant(&TenantId::try_from("acme").unwrap());
        let label = |tenant: &Arc<TenantMetrics>, route: &str| {
            m.route(tenant, route).route_label().to_owned()
        };
        assert_eq!(label(&acme, "default"), "default");
        for i in 0..MAX_ROUTE_LABELS - 1 {
            assert_eq!(label(&acme, &format!("r{i}")), format!("r{i}"));
        }
        assert_eq!(label(&acme, "r0"), "r0", "a route keeps its label");
        assert_eq!(label(&acme, "one-too-many"), OTHER_ROUTE);
        let beta = m.tenant(&TenantId::try_from("beta").unwrap());
        assert_eq!(beta.label(), OTHER_TENANT);
        assert_eq!(label(&beta, "audit"), OTHER_ROUTE);
        assert_eq!(label(&beta, "default"), "default");
    }

    #[test]
    fn breaker_gauge_counts_open_breakers_and_forgets_dropped_ones() {
        let m = Metrics::new(&crate::metrics::tests::config(0));
        let route = m.route(m.other(), "default");
        let (mut one, mut two) = (
            BreakerGauge::new(route.clone()),
            BreakerGauge::new(route.clone()),
        );
        one.set(true);
        one.set(true);
        two.set(true);
        assert_eq!(route.breakers_open.get(), 2);
        assert!(m.other().breaker_open());
        two.set(false);
        drop(one);
        assert_eq!(route.breakers_open.get(), 0);
        assert!(!m.other().breaker_open());
    }

    #[test]
    fn concurrency_gauge_sums_shared_labels_and_forgets_stopped_dispatchers() {
        let m = Metrics::new(&crate::metrics::tests::config(0));
        let (one, two) = (m.route(m.other(), "a"), m.route(m.other(), "b"));
        assert_eq!(one.route_label(), two.route_label(), "both `other`");
        let (mut first, mut second) = (
            ConcurrencyGauge::new(one.clone()),
            ConcurrencyGauge::new(two.clone()),
        );
        assert_eq!(one.concurrency_limit(), None);
        first.set(8);
        second.set(4);
        first.set(6);
        assert_eq!(one.concurrency_limit.get(), 10);
        assert_eq!(
            (one.concurrency_limit(), two.concurrency_limit()),
            (Some(6), Some(4))
        );
        drop(second);
        assert_eq!(one.concurrency_limit.get(), 6);
        assert_eq!(two.concurrency_limit(), None);
    }
}
