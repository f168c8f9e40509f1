//! Summaries of a run: throughput, latency percentiles, status counts and
//! errors, printed for people or as JSON.

use std::collections::BTreeMap;

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::{cpu::CpuUse, load::PhaseResult};

/// What one run against one server measured.
#[derive(Debug, Serialize)]
pub struct Summary {
    /// Which server: `hookd`, `bare` or the target address.
    pub server: String,
    /// Concurrent connections.
    pub connections: usize,
    /// Timed requests sent (answered or failed).
    pub requests: u64,
    /// Of `requests`, replays of a seed delivery.
    pub duplicates: u64,
    /// Seconds from the first request to the last answer.
    pub elapsed_secs: f64,
    /// Answered requests per second, whatever their status.
    pub throughput_rps: f64,
    /// 2xx answers per second.
    pub ok_rps: f64,
    /// Latency of answered requests, milliseconds.
    pub latency_ms: Latency,
    /// Answers by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests without an answer, by cause.
    pub errors: BTreeMap<String, u64>,
    /// Seed deliveries sent before the timed run, by status (duplicate runs only).
    pub seed_statuses: BTreeMap<u16, u64>,
    /// The planned requests ran out before the duration did (raise `--max-requests`).
    pub plan_exhausted: bool,
    /// The server's CPU time per timed request, when hookd-bench started it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cpu: Option<CpuUse>,
}

/// Latency percentiles in milliseconds.
#[derive(Debug, Serialize)]
pub struct Latency {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Slowest.
    pub max: f64,
    /// Mean.
    pub mean: f64,
}

impl Latency {
    /// The percentiles of a histogram of microseconds.
    pub fn of(h: &Histogram<u64>) -> Latency {
        let ms = |us: u64| us as f64 / 1000.0;
        Latency {
            p50: ms(h.value_at_quantile(0.50)),
            p90: ms(h.value_at_quantile(0.90)),
            p99: ms(h.value_at_quantile(0.99)),
            max: ms(h.max()),
            mean: h.mean() / 1000.0,
        }
    }
}

impl Summary {
    /// Summarizes the timed phase `timed` (and the seed phase, if any).
    pub fn new(
        server: &str,
        connections: usize,
        timed: &PhaseResult,
        seed: Option<&PhaseResult>,
    ) -> Summary {
        let answered: u64 = timed.statuses.values().sum();
        let ok: u64 = timed
            .statuses
            .iter()
            .filter(|(s, _)| (200..300).contains(*s))
            .map(|(_, n)| n)
            .sum();
        let secs = timed.elapsed.as_secs_f64().max(f64::MIN_POSITIVE);
        Summary {
            server: server.to_owned(),
            connections,
            requests: timed.sent,
            duplicates: timed.sent_duplicates,
            elapsed_secs: timed.elapsed.as_secs_f64(),
            throughput_rps: answered as f64 / secs,
            ok_rps: ok as f64 / secs,
            latency_ms: Latency::of(&timed.latency),
            statuses: timed.statuses.clone(),
            errors: timed.errors.clone(),
            seed_statuses: seed.map(|s| s.statuses.clone()).unwrap_or_default(),
            plan_exhausted: timed.plan_exhausted,
            cpu: None,
        }
    }

    /// Non-2xx answers and errors: a run that has any did not measure what it meant to.
    pub fn failures(&self) -> u64 {
        let not_ok: u64 = self
            .statuses
            .iter()
            .filter(|(s, _)| !(200..300).contains(*s))
            .map(|(_, n)| n)
            .sum();
        not_ok + self.errors.values().sum::<u64>()
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        let l = &self.latency_ms;
        let mut out = format!(
            "{server}: {req} requests ({dups} duplicates) over {conns} connections in {secs:.2} s\n  \
             throughput {rps:.0} req/s ({ok:.0} 2xx/s)\n  \
             latency ms  p50 {p50:.3}  p90 {p90:.3}  p99 {p99:.3}  max {max:.3}  mean {mean:.3}\n  \
             statuses {statuses}\n",
            server = self.server,
            req = self.requests,
            dups = self.duplicates,
            conns = self.connections,
            secs = self.elapsed_secs,
            rps = self.throughput_rps,
            ok = self.ok_rps,
            p50 = l.p50,
            p90 = l.p90,
            p99 = l.p99,
            max = l.max,
            mean = l.mean,
            statuses = counts(&self.statuses),
        );
        if !self.seed_statuses.is_empty() {
            out += &format!("  seed statuses {}\n", counts(&self.seed_statuses));
        }
        if !self.errors.is_empty() {
            out += &format!("  errors {}\n", counts(&self.errors));
        }
        if let Some(cpu) = &self.cpu {
            out += &format!("  {}\n", cpu.text());
        }
        if self.plan_exhausted {
            out += "  warning: the planned requests ran out before the duration; raise --max-requests\n";
        }
        if self.failures() > 0 {
            out += &format!(
                "  warning: {} requests were not answered 2xx; check the tenant, scheme and secret\n",
                self.failures()
            );
        }
        out
    }
}

/// `map` as `key: n, key: n`, or `none`.
pub fn counts<K: std::fmt::Display>(map: &BTreeMap<K, u64>) -> String {
    if map.is_empty() {
        return "none".into();
    }
    map.iter()
        .map(|(k, n)| format!("{k}: {n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// `compare`'s result: both sides and hookd's share of the bare server's throughput.
#[derive(Debug, Serialize)]
pub struct Comparison {
    /// The bare actix-web server answering 202.
    pub bare: Summary,
    /// hookd.
    pub hookd: Summary,
    /// hookd's 2xx per second over the bare server's.
    pub ratio: f64,
}

impl Comparison {
    /// Puts both sides side by side.
    pub fn new(bare: Summary, hookd: Summary) -> Comparison {
        let ratio = ratio(hookd.ok_rps, bare.ok_rps);
        Comparison { bare, hookd, ratio }
    }

    /// The human-readable report.
    pub fn text(&self) -> String {
        format!(
            "{}{}ratio hookd / bare: {:.3} ({:.0} vs {:.0} 2xx/s; p99 {:.3} ms vs {:.3} ms)\n",
            self.bare.text(),
            self.hookd.text(),
            self.ratio,
            self.hookd.ok_rps,
            self.bare.ok_rps,
            self.hookd.latency_ms.p99,
            self.bare.latency_ms.p99,
        )
    }
}

/// `x / base`, or 0 for a base of 0.
pub fn ratio(x: f64, base: f64) -> f64 {
    if base > 0.0 {
        x / base
    } else {
        0.0
    }
}

/// The middle value of `values` (the upper of the two middle ones for an
/// even count), 0 for none.
pub fn median(mut values: Vec<f64>) -> f64 {
    values.sort_by(f64::total_cmp);
    values.get(values.len() / 2).copied().unwrap_or(0.0)
}
