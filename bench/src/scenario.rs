//! What the forwarding scenarios share (`hookd-bench forward`, its
//! `--backlog` form and `compare`'s forwarding phases): how a run starts
//! hookd and its sinks, the secret hookd signs its forwards with, and the
//! wait for every accepted event at a sink.

use std::{
    collections::HashMap,
    path::PathBuf,
    time::{Duration, Instant},
};

use anyhow::bail;
use indicatif::{ProgressBar, ProgressStyle};

use crate::{
    plan::PlanSpec,
    sink::{Reply, Sink},
    storage::Storage,
};

/// The Standard Webhooks secret hookd signs its forwards to the sink with.
pub const SINK_SECRET: &str = "whsec_c2luay1zZWNyZXQtZm9yLWhvb2tkLWJlbmNoLTAxMjM=";
/// hookd's bounds for a tenant's `max_in_flight`.
const MAX_IN_FLIGHT: std::ops::RangeInclusive<usize> = 1..=1024;

/// How one forwarding run starts hookd and its sinks.
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The hookd binary.
    pub hookd: PathBuf,
    /// hookd's HTTP workers (0: one per core).
    pub workers: usize,
    /// hookd's log filter.
    pub log_filter: String,
    /// How long to wait for `/readyz`.
    pub ready_timeout: Duration,
    /// Each tenant's (and route's) `max_in_flight`.
    pub max_in_flight: usize,
    /// After the load, wait at most this long for every accepted event.
    pub drain_timeout: Duration,
    /// HTTP workers of each sink.
    pub sink_workers: usize,
    /// Routes per tenant, each forwarding to a sink of its own.
    pub routes: usize,
    /// How the sinks of the other routes answer, in order (204 when absent).
    pub route_replies: Vec<Reply>,
    /// More of each tenant's table (e.g. `adaptive_concurrency = true`).
    pub tenant_keys: String,
    /// More of hookd's config file (e.g. an `[alerts]` section).
    pub extra_config: String,
    /// What hookd stores its data in.
    pub storage: Storage,
    /// Also load the tenant [`crate::forward::ALONE_TENANT`], one route
    /// and nothing beside it, in the same run.
    pub alone: bool,
}

impl Scenario {
    /// Refuses what a forwarding run cannot measure: duplicates, and an
    /// in-flight limit or a number of routes hookd would refuse.
    pub fn check(&self, spec: &PlanSpec) -> anyhow::Result<()> {
        if spec.dup_ratio > 0.0 {
            bail!("forward sends unique deliveries only: leave --dup-ratio at 0");
        }
        if !MAX_IN_FLIGHT.contains(&self.max_in_flight) {
            bail!(
                "--max-in-flight must be between {} and {}, got {}",
                MAX_IN_FLIGHT.start(),
                MAX_IN_FLIGHT.end(),
                self.max_in_flight
            );
        }
        if !(1..=16).contains(&self.routes) {
            bail!("--routes must be between 1 and 16, got {}", self.routes);
        }
        Ok(())
    }
}

/// Waits until every accepted event has arrived at the sink, or `timeout`.
pub async fn drain(
    sink: &Sink,
    accepted: &HashMap<String, Instant>,
    timeout: Duration,
    progress: bool,
) {
    let bar = if progress {
        let bar = ProgressBar::new(accepted.len() as u64);
        bar.set_style(
            ProgressStyle::with_template("{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len}")
                .expect("a valid template"),
        );
        bar.set_prefix("sink arrivals");
        bar
    } else {
        ProgressBar::hidden()
    };
    let deadline = Instant::now() + timeout;
    loop {
        // Counting against every accepted id locks the sink's map: do it only
        // once enough requests have come in for it to succeed.
        let requests = sink.arrivals.requests();
        let arrived = if requests >= accepted.len() as u64 {
            sink.arrivals.count_arrived(accepted.keys())
        } else {
            requests as usize
        };
        bar.set_position(arrived.min(accepted.len()) as u64);
        if requests >= accepted.len() as u64 && arrived == accepted.len() {
            break;
        }
        if Instant::now() >= deadline {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    bar.finish_and_clear();
}
