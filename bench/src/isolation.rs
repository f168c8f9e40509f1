//! `hookd-bench isolation`: what one tenant's flood costs another tenant.
//! Each phase starts a fresh hookd with two tenants, each forwarding to a
//! local sink of its own: `quiet`, the measured one, whose sink answers 204
//! at once, and `flood`, whose sink answers only after `--slow-ms`. In an
//! `alone` phase only `quiet` is loaded, at `--quiet-rate` requests a second
//! (paced, open loop, each a new signed event); in a `flooded` phase `flood`
//! is loaded at the same time at `--flood-factor` times that rate, every
//! other request's body changed after signing, so hookd runs both its accept
//! path and its reject path with its rejection records. Phases alternate,
//! one of each per round; the report compares `quiet`'s ingest p99 and its
//! delivery latency (from its 202 to its arrival at the sink), each the
//! median over the rounds, flooded against alone, with [`THRESHOLD`].

use std::{
    collections::HashMap,
    fmt::Write as _,
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use clap::Args;
use hyper::body::Bytes;
use serde::Serialize;

use crate::{
    cpu,
    forward::Delivery,
    load::{run_phase, LoadOptions, PhaseResult},
    plan::{Plan, PlanSpec},
    positive_secs,
    report::{median, ratio, Summary},
    scenario::{drain, Scenario, SINK_SECRET},
    servers::{self, DestinationSpec, HookdSpec},
    sink::{Reply, Sink},
    storage::Storage,
    LoadArgs,
};

/// The measured tenant.
const QUIET: &str = "quiet";
/// The tenant that floods.
const FLOOD: &str = "flood";
/// The most a flooded figure may be of the same figure alone.
const THRESHOLD: f64 = 1.10;

/// The flags of `hookd-bench isolation`.
#[derive(Debug, Args)]
pub struct IsolationArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// hookd's log filter (the line announcing its addresses is always kept).
    #[arg(long, default_value = "warn")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz.
    #[arg(long, default_value_t = 60)]
    ready_timeout_secs: u64,
    /// Pairs of phases (alone, then flooded) to run.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Requests a second sent to `quiet` in every phase (paced, open loop).
    #[arg(long, default_value_t = 200.0)]
    quiet_rate: f64,
    /// `flood`'s rate in a flooded phase, as a multiple of `quiet`'s.
    #[arg(long, default_value_t = 10.0)]
    flood_factor: f64,
    /// How long `flood`'s sink takes to answer each forward, milliseconds.
    #[arg(long, default_value_t = 200)]
    slow_ms: u64,
    /// Each tenant's `max_in_flight` (1..=1024; hookd's default is 8).
    #[arg(long, default_value_t = 8)]
    max_in_flight: usize,
    /// After the load, wait at most this long for `quiet`'s accepted events to arrive.
    #[arg(long, default_value_t = 60.0)]
    drain_timeout_secs: f64,
    /// The load: `--duration-secs` is each phase's; `--count`, `--rate`,
    /// `--max-requests` and `--tenants` do not apply.
    #[command(flatten)]
    load: LoadArgs,
}

/// One phase's figures.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// `alone` or `flooded`.
    pub phase: &'static str,
    /// The round it belongs to, from 1.
    pub round: usize,
    /// `quiet`'s load: ingest latency, statuses.
    pub quiet: Summary,
    /// `quiet`'s accepted events against their arrivals at its sink.
    pub delivery: Delivery,
    /// `flood`'s load, in a flooded phase.
    pub flood: Option<Summary>,
    /// Forwards that reached `flood`'s slow sink by the end of the phase.
    pub flood_forwarded: u64,
    /// hookd's CPU time over the load, per second: cores it kept busy.
    pub hookd_cores: f64,
    /// The same for hookd-bench (the loads and the sinks) on the same machine.
    pub bench_cores: f64,
}

/// `quiet`'s figures, milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Figures {
    /// Ingest latency (request to answer), median.
    pub ingest_p50_ms: f64,
    /// Ingest latency, 99th percentile.
    pub ingest_p99_ms: f64,
    /// Delivery latency (202 to arrival at the sink), median.
    pub delivery_p50_ms: f64,
    /// Delivery latency, 99th percentile.
    pub delivery_p99_ms: f64,
}

impl Figures {
    fn of(phase: &Phase) -> Figures {
        Figures {
            ingest_p50_ms: phase.quiet.latency_ms.p50,
            ingest_p99_ms: phase.quiet.latency_ms.p99,
            delivery_p50_ms: phase.delivery.latency_ms.p50,
            delivery_p99_ms: phase.delivery.latency_ms.p99,
        }
    }

    /// Each figure's median over the phases named `name`.
    fn median_of(phases: &[Phase], name: &str) -> Figures {
        let all: Vec<Figures> = phases
            .iter()
            .filter(|p| p.phase == name)
            .map(Figures::of)
            .collect();
        let of = |f: fn(&Figures) -> f64| median(all.iter().map(f).collect());
        Figures {
            ingest_p50_ms: of(|f| f.ingest_p50_ms),
            ingest_p99_ms: of(|f| f.ingest_p99_ms),
            delivery_p50_ms: of(|f| f.delivery_p50_ms),
            delivery_p99_ms: of(|f| f.delivery_p99_ms),
        }
    }
}

/// Flooded figures over alone ones.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Ratios {
    /// Ingest p99.
    pub ingest_p99: f64,
    /// Delivery p50.
    pub delivery_p50: f64,
    /// Delivery p99.
    pub delivery_p99: f64,
}

impl Ratios {
    fn of(flooded: &Figures, alone: &Figures) -> Ratios {
        Ratios {
            ingest_p99: ratio(flooded.ingest_p99_ms, alone.ingest_p99_ms),
            delivery_p50: ratio(flooded.delivery_p50_ms, alone.delivery_p50_ms),
            delivery_p99: ratio(flooded.delivery_p99_ms, alone.delivery_p99_ms),
        }
    }

    fn within(&self, threshold: f64) -> bool {
        [self.ingest_p99, self.delivery_p50, self.delivery_p99]
            .iter()
            .all(|r| *r <= threshold)
    }

    fn text(&self) -> String {
        format!(
            "ingest p99 {:.3}, delivery p50 {:.3}, delivery p99 {:.3}",
            self.ingest_p99, self.delivery_p50, self.delivery_p99
        )
    }
}

/// The whole run.
#[derive(Debug, Serialize)]
pub struct IsolationReport {
    /// `quiet`'s requests a second.
    pub quiet_rate: f64,
    /// `flood`'s requests a second in a flooded phase, half of them badly signed.
    pub flood_rate: f64,
    /// How long `flood`'s sink takes to answer, milliseconds.
    pub slow_ms: u64,
    /// Each tenant's `max_in_flight`.
    pub max_in_flight: usize,
    /// Every phase, in the order run.
    pub phases: Vec<Phase>,
    /// Median figures of the alone phases.
    pub alone: Figures,
    /// Median figures of the flooded phases.
    pub flooded: Figures,
    /// `flooded` over `alone`.
    pub ratios: Ratios,
    /// Each round's flooded phase over its alone phase, in order.
    pub round_ratios: Vec<Ratios>,
    /// The claim: every ratio at most this.
    pub threshold: f64,
    /// Whether every ratio is within the threshold.
    pub isolated: bool,
}

impl IsolationReport {
    fn new(args: &IsolationArgs, phases: Vec<Phase>) -> IsolationReport {
        let alone = Figures::median_of(&phases, "alone");
        let flooded = Figures::median_of(&phases, "flooded");
        let ratios = Ratios::of(&flooded, &alone);
        let round_ratios = phases
            .chunks(2)
            .filter_map(|pair| match pair {
                [a, f] => Some(Ratios::of(&Figures::of(f), &Figures::of(a))),
                _ => None,
            })
            .collect();
        IsolationReport {
            quiet_rate: args.quiet_rate,
            flood_rate: args.quiet_rate * args.flood_factor,
            slow_ms: args.slow_ms,
            max_in_flight: args.max_in_flight,
            phases,
            alone,
            flooded,
            ratios,
            round_ratios,
            threshold: THRESHOLD,
            isolated: ratios.within(THRESHOLD),
        }
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let mut out = format!(
            "quiet at {:.0}/s; flood at {:.0}/s (half badly signed) beside it in flooded phases, \
             its sink answering after {} ms; max_in_flight {}; hookd, bench: cores busy over the load\n\
             {:<8} {:>5} {:>8} {:>11} {:>11} {:>13} {:>13} {:>9} {:>10} {:>10} {:>10} {:>6} {:>6}\n",
            self.quiet_rate,
            self.flood_rate,
            self.slow_ms,
            self.max_in_flight,
            "phase",
            "round",
            "quiet/s",
            "ingest p50",
            "ingest p99",
            "delivery p50",
            "delivery p99",
            "failures",
            "flood 202",
            "flood bad",
            "flood fwd",
            "hookd",
            "bench",
        );
        for p in &self.phases {
            let f = Figures::of(p);
            let (ok, bad) = p.flood.as_ref().map_or((0, 0), |s| {
                (s.statuses.get(&202).copied().unwrap_or(0), s.failures())
            });
            let _ = writeln!(
                out,
                "{:<8} {:>5} {:>8.0} {:>11.3} {:>11.3} {:>13.3} {:>13.3} {:>9} {:>10} {:>10} {:>10} {:>6.2} {:>6.2}",
                p.phase,
                p.round,
                p.quiet.ok_rps,
                f.ingest_p50_ms,
                f.ingest_p99_ms,
                f.delivery_p50_ms,
                f.delivery_p99_ms,
                p.quiet.failures() + p.delivery.missing,
                ok,
                bad,
                p.flood_forwarded,
                p.hookd_cores,
                p.bench_cores,
            );
        }
        for (name, f) in [("alone", &self.alone), ("flooded", &self.flooded)] {
            let _ = writeln!(
                out,
                "median {name:<8} ingest p50 {:.3} ms, p99 {:.3} ms; delivery p50 {:.3} ms, p99 {:.3} ms",
                f.ingest_p50_ms, f.ingest_p99_ms, f.delivery_p50_ms, f.delivery_p99_ms,
            );
        }
        let _ = writeln!(out, "flooded / alone: {}", self.ratios.text());
        for (i, r) in self.round_ratios.iter().enumerate() {
            let _ = writeln!(out, "  round {}: {}", i + 1, r.text());
        }
        let verdict = match self.isolated {
            true => "within",
            false => "NOT within",
        };
        let _ = writeln!(
            out,
            "verdict: quiet is {verdict} {:.0} % of its figures alone (every ratio <= {:.2})",
            (self.threshold - 1.0) * 100.0,
            self.threshold
        );
        out
    }
}

/// Runs the rounds and prints the report.
pub async fn run(args: IsolationArgs) -> anyhow::Result<()> {
    let setup = Setup::new(&args)?;
    if cfg!(debug_assertions) && !args.load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let mut phases = Vec::new();
    for round in 1..=args.rounds {
        phases.push(setup.phase(round, false).await?);
        phases.push(setup.phase(round, true).await?);
    }
    let report = IsolationReport::new(&args, phases);
    if args.load.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

/// The CPU time hookd-bench has used so far, seconds (Linux; zero elsewhere).
pub(crate) fn own_cpu_secs() -> f64 {
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|stat| cpu::stat_ticks(&stat).map(|(_, ticks)| ticks))
        .map_or(0.0, |ticks| ticks as f64 / cpu::USER_HZ as f64)
}

/// Runs `flood`'s load on a runtime in a thread of its own, so `quiet`'s
/// requests never wait behind its tasks inside hookd-bench.
async fn load_apart(plan: Arc<Plan>, opts: LoadOptions) -> anyhow::Result<PhaseResult> {
    let (tx, rx) = tokio::sync::oneshot::channel();
    std::thread::Builder::new()
        .name("flood-load".into())
        .spawn(move || {
            let order = Arc::new(plan.order.clone());
            let result = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map(|rt| rt.block_on(run_phase(plan, order, &opts, FLOOD)));
            let _ = tx.send(result);
        })
        .context("cannot start the flood's load thread")?;
    Ok(rx.await.context("the flood's load thread ended early")??)
}

/// The gap between two paced requests at `rate` a second.
pub(crate) fn gap(flag: &str, rate: f64) -> anyhow::Result<Duration> {
    match Duration::try_from_secs_f64(1.0 / rate) {
        Ok(gap) if rate > 0.0 && !gap.is_zero() => Ok(gap),
        _ => bail!("{flag} must give a positive rate, got {rate} requests a second"),
    }
}

/// What every phase shares.
struct Setup {
    scenario: Scenario,
    /// `quiet`'s deliveries.
    quiet: PlanSpec,
    /// `flood`'s deliveries.
    flood: PlanSpec,
    /// `quiet`'s load (paced, noting its 202s).
    quiet_opts: LoadOptions,
    /// `flood`'s load (paced).
    flood_opts: LoadOptions,
    slow_ms: u64,
    tolerance_secs: u64,
}

impl Setup {
    fn new(args: &IsolationArgs) -> anyhow::Result<Setup> {
        let load = &args.load;
        if load.count.is_some()
            || load.rate.is_some()
            || load.max_requests.is_some()
            || load.tenants != 1
        {
            bail!(
                "isolation paces its two tenants itself: give --quiet-rate and --flood-factor, \
                 not --count, --rate, --max-requests or --tenants"
            );
        }
        if args.rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        let duration = load
            .duration()?
            .expect("a run without --count has a duration");
        let flood_rate = args.quiet_rate * args.flood_factor;
        let requests = |rate: f64| ((duration.as_secs_f64() * rate).ceil() as usize).max(1);
        let spec = load.plan_spec()?;
        let quiet = PlanSpec {
            tenants: vec![QUIET.to_owned()],
            requests: requests(args.quiet_rate),
            ..spec.clone()
        };
        let flood = PlanSpec {
            tenants: vec![FLOOD.to_owned()],
            requests: requests(flood_rate),
            ..spec
        };
        let scenario = Scenario {
            hookd: args.hookd.clone().unwrap_or_else(servers::default_hookd),
            workers: 0,
            log_filter: args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(args.ready_timeout_secs),
            max_in_flight: args.max_in_flight,
            drain_timeout: positive_secs("--drain-timeout-secs", args.drain_timeout_secs)?,
            sink_workers: 1,
            routes: 1,
            route_replies: Vec::new(),
            tenant_keys: String::new(),
            extra_config: String::new(),
            storage: Storage::Sled,
            alone: false,
        };
        scenario.check(&quiet)?;
        let quiet_opts = LoadOptions {
            record_accepted: true,
            pace: Some(gap("--quiet-rate", args.quiet_rate)?),
            ..load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?
        };
        let flood_opts = LoadOptions {
            record_accepted: false,
            progress: false,
            pace: Some(gap("--flood-factor", flood_rate)?),
            ..quiet_opts.clone()
        };
        Ok(Setup {
            scenario,
            quiet,
            flood,
            quiet_opts,
            flood_opts,
            slow_ms: args.slow_ms,
            tolerance_secs: 300 + 4 * duration.as_secs(),
        })
    }

    /// hookd's spec: `quiet` forwarding to `quiet_sink`, `flood` to `flood_sink`.
    fn hookd_spec(&self, quiet_sink: &Sink, flood_sink: &Sink) -> HookdSpec {
        let spec = &self.quiet;
        let mut hookd = HookdSpec {
            binary: self.scenario.hookd.clone(),
            tenants: Vec::new(),
            scheme: spec.scheme,
            secret: spec.secret.clone(),
            kid: spec.kid.clone(),
            tolerance_secs: self.tolerance_secs,
            max_body_bytes: (1 << 20).max(2 * spec.body_size),
            workers: self.scenario.workers,
            log_filter: self.scenario.log_filter.clone(),
            ready_timeout: self.scenario.ready_timeout,
            destination: None,
            pulled_routes: 0,
            extra_config: String::new(),
        };
        let destination = |sink: &Sink| DestinationSpec {
            url: format!("http://{}/sink", sink.addr),
            secret: SINK_SECRET.to_owned(),
            tenant_keys: String::new(),
            max_in_flight: self.scenario.max_in_flight,
            routes: Vec::new(),
        };
        hookd.extra_config = servers::tenant_table(&hookd, QUIET, Some(&destination(quiet_sink)))
            + &servers::tenant_table(&hookd, FLOOD, Some(&destination(flood_sink)));
        hookd
    }

    /// `flood`'s deliveries, every other one's body changed after signing.
    fn flood_plan(&self) -> anyhow::Result<Plan> {
        let mut plan = Plan::build(&self.flood)?;
        for delivery in plan.pool.iter_mut().skip(1).step_by(2) {
            let mut body = delivery.body.to_vec();
            body.push(b' ');
            delivery.body = Bytes::from(body);
        }
        Ok(plan)
    }

    /// Runs one phase in a fresh hookd: `quiet` loaded, and `flood` beside it when `flooded`.
    async fn phase(&self, round: usize, flooded: bool) -> anyhow::Result<Phase> {
        let name = if flooded { "flooded" } else { "alone" };
        let quiet_sink = Sink::start(self.scenario.sink_workers, Reply::Status(204))?;
        let flood_sink = Sink::start(self.scenario.sink_workers, Reply::Slow(self.slow_ms))?;
        let hookd = servers::start_hookd(&self.hookd_spec(&quiet_sink, &flood_sink)).await?;
        // Signed once hookd is up, so its start does not age the timestamps.
        let quiet_plan = Arc::new(Plan::build(&self.quiet)?);
        let flood_plan = match flooded {
            true => Some(Arc::new(self.flood_plan()?)),
            false => None,
        };
        let at_hookd = |opts: &LoadOptions| LoadOptions {
            addr: hookd.addr,
            ..opts.clone()
        };
        let (quiet_opts, flood_opts) = (at_hookd(&self.quiet_opts), at_hookd(&self.flood_opts));
        let label = format!("{QUIET}, {name}, round {round}");
        let quiet_order = Arc::new(quiet_plan.order.clone());
        let hookd_cpu = || hookd.cpu_time().map_or(0.0, |d| d.as_secs_f64());
        let cpu_before = (hookd_cpu(), own_cpu_secs());
        let (quiet, flood) = tokio::join!(
            run_phase(quiet_plan.clone(), quiet_order, &quiet_opts, &label),
            async {
                match flood_plan {
                    Some(plan) => load_apart(plan, flood_opts.clone()).await.map(Some),
                    None => Ok(None),
                }
            }
        );
        let flood = flood?;
        let per_sec = |used: f64| used / quiet.elapsed.as_secs_f64();
        let hookd_cores = per_sec(hookd_cpu() - cpu_before.0);
        let bench_cores = per_sec(own_cpu_secs() - cpu_before.1);
        let accepted: HashMap<String, Instant> = quiet
            .accepted
            .iter()
            .map(|&(i, at)| (quiet_plan.pool[i as usize].event_id.clone(), at))
            .collect();
        let sink = &quiet_sink;
        drain(
            sink,
            &accepted,
            self.scenario.drain_timeout,
            quiet_opts.progress,
        )
        .await;
        let (snapshot, without_id) = (sink.arrivals.snapshot(), sink.arrivals.without_id());
        let load_end = quiet.started + quiet.elapsed;
        let delivery = Delivery::tally(&accepted, &snapshot, without_id, quiet.started, load_end);
        let flood_forwarded = flood_sink.arrivals.requests();
        hookd.stop(Duration::from_secs(30));
        quiet_sink.stop().await;
        flood_sink.stop().await;
        Ok(Phase {
            phase: name,
            round,
            quiet: Summary::new(QUIET, quiet_opts.connections, &quiet, None),
            delivery,
            flood: flood.map(|f| Summary::new(FLOOD, flood_opts.connections, &f, None)),
            flood_forwarded,
            hookd_cores,
            bench_cores,
        })
    }
}
