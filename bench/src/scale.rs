//! `hookd-bench tenants`: how hookd scales with the number of tenants. For
//! each count it starts hookd with that many config-file tenants and
//! measures the time from spawning the process to a ready `/readyz`, the
//! resident memory once idle, then the throughput and resident memory of a
//! run that spreads deliveries over every tenant.

use std::{sync::Arc, time::Instant};

use serde::Serialize;

use crate::{
    load::LoadOptions,
    measure,
    plan::{self, Plan, PlanSpec},
    servers::{self, HookdSpec},
};

/// One tenant count's figures.
#[derive(Debug, Serialize)]
pub struct ScaleRow {
    /// Tenants declared.
    pub tenants: usize,
    /// From spawning hookd to `/readyz` answering 200.
    pub ready_ms: u64,
    /// Resident memory once ready, before any delivery.
    pub rss_idle_kib: u64,
    /// Resident memory after the load.
    pub rss_loaded_kib: u64,
    /// Deliveries answered per second, all tenants together.
    pub throughput_rps: f64,
    /// p99 latency of the run.
    pub p99_ms: f64,
    /// Requests that failed or got an unexpected status.
    pub failures: u64,
}

/// Runs every count in turn; `spec` and `plan` are templates whose tenants
/// are replaced by each count's.
pub async fn run(
    counts: &[usize],
    pattern: &str,
    hookd: &HookdSpec,
    plan: &PlanSpec,
    opts: &LoadOptions,
) -> anyhow::Result<Vec<ScaleRow>> {
    let mut rows = Vec::new();
    for &n in counts {
        let tenants = plan::tenant_ids(pattern, n)?;
        let spec = HookdSpec {
            tenants: tenants.clone(),
            ..hookd.clone()
        };
        let started = Instant::now();
        let process = servers::start_hookd(&spec).await?;
        let ready_ms = started.elapsed().as_millis() as u64;
        tokio::time::sleep(std::time::Duration::from_secs(1)).await;
        let rss_idle_kib = process.rss_kib()?;
        let plan = Arc::new(Plan::build(&PlanSpec {
            tenants,
            ..plan.clone()
        })?);
        let summary = measure(
            &format!("hookd, {n} tenants"),
            &plan,
            &LoadOptions {
                addr: process.addr,
                ..opts.clone()
            },
        )
        .await;
        let rss_loaded_kib = process.rss_kib()?;
        process.stop(std::time::Duration::from_secs(30));
        rows.push(ScaleRow {
            tenants: n,
            ready_ms,
            rss_idle_kib,
            rss_loaded_kib,
            throughput_rps: summary.throughput_rps,
            p99_ms: summary.latency_ms.p99,
            failures: summary.failures(),
        });
    }
    Ok(rows)
}

/// The rows as a table, with memory per tenant over the first row's.
pub fn text(rows: &[ScaleRow]) -> String {
    let mut out = String::from(
        "tenants   ready_ms   rss_idle_MiB   idle_KiB/tenant   rss_loaded_MiB   req/s   p99_ms   failures\n",
    );
    let base = rows.first().map_or(0, |r| r.rss_idle_kib);
    for r in rows {
        let per_tenant = match r.tenants {
            0 | 1 => 0.0,
            n => r.rss_idle_kib.saturating_sub(base) as f64 / n as f64,
        };
        out.push_str(&format!(
            "{:>7}   {:>8}   {:>12.1}   {:>15.1}   {:>14.1}   {:>5.0}   {:>6.1}   {:>8}\n",
            r.tenants,
            r.ready_ms,
            r.rss_idle_kib as f64 / 1024.0,
            per_tenant,
            r.rss_loaded_kib as f64 / 1024.0,
            r.throughput_rps,
            r.p99_ms,
            r.failures,
        ));
    }
    out
}
