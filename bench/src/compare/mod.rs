//! `hookd-bench compare`: every ratio in one run. Each phase starts the
//! servers it needs as child processes on 127.0.0.1, loads them for
//! `--duration-secs` (or `--count`) and stops them:
//!
//! - `unique`: the bare actix-web server and hookd under the same load (as
//!   given: unique deliveries unless `--dup-ratio` says otherwise);
//! - `duplicates`: the same with every timed request a replay;
//! - `tenants`: one hookd with `--scale-tenants` tenants, loaded
//!   `--scale-runs` times in a row, the store growing, each run against a
//!   run of a one-tenant hookd loaded beside it as often (both stores grow
//!   alike), the two back to back in alternating order;
//! - `routes`: hookd with `--routes` routes per tenant (the others pulled:
//!   the fan-out in the acknowledging commit) against a one-route hookd
//!   run beside it;
//! - `forward`: delivered/s to a local sink against accepted/s, then
//!   `forward_backlog`: a backlog accepted in pull mode drained after a
//!   restart with a destination (forwarding alone), against the accepted/s
//!   of its load;
//! - `postgres`: hookd on PostgreSQL (`--postgres-url`) against sled;
//! - `features`: alerts (an operator sink, every rule on) and adaptive
//!   concurrency on, against both off in the runs before and after.
//!
//! With `--rounds N`, `unique`, `duplicates` and `routes` run N rounds, each
//! the figure's run and its baseline's back to back (the baseline first in
//! the first round, second in the next, and so on), and the figure is the
//! round with the median ratio; every round's ratio is printed with it.
//! In `tenants` each of the `--scale-runs` runs is N such rounds into the
//! same two hookds, so the stores grow through every round.

mod configs;

use std::{net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::bail;
use clap::{Args, ValueEnum};

use self::configs::{alerts_off, alerts_on, postgres_config};
use crate::{
    backlog,
    forward::{self, ForwardReport},
    load::LoadOptions,
    measure_process,
    plan::{self, Plan, PlanSpec},
    positive_secs,
    ratios::{Base, Figure, Report, Skipped},
    report::{Comparison, Summary},
    scenario::Scenario,
    servers::{self, HookdSpec},
    sink::{Reply, Sink},
    LoadArgs,
};

/// Deliveries in the `forward_backlog` figure's backlog without
/// `--forward-backlog` or `--count`.
const DEFAULT_BACKLOG: usize = 60_000;

/// One part of `compare`; they run in this order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, ValueEnum)]
pub enum Phase {
    /// Bare server and hookd, the load as given.
    Unique,
    /// Bare server and hookd, every timed request a duplicate.
    Duplicates,
    /// Many tenants, several runs into the same hookd.
    Tenants,
    /// Several routes per tenant against one.
    Routes,
    /// Delivered/s to a local sink.
    Forward,
    /// PostgreSQL against sled.
    Postgres,
    /// Alerts and adaptive concurrency on against off.
    Features,
}

/// The flags of `hookd-bench compare`.
#[derive(Debug, Args)]
pub struct CompareArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// HTTP workers of both servers (0: one per core, both servers' default).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// hookd's log filter; its default `info` logs one line per accepted delivery.
    #[arg(long, default_value = "info")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz (many tenants start slowly).
    #[arg(long, default_value_t = 600)]
    ready_timeout_secs: u64,
    /// The phases to run, comma-separated (default: every one).
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "unique,duplicates,tenants,routes,forward,postgres,features"
    )]
    phases: Vec<Phase>,
    /// Routes per tenant in the `routes` phase (2..=16), the others pulled:
    /// every accepted event is written once per route in the acknowledging commit.
    #[arg(long, default_value_t = 3)]
    routes: usize,
    /// Rounds of the `unique`, `duplicates` and `routes` phases and of each
    /// run of `tenants` (1..=21):
    /// each runs the figure and its baseline back to back, in alternating
    /// order, and the figure is the round with the median ratio.
    #[arg(long, default_value_t = 1)]
    rounds: usize,
    /// Tenants of the `tenants` phase.
    #[arg(long, default_value_t = 10_000)]
    scale_tenants: usize,
    /// Runs of the `tenants` phase, one after another into the same hookd.
    #[arg(long, default_value_t = 3)]
    scale_runs: usize,
    /// Tenants forwarding in the `forward` and `features` phases.
    #[arg(long, default_value_t = 10)]
    forward_tenants: usize,
    /// Deliveries in the `forward` phase's backlog (default: `--count` if
    /// given, else 60,000).
    #[arg(long)]
    forward_backlog: Option<usize>,
    /// Their `max_in_flight` (1..=1024).
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// After a forwarding load, wait at most this long for every accepted event.
    #[arg(long, default_value_t = 60.0)]
    drain_timeout_secs: f64,
    /// PostgreSQL URL of the `postgres` phase (hookd makes its tables there);
    /// without one the phase is skipped.
    #[arg(long, env = "HOOKD_BENCH_POSTGRES_URL", hide_env_values = true)]
    postgres_url: Option<String>,
    /// The commit measured, for the report (default: `git rev-parse HEAD`).
    #[arg(long)]
    commit: Option<String>,
    #[command(flatten)]
    load: LoadArgs,
}

impl CompareArgs {
    /// The flags' own bounds, checked before anything starts.
    fn check(&self) -> anyhow::Result<()> {
        if !(2..=16).contains(&self.routes) {
            bail!("--routes must be between 2 and 16, got {}", self.routes);
        }
        if self.scale_tenants == 0 || self.scale_runs == 0 || self.forward_tenants == 0 {
            bail!("--scale-tenants, --scale-runs and --forward-tenants must be at least 1");
        }
        if !(1..=21).contains(&self.rounds) {
            bail!("--rounds must be between 1 and 21, got {}", self.rounds);
        }
        if self.forward_backlog == Some(0) {
            bail!("--forward-backlog must be at least 1");
        }
        positive_secs("--drain-timeout-secs", self.drain_timeout_secs)?;
        Ok(())
    }

    /// The phases asked for, each once, in their order.
    fn phases(&self) -> Vec<Phase> {
        let mut phases = self.phases.clone();
        phases.sort();
        phases.dedup();
        phases
    }
}

/// What every phase shares.
struct Run<'a> {
    args: &'a CompareArgs,
    spec: PlanSpec,
    opts: LoadOptions,
    report: Report,
    /// hookd on sled with one route, from `unique`.
    one_route: Option<Base>,
}

/// Runs the phases asked for and prints every figure.
pub async fn run(args: CompareArgs) -> anyhow::Result<()> {
    args.check()?;
    if cfg!(debug_assertions) && !args.load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let spec = args.load.plan_spec()?;
    let opts = args.load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let report = Report {
        commit: args.commit.clone().or_else(git_head),
        connections: opts.connections,
        duration_secs: opts.duration.map(|d| d.as_secs_f64()),
        ..Report::default()
    };
    let mut run = Run {
        args: &args,
        spec,
        opts,
        report,
        one_route: None,
    };
    for phase in args.phases() {
        match phase {
            Phase::Unique => run.unique().await?,
            Phase::Duplicates => run.duplicates().await?,
            Phase::Tenants => run.tenants().await?,
            Phase::Routes => run.routes().await?,
            Phase::Forward => run.forward().await?,
            Phase::Postgres => run.postgres().await?,
            Phase::Features => run.features().await?,
        }
    }
    if args.load.json {
        println!("{}", serde_json::to_string_pretty(&run.report)?);
    } else {
        print!("{}", run.report.text());
    }
    Ok(())
}

impl Run<'_> {
    /// Prints a phase's own report unless the output is JSON.
    fn say(&self, text: &str) {
        if !self.args.load.json {
            print!("{text}");
        }
    }

    /// hookd declaring `tenants`, in pull mode with one route.
    fn hookd(&self, tenants: Vec<String>) -> HookdSpec {
        HookdSpec {
            binary: self
                .args
                .hookd
                .clone()
                .unwrap_or_else(servers::default_hookd),
            tenants,
            scheme: self.spec.scheme,
            secret: self.spec.secret.clone(),
            kid: self.spec.kid.clone(),
            tolerance_secs: 300 + 4 * self.opts.duration.map_or(0, |d| d.as_secs()),
            max_body_bytes: (1 << 20).max(2 * self.spec.body_size),
            workers: self.args.workers,
            log_filter: self.args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(self.args.ready_timeout_secs),
            destination: None,
            pulled_routes: 0,
            extra_config: String::new(),
        }
    }

    /// What the one-route baseline is called.
    fn one_route_name(&self) -> String {
        format!("hookd sled, {} tenant(s), 1 route", self.spec.tenants.len())
    }

    /// The bare server and hookd under the same deliveries of `spec`, the
    /// bare server measured first in even rounds and second in odd ones.
    async fn head_to_head(&self, spec: &PlanSpec, round: usize) -> anyhow::Result<Comparison> {
        let hookd = servers::start_hookd(&self.hookd(spec.tenants.clone())).await?;
        let bare = servers::start_bare(self.args.workers)?;
        // Signed once both servers are up, so hookd's start does not age the timestamps.
        let plan = Arc::new(Plan::build(spec)?);
        let bare_run = async {
            let summary = measure_process("bare", &plan, &self.at(bare.addr), Some(&bare)).await;
            bare.stop(Duration::from_secs(5));
            summary
        };
        let hookd_opts = self.at(hookd.addr);
        let hookd_run = measure_process("hookd", &plan, &hookd_opts, Some(&hookd));
        let (bare_summary, hookd_summary) = in_round_order(round, bare_run, hookd_run).await;
        hookd.stop(Duration::from_secs(30));
        Ok(Comparison::new(bare_summary, hookd_summary))
    }

    /// `--rounds` head-to-heads of `spec`, each printed; returns the median
    /// round's comparison and its figure `name`, with every round's ratio.
    async fn rounds_of(&self, name: &str, spec: &PlanSpec) -> anyhow::Result<(Comparison, Figure)> {
        let mut comparisons = Vec::new();
        let mut figures = Vec::new();
        for round in 0..self.args.rounds {
            self.say(&self.round_title(name, round));
            let comparison = self.head_to_head(spec, round).await?;
            self.say(&comparison.text());
            let bare = Base::of(&comparison.bare);
            figures.push(Figure::ingest(name, &comparison.hookd, "bare", Some(bare)));
            comparisons.push(comparison);
        }
        let (median, figure) = Figure::median_round(figures).expect("at least one round");
        Ok((comparisons.swap_remove(median), figure))
    }

    /// The heading of a round of figure `name`, when there are several.
    fn round_title(&self, name: &str, round: usize) -> String {
        match self.args.rounds {
            1 => String::new(),
            n => format!("{name}: round {} of {n}\n", round + 1),
        }
    }

    /// `--rounds` rounds of figure `name`, each headed (when there are
    /// several) and made by `round`; returns the round with the median
    /// ratio, with every round's ratio.
    async fn median_of<F, Fut>(&self, name: &str, mut round: F) -> anyhow::Result<Figure>
    where
        F: FnMut(usize) -> Fut,
        Fut: std::future::Future<Output = anyhow::Result<Figure>>,
    {
        let mut figures = Vec::new();
        for n in 0..self.args.rounds {
            self.say(&self.round_title(name, n));
            figures.push(round(n).await?);
        }
        let (_, figure) = Figure::median_round(figures).expect("at least one round");
        Ok(figure)
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

    fn at(&self, addr: SocketAddr) -> LoadOptions {
        LoadOptions {
            addr,
            ..self.opts.clone()
        }
    }

    async fn unique(&mut self) -> anyhow::Result<()> {
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

    async fn duplicates(&mut self) -> anyhow::Result<()> {
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
    async fn tenants(&mut self) -> anyhow::Result<()> {
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
    async fn routes(&mut self) -> anyhow::Result<()> {
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

    async fn forward(&mut self) -> anyhow::Result<()> {
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

    async fn postgres(&mut self) -> anyhow::Result<()> {
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

    /// Off, on, off: the two runs with the features off are the baseline
    /// (their mean) and, against each other, the noise.
    async fn features(&mut self) -> anyhow::Result<()> {
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

/// Runs `baseline` and `figure` one after the other: the baseline first
/// in even rounds, second in odd ones. Returns (baseline, figure).
async fn in_round_order<T>(
    round: usize,
    baseline: impl std::future::Future<Output = T>,
    figure: impl std::future::Future<Output = T>,
) -> (T, T) {
    if round % 2 == 1 {
        let figure = figure.await;
        (baseline.await, figure)
    } else {
        let baseline = baseline.await;
        (baseline, figure.await)
    }
}

/// `git rev-parse HEAD` of the current directory, if it is a git checkout.
fn git_head() -> Option<String> {
    let output = std::process::Command::new("git")
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    let head = String::from_utf8(output.stdout).ok()?.trim().to_owned();
    (output.status.success() && !head.is_empty()).then_some(head)
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::{Cli, Command};

    fn parse(args: &[&str]) -> Result<CompareArgs, clap::Error> {
        let all = ["hookd-bench", "compare"].iter().chain(args);
        match Cli::try_parse_from(all)?.command {
            Command::Compare(args) => Ok(args),
            other => panic!("not compare: {other:?}"),
        }
    }

    #[test]
    fn every_phase_runs_by_default_in_order() {
        let args = parse(&[]).unwrap();
        assert_eq!(
            args.phases(),
            vec![
                Phase::Unique,
                Phase::Duplicates,
                Phase::Tenants,
                Phase::Routes,
                Phase::Forward,
                Phase::Postgres,
                Phase::Features
            ]
        );
        assert_eq!(
            (args.routes, args.scale_tenants, args.scale_runs),
            (3, 10_000, 3)
        );
        args.check().unwrap();
    }

    #[test]
    fn phases_are_chosen_once_each_in_their_order() {
        let args = parse(&["--phases", "features,unique,features"]).unwrap();
        assert_eq!(args.phases(), vec![Phase::Unique, Phase::Features]);
        let err = parse(&["--phases", "unique,nope"]).unwrap_err().to_string();
        assert!(err.contains("nope"), "{err}");
    }

    #[test]
    fn the_postgres_url_and_commit_come_from_flags() {
        let args = parse(&[
            "--postgres-url",
            "postgres://u@127.0.0.1:5432/bench",
            "--commit",
            "abc123",
        ])
        .unwrap();
        assert_eq!(
            args.postgres_url.as_deref(),
            Some("postgres://u@127.0.0.1:5432/bench")
        );
        assert_eq!(args.commit.as_deref(), Some("abc123"));
        assert_eq!(parse(&[]).unwrap().commit, None);
    }

    #[test]
    fn out_of_bounds_flags_are_refused_before_anything_starts() {
        for (flags, expected) in [
            (&["--routes", "1"][..], "--routes"),
            (&["--routes", "17"][..], "--routes"),
            (&["--scale-runs", "0"][..], "--scale-runs"),
            (&["--drain-timeout-secs", "0"][..], "--drain-timeout-secs"),
        ] {
            let err = parse(flags).unwrap().check().unwrap_err().to_string();
            assert!(err.contains(expected), "{flags:?}: {err}");
        }
    }

    /// The baseline runs first in even rounds and second in odd ones; the
    /// answer is (baseline, figure) either way.
    #[test]
    fn rounds_alternate_which_side_runs_first() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .build()
            .unwrap();
        for (round, first) in [(0, "baseline"), (1, "figure"), (2, "baseline")] {
            let order = std::cell::RefCell::new(Vec::new());
            let side = |name: &'static str| {
                let order = &order;
                async move {
                    order.borrow_mut().push(name);
                    name
                }
            };
            let answer = runtime.block_on(in_round_order(round, side("baseline"), side("figure")));
            assert_eq!(answer, ("baseline", "figure"));
            assert_eq!(order.borrow()[0], first, "round {round}");
        }
    }
}
