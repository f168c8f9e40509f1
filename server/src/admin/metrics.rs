//! A route's metrics over the control plane: the tenant's ingest and the
//! route's forwarding by minute or hour, and its queue now.

use hookd_control::{
    model::{MetricsPoint, MetricsQuery, RouteMetricsView},
    Result as ApiResult,
};

use super::{activity::seed, api, deliveries::named_route, Backend};

impl Backend {
    /// Route `name` of `tenant_id`'s points over `query.span_ms` up to
    /// now, each `query.step_ms` wide, and its queue from storage.
    pub(super) fn metrics_of(
        &self,
        tenant_id: &str,
        name: &str,
        query: MetricsQuery,
    ) -> ApiResult<RouteMetricsView> {
        let handle = self.tenant(tenant_id)?;
        let route = named_route(&handle, Some(name))?;
        let now = self.now_ms();
        let since = now - query.span_ms;
        let windows = self.services.telemetry.metrics().windows();
        seed(windows, &handle, now)?;
        let ingest = windows.series(handle.data().tenant(), (since, now), query.step_ms);
        let counts = route.data.counts().map_err(api)?;
        let held = match route.hold.is_paused() {
            true => counts.depth,
            false => 0,
        };
        if held > 0 {
            route.metrics.window().held(held, now);
        }
        let forwards = route.metrics.window().series(since, now, query.step_ms);
        let points = ingest
            .iter()
            .zip(&forwards)
            .map(
                |(&(start_ms, accepted, duplicates, rejected), forwarded)| MetricsPoint {
                    start_ms,
                    accepted,
                    duplicates,
                    rejected,
                    delivered: forwarded.delivered,
                    failed: forwarded.failed,
                    dead_lettered: forwarded.dead,
                    latency_p50_ms: forwarded.latency_ms(0.5),
                    latency_p99_ms: forwarded.latency_ms(0.99),
                    held: forwarded.held,
                },
            )
            .collect();
        Ok(RouteMetricsView {
            tenant_id: tenant_id.to_owned(),
            name: route.name.clone(),
            points,
            queue_depth: counts.depth,
            held,
            dead_letters: counts.dead,
            oldest_pending_age_ms: counts.oldest_pending_ms.map(|since| (now - since).max(0)),
        })
    }
}
