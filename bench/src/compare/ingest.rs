//! The ingest phases: `unique`, `duplicates`, `tenants`, `routes` and
//! `postgres`, each hookd's accepted/s against a baseline's.

use std::{sync::Arc, time::Duration};

use super::{rounds::in_round_order, Run};
use crate::{
    measure_process,
    plan::{self, Plan, PlanSpec},
    ratios::{Base, Figure, Skipped},
    report::Summary,
    servers::{self, HookdSpec},
    storage::postgres_config,
};

impl Run<'_> {
    /// What the one-route baseline is called.
    fn one_route_name(&self) -> String {
        format!("hookd sled, {} tenant(s), 1 route", self.spec.tenants.len())
    }

    /// One hookd started as `hookd` says, loaded once with `spec`.
    async fn single(
        &self,
        label: &str,
        hookd: &HookdSpec,
        spec: &PlanSpec,
    ) -> anyhow::Result<Summary> {
        let process = servers::start_hookd(hookd).await?;
        let plan = Arc::new(Plan::build(spec)?);
        let summary = measure_process(label, &plan, &self.at(process.addr), Some(&process)).await;
        process.stop(Duration::from_secs(30));
        self.say(&summary.text());
        Ok(summary)
    }

    pub(super) async fn unique(&mut self) -> anyhow::Result<()> {
        let name = if self.spec.dup_ratio == 0.0 {
            "unique"
        } else {
            "ingest"
        };
        let (comparison, figure) = self.rounds_of(name, &self.spec).await?;
        self.one_route = Some(Base::of(&comparison.hookd));
        self.report.figures.push(figure);
        self.report.set_head_to_head(comparison);
        Ok(())
    }

    pub(super) async fn duplicates(&mut self) -> anyhow::Result<()> {
        let spec = PlanSpec {
            dup_ratio: 1.0,
            ..self.spec.clone()
        };
        let (_, figure) = self.rounds_of("duplicates", &spec).await?;
        self.report.figures.push(figure);
        Ok(())
    }

    /// `--scale-runs` runs into a hookd of `--scale-tenants` tenants, each
    /// against a run into a one-tenant hookd started beside it, the two back
    /// to back (the one-tenant run first in the first run, second in the
    /// next, and so on). With `--rounds`, each run is that many such pairs,
    /// the order alternating on, and its figure the round with the median
    /// ratio. Both hookds stay up for all their runs, so each run finds the
    /// store its runs (and rounds) before it wrote.
    pub(super) async fn tenants(&mut self) -> anyhow::Result<()> {
        let n = self.args.scale_tenants;
        let tenants = plan::tenant_ids(&self.args.load.tenant_pattern, n)?;
        let spec = PlanSpec {
            tenants: tenants.clone(),
            ..self.spec.clone()
        };
        let many = servers::start_hookd(&self.hookd(tenants)).await?;
        let one = servers::start_hookd(&self.hookd(self.spec.tenants.clone())).await?;
        let one_label = self.one_route_name();
        let (this, spec) = (&*self, &spec);
        let mut figures = Vec::new();
        for run in 1..=this.args.scale_runs {
            let name = format!("tenants_{n}_run{run}");
            let label = format!("hookd, {n} tenants, run {run}");
            let baseline = format!("{one_label}, run {run} beside it");
            let figure = this
                .median_of(&name, |round| {
                    let (one, many) = (&one, &many);
                    let (name, label, one_label, baseline) = (&name, &label, &one_label, &baseline);
                    async move {
                        // Signed just before their round, so the rounds before do not age them.
                        let (one_plan, plan) = (
                            Arc::new(Plan::build(&this.spec)?),
                            Arc::new(Plan::build(spec)?),
                        );
                        let (base, summary) = in_round_order(
                            (run - 1) * this.args.rounds + round,
                            measure_process(one_label, &one_plan, &this.at(one.addr), Some(one)),
                            measure_process(label, &plan, &this.at(many.addr), Some(many)),
                        )
                        .await;
                        this.say(&base.text());
                        this.say(&summary.text());
                        let base = Some(Base::of(&base));
                        Ok(Figure::ingest(name, &summary, baseline, base))
                    }
                })
                .await?;
            figures.push(figure);
        }
        self.report.figures.extend(figures);
        many.stop(Duration::from_secs(30));
        one.stop(Duration::from_secs(30));
        Ok(())
    }

    /// `--routes` routes against one, each round running both hookds back
    /// to back (one route first in even rounds, second in odd ones).
    pub(super) async fn routes(&mut self) -> anyhow::Result<()> {
        let routes = self.args.routes;
        let name = format!("routes_{routes}");
        let one = self.hookd(self.spec.tenants.clone());
        let several = HookdSpec {
            pulled_routes: routes - 1,
            ..one.clone()
        };
        let label = format!("hookd, {routes} routes");
        let one_label = self.one_route_name();
        let baseline = format!("{one_label}, same round");
        let this = &*self;
        let figure = this
            .median_of(&name, |round| {
                let (one, several) = (&one, &several);
                let (name, label, one_label, baseline) = (&name, &label, &one_label, &baseline);
                async move {
                    let (base, summary) = in_round_order(
                        round,
                        this.single(one_label, one, &this.spec),
                        this.single(label, several, &this.spec),
                    )
                    .await;
                    let base = Some(Base::of(&base?));
                    Ok(Figure::ingest(name, &summary?, baseline, base))
                }
            })
            .await?;
        self.report.figures.push(figure);
        Ok(())
    }

    pub(super) async fn postgres(&mut self) -> anyhow::Result<()> {
        let Some(url) = self.args.postgres_url.clone() else {
            let reason = "no --postgres-url or HOOKD_BENCH_POSTGRES_URL given".to_owned();
            self.say(&format!("postgres: skipped ({reason})\n"));
            self.report.skipped.push(Skipped {
                phase: "postgres".into(),
                reason,
            });
            return Ok(());
        };
        let hookd = HookdSpec {
            extra_config: postgres_config(&url),
            ..self.hookd(self.spec.tenants.clone())
        };
        let summary = self.single("hookd, postgres", &hookd, &self.spec).await?;
        let figure = Figure::ingest("postgres", &summary, self.one_route_name(), self.one_route);
        self.report.figures.push(figure);
        Ok(())
    }
}
