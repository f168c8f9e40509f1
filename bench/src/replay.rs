//! `hookd-bench replay`: what a running replay costs live ingest. Each
//! phase starts a fresh hookd on a data dir of its own with tenant
//! `backfill` in pull mode and no route `crm`, sends it `--history` unique
//! signed events as fast as they are answered (every one must be answered
//! 202), stops it (SIGTERM) and starts it again on the same data dir with
//! `backfill` now having a route `crm` forwarding to a local sink answering
//! 204, and tenant `live` forwarding to another. In an `alone` phase only
//! `live` is loaded, at `--live-rate` requests a second (paced, open loop,
//! each a new signed event); in a `replaying` phase a replay of all of
//! `backfill`'s history into `crm` at `--replay-rate` is ordered over REST
//! (`POST /v1/tenants/backfill/routes/crm:replay`, the admin token the bench
//! gives hookd) just before the same load, and read again
//! (`GET /v1/tenants/backfill/replays/{id}`) just after it: the deliveries
//! it made meanwhile, and whether it had finished. Phases alternate, one of
//! each per round; the report compares `live`'s ingest p99, the median over
//! the rounds, replaying against alone, with [`THRESHOLD`].

use std::{
    fmt::Write as _,
    net::SocketAddr,
    path::PathBuf,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use anyhow::{bail, Context};
use clap::Args;
use http_body_util::{BodyExt, Full};
use hyper::{body::Bytes, header, Method, Request};
use serde::Serialize;
use serde_json::{json, Value};

use crate::{
    isolation::{gap, own_cpu_secs},
    load::{self, run_phase, LoadOptions},
    plan::{Plan, PlanSpec},
    report::{median, ratio, Summary},
    scenario::SINK_SECRET,
    servers::{self, DestinationSpec, HookdSpec, ADMIN_TOKEN},
    sink::{Reply, Sink},
    LoadArgs,
};

/// The measured tenant.
const LIVE: &str = "live";
/// The tenant whose history is replayed.
const BACKFILL: &str = "backfill";
/// The route of `backfill` the replay fills.
const CRM: &str = "crm";
/// The most the replaying phases' ingest p99 may be of the alone phases'.
const THRESHOLD: f64 = 1.20;
/// How long hookd may take to stop (SIGTERM, then SIGKILL).
const STOP_GRACE: Duration = Duration::from_secs(60);
/// hookd's bounds for a route's `max_in_flight`.
const MAX_IN_FLIGHT: std::ops::RangeInclusive<usize> = 1..=1024;
/// hookd's bounds for a replay's rate, deliveries a second.
const REPLAY_RATE: std::ops::RangeInclusive<u32> = 1..=5_000;

/// The flags of `hookd-bench replay`.
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// hookd's log filter (the line announcing its addresses is always kept).
    #[arg(long, default_value = "warn")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz.
    #[arg(long, default_value_t = 60)]
    ready_timeout_secs: u64,
    /// Pairs of phases (alone, then replaying) to run.
    #[arg(long, default_value_t = 3)]
    rounds: usize,
    /// Requests a second sent to `live` in every phase (paced, open loop).
    #[arg(long, default_value_t = 200.0)]
    live_rate: f64,
    /// Events `backfill` takes before each restart: the history replayed.
    #[arg(long, default_value_t = 20_000)]
    history: usize,
    /// The replay's rate, deliveries a second (hookd takes 1..=5000).
    #[arg(long, default_value_t = 2_000)]
    replay_rate: u32,
    /// The `max_in_flight` of `live` and of `crm` (1..=1024).
    #[arg(long, default_value_t = 8)]
    max_in_flight: usize,
    /// The load: `--duration-secs` is each phase's, `--connections` serves
    /// both `live`'s load and the history's; `--count`, `--rate`,
    /// `--max-requests`, `--tenants` and `--dup-ratio` do not apply.
    #[command(flatten)]
    load: LoadArgs,
}

/// What the run was asked to do.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Settings {
    /// `live`'s requests a second.
    pub live_rate: f64,
    /// Events of `backfill`'s history.
    pub history: usize,
    /// The replay's deliveries a second.
    pub replay_rate: u32,
    /// `max_in_flight` of `live` and `crm`.
    pub max_in_flight: usize,
}

/// The replay of a replaying phase, read just before and just after the load.
#[derive(Debug, Serialize)]
pub struct ReplayWindow {
    /// Its id (`rpl_` and a ULID).
    pub id: String,
    /// Deliveries it had made when the load started.
    pub replayed_at_start: u64,
    /// Deliveries it had made when the load ended.
    pub replayed_at_end: u64,
    /// Deliveries it made during the load, per second of the load.
    pub replayed_per_sec: f64,
    /// Its state when the load ended (`running`, `done`, ...).
    pub state: String,
    /// Whether it had looked at every event of its window by then.
    pub finished: bool,
    /// Why its last step failed, if it did.
    pub last_error: Option<String>,
}

impl ReplayWindow {
    /// Deliveries it made during the load.
    pub fn replayed(&self) -> u64 {
        self.replayed_at_end.saturating_sub(self.replayed_at_start)
    }
}

/// One phase's figures.
#[derive(Debug, Serialize)]
pub struct Phase {
    /// `alone` or `replaying`.
    pub phase: &'static str,
    /// The round it belongs to, from 1.
    pub round: usize,
    /// The load that made `backfill`'s history, before the restart.
    pub history: Summary,
    /// `live`'s load: ingest latency, statuses.
    pub live: Summary,
    /// The replay, in a replaying phase.
    pub replay: Option<ReplayWindow>,
    /// Forwards that reached `crm`'s sink during the load.
    pub crm_forwarded: u64,
    /// hookd's CPU time over the load, per second: cores it kept busy.
    pub hookd_cores: f64,
    /// The same for hookd-bench (the load and the sinks) on the same machine.
    pub bench_cores: f64,
}

/// `live`'s ingest latency (request to answer), milliseconds.
#[derive(Debug, Clone, Copy, Serialize)]
pub struct Figures {
    /// Median.
    pub ingest_p50_ms: f64,
    /// 99th percentile.
    pub ingest_p99_ms: f64,
}

impl Figures {
    fn of(phase: &Phase) -> Figures {
        Figures {
            ingest_p50_ms: phase.live.latency_ms.p50,
            ingest_p99_ms: phase.live.latency_ms.p99,
        }
    }

    /// Each figure's median over the phases named `name`.
    fn median_of(phases: &[Phase], name: &str) -> Figures {
        let all: Vec<Figures> = phases
            .iter()
            .filter(|p| p.phase == name)
            .map(Figures::of)
            .collect();
        Figures {
            ingest_p50_ms: median(all.iter().map(|f| f.ingest_p50_ms).collect()),
            ingest_p99_ms: median(all.iter().map(|f| f.ingest_p99_ms).collect()),
        }
    }
}

/// The whole run.
#[derive(Debug, Serialize)]
pub struct ReplayReport {
    /// What was asked.
    #[serde(flatten)]
    pub settings: Settings,
    /// Every phase, in the order run.
    pub phases: Vec<Phase>,
    /// Median figures of the alone phases.
    pub alone: Figures,
    /// Median figures of the replaying phases.
    pub replaying: Figures,
    /// `replaying`'s ingest p99 over `alone`'s.
    pub ingest_p99_ratio: f64,
    /// Each round's replaying ingest p99 over its alone one, in order.
    pub round_ratios: Vec<f64>,
    /// Median over the replaying phases of the deliveries the replay made
    /// per second of the load.
    pub replayed_per_sec: f64,
    /// The claim: the ratio at most this.
    pub threshold: f64,
    /// Whether the ratio is within the threshold.
    pub within: bool,
}

impl ReplayReport {
    fn new(settings: Settings, phases: Vec<Phase>) -> ReplayReport {
        let alone = Figures::median_of(&phases, "alone");
        let replaying = Figures::median_of(&phases, "replaying");
        let ingest_p99_ratio = ratio(replaying.ingest_p99_ms, alone.ingest_p99_ms);
        let round_ratios = phases
            .chunks(2)
            .filter_map(|pair| match pair {
                [a, r] => Some(ratio(
                    Figures::of(r).ingest_p99_ms,
                    Figures::of(a).ingest_p99_ms,
                )),
                _ => None,
            })
            .collect();
        let replayed_per_sec = median(
            phases
                .iter()
                .filter_map(|p| p.replay.as_ref().map(|r| r.replayed_per_sec))
                .collect(),
        );
        ReplayReport {
            settings,
            phases,
            alone,
            replaying,
            ingest_p99_ratio,
            round_ratios,
            replayed_per_sec,
            threshold: THRESHOLD,
            within: ingest_p99_ratio <= THRESHOLD,
        }
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let s = &self.settings;
        let mut out = format!(
            "live at {:.0}/s; backfill: {} events of history, replayed into crm at {}/s in \
             replaying phases; max_in_flight {}; hookd, bench: cores busy over the load\n\
             {:<9} {:>5} {:>7} {:>11} {:>11} {:>9} {:>10} {:>9} {:>11} {:>8} {:>9} {:>6} {:>6}\n",
            s.live_rate,
            s.history,
            s.replay_rate,
            s.max_in_flight,
            "phase",
            "round",
            "live/s",
            "ingest p50",
            "ingest p99",
            "failures",
            "history/s",
            "replayed",
            "replayed/s",
            "crm fwd",
            "replay",
            "hookd",
            "bench",
        );
        for p in &self.phases {
            let f = Figures::of(p);
            let (replayed, per_sec, state) = p.replay.as_ref().map_or_else(
                || ("-".to_owned(), "-".to_owned(), "-".to_owned()),
                |r| {
                    (
                        r.replayed().to_string(),
                        format!("{:.0}", r.replayed_per_sec),
                        r.state.clone(),
                    )
                },
            );
            let _ = writeln!(
                out,
                "{:<9} {:>5} {:>7.0} {:>11.3} {:>11.3} {:>9} {:>10.0} {:>9} {:>11} {:>8} {:>9} {:>6.2} {:>6.2}",
                p.phase,
                p.round,
                p.live.ok_rps,
                f.ingest_p50_ms,
                f.ingest_p99_ms,
                p.live.failures(),
                p.history.ok_rps,
                replayed,
                per_sec,
                p.crm_forwarded,
                state,
                p.hookd_cores,
                p.bench_cores,
            );
        }
        for (name, f) in [("alone", &self.alone), ("replaying", &self.replaying)] {
            let _ = writeln!(
                out,
                "median {name:<9} ingest p50 {:.3} ms, p99 {:.3} ms",
                f.ingest_p50_ms, f.ingest_p99_ms,
            );
        }
        let _ = writeln!(
            out,
            "replaying / alone: ingest p99 {:.3}, the replay making {:.0} deliveries/s during the load (median)",
            self.ingest_p99_ratio, self.replayed_per_sec
        );
        for (i, r) in self.round_ratios.iter().enumerate() {
            let _ = writeln!(out, "  round {}: {r:.3}", i + 1);
        }
        for p in &self.phases {
            let Some(r) = &p.replay else { continue };
            if r.finished {
                let _ = writeln!(
                    out,
                    "  note: round {}'s replay had finished when the load ended: raise --history \
                     or lower --replay-rate to replay through the whole load",
                    p.round
                );
            }
            if let Some(error) = &r.last_error {
                let _ = writeln!(out, "  warning: round {}'s replay: {error}", p.round);
            }
        }
        let verdict = match self.within {
            true => "within",
            false => "NOT within",
        };
        let _ = writeln!(
            out,
            "verdict: live's ingest p99 during a replay is {verdict} {:.0} % of its p99 alone (ratio <= {:.2})",
            (self.threshold - 1.0) * 100.0,
            self.threshold
        );
        out
    }
}

/// Runs the rounds and prints the report.
pub async fn run(args: ReplayArgs) -> anyhow::Result<()> {
    let setup = Setup::new(&args)?;
    if cfg!(debug_assertions) && !args.load.json {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    let mut phases = Vec::new();
    for round in 1..=args.rounds {
        phases.push(setup.phase(round, false).await?);
        phases.push(setup.phase(round, true).await?);
    }
    let report = ReplayReport::new(setup.settings, phases);
    if args.load.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", report.text());
    }
    Ok(())
}

/// What every phase shares.
struct Setup {
    settings: Settings,
    hookd: PathBuf,
    log_filter: String,
    ready_timeout: Duration,
    /// `backfill`'s history.
    history: PlanSpec,
    /// `live`'s deliveries.
    live: PlanSpec,
    /// The history's load (as fast as answered).
    history_opts: LoadOptions,
    /// `live`'s load (paced).
    live_opts: LoadOptions,
    tolerance_secs: u64,
}

impl Setup {
    fn new(args: &ReplayArgs) -> anyhow::Result<Setup> {
        let load = &args.load;
        if load.count.is_some()
            || load.rate.is_some()
            || load.max_requests.is_some()
            || load.tenants != 1
            || load.dup_ratio != 0.0
        {
            bail!(
                "replay paces live's load itself and sends unique events: give --live-rate, \
                 not --count, --rate, --max-requests, --tenants or --dup-ratio"
            );
        }
        if args.rounds == 0 {
            bail!("--rounds must be at least 1");
        }
        if args.history == 0 {
            bail!("--history must be at least 1");
        }
        if !REPLAY_RATE.contains(&args.replay_rate) {
            bail!(
                "--replay-rate must be between {} and {}, got {}",
                REPLAY_RATE.start(),
                REPLAY_RATE.end(),
                args.replay_rate
            );
        }
        if !MAX_IN_FLIGHT.contains(&args.max_in_flight) {
            bail!(
                "--max-in-flight must be between {} and {}, got {}",
                MAX_IN_FLIGHT.start(),
                MAX_IN_FLIGHT.end(),
                args.max_in_flight
            );
        }
        let duration = load
            .duration()?
            .expect("a run without --count has a duration");
        let spec = load.plan_spec()?;
        let history = PlanSpec {
            tenants: vec![BACKFILL.to_owned()],
            requests: args.history,
            ..spec.clone()
        };
        let live = PlanSpec {
            tenants: vec![LIVE.to_owned()],
            requests: ((duration.as_secs_f64() * args.live_rate).ceil() as usize).max(1),
            ..spec
        };
        let live_opts = LoadOptions {
            pace: Some(gap("--live-rate", args.live_rate)?),
            ..load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?
        };
        let history_opts = LoadOptions {
            duration: None,
            pace: None,
            ..live_opts.clone()
        };
        Ok(Setup {
            settings: Settings {
                live_rate: args.live_rate,
                history: args.history,
                replay_rate: args.replay_rate,
                max_in_flight: args.max_in_flight,
            },
            hookd: args.hookd.clone().unwrap_or_else(servers::default_hookd),
            log_filter: args.hookd_log_filter.clone(),
            ready_timeout: Duration::from_secs(args.ready_timeout_secs),
            history,
            live,
            history_opts,
            live_opts,
            tolerance_secs: 300 + 4 * duration.as_secs(),
        })
    }

    /// hookd's spec: `backfill` in pull mode; with `sinks` (`live`'s, then
    /// `crm`'s), `live` forwarding to the first and `backfill`'s route
    /// `crm` to the second.
    fn hookd_spec(&self, sinks: Option<(SocketAddr, SocketAddr)>) -> HookdSpec {
        let spec = &self.live;
        let mut hookd = HookdSpec {
            binary: self.hookd.clone(),
            tenants: Vec::new(),
            scheme: spec.scheme,
            secret: spec.secret.clone(),
            kid: spec.kid.clone(),
            tolerance_secs: self.tolerance_secs,
            max_body_bytes: (1 << 20).max(2 * spec.body_size),
            workers: 0,
            log_filter: self.log_filter.clone(),
            ready_timeout: self.ready_timeout,
            destination: None,
            pulled_routes: 0,
            extra_config: String::new(),
        };
        let backfill = servers::tenant_table(&hookd, BACKFILL, None);
        hookd.extra_config = match sinks {
            None => backfill,
            Some((live_sink, crm_sink)) => {
                let live = DestinationSpec {
                    url: format!("http://{live_sink}/sink"),
                    secret: SINK_SECRET.to_owned(),
                    tenant_keys: String::new(),
                    max_in_flight: self.settings.max_in_flight,
                    routes: Vec::new(),
                };
                servers::tenant_table(&hookd, LIVE, Some(&live))
                    + &backfill
                    + &crm_route(&format!("http://{crm_sink}/sink"), &self.settings)
            }
        };
        hookd
    }

    /// Runs one phase in a fresh hookd: the history, the restart, then
    /// `live` loaded, with a replay into `crm` beside it when `replaying`.
    async fn phase(&self, round: usize, replaying: bool) -> anyhow::Result<Phase> {
        let name = if replaying { "replaying" } else { "alone" };
        let dir = tempfile::tempdir().context("cannot create a data dir for hookd")?;
        let history = self.make_history(name, round, dir.path()).await?;
        let live_sink = Sink::start(1, Reply::Status(204))?;
        let crm_sink = Sink::start(1, Reply::Status(204))?;
        let spec = self.hookd_spec(Some((live_sink.addr, crm_sink.addr)));
        let hookd = servers::start_hookd_in(&spec, dir.path()).await?;
        let control = hookd
            .grpc_addr
            .context("hookd announced no control-plane address")?;
        // Signed once hookd is up, so its start does not age the timestamps.
        let live_plan = Arc::new(Plan::build(&self.live)?);
        let live_opts = LoadOptions {
            addr: hookd.addr,
            ..self.live_opts.clone()
        };
        let replay = match replaying {
            true => {
                let id = order_replay(control, history.since_ms, self.settings.replay_rate).await?;
                let at_start = replay_state(control, &id).await?;
                Some((id, at_start))
            }
            false => None,
        };
        let hookd_cpu = || hookd.cpu_time().map_or(0.0, |d| d.as_secs_f64());
        let cpu_before = (hookd_cpu(), own_cpu_secs());
        let crm_before = crm_sink.arrivals.requests();
        let order = Arc::new(live_plan.order.clone());
        let label = format!("{LIVE}, {name}, round {round}");
        let live = run_phase(live_plan, order, &live_opts, &label).await;
        let crm_forwarded = crm_sink.arrivals.requests() - crm_before;
        let per_sec = |n: f64| n / live.elapsed.as_secs_f64();
        let hookd_cores = per_sec(hookd_cpu() - cpu_before.0);
        let bench_cores = per_sec(own_cpu_secs() - cpu_before.1);
        let replay = match replay {
            Some((id, at_start)) => {
                let at_end = replay_state(control, &id).await?;
                let replayed = at_end.replayed.saturating_sub(at_start.replayed);
                Some(ReplayWindow {
                    id,
                    replayed_at_start: at_start.replayed,
                    replayed_at_end: at_end.replayed,
                    replayed_per_sec: per_sec(replayed as f64),
                    finished: at_end.state == "done",
                    state: at_end.state,
                    last_error: at_end.last_error,
                })
            }
            None => None,
        };
        hookd.stop(STOP_GRACE);
        live_sink.stop().await;
        crm_sink.stop().await;
        Ok(Phase {
            phase: name,
            round,
            history: history.summary,
            live: Summary::new(LIVE, live_opts.connections, &live, None),
            replay,
            crm_forwarded,
            hookd_cores,
            bench_cores,
        })
    }

    /// Starts hookd on `dir` without the route `crm`, sends `backfill` its
    /// history and stops hookd.
    async fn make_history(
        &self,
        name: &str,
        round: usize,
        dir: &std::path::Path,
    ) -> anyhow::Result<History> {
        let hookd = servers::start_hookd_in(&self.hookd_spec(None), dir).await?;
        // Every event of the history is accepted at or after this instant.
        let since_ms = now_ms()?;
        let plan = Arc::new(Plan::build(&self.history)?);
        let opts = LoadOptions {
            addr: hookd.addr,
            ..self.history_opts.clone()
        };
        let label = format!("{BACKFILL} history, {name}, round {round}");
        let order = Arc::new(plan.order.clone());
        let result = run_phase(plan, order, &opts, &label).await;
        hookd.stop(STOP_GRACE);
        let summary = Summary::new(BACKFILL, opts.connections, &result, None);
        let accepted = summary.statuses.get(&202).copied().unwrap_or(0);
        if accepted != self.history.requests as u64 {
            bail!(
                "the history must be accepted whole: {accepted} of {} events were answered 202\n{}",
                self.history.requests,
                summary.text()
            );
        }
        Ok(History { since_ms, summary })
    }
}

/// `backfill`'s history, as sent.
struct History {
    /// The Unix ms before its first event was sent.
    since_ms: u64,
    /// Its load.
    summary: Summary,
}

/// The table of route `crm` forwarding to `url`, added to the tenant table
/// written before it.
fn crm_route(url: &str, settings: &Settings) -> String {
    format!(
        "[[tenants.routes]]\nname = {CRM:?}\nmax_in_flight = {mif}\n\
         [tenants.routes.destination]\nurl = {url:?}\nsecret = {SINK_SECRET:?}\n",
        mif = settings.max_in_flight,
    )
}

fn now_ms() -> anyhow::Result<u64> {
    let since_epoch = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .context("the clock is before 1970")?;
    Ok(since_epoch.as_millis() as u64)
}

/// A replay's progress as `GetReplay` shows it.
#[derive(Debug, PartialEq)]
struct ReplayState {
    /// Deliveries it made so far.
    replayed: u64,
    /// `running`, `paused`, `cancelled`, `done` or `failed`.
    state: String,
    last_error: Option<String>,
}

impl ReplayState {
    /// Reads a `Replay` in the proto3 JSON mapping: 64-bit counts are
    /// strings, fields at their default are left out.
    fn of(replay: &Value) -> anyhow::Result<ReplayState> {
        let replayed = match replay.get("replayed") {
            None => Some(0),
            Some(Value::String(n)) => n.parse().ok(),
            Some(n) => n.as_u64(),
        }
        .with_context(|| format!("replayed is not a count in {replay}"))?;
        let state = replay
            .get("state")
            .and_then(Value::as_str)
            .unwrap_or("REPLAY_STATE_UNSPECIFIED");
        let state = state.strip_prefix("REPLAY_STATE_").unwrap_or(state);
        let last_error = replay
            .get("lastError")
            .and_then(Value::as_str)
            .filter(|e| !e.is_empty());
        Ok(ReplayState {
            replayed,
            state: state.to_lowercase(),
            last_error: last_error.map(str::to_owned),
        })
    }
}

/// Orders a replay of `backfill`'s events since `since_ms` into `crm` at
/// `rate` a second over hookd's REST control plane at `control`; its id.
async fn order_replay(control: SocketAddr, since_ms: u64, rate: u32) -> anyhow::Result<String> {
    let path = format!("/v1/tenants/{BACKFILL}/routes/{CRM}:replay");
    let body = json!({ "sinceUnixMs": since_ms.to_string(), "ratePerSecond": rate });
    let answer = rest(control, Method::POST, &path, Some(&body)).await?;
    answer["replay"]["id"]
        .as_str()
        .map(str::to_owned)
        .with_context(|| format!("no replay id in the answer to POST {path}: {answer}"))
}

/// Replay `id` of `backfill` and its progress.
async fn replay_state(control: SocketAddr, id: &str) -> anyhow::Result<ReplayState> {
    let path = format!("/v1/tenants/{BACKFILL}/replays/{id}");
    ReplayState::of(&rest(control, Method::GET, &path, None).await?)
}

/// One REST call with the admin token on a fresh connection; its JSON
/// answer, or an error naming the status and the answer.
async fn rest(
    control: SocketAddr,
    method: Method,
    path: &str,
    body: Option<&Value>,
) -> anyhow::Result<Value> {
    let what = format!("{method} {path}");
    let mut conn = load::connect(control)
        .await
        .map_err(|e| anyhow::anyhow!("{what}: cannot connect to {control}: {e}"))?;
    let body = body.map_or_else(Bytes::new, |b| Bytes::from(b.to_string()));
    let request = Request::builder()
        .method(method)
        .uri(path)
        .header(header::HOST, control.to_string())
        .header(header::AUTHORIZATION, format!("Bearer {ADMIN_TOKEN}"))
        .header(header::CONTENT_TYPE, "application/json")
        .body(Full::new(body))?;
    let response = conn
        .send_request(request)
        .await
        .with_context(|| what.clone())?;
    let status = response.status();
    let text = response
        .into_body()
        .collect()
        .await
        .with_context(|| what.clone())?
        .to_bytes();
    if !status.is_success() {
        bail!("{what}: {status}: {}", String::from_utf8_lossy(&text));
    }
    serde_json::from_slice(&text).with_context(|| format!("{what}: the answer is not JSON"))
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::*;
    use crate::report::Latency;

    fn summary(p50: f64, p99: f64) -> Summary {
        Summary {
            server: LIVE.into(),
            connections: 4,
            requests: 100,
            duplicates: 0,
            elapsed_secs: 1.0,
            throughput_rps: 100.0,
            ok_rps: 100.0,
            latency_ms: Latency {
                p50,
                p90: p99,
                p99,
                max: p99,
                mean: p50,
            },
            statuses: BTreeMap::from([(202, 100)]),
            errors: BTreeMap::new(),
            seed_statuses: BTreeMap::new(),
            plan_exhausted: false,
            cpu: None,
        }
    }

    fn phase(round: usize, p99: f64, replayed_per_sec: Option<f64>) -> Phase {
        Phase {
            phase: if replayed_per_sec.is_some() {
                "replaying"
            } else {
                "alone"
            },
            round,
            history: summary(1.0, 2.0),
            live: summary(p99 / 4.0, p99),
            replay: replayed_per_sec.map(|per_sec| ReplayWindow {
                id: "rpl_1".into(),
                replayed_at_start: 10,
                replayed_at_end: 10 + per_sec as u64,
                replayed_per_sec: per_sec,
                state: "running".into(),
                finished: false,
                last_error: None,
            }),
            crm_forwarded: 0,
            hookd_cores: 0.5,
            bench_cores: 0.2,
        }
    }

    const SETTINGS: Settings = Settings {
        live_rate: 200.0,
        history: 20_000,
        replay_rate: 2_000,
        max_in_flight: 8,
    };

    #[test]
    fn the_ratio_is_of_the_medians_and_held_to_the_threshold() {
        let phases = vec![
            phase(1, 2.0, None),
            phase(1, 2.2, Some(1_990.0)),
            phase(2, 4.0, None),
            phase(2, 2.6, Some(2_000.0)),
            phase(3, 2.4, None),
            phase(3, 9.0, Some(1_900.0)),
        ];
        let report = ReplayReport::new(SETTINGS, phases);
        assert_eq!(report.alone.ingest_p99_ms, 2.4);
        assert_eq!(report.replaying.ingest_p99_ms, 2.6);
        assert_eq!(report.alone.ingest_p50_ms, 0.6);
        assert!((report.ingest_p99_ratio - 2.6 / 2.4).abs() < 1e-12);
        let rounds: Vec<String> = report
            .round_ratios
            .iter()
            .map(|r| format!("{r:.3}"))
            .collect();
        assert_eq!(rounds, ["1.100", "0.650", "3.750"]);
        assert_eq!(report.replayed_per_sec, 1_990.0);
        assert!(report.within, "{}", report.text());
        assert!(
            report.text().contains("is within 20 %"),
            "{}",
            report.text()
        );

        let slower = vec![phase(1, 2.0, None), phase(1, 2.5, Some(2_000.0))];
        let report = ReplayReport::new(SETTINGS, slower);
        assert!(!report.within, "1.25 is over 1.20");
        assert!(report.text().contains("NOT within"), "{}", report.text());
    }

    #[test]
    fn a_replay_is_read_from_its_proto3_json() {
        let running = json!({"id": "rpl_1", "state": "REPLAY_STATE_RUNNING", "replayed": "1200"});
        assert_eq!(
            ReplayState::of(&running).unwrap(),
            ReplayState {
                replayed: 1_200,
                state: "running".into(),
                last_error: None
            }
        );
        let fresh = json!({"id": "rpl_1", "state": "REPLAY_STATE_FAILED", "lastError": "disk"});
        let fresh = ReplayState::of(&fresh).unwrap();
        assert_eq!((fresh.replayed, fresh.state.as_str()), (0, "failed"));
        assert_eq!(fresh.last_error.as_deref(), Some("disk"));
        assert!(ReplayState::of(&json!({"replayed": "many"})).is_err());
    }

    fn plan_spec(tenant: &str) -> PlanSpec {
        PlanSpec {
            scheme: hookd_sdk::signature::Scheme::Standard,
            secret: "whsec_abc".into(),
            kid: "k1".into(),
            tenants: vec![tenant.into()],
            body_size: 256,
            dup_ratio: 0.0,
            dup_set: 0,
            requests: 10,
            rng_seed: 1,
            unordered_ids: false,
        }
    }

    #[test]
    fn crm_is_declared_on_backfill_only_after_the_restart() {
        let setup = Setup {
            settings: SETTINGS,
            hookd: PathBuf::from("hookd"),
            log_filter: "warn".into(),
            ready_timeout: Duration::from_secs(1),
            history: plan_spec(BACKFILL),
            live: plan_spec(LIVE),
            history_opts: options(),
            live_opts: options(),
            tolerance_secs: 340,
        };
        let before = servers::hookd_config(&setup.hookd_spec(None));
        assert_eq!(before.matches("[[tenants]]").count(), 1, "{before}");
        assert!(before.contains("id = \"backfill\""), "{before}");
        assert!(
            !before.contains("routes") && !before.contains("destination"),
            "{before}"
        );
        let sinks = (
            "127.0.0.1:9".parse().unwrap(),
            "127.0.0.1:10".parse().unwrap(),
        );
        let after = servers::hookd_config(&setup.hookd_spec(Some(sinks)));
        assert_eq!(after.matches("[[tenants]]").count(), 2, "{after}");
        let (live, backfill, crm) = (
            after.find("id = \"live\"").unwrap(),
            after.find("id = \"backfill\"").unwrap(),
            after.find("name = \"crm\"").unwrap(),
        );
        assert!(
            live < backfill && backfill < crm,
            "crm is backfill's: {after}"
        );
        assert!(
            after[live..backfill]
                .contains("[tenants.destination]\nurl = \"http://127.0.0.1:9/sink\""),
            "{after}"
        );
        assert!(
            after[crm..].contains(
                "max_in_flight = 8\n[tenants.routes.destination]\nurl = \"http://127.0.0.1:10/sink\""
            ),
            "{after}"
        );
    }

    fn options() -> LoadOptions {
        LoadOptions {
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            connections: 4,
            duration: None,
            request_timeout: Duration::from_secs(1),
            progress: false,
            record_accepted: false,
            pace: None,
        }
    }
}
