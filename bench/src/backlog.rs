//! `hookd-bench forward --backlog N`: forwarding alone, with no ingest
//! beside it. hookd starts with every tenant in pull mode (no destination)
//! on a data dir this run keeps, takes N unique deliveries (every one must
//! be answered 202) and stops (SIGTERM); then it starts again on the same
//! data dir with every tenant forwarding to a local sink, and the run
//! waits until every accepted event has arrived (by event id): delivered/s
//! from the first arrival to the last (hookd forwards before `/readyz`
//! answers), and hookd's CPU from `/readyz` on. The
//! pull-mode queue is the push-mode queue after the restart. Both hookds
//! run on the scenario's storage (on PostgreSQL, the same database: the
//! backlog is there).

use std::{
    collections::HashMap,
    sync::Arc,
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use hdrhistogram::Histogram;
use serde::Serialize;

use crate::{
    load::{run_phase, LoadOptions},
    plan::{Plan, PlanSpec},
    report::{Latency, Summary},
    scenario::{drain, Scenario, SINK_SECRET},
    servers::{self, DestinationSpec, HookdSpec},
    sink::{Arrival, Reply, Sink},
};

/// Longest time from `/readyz` to an arrival the histogram holds, in
/// microseconds (an hour).
const MAX_ARRIVAL_US: u64 = 3_600_000_000;
/// How long hookd may take to stop after the load (SIGTERM, then SIGKILL).
const STOP_GRACE: Duration = Duration::from_secs(60);

/// What the backlog run measured.
#[derive(Debug, Serialize)]
pub struct BacklogReport {
    /// The engine hookd stored the backlog in: `sled` or `postgres`.
    pub engine: &'static str,
    /// Tenants, each with its share of the backlog.
    pub tenants: usize,
    /// Each tenant's `max_in_flight` after the restart.
    pub max_in_flight: usize,
    /// The pull-mode load that made the backlog.
    pub load: Summary,
    /// The restarted hookd forwarding the backlog.
    pub drain: Drain,
}

/// The backlog against its arrivals at the sink after the restart.
#[derive(Debug, Serialize)]
pub struct Drain {
    /// Deliveries accepted (202) in pull mode: the backlog.
    pub backlog: u64,
    /// Seconds from starting hookd again to its `/readyz` answering 200.
    pub restart_secs: f64,
    /// Backlog events that arrived at the sink (each counted once).
    pub arrived: u64,
    /// Backlog events that had not arrived when the drain ended.
    pub missing: u64,
    /// Arrivals of an event id beyond its first.
    pub duplicates: u64,
    /// Event ids that arrived without being in the backlog.
    pub unexpected: u64,
    /// Requests at the sink without a `webhook-id`.
    pub without_id: u64,
    /// Events that arrived before hookd-bench saw `/readyz` answer 200
    /// (hookd forwards as soon as it has started).
    pub arrived_before_ready: u64,
    /// Seconds from `/readyz` to the last arrival.
    pub drain_secs: f64,
    /// Seconds from the first backlog event's arrival to the last one's:
    /// how long forwarding took, wherever `/readyz` fell in it.
    pub forwarding_secs: f64,
    /// Backlog events arrived, per second of `forwarding_secs`: forwarding
    /// capacity.
    pub delivered_per_sec: f64,
    /// hookd's CPU time over `drain_secs`, in seconds (user and system).
    pub hookd_cpu_secs: f64,
    /// `hookd_cpu_secs` over `drain_secs`, in percent of one core.
    pub hookd_cpu_percent: f64,
    /// From `/readyz` to each event's first arrival, ms (0 for those before).
    pub arrival_ms: Latency,
}

impl Drain {
    /// Tallies `arrivals` against `backlog`, for a hookd ready at `ready`
    /// that used `cpu` from then until the drain ended.
    pub fn tally(
        backlog: &[String],
        arrivals: &HashMap<String, Arrival>,
        without_id: u64,
        (restart, ready): (Duration, Instant),
        cpu: Duration,
    ) -> Drain {
        let arrived: Vec<Instant> = backlog
            .iter()
            .filter_map(|id| arrivals.get(id).map(|a| a.first))
            .collect();
        let (first, last) = (arrived.iter().min(), arrived.iter().max());
        let window = last.map_or(Duration::ZERO, |l| l.saturating_duration_since(ready));
        let forwarding = match (first, last) {
            (Some(first), Some(last)) => last.saturating_duration_since(*first),
            _ => Duration::ZERO,
        };
        let early = arrived.iter().filter(|at| **at < ready).count();
        let mut histogram =
            Histogram::<u64>::new_with_bounds(1, MAX_ARRIVAL_US, 3).expect("valid bounds");
        for at in &arrived {
            let us = at.saturating_duration_since(ready).as_micros() as u64;
            histogram.saturating_record(us.clamp(1, MAX_ARRIVAL_US));
        }
        let known: std::collections::HashSet<&String> = backlog.iter().collect();
        let per_sec = |n: f64, over: Duration| {
            if over.is_zero() {
                0.0
            } else {
                n / over.as_secs_f64()
            }
        };
        Drain {
            backlog: backlog.len() as u64,
            restart_secs: restart.as_secs_f64(),
            arrived: arrived.len() as u64,
            missing: (backlog.len() - arrived.len()) as u64,
            duplicates: arrivals.values().map(|a| u64::from(a.count - 1)).sum(),
            unexpected: arrivals.keys().filter(|id| !known.contains(id)).count() as u64,
            without_id,
            arrived_before_ready: early as u64,
            drain_secs: window.as_secs_f64(),
            forwarding_secs: forwarding.as_secs_f64(),
            delivered_per_sec: per_sec(arrived.len() as f64, forwarding),
            hookd_cpu_secs: cpu.as_secs_f64(),
            hookd_cpu_percent: per_sec(100.0 * cpu.as_secs_f64(), window),
            arrival_ms: Latency::of(&histogram),
        }
    }
}

impl BacklogReport {
    /// The human-readable report.
    pub fn text(&self) -> String {
        let d = &self.drain;
        let a = &d.arrival_ms;
        let mut out = self.load.text();
        out += &format!(
            "backlog drain: {tenants} tenant(s), max_in_flight {mif}, sink answering 204, \
             engine {engine}\n  \
             backlog {backlog} accepted in pull mode; hookd restarted with a destination, \
             ready in {restart:.2} s\n  \
             arrived {arr} (missing {miss}, duplicates {dup}, unexpected {unx}, without id {noid}, \
             before /readyz {early})\n  \
             delivered {del:.0}/s over the {fwd:.2} s from the first arrival to the last; \
             {secs:.2} s from /readyz to the last, hookd CPU {cpu:.2} s ({pct:.0} % of one core)\n  \
             /readyz -> arrival ms  p50 {p50:.1}  p90 {p90:.1}  p99 {p99:.1}  max {max:.1}\n",
            tenants = self.tenants,
            mif = self.max_in_flight,
            engine = self.engine,
            backlog = d.backlog,
            restart = d.restart_secs,
            arr = d.arrived,
            miss = d.missing,
            dup = d.duplicates,
            unx = d.unexpected,
            noid = d.without_id,
            early = d.arrived_before_ready,
            del = d.delivered_per_sec,
            fwd = d.forwarding_secs,
            secs = d.drain_secs,
            cpu = d.hookd_cpu_secs,
            pct = d.hookd_cpu_percent,
            p50 = a.p50,
            p90 = a.p90,
            p99 = a.p99,
            max = a.max,
        );
        if d.missing > 0 {
            out += &format!(
                "  warning: {} backlog events had not arrived when the drain timed out\n",
                d.missing
            );
        }
        out
    }
}

/// Makes a backlog of `spec.requests` unique deliveries in pull mode, then
/// restarts hookd forwarding to a sink and measures the drain.
pub async fn measure(
    scenario: &Scenario,
    spec: &PlanSpec,
    opts: &LoadOptions,
) -> anyhow::Result<BacklogReport> {
    scenario.check(spec)?;
    if scenario.routes != 1 || scenario.alone {
        bail!("--backlog measures the default route alone: leave --routes at 1, without --alone");
    }
    let opts = LoadOptions {
        record_accepted: true,
        duration: None,
        pace: None,
        ..opts.clone()
    };
    let dir = tempfile::tempdir().context("cannot create a data dir for hookd")?;
    let pulled = hookd_spec(scenario, spec, None);
    let hookd = servers::start_hookd_in(&pulled, dir.path()).await?;
    let plan = Arc::new(Plan::build(spec)?);
    let opts = LoadOptions {
        addr: hookd.addr,
        ..opts
    };
    let order = Arc::new(plan.order.clone());
    let timed = run_phase(plan.clone(), order, &opts, "hookd backlog (pull mode)").await;
    hookd.stop(STOP_GRACE);
    let load = Summary::new("hookd", opts.connections, &timed, None);
    if timed.accepted.len() != spec.requests {
        bail!(
            "the backlog must be accepted whole: {} of {} deliveries were answered 202\n{}",
            timed.accepted.len(),
            spec.requests,
            load.text()
        );
    }
    let backlog: Vec<String> = timed
        .accepted
        .iter()
        .map(|&(i, _)| plan.pool[i as usize].event_id.clone())
        .collect();
    let sink = Sink::start(scenario.sink_workers, Reply::Status(204))?;
    let pushed = hookd_spec(scenario, spec, Some(format!("http://{}/sink", sink.addr)));
    let restarted = Instant::now();
    let hookd = servers::start_hookd_in(&pushed, dir.path()).await?;
    let ready = Instant::now();
    let cpu_at_ready = hookd.cpu_time()?;
    let expected: HashMap<String, Instant> = backlog.iter().map(|id| (id.clone(), ready)).collect();
    drain(&sink, &expected, scenario.drain_timeout, opts.progress).await;
    let cpu = hookd.cpu_time()?.saturating_sub(cpu_at_ready);
    hookd.stop(STOP_GRACE);
    let drain = Drain::tally(
        &backlog,
        &sink.arrivals.snapshot(),
        sink.arrivals.without_id(),
        (ready - restarted, ready),
        cpu,
    );
    sink.stop().await;
    Ok(BacklogReport {
        engine: scenario.storage.engine(),
        tenants: spec.tenants.len(),
        max_in_flight: scenario.max_in_flight,
        load,
        drain,
    })
}

/// hookd as `scenario` says, every tenant forwarding to `sink` (a URL), or
/// in pull mode without one.
fn hookd_spec(scenario: &Scenario, spec: &PlanSpec, sink: Option<String>) -> HookdSpec {
    HookdSpec {
        binary: scenario.hookd.clone(),
        tenants: spec.tenants.clone(),
        scheme: spec.scheme,
        secret: spec.secret.clone(),
        kid: spec.kid.clone(),
        // Only the pull-mode load checks the timestamps.
        tolerance_secs: 3_600,
        max_body_bytes: (1 << 20).max(2 * spec.body_size),
        workers: scenario.workers,
        log_filter: scenario.log_filter.clone(),
        ready_timeout: scenario.ready_timeout,
        destination: sink.map(|url| DestinationSpec {
            url,
            secret: SINK_SECRET.to_owned(),
            tenant_keys: scenario.tenant_keys.clone(),
            max_in_flight: scenario.max_in_flight,
            routes: Vec::new(),
        }),
        pulled_routes: 0,
        extra_config: scenario.extra_config.clone() + &scenario.storage.config(),
    }
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::storage::Storage;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn the_drain_counts_from_the_first_arrival_and_tells_the_arrivals_before_ready_apart() {
        let t0 = Instant::now();
        let ready = ms(t0, 1000);
        let backlog: Vec<String> = ["a", "b", "c", "d"].map(String::from).into();
        let arrival = |at, count| Arrival {
            first: ms(t0, at),
            count,
        };
        let arrivals: HashMap<String, Arrival> = [
            ("a".to_owned(), arrival(900, 1)),
            ("b".to_owned(), arrival(1400, 2)),
            ("c".to_owned(), arrival(1900, 1)),
            ("x".to_owned(), arrival(1500, 1)),
        ]
        .into();
        let cpu = Duration::from_millis(500);
        let d = Drain::tally(&backlog, &arrivals, 2, (Duration::from_secs(3), ready), cpu);
        assert_eq!((d.backlog, d.arrived, d.missing), (4, 3, 1), "{d:?}");
        assert_eq!(
            (d.duplicates, d.unexpected, d.without_id),
            (1, 1, 2),
            "{d:?}"
        );
        assert_eq!(d.arrived_before_ready, 1, "{d:?}");
        // From ready at 1000 ms to the last arrival at 1900 ms: 0.9 s; from
        // the first backlog arrival (a, before ready) to the last: a, b
        // and c in 1 s (x is not in the backlog).
        assert!((d.drain_secs - 0.9).abs() < 1e-9, "{d:?}");
        assert!((d.forwarding_secs - 1.0).abs() < 1e-9, "{d:?}");
        assert!((d.delivered_per_sec - 3.0).abs() < 1e-9, "{d:?}");
        assert!((d.hookd_cpu_percent - 50.0 / 0.9).abs() < 1e-6, "{d:?}");
        assert!((d.restart_secs - 3.0).abs() < 1e-9, "{d:?}");
        assert!((d.arrival_ms.max - 900.0).abs() < 1.0, "{d:?}");
    }

    #[test]
    fn a_drain_with_nothing_arrived_is_zero_not_nan() {
        let ready = Instant::now();
        let backlog = vec!["a".to_owned()];
        let d = Drain::tally(
            &backlog,
            &HashMap::new(),
            0,
            (Duration::ZERO, ready),
            Duration::ZERO,
        );
        assert_eq!((d.arrived, d.missing), (0, 1));
        assert_eq!((d.delivered_per_sec, d.hookd_cpu_percent), (0.0, 0.0));
    }

    #[test]
    fn the_restart_forwards_to_the_sink_and_the_load_pulls_on_the_same_storage() {
        let scenario = Scenario {
            hookd: PathBuf::from("hookd"),
            workers: 0,
            log_filter: "warn".into(),
            ready_timeout: Duration::from_secs(1),
            max_in_flight: 8,
            drain_timeout: Duration::from_secs(1),
            sink_workers: 1,
            routes: 1,
            route_replies: Vec::new(),
            tenant_keys: String::new(),
            extra_config: String::new(),
            storage: Storage::Postgres("postgres://u@127.0.0.1/hookd_bench_1_2".into()),
            alone: false,
        };
        let spec = PlanSpec {
            scheme: hookd_sdk::signature::Scheme::Standard,
            secret: "whsec_abc".into(),
            kid: "k1".into(),
            tenants: vec!["t-0".into(), "t-1".into()],
            body_size: 256,
            dup_ratio: 0.0,
            dup_set: 0,
            requests: 10,
            rng_seed: 1,
            unordered_ids: false,
        };
        let pulled = servers::hookd_config(&hookd_spec(&scenario, &spec, None));
        assert!(!pulled.contains("destination"), "{pulled}");
        let pg = "url = \"postgres://u@127.0.0.1/hookd_bench_1_2\"";
        assert!(pulled.contains(pg), "{pulled}");
        let url = "http://127.0.0.1:9/sink".to_owned();
        let pushed = servers::hookd_config(&hookd_spec(&scenario, &spec, Some(url)));
        assert_eq!(
            pushed.matches("[tenants.destination]").count(),
            2,
            "{pushed}"
        );
        assert_eq!(pushed.matches("max_in_flight = 8").count(), 2, "{pushed}");
        assert!(pushed.contains(pg), "the same database: {pushed}");
    }
}
