//! `hookd-bench hostile`: what a tenant's hostile transform costs another
//! tenant. Each phase starts a fresh hookd with two tenants: `bench-0`, the
//! measured one (pull mode, so only its ingest runs), and `hostile`, whose
//! route `spin` forwards through a transform to a local sink. Before the
//! measured load, `hostile` is sent a backlog of events; in a `benign`
//! phase its transform returns the request unchanged, in a `hostile` phase
//! it is `while (true) {}`, which runs until its CPU budget stops it, for
//! every event of the backlog. Phases alternate, and the report compares
//! `bench-0`'s ingest p99 in the two. With `--side-by-side` the two phases
//! of a round run at the same time, in two hookd processes loaded at once,
//! so both meet the same moments of the machine.

use std::{fmt::Write as _, net::SocketAddr, path::PathBuf, sync::Arc, time::Duration};

use anyhow::bail;
use clap::Args;
use serde::Serialize;

use crate::{
    load::{run_phase, LoadOptions},
    measure,
    plan::{Plan, PlanSpec},
    report::{median, ratio, Summary},
    scenario::SINK_SECRET,
    servers::{self, HookdSpec},
    sink::{Reply, Sink},
    LoadArgs,
};

/// The tenant whose route runs the transform.
const HOSTILE: &str = "hostile";
/// A transform that sends what it is given.
const BENIGN: &str = "addHandler(\"transform\", (request, context) => request);";
/// A transform that never returns.
const SPIN: &str = "addHandler(\"transform\", (request, context) => { while (true) {} });";

/// The flags of `hookd-bench hostile`.
#[derive(Debug, Args)]
pub struct HostileArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// hookd's log filter (the line announcing its addresses is always kept).
    #[arg(long, default_value = "warn")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz.
    #[arg(long, default_value_t = 60)]
    ready_timeout_secs: u64,
    /// Pairs of phases (benign, then hostile) to run.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Events sent to the hostile tenant before each phase's load: at the
    /// default 50 ms budget, 400 keep its transforms busy for 20 CPU-seconds.
    #[arg(long, default_value_t = 400)]
    backlog: usize,
    /// The hostile route's `max_in_flight`: transforms it may run at once.
    #[arg(long, default_value_t = 8)]
    hostile_in_flight: usize,
    /// The hostile route's `transform_cpu_ms` (1..=1000): how long each
    /// endless run spins before its budget stops it.
    #[arg(long, default_value_t = 50)]
    budget_ms: u64,
    /// Run each round's benign and hostile phase at the same time, each in
    /// its own hookd with its own load (`--rate` then applies to each).
    #[arg(long)]
    side_by_side: bool,
    #[command(flatten)]
    load: LoadArgs,
}

/// One phase's figures.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// `benign` or `hostile`.
    pub transform: &'static str,
    /// The hostile tenant's backlog events answered 202.
    pub backlog_accepted: u64,
    /// Of them, arrived at the hostile route's sink by the end of the load
    /// (all of them when benign, none when hostile).
    pub backlog_forwarded: u64,
    /// The measured tenant's load.
    pub load: Summary,
}

/// The whole run.
#[derive(Debug, Serialize)]
pub struct HostileReport {
    /// Every phase, in the order run.
    pub phases: Vec<Phase>,
    /// Median p99 (ms) of the measured tenant's ingest, benign phases.
    pub benign_p99_ms: f64,
    /// The same for the hostile phases.
    pub hostile_p99_ms: f64,
    /// `hostile_p99_ms / benign_p99_ms`.
    pub p99_ratio: f64,
    /// Median throughput ratio, hostile phases against benign ones.
    pub throughput_ratio: f64,
    /// Whether each round's two phases ran at the same time.
    pub side_by_side: bool,
    /// Each round's p99 ratio, hostile phase against benign, in order.
    pub round_p99_ratios: Vec<f64>,
}

impl HostileReport {
    /// The human-readable report.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for p in &self.phases {
            let l = &p.load.latency_ms;
            let _ = writeln!(
                out,
                "{:8} backlog {} accepted, {} forwarded; bench-0 {:.0} 2xx/s, p50 {:.3} ms, p99 {:.3} ms, failures {}",
                p.transform,
                p.backlog_accepted,
                p.backlog_forwarded,
                p.load.ok_rps,
                l.p50,
                l.p99,
                p.load.failures(),
            );
        }
        let _ = writeln!(
            out,
            "median p99: benign {:.3} ms, hostile {:.3} ms; p99 ratio {:.3}; throughput ratio {:.3}",
            self.benign_p99_ms, self.hostile_p99_ms, self.p99_ratio, self.throughput_ratio
        );
        let rounds: Vec<String> = self
            .round_p99_ratios
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect();
        let _ = writeln!(
            out,
            "p99 ratio by round{}: {} (median {:.3})",
            if self.side_by_side {
                ", both phases at once"
            } else {
                ""
            },
            rounds.join(" "),
            median(self.round_p99_ratios.clone()),
        );
        out
    }
}

/// The config declaring the hostile tenant with `transform` on its route.
fn hostile_tenant(
    args: &HostileArgs,
    spec: &PlanSpec,
    tolerance_secs: u64,
    sink: SocketAddr,
    transform: &str,
) -> String {
    format!(
        "\n[[tenants]]\nid = {HOSTILE:?}\nscheme = {scheme:?}\ntolerance_secs = {tolerance_secs}\n\
         [[tenants.secrets]]\nkid = {kid:?}\nsecret = {secret:?}\n\
         [[tenants.routes]]\nname = \"spin\"\nmax_in_flight = {mif}\ntransform = {transform:?}\n\
         transform_cpu_ms = {budget}\n\
         [tenants.routes.destination]\nurl = \"http://{sink}/sink\"\nsecret = {SINK_SECRET:?}\n",
        scheme = spec.scheme.as_str(),
        kid = spec.kid,
        secret = spec.secret,
        mif = args.hostile_in_flight,
        budget = args.budget_ms,
    )
}

/// Runs the phases and prints the report.
pub async fn run(args: HostileArgs) -> anyhow::Result<()> {
    let load = &args.load;
    if args.rounds == 0 || args.backlog == 0 {
        bail!("--rounds and --backlog must be at least 1");
    }
    if !(1..=1024).contains(&args.hostile_in_flight) {
        bail!("--hostile-in-flight must be between 1 and 1024");
    }
    if !(1..=1000).contains(&args.budget_ms) {
        bail!("--budget-ms must be between 1 and 1000");
    }
    if cfg!(debug_assertions) && !load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let spec = load.plan_spec()?;
    let opts = load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let tolerance_secs = 300 + 4 * opts.duration.map_or(0, |d| d.as_secs());
    let mut phases = Vec::new();
    let mut round_p99_ratios = Vec::new();
    let phase = |name, code| Arm {
        args: &args,
        spec: &spec,
        opts: &opts,
        tolerance_secs,
        name,
        code,
    };
    for _ in 0..args.rounds {
        let (benign, hostile) = (phase("benign", BENIGN), phase("hostile", SPIN));
        let (benign, hostile) = match args.side_by_side {
            true => {
                let (b, h) = tokio::join!(benign.start(), hostile.start());
                let (b, h) = (b?, h?);
                tokio::join!(b.load(), h.load())
            }
            false => {
                let b = benign.start().await?.load().await;
                let h = hostile.start().await?.load().await;
                (b, h)
            }
        };
        round_p99_ratios.push(ratio(
            hostile.load.latency_ms.p99,
            benign.load.latency_ms.p99,
        ));
        phases.extend([benign, hostile]);
    }
    let of_phases = |name: &str, f: &dyn Fn(&Summary) -> f64| {
        median(
            phases
                .iter()
                .filter(|p| p.transform == name)
                .map(|p| f(&p.load))
                .collect(),
        )
    };
    let p99 = |s: &Summary| s.latency_ms.p99;
    let rps = |s: &Summary| s.ok_rps;
    let (benign_p99_ms, hostile_p99_ms) = (of_phases("benign", &p99), of_phases("hostile", &p99));
    let report = HostileReport {
        benign_p99_ms,
        hostile_p99_ms,
        p99_ratio: ratio(hostile_p99_ms, benign_p99_ms),
        throughput_ratio: ratio(of_phases("hostile", &rps), of_phases("benign", &rps)),
        phases,
        side_by_side: args.side_by_side,
        round_p99_ratios,
    };
    if load.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

/// One phase to run: its name and the hostile route's transform.
struct Arm<'a> {
    args: &'a HostileArgs,
    spec: &'a PlanSpec,
    opts: &'a LoadOptions,
    tolerance_secs: u64,
    name: &'static str,
    code: &'static str,
}

/// A phase whose hookd is up and whose backlog was sent.
struct Started<'a> {
    arm: Arm<'a>,
    hookd: servers::ServerProcess,
    /// The hostile route's sink, this phase's own.
    sink: Sink,
    backlog_accepted: u64,
    /// `bench-0`'s deliveries, signed once hookd is up.
    plan: Arc<Plan>,
}

impl<'a> Arm<'a> {
    /// Starts the phase's hookd and sends the hostile tenant its backlog.
    async fn start(self) -> anyhow::Result<Started<'a>> {
        let (args, spec) = (self.args, self.spec);
        let sink = Sink::start(1, Reply::Status(204))?;
        let hookd_spec = HookdSpec {
            binary: args.hookd.clone().unwrap_or_else(servers::default_hookd),
            tenants: spec.tenants.clone(),
            scheme: spec.scheme,
            secret: spec.secret.clone(),
            kid: spec.kid.clone(),
            tolerance_secs: self.tolerance_secs,
            max_body_bytes: (1 << 20).max(2 * spec.body_size),
            workers: 0,
            log_filter: args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(args.ready_timeout_secs),
            destination: None,
            pulled_routes: 0,
            extra_config: hostile_tenant(args, spec, self.tolerance_secs, sink.addr, self.code),
        };
        let hookd = servers::start_hookd(&hookd_spec).await?;
        let backlog = Arc::new(Plan::build(&PlanSpec {
            tenants: vec![HOSTILE.to_owned()],
            requests: args.backlog,
            dup_ratio: 0.0,
            ..spec.clone()
        })?);
        let backlog_opts = LoadOptions {
            addr: hookd.addr,
            connections: 4,
            duration: None,
            progress: false,
            pace: None,
            ..self.opts.clone()
        };
        let sent = run_phase(
            backlog.clone(),
            Arc::new(backlog.order.clone()),
            &backlog_opts,
            "backlog",
        )
        .await;
        Ok(Started {
            backlog_accepted: sent.statuses.get(&202).copied().unwrap_or(0),
            plan: Arc::new(Plan::build(spec)?),
            hookd,
            sink,
            arm: self,
        })
    }
}

impl Started<'_> {
    /// Loads `bench-0`, stops hookd and returns the phase's figures.
    async fn load(self) -> Phase {
        let arm = &self.arm;
        let summary = measure(
            &format!("bench-0 beside a {} transform", arm.name),
            &self.plan,
            &LoadOptions {
                addr: self.hookd.addr,
                ..arm.opts.clone()
            },
        )
        .await;
        self.hookd.stop(Duration::from_secs(30));
        let phase = Phase {
            transform: arm.name,
            backlog_accepted: self.backlog_accepted,
            backlog_forwarded: self.sink.arrivals.requests(),
            load: summary,
        };
        self.sink.stop().await;
        phase
    }
}
