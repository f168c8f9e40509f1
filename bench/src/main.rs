//! `hookd-bench`: drives hookd's real HTTP ingress with pre-signed deliveries
//! and reports throughput and latency; `compare` prints every ratio in one
//! run (hookd beside a bare actix-web server answering 202 to the same
//! requests, and hookd's features against hookd without them);
//! `forward` measures events accepted and delivered to a local sink (with
//! `--backlog`, a stored backlog's drain after a restart, ingest idle);
//! `hostile` measures what one tenant's endless transform costs another;
//! `adaptive` measures adaptive concurrency against a sink of fixed
//! capacity; `results` prints the latest figure of each scenario recorded
//! in bench/results. See docs/benchmarks.md.

mod adaptive;
mod background;
mod backlog;
mod bare;
mod capacity;
mod compare;
mod cpu;
mod forward;
mod hostile;
mod isolation;
mod load;
mod plan;
mod ratios;
mod replay;
mod report;
mod results;
mod scale;
mod scenario;
mod servers;
mod sink;
mod storage;

use std::{
    net::{SocketAddr, ToSocketAddrs},
    path::PathBuf,
    sync::Arc,
    time::Duration,
};

use anyhow::{bail, Context};
use clap::{Args, Parser, Subcommand};
use hookd_sdk::signature::Scheme;

use load::{run_phase, LoadOptions, PhaseResult};
use plan::{Plan, PlanSpec};
use report::Summary;

/// Unique deliveries a duration run signs per second of its duration.
const PLANNED_UNIQUE_PER_SEC: f64 = 100_000.0;
/// Most timed requests a duration run plans unless `--max-requests` says otherwise.
const PLANNED_MAX: usize = 10_000_000;

#[derive(Debug, Parser)]
#[command(name = "hookd-bench", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Load a running hookd (or any server) on a loopback address.
    Run {
        /// Base URL of the server, e.g. http://127.0.0.1:8080 (loopback only).
        #[arg(long)]
        target: String,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Every ratio in one run: a bare actix-web server and hookd under the
    /// same deliveries (unique, then duplicates), many tenants, several
    /// routes, forwarding, PostgreSQL and alerts with adaptive concurrency,
    /// each against its baseline.
    Compare(compare::CompareArgs),
    /// Start hookd with each number of tenants in turn: time to ready,
    /// resident memory idle and under a load spread over every tenant.
    Tenants {
        /// Tenant counts, comma-separated.
        #[arg(long, value_delimiter = ',', default_value = "1,100,10000")]
        counts: Vec<usize>,
        /// The hookd binary (default: target/release/hookd beside this binary's target dir).
        #[arg(long)]
        hookd: Option<PathBuf>,
        /// hookd's log filter (the line announcing its addresses is always kept).
        #[arg(long, default_value = "warn")]
        hookd_log_filter: String,
        /// Seconds to wait for hookd's /readyz.
        #[arg(long, default_value_t = 600)]
        ready_timeout_secs: u64,
        #[command(flatten)]
        load: LoadArgs,
    },
    /// Start a sink answering 204 and hookd with every tenant forwarding to
    /// it, load hookd, wait for every accepted event to arrive and report
    /// delivered/s and the latency from 202 to arrival.
    Forward(forward::ForwardArgs),
    /// Load one tenant beside another whose route's transform is an
    /// endless loop, in alternating fresh hookd processes, and compare its
    /// ingest p99 with the same load beside a benign transform.
    Hostile(hostile::HostileArgs),
    /// Load a quiet tenant alone, then beside a tenant flooding at many
    /// times its rate (half badly signed) into a slow sink, in alternating
    /// fresh hookd processes, and compare its ingest and delivery latency.
    Isolation(isolation::IsolationArgs),
    /// Load a live tenant alone, then while another tenant's history is
    /// replayed into a new route, in alternating fresh hookd processes
    /// (the history made and hookd restarted in each), and compare its
    /// ingest latency.
    Replay(replay::ReplayArgs),
    /// Adaptive concurrency against a local sink of fixed capacity that
    /// answers 503 beyond it: the limit over time, how fast it settles
    /// (also after the capacity doubles), the 503 share, and how fairly
    /// many tenants share one sink.
    Adaptive(adaptive::AdaptiveArgs),
    /// The latest figure of each scenario recorded in bench/results/*.json,
    /// as the markdown table docs/benchmarks.md shows (or written into it).
    Results(results::ResultsArgs),
    /// The bare server `compare` starts (internal).
    #[command(hide = true)]
    BareServer {
        #[arg(long)]
        addr: SocketAddr,
        #[arg(long, default_value_t = 0)]
        workers: usize,
    },
}

#[derive(Debug, Args)]
struct LoadArgs {
    /// Concurrent keep-alive connections.
    #[arg(long, short = 'c', default_value_t = 64)]
    connections: usize,
    /// Send for this many seconds (the default, 10 s, unless --count is given).
    #[arg(long, conflicts_with = "count")]
    duration_secs: Option<f64>,
    /// Send exactly this many timed requests instead of running for a duration.
    #[arg(long)]
    count: Option<usize>,
    /// Most timed requests a duration run plans up front (default: 100,000 unique deliveries per second plus the duplicates of --dup-ratio, at most four times as many requests and 10,000,000).
    #[arg(long)]
    max_requests: Option<usize>,
    /// Body size in bytes.
    #[arg(long, default_value_t = 1024)]
    body_size: usize,
    /// Share of timed requests that replay an already accepted delivery (0..=1).
    #[arg(long, default_value_t = 0.0)]
    dup_ratio: f64,
    /// Deliveries sent (untimed) before the run for duplicates to replay.
    #[arg(long, default_value_t = 1000)]
    dup_set: usize,
    /// Signature scheme: any preset hookd-bench can sign with a shared secret in
    /// headers (not the key-pair schemes, Mailgun, nor those that sign the URL).
    #[arg(long, default_value = "standard")]
    scheme: Scheme,
    /// Spread requests round-robin over this many tenants.
    #[arg(long, default_value_t = 1)]
    tenants: usize,
    /// Tenant ids; `{}` becomes the tenant's number (0-based).
    #[arg(long, default_value = "bench-{}")]
    tenant_pattern: String,
    /// The tenants' secret as the provider hands it out (Standard Webhooks: whsec_ + base64).
    #[arg(
        long,
        env = "HOOKD_BENCH_SECRET",
        default_value = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=",
        hide_env_values = true
    )]
    secret: String,
    /// Key id the secret is declared under (the hookd scheme sends it).
    #[arg(long, default_value = "k1")]
    kid: String,
    /// A request unanswered this many seconds counts as an error.
    #[arg(long, default_value_t = 10.0)]
    timeout_secs: f64,
    /// Send at this many requests a second in all (paced, open loop) instead
    /// of as fast as the connections are answered; latency then counts from
    /// each request's planned instant. Give enough --connections to keep up.
    #[arg(long, conflicts_with = "count")]
    rate: Option<f64>,
    /// Random seed for which requests are duplicates.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Event ids in no order, as most senders make them (random ids, UUIDs),
    /// instead of counting up: a tenant's idempotency keys then spread over
    /// its whole key range, as in production.
    #[arg(long)]
    unordered_ids: bool,
    /// Print a JSON summary on stdout instead of the text report.
    #[arg(long)]
    json: bool,
}

impl LoadArgs {
    /// The run's length, `None` for a `--count` run.
    fn duration(&self) -> anyhow::Result<Option<Duration>> {
        match (self.count, self.duration_secs) {
            (Some(_), _) => Ok(None),
            (None, secs) => positive_secs("--duration-secs", secs.unwrap_or(10.0)).map(Some),
        }
    }

    fn plan_spec(&self) -> anyhow::Result<PlanSpec> {
        let requests = match (self.count, self.duration()?) {
            (Some(count), _) => count,
            (None, Some(d)) => self.max_requests.unwrap_or_else(|| {
                let per_sec = match self.rate {
                    Some(rate) => rate,
                    // Duplicates cost no memory of their own: plan more requests
                    // when more of them are duplicates (up to four times as many).
                    None => PLANNED_UNIQUE_PER_SEC / (1.0 - self.dup_ratio).max(0.25),
                };
                ((d.as_secs_f64() * per_sec).ceil() as usize).clamp(1, PLANNED_MAX)
            }),
            (None, None) => unreachable!("a run without --count has a duration"),
        };
        Ok(PlanSpec {
            scheme: self.scheme,
            secret: self.secret.clone(),
            kid: self.kid.clone(),
            tenants: plan::tenant_ids(&self.tenant_pattern, self.tenants)?,
            body_size: self.body_size,
            dup_ratio: self.dup_ratio,
            dup_set: self.dup_set,
            requests,
            rng_seed: self.seed,
            unordered_ids: self.unordered_ids,
        })
    }

    fn options(&self, addr: SocketAddr) -> anyhow::Result<LoadOptions> {
        if self.connections == 0 {
            bail!("--connections must be at least 1");
        }
        let request_timeout = positive_secs("--timeout-secs", self.timeout_secs)?;
        Ok(LoadOptions {
            addr,
            connections: self.connections,
            duration: self.duration()?,
            request_timeout,
            progress: !self.json,
            record_accepted: false,
            pace: self.pace()?,
        })
    }

    /// The gap between two paced requests, from `--rate`.
    fn pace(&self) -> anyhow::Result<Option<Duration>> {
        let Some(rate) = self.rate else {
            return Ok(None);
        };
        match Duration::try_from_secs_f64(1.0 / rate) {
            Ok(gap) if rate > 0.0 && !gap.is_zero() => Ok(Some(gap)),
            _ => bail!("--rate must be a positive number of requests a second, got {rate}"),
        }
    }
}

/// `secs` as a duration, refused unless it is a positive, finite number of seconds.
fn positive_secs(flag: &str, secs: f64) -> anyhow::Result<Duration> {
    match Duration::try_from_secs_f64(secs) {
        Ok(d) if !d.is_zero() => Ok(d),
        _ => bail!("{flag} must be a positive number of seconds, got {secs}"),
    }
}

fn main() -> anyhow::Result<()> {
    let cli = Cli::parse();
    match cli.command {
        Command::BareServer { addr, workers } => {
            ensure_loopback(addr)?;
            bare::serve(addr, workers)
        }
        command => tokio::runtime::Builder::new_multi_thread()
            .enable_all()
            .build()?
            .block_on(run(command)),
    }
}

async fn run(command: Command) -> anyhow::Result<()> {
    match command {
        Command::Run { target, load } => {
            let addr = target_addr(&target)?;
            let opts = load.options(addr)?;
            let plan = Arc::new(Plan::build(&load.plan_spec()?)?);
            let summary = measure(&target, &plan, &opts).await;
            if load.json {
                println!("{}", serde_json::to_string_pretty(&summary)?);
            } else {
                print!("{}", summary.text());
            }
            Ok(())
        }
        Command::Compare(args) => compare::run(args).await,
        Command::Tenants {
            counts,
            hookd,
            hookd_log_filter,
            ready_timeout_secs,
            load,
        } => tenants(counts, hookd, hookd_log_filter, ready_timeout_secs, load).await,
        Command::Forward(args) => forward::run(args).await,
        Command::Hostile(args) => hostile::run(args).await,
        Command::Isolation(args) => isolation::run(args).await,
        Command::Replay(args) => replay::run(args).await,
        Command::Adaptive(args) => adaptive::run(args).await,
        Command::Results(args) => results::run(args),
        Command::BareServer { .. } => unreachable!("served without a tokio runtime"),
    }
}

/// `tenants`: hookd started with each tenant count in turn.
async fn tenants(
    counts: Vec<usize>,
    hookd: Option<PathBuf>,
    hookd_log_filter: String,
    ready_timeout_secs: u64,
    load: LoadArgs,
) -> anyhow::Result<()> {
    let spec = load.plan_spec()?;
    let opts = load.options(SocketAddr::from(([127, 0, 0, 1], 0)))?;
    let run_secs = opts.duration.map_or(0, |d| d.as_secs());
    let hookd_spec = servers::HookdSpec {
        binary: hookd.unwrap_or_else(servers::default_hookd),
        tenants: Vec::new(),
        scheme: spec.scheme,
        secret: spec.secret.clone(),
        kid: spec.kid.clone(),
        tolerance_secs: 300 + 4 * run_secs,
        max_body_bytes: (1 << 20).max(2 * spec.body_size),
        workers: 0,
        log_filter: hookd_log_filter,
        ready_timeout: Duration::from_secs(ready_timeout_secs),
        destination: None,
        pulled_routes: 0,
        extra_config: String::new(),
    };
    let rows = scale::run(&counts, &load.tenant_pattern, &hookd_spec, &spec, &opts).await?;
    if load.json {
        println!("{}", serde_json::to_string_pretty(&rows)?);
    } else {
        print!("{}", scale::text(&rows));
    }
    Ok(())
}

/// The seed phase (when there are duplicates), then the timed phase.
async fn measure(server: &str, plan: &Arc<Plan>, opts: &LoadOptions) -> Summary {
    measure_process(server, plan, opts, None).await
}

/// [`measure`], and when `process` is the server (started by hookd-bench)
/// its CPU time per timed request, read around the timed phase only.
async fn measure_process(
    server: &str,
    plan: &Arc<Plan>,
    opts: &LoadOptions,
    process: Option<&servers::ServerProcess>,
) -> Summary {
    let seed: Option<PhaseResult> = if plan.seed_len > 0 {
        let order = Arc::new((0..plan.seed_len as u32).collect::<Vec<_>>());
        let seed_opts = LoadOptions {
            duration: None,
            pace: None,
            ..opts.clone()
        };
        Some(run_phase(plan.clone(), order, &seed_opts, &format!("{server} seed")).await)
    } else {
        None
    };
    let order = Arc::new(plan.order.clone());
    let before = process.and_then(servers::ServerProcess::ticks);
    let timed = run_phase(plan.clone(), order, opts, server).await;
    let after = process.and_then(servers::ServerProcess::ticks);
    let mut summary = Summary::new(server, opts.connections, &timed, seed.as_ref());
    let answered = summary.statuses.values().sum();
    summary.cpu = before
        .zip(after)
        .and_then(|(before, after)| cpu::CpuUse::between(&before, &after, answered));
    summary
}

/// The socket address of `http://HOST:PORT[/]`, which must be a loopback address.
fn target_addr(target: &str) -> anyhow::Result<SocketAddr> {
    let rest = target
        .strip_prefix("http://")
        .context("--target must start with http:// (hookd-bench speaks plain HTTP/1.1)")?;
    let hostport = rest.trim_end_matches('/');
    if hostport.contains('/') {
        bail!("--target is a base URL without a path, e.g. http://127.0.0.1:8080");
    }
    let addr = hostport
        .to_socket_addrs()
        .with_context(|| format!("--target {target:?} is not HOST:PORT"))?
        .next()
        .with_context(|| format!("--target {target:?} resolves to no address"))?;
    ensure_loopback(addr)?;
    Ok(addr)
}

fn ensure_loopback(addr: SocketAddr) -> anyhow::Result<()> {
    if !addr.ip().is_loopback() {
        bail!("hookd-bench loads loopback addresses only, not {addr}");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_must_be_loopback() {
        assert_eq!(
            target_addr("http://127.0.0.1:8080/").unwrap(),
            "127.0.0.1:8080".parse().unwrap()
        );
        let err = target_addr("http://10.1.2.3:80").unwrap_err().to_string();
        assert!(err.contains("loopback"), "{err}");
        assert!(target_addr("https://127.0.0.1:1").is_err());
        assert!(target_addr("http://127.0.0.1:1/hooks/x").is_err());
    }

    #[test]
    fn durations_must_be_positive() {
        assert_eq!(
            positive_secs("--x", 1.5).unwrap(),
            Duration::from_millis(1500)
        );
        for bad in [0.0, -1.0, f64::NAN, f64::INFINITY] {
            let err = positive_secs("--x", bad).unwrap_err().to_string();
            assert!(err.contains("--x"), "{err}");
        }
    }
}
