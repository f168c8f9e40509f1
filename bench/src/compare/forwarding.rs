//! The forwarding phases: `forward` (delivered/s to a local sink, then a
//! backlog drained) and `features` (alerts and adaptive concurrency on
//! against off).

use std::time::Duration;

use super::{
    configs::{alerts_off, alerts_on},
    Run,
};
use crate::{
    backlog,
    forward::{self, ForwardReport},
    plan::{self, PlanSpec},
    ratios::{Base, Figure},
    scenario::Scenario,
    sink::{Reply, Sink},
    storage::Storage,
};

/// Deliveries in the `forward_backlog` figure's backlog without
/// `--forward-backlog` or `--count`.
const DEFAULT_BACKLOG: usize = 60_000;

impl Run<'_> {
    /// A forwarding scenario as `compare`'s flags say, with `tenant_keys`
    /// and `extra_config` added to hookd's config.
    fn scenario(&self, tenant_keys: &str, extra_config: String) -> Scenario {
        Scenario {
            hookd: self.hookd(Vec::new()).binary,
            workers: self.args.workers,
            log_filter: self.args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(self.args.ready_timeout_secs),
            max_in_flight: self.args.max_in_flight,
            drain_timeout: Duration::from_secs_f64(self.args.drain_timeout_secs),
            sink_workers: 1,
            routes: 1,
            route_replies: Vec::new(),
            tenant_keys: tenant_keys.to_owned(),
            extra_config,
            storage: Storage::Sled,
            alone: false,
        }
    }

    /// Unique deliveries spread over the forwarding tenants.
    fn forward_spec(&self) -> anyhow::Result<PlanSpec> {
        Ok(PlanSpec {
            tenants: plan::tenant_ids(&self.args.load.tenant_pattern, self.args.forward_tenants)?,
            dup_ratio: 0.0,
            ..self.spec.clone()
        })
    }

    async fn forward_once(&self, scenario: &Scenario) -> anyhow::Result<ForwardReport> {
        let report = forward::measure(scenario, &self.forward_spec()?, &self.opts).await?;
        self.say(&report.text());
        Ok(report)
    }

    pub(super) async fn forward(&mut self) -> anyhow::Result<()> {
        let scenario = self.scenario("", String::new());
        let report = self.forward_once(&scenario).await?;
        self.report
            .figures
            .push(Figure::forwarded("forward", &report));
        let backlog = self.args.forward_backlog.or(self.args.load.count);
        let spec = PlanSpec {
            requests: backlog.unwrap_or(DEFAULT_BACKLOG),
            ..self.forward_spec()?
        };
        let drained = backlog::measure(&scenario, &spec, &self.opts).await?;
        self.say(&drained.text());
        self.report
            .figures
            .push(Figure::drained("forward_backlog", &drained));
        Ok(())
    }

    /// Off, on, off: the two runs with the features off are the baseline
    /// (their mean) and, against each other, the noise.
    pub(super) async fn features(&mut self) -> anyhow::Result<()> {
        let off = self.scenario("", alerts_off());
        let before = self.forward_once(&off).await?;
        let alert_sink = Sink::start(1, Reply::Status(204))?;
        let on = self.scenario(
            "adaptive_concurrency = true\n",
            alerts_on(&format!("http://{}/alerts", alert_sink.addr)),
        );
        let with = self.forward_once(&on).await;
        let notifications = alert_sink.arrivals.requests();
        alert_sink.stop().await;
        let with = with?;
        self.say(&format!(
            "alerts on: the operator's sink received {notifications} notification(s)\n"
        ));
        let after = self.forward_once(&off).await?;
        let off_name = "both off (mean of the runs before and after)";
        let ingest_off = Base::mean(Base::of(&before.load), Base::of(&after.load));
        let delivered = |r: &ForwardReport| {
            let d = &r.delivery;
            Base::rate(d.delivered_per_sec, d.latency_ms.p50, d.latency_ms.p99)
        };
        let delivered_off = Base::mean(delivered(&before), delivered(&after));
        let figures = [
            Figure::ingest("alerts_adaptive_on", &with.load, off_name, Some(ingest_off)),
            Figure::new(
                "alerts_adaptive_on_delivered",
                "delivered/s",
                delivered(&with),
                with.delivery.missing,
                off_name,
                Some(delivered_off),
            ),
            Figure::ingest(
                "alerts_adaptive_off_again",
                &after.load,
                "both off, the run before",
                Some(Base::of(&before.load)),
            ),
        ];
        self.report.figures.extend(figures);
        Ok(())
    }
}
