//! `hookd-bench adaptive`: adaptive concurrency against a sink of fixed
//! capacity ([`CapacitySink`]: N requests in service at once, 503 at once
//! beyond). `converge`: one tenant with a backlog; prints its limit each
//! second, when it settles within ±15 % of the capacity, the 503 share, and
//! the same after the sink doubles its capacity mid-run. `fair`: many
//! tenants with a backlog each share one sink; prints the spread of what
//! each got (min / median / max share, Jain's index). Bounded in time,
//! 127.0.0.1 only.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    path::PathBuf,
    sync::{atomic::Ordering, Arc},
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use clap::{Args, ValueEnum};
use hookd_sdk::signature::Scheme;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::{
    capacity::CapacitySink,
    load::{run_phase, LoadOptions},
    plan::{self, Plan, PlanSpec},
    scenario::SINK_SECRET,
    servers::{self, DestinationSpec, HookdSpec},
};

/// The tenants' own signing secret.
const TENANT_SECRET: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
/// The band around the capacity the limit must settle in.
const BAND: f64 = 0.15;
/// The gauge read from hookd's `/metrics`.
const GAUGE: &str = "hookd_route_concurrency_limit";

/// Which runs to make.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Scenario {
    /// One tenant; the sink doubles its capacity mid-run.
    Converge,
    /// Many tenants share one sink.
    Fair,
    /// Both, one after the other.
    Both,
}

/// The flags of `hookd-bench adaptive`.
#[derive(Debug, Args)]
pub struct AdaptiveArgs {
    /// The hookd binary (default: target/release/hookd beside this binary's target dir).
    #[arg(long)]
    hookd: Option<PathBuf>,
    /// hookd's log filter.
    #[arg(long, default_value = "warn")]
    hookd_log_filter: String,
    /// Seconds to wait for hookd's /readyz.
    #[arg(long, default_value_t = 600)]
    ready_timeout_secs: u64,
    /// Which runs to make.
    #[arg(long, value_enum, default_value = "both")]
    scenario: Scenario,
    /// `converge`: the sink's capacity at the start.
    #[arg(long, default_value_t = 32)]
    capacity: usize,
    /// `converge`: the sink's service time per request, ms.
    #[arg(long, default_value_t = 50)]
    service_ms: u64,
    /// `converge`: the tenant's max_in_flight (above twice the capacity).
    #[arg(long, default_value_t = 128)]
    max_in_flight: usize,
    /// `converge`: seconds before the sink doubles its capacity.
    #[arg(long, default_value_t = 40)]
    double_after_secs: u64,
    /// `converge`: seconds the run goes on after that.
    #[arg(long, default_value_t = 60)]
    after_double_secs: u64,
    /// `fair`: tenants sharing the sink.
    #[arg(long, default_value_t = 100)]
    tenants: usize,
    /// `fair`: the sink's capacity.
    #[arg(long, default_value_t = 200)]
    fair_capacity: usize,
    /// `fair`: the sink's service time per request, ms.
    #[arg(long, default_value_t = 200)]
    fair_service_ms: u64,
    /// `fair`: each tenant's max_in_flight.
    #[arg(long, default_value_t = 16)]
    fair_max_in_flight: usize,
    /// `fair`: seconds the run lasts; shares are counted over its second half.
    #[arg(long, default_value_t = 60)]
    fair_secs: u64,
    /// Connections that post the backlog to hookd.
    #[arg(long, default_value_t = 32)]
    connections: usize,
    /// HTTP workers of the sink.
    #[arg(long, default_value_t = 2)]
    sink_workers: usize,
}

/// One run's shape.
#[derive(Debug, Clone, Copy)]
struct Shape {
    tenants: usize,
    capacity: usize,
    service: Duration,
    max_in_flight: usize,
    secs: u64,
    /// When the sink doubles its capacity, seconds into the run.
    double_at: Option<u64>,
}

impl Shape {
    /// Events enough to keep the sink busy the whole run, with a margin.
    fn backlog(&self) -> usize {
        let per_sec = self.capacity as f64 / self.service.as_secs_f64();
        let doubled = self.double_at.map_or(0, |at| self.secs - at);
        (per_sec * (self.secs + doubled) as f64 * 1.2) as usize + 1_000
    }
}

/// One second of a run.
#[derive(Debug, Clone, Copy)]
struct Second {
    /// Mean of the limits read in it (all tenants' summed).
    limit: f64,
    capacity: usize,
    served: u64,
    refused: u64,
}

/// Runs the scenarios asked for and prints their reports.
pub async fn run(args: AdaptiveArgs) -> anyhow::Result<()> {
    if cfg!(debug_assertions) {
        eprintln!("note: this is a debug build of hookd-bench; build it with --release to measure");
    }
    if matches!(args.scenario, Scenario::Converge | Scenario::Both) {
        converge(&args).await?;
    }
    if matches!(args.scenario, Scenario::Fair | Scenario::Both) {
        fair(&args).await?;
    }
    Ok(())
}

async fn converge(args: &AdaptiveArgs) -> anyhow::Result<()> {
    if args.max_in_flight < 2 * args.capacity {
        bail!("--max-in-flight must be at least twice --capacity, for the doubled sink");
    }
    let shape = Shape {
        tenants: 1,
        capacity: args.capacity,
        service: Duration::from_millis(args.service_ms),
        max_in_flight: args.max_in_flight,
        secs: args.double_after_secs + args.after_double_secs,
        double_at: Some(args.double_after_secs),
    };
    println!(
        "converge: 1 tenant, max_in_flight {}, sink capacity {} ({} ms each), doubling at {} s",
        shape.max_in_flight, shape.capacity, args.service_ms, args.double_after_secs
    );
    let (seconds, _) = run_shape(args, shape).await?;
    let double_at = args.double_after_secs as usize;
    let (before, after) = seconds.split_at(double_at.min(seconds.len()));
    report_phase("before doubling", before, 30);
    report_phase("after doubling", after, 60);
    Ok(())
}

/// The figures of one phase at one capacity; `target_secs`: within how long
/// the limit is to settle.
fn report_phase(name: &str, seconds: &[Second], target_secs: usize) {
    let Some(first) = seconds.first() else {
        println!("  {name}: no samples");
        return;
    };
    let capacity = first.capacity as f64;
    let inside = |s: &Second| (s.limit - capacity).abs() <= BAND * capacity;
    // The first second from which every later one of the phase is inside.
    let settled = (0..seconds.len()).find(|&i| seconds[i..].iter().all(inside));
    let share = |part: &[Second]| {
        let (served, refused) = part
            .iter()
            .fold((0, 0), |(s, r), x| (s + x.served, r + x.refused));
        100.0 * refused as f64 / (served + refused).max(1) as f64
    };
    let early = &seconds[..target_secs.min(seconds.len())];
    match settled {
        Some(at) => {
            let steady = &seconds[at..];
            let limits: Vec<f64> = steady.iter().map(|s| s.limit).collect();
            let (lo, hi) = limits
                .iter()
                .fold((f64::MAX, f64::MIN), |(lo, hi), l| (lo.min(*l), hi.max(*l)));
            let mean = limits.iter().sum::<f64>() / limits.len() as f64;
            println!(
                "  {name}: capacity {capacity}: limit within ±15 % from {at} s on (target {target_secs} s); \
                 then mean {mean:.1} ({:+.1} %), 1-s means {lo:.1}..{hi:.1}; \
                 503s {:.2} % over the first {} s, {:.2} % once settled",
                100.0 * (mean - capacity) / capacity,
                share(early),
                early.len(),
                share(steady),
            );
        }
        None => println!(
            "  {name}: capacity {capacity}: the limit never stayed within ±15 % (last second {:.1}); 503s {:.2} %",
            seconds.last().map_or(0.0, |s| s.limit),
            share(seconds)
        ),
    }
}

async fn fair(args: &AdaptiveArgs) -> anyhow::Result<()> {
    let shape = Shape {
        tenants: args.tenants,
        capacity: args.fair_capacity,
        service: Duration::from_millis(args.fair_service_ms),
        max_in_flight: args.fair_max_in_flight,
        secs: args.fair_secs,
        double_at: None,
    };
    println!(
        "fair: {} tenants, max_in_flight {} each, one sink of capacity {} ({} ms each), {} s",
        shape.tenants, shape.max_in_flight, shape.capacity, args.fair_service_ms, shape.secs
    );
    let (seconds, shares) = run_shape(args, shape).await?;
    let refused: u64 = seconds.iter().map(|s| s.refused).sum();
    let served: u64 = seconds.iter().map(|s| s.served).sum();
    let mut got = shares;
    got.resize(shape.tenants, 0);
    let total: u64 = got.iter().sum();
    let fair_share = total as f64 / shape.tenants as f64;
    got.sort_unstable();
    let sum: f64 = got.iter().map(|&x| x as f64).sum();
    let squares: f64 = got.iter().map(|&x| (x as f64).powi(2)).sum();
    let jain = sum * sum / (shape.tenants as f64 * squares.max(1.0));
    let rel = |x: u64| x as f64 / fair_share.max(1.0);
    println!(
        "  served over the second half: {total} ({:.0}/s); per tenant min {} median {} max {} \
         = {:.2} / {:.2} / {:.2} of an equal share; Jain's index {jain:.4}; \
         503s {:.2} % of the whole run",
        total as f64 / (shape.secs as f64 / 2.0),
        got[0],
        got[got.len() / 2],
        got[got.len() - 1],
        rel(got[0]),
        rel(got[got.len() / 2]),
        rel(got[got.len() - 1]),
        100.0 * refused as f64 / (served + refused).max(1) as f64,
    );
    Ok(())
}

/// Starts a sink and hookd for `shape`, posts the backlog, samples for the
/// run's length; returns each second's figures and each tenant's served
/// requests over the run's second half.
async fn run_shape(args: &AdaptiveArgs, shape: Shape) -> anyhow::Result<(Vec<Second>, Vec<u64>)> {
    let sink = CapacitySink::start(shape.capacity, shape.service, args.sink_workers)?;
    let tenants = plan::tenant_ids("bench-{}", shape.tenants)?;
    let spec = HookdSpec {
        binary: args.hookd.clone().unwrap_or_else(servers::default_hookd),
        tenants: tenants.clone(),
        scheme: Scheme::Standard,
        secret: TENANT_SECRET.to_owned(),
        kid: "k1".to_owned(),
        tolerance_secs: 600 + 2 * shape.secs,
        max_body_bytes: 1 << 20,
        workers: 0,
        log_filter: args.hookd_log_filter.clone(),
        ready_timeout: Duration::from_secs(args.ready_timeout_secs),
        destination: Some(DestinationSpec {
            url: format!("http://{}/t/{{tenant}}", sink.addr),
            secret: SINK_SECRET.to_owned(),
            // A 503 is retried a second later; the breaker keeps its
            // defaults: an adaptive route's 503s above its floor are cuts.
            tenant_keys: "adaptive_concurrency = true\n[tenants.retry]\nschedule_secs = [1]\n\
                          jitter = 0.0\n"
                .to_owned(),
            max_in_flight: shape.max_in_flight,
            routes: Vec::new(),
        }),
        pulled_routes: 0,
        extra_config: String::new(),
    };
    let hookd = servers::start_hookd(&spec).await?;
    let plan = Arc::new(Plan::build(&PlanSpec {
        scheme: Scheme::Standard,
        secret: TENANT_SECRET.to_owned(),
        kid: "k1".to_owned(),
        tenants,
        body_size: 256,
        dup_ratio: 0.0,
        dup_set: 0,
        requests: shape.backlog(),
        rng_seed: 1,
        unordered_ids: false,
    })?);
    let opts = LoadOptions {
        addr: hookd.addr,
        connections: args.connections,
        duration: Some(Duration::from_secs(shape.secs)),
        request_timeout: Duration::from_secs(10),
        progress: false,
        record_accepted: false,
        pace: None,
    };
    let order = Arc::new(plan.order.clone());
    let load = tokio::spawn(async move { run_phase(plan, order, &opts, "backlog").await });
    let sampled = sample(hookd.addr, &sink, shape).await;
    let accepted = load
        .await
        .map(|r| r.statuses.get(&202).copied().unwrap_or(0));
    hookd.stop(Duration::from_secs(10));
    sink.stop().await;
    let (seconds, shares) = sampled?;
    println!("  backlog posted: {} accepted", accepted.unwrap_or(0));
    Ok((seconds, shares))
}

/// Reads the limit four times a second and the sink's counts each second,
/// printing a line per second; doubles the capacity when the shape says.
async fn sample(
    hookd: SocketAddr,
    sink: &CapacitySink,
    shape: Shape,
) -> anyhow::Result<(Vec<Second>, Vec<u64>)> {
    let counts = &sink.counts;
    let start = Instant::now();
    let mut seconds = Vec::new();
    let mut half = Vec::new();
    let (mut served, mut refused) = (0, 0);
    println!(
        "  {:>4} {:>8} {:>8} {:>9} {:>6}",
        "s", "limit", "capacity", "served/s", "503 %"
    );
    for second in 0..shape.secs {
        if Some(second) == shape.double_at {
            counts.capacity.store(2 * shape.capacity, Ordering::Release);
        }
        if second == shape.secs / 2 {
            half = counts.served_by_tenant();
        }
        let mut limits = Vec::new();
        for quarter in 1..=4u32 {
            let due = start + Duration::from_secs(second) + Duration::from_millis(250) * quarter;
            tokio::time::sleep_until(due.into()).await;
            limits.push(limit_sum(hookd).await?);
        }
        let (now_served, now_refused) = (
            counts.served.load(Ordering::Relaxed),
            counts.refused.load(Ordering::Relaxed),
        );
        let row = Second {
            limit: limits.iter().sum::<f64>() / limits.len() as f64,
            capacity: counts.capacity.load(Ordering::Acquire),
            served: now_served - served,
            refused: now_refused - refused,
        };
        (served, refused) = (now_served, now_refused);
        println!(
            "  {:>4} {:>8.1} {:>8} {:>9} {:>6.2}",
            second + 1,
            row.limit,
            row.capacity,
            row.served,
            100.0 * row.refused as f64 / (row.served + row.refused).max(1) as f64
        );
        seconds.push(row);
    }
    let end = counts.served_by_tenant();
    let shares = end
        .iter()
        .enumerate()
        .map(|(i, n)| n - half.get(i).copied().unwrap_or(0))
        .collect();
    Ok((seconds, shares))
}

/// The sum of every route's `hookd_route_concurrency_limit` on `/metrics`.
async fn limit_sum(hookd: SocketAddr) -> anyhow::Result<f64> {
    let text = get_text(hookd, "/metrics").await?;
    Ok(gauge_sum(&text))
}

/// The sum of the [`GAUGE`] series in a Prometheus text exposition.
fn gauge_sum(text: &str) -> f64 {
    let series: BTreeMap<&str, f64> = text
        .lines()
        .filter(|l| l.starts_with(GAUGE) && l[GAUGE.len()..].starts_with('{'))
        .filter_map(|l| {
            let (name, value) = l.rsplit_once(' ')?;
            Some((name, value.parse().ok()?))
        })
        .collect();
    series.values().sum()
}

/// The body of `GET path` over HTTP/1.0.
async fn get_text(addr: SocketAddr, path: &str) -> anyhow::Result<String> {
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .context("connecting to hookd")?;
    stream
        .write_all(format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n").as_bytes())
        .await?;
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await?;
    let body = answer
        .split_once("\r\n\r\n")
        .map(|(_, body)| body.to_owned())
        .context("no HTTP answer")?;
    Ok(body)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_gauge_sum_adds_every_route_and_ignores_other_series() {
        let text = "# TYPE hookd_route_concurrency_limit gauge\n\
                    hookd_route_concurrency_limit{tenant=\"a\",route=\"default\"} 7\n\
                    hookd_route_concurrency_limit{tenant=\"b\",route=\"default\"} 3\n\
                    hookd_route_concurrency_limit_other{tenant=\"b\"} 100\n\
                    hookd_queue_depth{tenant=\"a\",route=\"default\"} 50\n";
        assert_eq!(gauge_sum(text), 10.0);
    }

    #[test]
    fn the_backlog_covers_the_run_at_full_capacity() {
        let shape = Shape {
            tenants: 1,
            capacity: 32,
            service: Duration::from_millis(50),
            max_in_flight: 128,
            secs: 100,
            double_at: Some(40),
        };
        // 640/s for 100 s plus 640/s more for the 60 s after doubling.
        assert_eq!(shape.backlog(), (640.0 * 160.0 * 1.2) as usize + 1_000);
    }
}
