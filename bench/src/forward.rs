//! `hookd-bench forward`: events accepted and delivered. One invocation
//! starts a local sink answering 204, starts hookd with every tenant
//! forwarding to it, loads hookd with unique signed deliveries (noting each
//! 202 by event id), then waits until every accepted event has arrived at the
//! sink (or the drain timeout passes) and reports delivered/s and the latency
//! from each 202 to the event's arrival. With `--backlog N` it measures
//! forwarding alone instead ([`backlog`]). hookd stores its data in its
//! embedded engine (sled), or with `--postgres-url` in PostgreSQL, in a
//! database of the run's own ([`storage`]). A paced run (`--rate`) also
//! reports its steady state: second by second, and whether the backlog
//! stayed flat ([`steady`]); `--rates` makes one paced run per rate and
//! reports the highest whose backlog stayed flat ([`sweep`]).

mod delivery;
mod steady;
mod sweep;

use std::{
    collections::HashMap,
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::bail;
use clap::Args;
use serde::Serialize;

pub use delivery::Delivery;
use steady::Steady;

use crate::{
    backlog::{self, BacklogReport},
    load::{run_phase, LoadOptions},
    plan::{Plan, PlanSpec},
    positive_secs,
    report::{ratio, Summary},
    scenario::{drain, Scenario, SINK_SECRET},
    servers::{self, DestinationSpec, HookdSpec},
    sink::{Reply, Sink},
    storage::{self, Storage},
    LoadArgs,
};

/// The flags of `hookd-bench forward`.
#[derive(Debug, Args)]
pub struct ForwardArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// Measure forwarding alone: N unique deliveries accepted in pull mode,
    /// then hookd restarted on the same data dir forwarding to the sink,
    /// reporting the backlog's drain (instead of --count or --duration-secs).
    #[arg(long, value_name = "N", conflicts_with_all = ["count", "duration_secs"])]
    backlog: Option<usize>,
    /// hookd's HTTP workers (0: one per core).
    #[arg(long, default_value_t = 0)]
    workers: usize,
    /// hookd's log filter (the line announcing its addresses is always kept).
    #[arg(long, default_value = "warn")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz.
    #[arg(long, default_value_t = 600)]
    ready_timeout_secs: u64,
    /// Forwards in flight at once per tenant (hookd's `max_in_flight`, 1..=1024).
    #[arg(long, default_value_t = 64)]
    max_in_flight: usize,
    /// After the load, wait at most this long for every accepted event to arrive.
    #[arg(long, default_value_t = 60.0)]
    drain_timeout_secs: f64,
    /// HTTP workers of each sink.
    #[arg(long, default_value_t = 1)]
    sink_workers: usize,
    /// Routes per tenant (1..=16), each forwarding to a sink of its own:
    /// every accepted event is delivered once per route.
    #[arg(long, default_value_t = 1)]
    routes: usize,
    /// How the sinks of the other routes answer, in order (`204`, `500`,
    /// `slow:MS`); routes without one answer 204. The default route's sink
    /// always answers 204: measure its delivery latency with a failing or
    /// slow route beside it.
    #[arg(long = "route-reply")]
    route_replies: Vec<Reply>,
    /// Also load a tenant `alone` whose one route forwards to a sink of its
    /// own answering 204, in the same run and at the same share of the load
    /// (requests go round robin over the tenants): the default route's
    /// latency is reported against it, with the machine's noise the same
    /// on both sides.
    #[arg(long)]
    alone: bool,
    /// Run hookd on the PostgreSQL server at this URL instead of its
    /// embedded engine (sled): each run creates an empty database of its
    /// own there (`hookd_bench_<pid>_<random>`, named in place of the URL's)
    /// and drops it at the end. The URL's user must be allowed to create
    /// databases; hookd-bench connects without TLS.
    #[arg(long, env = "HOOKD_BENCH_POSTGRES_URL", hide_env_values = true)]
    postgres_url: Option<String>,
    /// Paced runs one after another, one per rate (requests a second, in
    /// the order given), each of --duration-secs (6 or more) with a fresh
    /// hookd, sink and database: each run's steady verdict, then the
    /// highest rate whose backlog stayed flat.
    #[arg(
        long,
        value_name = "R1,R2,...",
        value_delimiter = ',',
        conflicts_with_all = ["rate", "backlog", "count"]
    )]
    rates: Vec<f64>,
    #[command(flatten)]
    load: LoadArgs,
}

/// What the forwarding scenario measured.
#[derive(Debug, Serialize)]
pub struct ForwardReport {
    /// The engine hookd stored its data in: `sled` or `postgres`.
    pub engine: &'static str,
    /// Tenants, each forwarding to the sink.
    pub tenants: usize,
    /// Each tenant's `max_in_flight`.
    pub max_in_flight: usize,
    /// The load itself: requests, ingest throughput and latency, statuses.
    pub load: Summary,
    /// What arrived at the default route's sink, measured against the 202s.
    pub delivery: Delivery,
    /// The same for each other route's sink (`r1`, `r2`, ...).
    pub routes: Vec<Delivery>,
    /// With `--alone`: what arrived from the tenant whose only route is
    /// the default route's kind, loaded in the same run.
    pub alone: Option<Delivery>,
    /// For a paced load: the default route's steady state.
    pub steady: Option<Steady>,
}

/// The tenant `--alone` adds, with one route and nothing beside it.
pub const ALONE_TENANT: &str = "alone";

impl ForwardReport {
    /// The human-readable report.
    pub fn text(&self) -> String {
        let d = &self.delivery;
        let l = &d.latency_ms;
        let mut out = self.load.text();
        out += &format!(
            "forwarding: {tenants} tenant(s), {routes} route(s) each, max_in_flight {mif}, \
             sinks answering 204, engine {engine}\n  \
             accepted {acc} in {load:.2} s: {acc_rps:.0}/s\n  \
             arrived {arr} (missing {miss}, duplicates {dup}, unexpected {unx}, without id {noid})\n  \
             delivered {del:.0}/s over {span:.2} s from the first 202 to the last arrival; \
             {during:.0}/s during the load; {after:.0}/s in the {drain:.2} s after it\n  \
             202 -> arrival ms  p50 {p50:.3}  p90 {p90:.3}  p99 {p99:.3}  max {max:.3}  mean {mean:.3}\n",
            tenants = self.tenants,
            routes = self.routes.len() + 1,
            mif = self.max_in_flight,
            engine = self.engine,
            acc = d.accepted,
            load = d.load_secs,
            acc_rps = d.accepted_per_sec,
            arr = d.arrived,
            miss = d.missing,
            dup = d.duplicates,
            unx = d.unexpected,
            noid = d.without_id,
            del = d.delivered_per_sec,
            span = d.span_secs,
            during = d.delivered_per_sec_during_load,
            drain = d.drain_secs,
            after = d.delivered_per_sec_after_load,
            p50 = l.p50,
            p90 = l.p90,
            p99 = l.p99,
            max = l.max,
            mean = l.mean,
        );
        for (i, r) in self.routes.iter().enumerate() {
            out += &format!(
                "  route r{n}: arrived {arr} (missing {miss}, duplicates {dup}), delivered {del:.0}/s; \
                 202 -> arrival ms p50 {p50:.3} p99 {p99:.3}\n",
                n = i + 1,
                arr = r.arrived,
                miss = r.missing,
                dup = r.duplicates,
                del = r.delivered_per_sec,
                p50 = r.latency_ms.p50,
                p99 = r.latency_ms.p99,
            );
        }
        if let Some(a) = &self.alone {
            out += &format!(
                "  tenant {ALONE_TENANT}, its one route loaded in the same run: arrived {arr} (missing {miss}, \
                 duplicates {dup}); 202 -> arrival ms p50 {p50:.3} p99 {p99:.3}\n  \
                 the default route against it: p50 {r50:.2}x, p99 {r99:.2}x\n",
                arr = a.arrived,
                miss = a.missing,
                dup = a.duplicates,
                p50 = a.latency_ms.p50,
                p99 = a.latency_ms.p99,
                r50 = ratio(l.p50, a.latency_ms.p50),
                r99 = ratio(l.p99, a.latency_ms.p99),
            );
        }
        if d.arrived_before_202 > 0 {
            out += &format!(
                "  note: {} events arrived before their 202 was read (latency counted as 0)\n",
                d.arrived_before_202
            );
        }
        if d.missing > 0 {
            out += &format!(
                "  warning: {} accepted events had not arrived when the drain timed out\n",
                d.missing
            );
        }
        if let Some(steady) = &self.steady {
            out += &steady.text();
        }
        out
    }
}

/// Runs the scenario (once, for a backlog, or once per `--rates` rate)
/// and prints its report.
pub async fn run(mut args: ForwardArgs) -> anyhow::Result<()> {
    if args.load.dup_ratio > 0.0 {
        bail!("forward sends unique deliveries only: leave --dup-ratio at 0");
    }
    if cfg!(debug_assertions) && !args.load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let scenario = scenario(&args)?;
    if !args.rates.is_empty() {
        return sweep::run(&mut args, &scenario).await;
    }
    let load = &args.load;
    let mut spec = load.plan_spec()?;
    let opts = load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    // Refused before a database is made for it.
    scenario.check(&spec)?;
    let server = args.postgres_url.as_deref();
    if let Some(backlog) = args.backlog {
        if backlog == 0 {
            bail!("--backlog must be at least 1");
        }
        spec.requests = backlog;
        let (spec, opts) = (&spec, &opts);
        let report = storage::with_fresh(server, |storage| {
            let scenario = Scenario {
                storage,
                ..scenario
            };
            async move { backlog::measure(&scenario, spec, opts).await }
        })
        .await?;
        return print_report(load.json, &report, BacklogReport::text);
    }
    let report = measure_on(server, &scenario, &spec, &opts).await?;
    print_report(load.json, &report, ForwardReport::text)
}

/// The scenario `args` describe, on sled until a run is given its storage.
fn scenario(args: &ForwardArgs) -> anyhow::Result<Scenario> {
    Ok(Scenario {
        hookd: args.hookd.clone().unwrap_or_else(servers::default_hookd),
        workers: args.workers,
        log_filter: args.hookd_log_filter.clone(),
        ready_timeout: Duration::from_secs(args.ready_timeout_secs),
        max_in_flight: args.max_in_flight,
        drain_timeout: positive_secs("--drain-timeout-secs", args.drain_timeout_secs)?,
        sink_workers: args.sink_workers,
        routes: args.routes,
        route_replies: args.route_replies.clone(),
        tenant_keys: String::new(),
        extra_config: String::new(),
        storage: Storage::Sled,
        alone: args.alone,
    })
}

/// [`measure`] on fresh storage: sled, or a database of its own on the
/// PostgreSQL server at `server`, dropped after the run.
async fn measure_on(
    server: Option<&str>,
    scenario: &Scenario,
    spec: &PlanSpec,
    opts: &LoadOptions,
) -> anyhow::Result<ForwardReport> {
    storage::with_fresh(server, |storage| {
        let scenario = Scenario {
            storage,
            ..scenario.clone()
        };
        async move { measure(&scenario, spec, opts).await }
    })
    .await
}

/// Prints `report` as JSON or as its text.
fn print_report<R: Serialize>(
    json: bool,
    report: &R,
    text: fn(&R) -> String,
) -> anyhow::Result<()> {
    if json {
        println!("{}", serde_json::to_string_pretty(report)?);
    } else {
        print!("{}", text(report));
    }
    Ok(())
}

/// Starts the sinks and hookd as `scenario` says, loads hookd with `spec`'s
/// unique deliveries, waits for them at every sink and tallies the arrivals.
pub async fn measure(
    scenario: &Scenario,
    spec: &PlanSpec,
    opts: &LoadOptions,
) -> anyhow::Result<ForwardReport> {
    scenario.check(spec)?;
    if scenario.alone && spec.tenants.iter().any(|t| t == ALONE_TENANT) {
        bail!("--alone adds the tenant {ALONE_TENANT:?}: choose another --tenant-pattern");
    }
    let opts = LoadOptions {
        record_accepted: true,
        ..opts.clone()
    };
    let (sink, route_sinks, alone_sink) = start_sinks(scenario)?;
    let hookd_spec = forwarding_hookd(scenario, spec, &opts, &sink, &route_sinks);
    let (hookd_spec, plan_spec) =
        add_alone_and_config(scenario, hookd_spec, spec.clone(), alone_sink.as_ref());
    let hookd = servers::start_hookd(&hookd_spec).await?;
    // Signed once hookd is up, so its start does not age the timestamps.
    let plan = Arc::new(Plan::build(&plan_spec)?);
    let opts = LoadOptions {
        addr: hookd.addr,
        ..opts
    };
    let order = Arc::new(plan.order.clone());
    let timed = run_phase(plan.clone(), order, &opts, "hookd forward").await;
    let load_end = timed.started + timed.elapsed;
    let (accepted, alone_accepted) = accepted_by_side(&plan, &timed.accepted, alone_sink.is_some());
    let awaited = std::iter::once(&sink)
        .chain(&route_sinks)
        .map(|s| (s, &accepted))
        .chain(alone_sink.iter().map(|s| (s, &alone_accepted)));
    for (sink, accepted) in awaited {
        drain(sink, accepted, scenario.drain_timeout, opts.progress).await;
    }
    let drained = Instant::now();
    hookd.stop(Duration::from_secs(30));
    let tally = |sink: &Sink, accepted: &HashMap<String, Instant>| {
        Delivery::tally(
            accepted,
            &sink.arrivals.snapshot(),
            sink.arrivals.without_id(),
            timed.started,
            load_end,
        )
    };
    let delivery = tally(&sink, &accepted);
    let steady = opts.pace.map(|gap| {
        let run = (
            timed.started,
            opts.duration.unwrap_or(timed.elapsed),
            drained,
        );
        let arrivals = sink.arrivals.snapshot();
        Steady::of(1.0 / gap.as_secs_f64(), &accepted, &arrivals, run)
    });
    let routes = route_sinks.iter().map(|s| tally(s, &accepted)).collect();
    let alone = alone_sink.as_ref().map(|s| tally(s, &alone_accepted));
    for sink in std::iter::once(sink).chain(route_sinks).chain(alone_sink) {
        sink.stop().await;
    }
    Ok(ForwardReport {
        engine: scenario.storage.engine(),
        tenants: spec.tenants.len(),
        max_in_flight: scenario.max_in_flight,
        load: Summary::new("hookd", opts.connections, &timed, None),
        delivery,
        routes,
        alone,
        steady,
    })
}

/// The default route's sink (answering 204), each other route's (as
/// `scenario.route_replies` say) and, with `--alone`, the alone tenant's.
fn start_sinks(scenario: &Scenario) -> anyhow::Result<(Sink, Vec<Sink>, Option<Sink>)> {
    let sink = Sink::start(scenario.sink_workers, Reply::Status(204))?;
    let route_sinks = (1..scenario.routes)
        .map(|i| {
            let reply = scenario.route_replies.get(i - 1).copied();
            Sink::start(scenario.sink_workers, reply.unwrap_or(Reply::Status(204)))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let alone_sink = match scenario.alone {
        true => Some(Sink::start(scenario.sink_workers, Reply::Status(204))?),
        false => None,
    };
    Ok((sink, route_sinks, alone_sink))
}

/// `hookd` and `spec` with the `--alone` tenant added, forwarding to
/// `alone_sink` (when there is one), then `scenario`'s extra config and
/// storage.
fn add_alone_and_config(
    scenario: &Scenario,
    mut hookd: HookdSpec,
    mut spec: PlanSpec,
    alone_sink: Option<&Sink>,
) -> (HookdSpec, PlanSpec) {
    if let Some(alone) = alone_sink {
        let destination = DestinationSpec {
            url: format!("http://{}/sink", alone.addr),
            routes: Vec::new(),
            ..hookd.destination.clone().expect("every tenant forwards")
        };
        hookd.extra_config = servers::tenant_table(&hookd, ALONE_TENANT, Some(&destination));
        spec.tenants.push(ALONE_TENANT.to_owned());
    }
    hookd.extra_config += &scenario.extra_config;
    hookd.extra_config += &scenario.storage.config();
    (hookd, spec)
}

/// hookd forwarding every tenant of `spec` to `sink`, and its extra routes
/// to `route_sinks`, as `scenario` says.
fn forwarding_hookd(
    scenario: &Scenario,
    spec: &PlanSpec,
    opts: &LoadOptions,
    sink: &Sink,
    route_sinks: &[Sink],
) -> HookdSpec {
    HookdSpec {
        binary: scenario.hookd.clone(),
        tenants: spec.tenants.clone(),
        scheme: spec.scheme,
        secret: spec.secret.clone(),
        kid: spec.kid.clone(),
        tolerance_secs: 300 + 4 * opts.duration.map_or(0, |d| d.as_secs()),
        max_body_bytes: (1 << 20).max(2 * spec.body_size),
        workers: scenario.workers,
        log_filter: scenario.log_filter.clone(),
        ready_timeout: scenario.ready_timeout,
        destination: Some(DestinationSpec {
            url: format!("http://{}/sink", sink.addr),
            secret: SINK_SECRET.to_owned(),
            tenant_keys: scenario.tenant_keys.clone(),
            max_in_flight: scenario.max_in_flight,
            routes: route_sinks
                .iter()
                .map(|s| format!("http://{}/sink", s.addr))
                .collect(),
        }),
        pulled_routes: 0,
        extra_config: String::new(),
    }
}

/// The event ids the load saw accepted, each with when its 202 came:
/// everyone's, and apart from them the `--alone` tenant's (when `alone`).
fn accepted_by_side(
    plan: &Plan,
    accepted_at: &[(u32, Instant)],
    alone: bool,
) -> (HashMap<String, Instant>, HashMap<String, Instant>) {
    let alone_path = format!("/hooks/{ALONE_TENANT}");
    let (mut accepted, mut alone_accepted) = (HashMap::new(), HashMap::new());
    for &(i, at) in accepted_at {
        let delivery = &plan.pool[i as usize];
        let side = match alone && delivery.path == alone_path {
            true => &mut alone_accepted,
            false => &mut accepted,
        };
        side.insert(delivery.event_id.clone(), at);
    }
    (accepted, alone_accepted)
}
