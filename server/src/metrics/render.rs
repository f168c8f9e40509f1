//! A scrape: reads the storage gauges of every running tenant (counters
//! kept by storage, and the first key of each queue) and writes everything
//! in the Prometheus text format 0.0.4. Its cost does not grow with backlog.

use std::{
    collections::BTreeMap,
    fmt::Write,
    sync::{atomic::Ordering, Arc},
};

use super::{ForwardOutcome, IngestResult, Metrics, TenantMetrics};
use crate::{
    error::ErrorCode,
    store::api::{CommitFigures, Tenant},
};

/// What a scrape reads of one running tenant: its counters and its data.
pub struct TenantSource {
    /// The counters of its `tenant` label.
    pub metrics: Arc<TenantMetrics>,
    /// Its queue and dead letters.
    pub data: Tenant,
}

/// The storage gauges of one `tenant` label, summed over its tenants.
#[derive(Default)]
struct QueueGauges {
    depth: u64,
    oldest_due_secs: f64,
    dead: u64,
}

/// Renders every metric. `tenants` are the running tenants, whose queue and
/// dead-letter counts are read from their gauges; `now_ms` is the server
/// clock, for the age of the oldest due entry (the queue's first key).
pub fn scrape(
    metrics: &Metrics,
    tenants: &[TenantSource],
    commits: CommitFigures,
    now_ms: i64,
) -> String {
    let gauges = queue_gauges(tenants, now_ms);
    let labelled = metrics.labelled();
    let mut out = String::with_capacity(16 * 1024);
    render_commits(&mut out, commits);
    render_deliveries(&mut out, &labelled);
    render_forwards(&mut out, &labelled);
    render_ingest_latency(&mut out, metrics);
    render_queues(&mut out, &gauges);
    render_breakers(&mut out, &labelled);
    metrics.senders().render(&mut out);
    out
}

/// Reads each `tenant` label's queue and dead-letter gauges.
fn queue_gauges(tenants: &[TenantSource], now_ms: i64) -> BTreeMap<String, QueueGauges> {
    let mut gauges: BTreeMap<String, QueueGauges> = BTreeMap::new();
    for handle in tenants {
        let g = gauges.entry(handle.metrics.label().to_owned()).or_default();
        let counts = match handle.data.counts() {
            Ok(counts) => counts,
            Err(e) => {
                tracing::warn!(tenant = %handle.data.tenant(), error = %e, "queue counts cannot be read");
                continue;
            }
        };
        g.depth += counts.depth;
        g.dead += counts.dead;
        if let Some(due) = counts.oldest_due_ms {
            g.oldest_due_secs = g.oldest_due_secs.max((now_ms - due).max(0) as f64 / 1000.0);
        }
    }
    gauges
}

fn render_commits(out: &mut String, commits: CommitFigures) {
    family(
        out,
        "hookd_storage_commits_total",
        "counter",
        "Durable batches (flush + fdatasync) of the group committer.",
    );
    sample(out, "hookd_storage_commits_total", &[], commits.batches);
    family(
        out,
        "hookd_storage_commit_writes_total",
        "counter",
        "Writes those batches carried; writes / commits = requests sharing one fsync.",
    );
    sample(
        out,
        "hookd_storage_commit_writes_total",
        &[],
        commits.writes,
    );
}

fn render_deliveries(out: &mut String, labelled: &[Arc<TenantMetrics>]) {
    family(
        out,
        "hookd_deliveries_accepted_total",
        "counter",
        "Deliveries acknowledged as new events (HTTP 202).",
    );
    for t in labelled {
        let n = t.accepted.load(Ordering::Relaxed);
        sample(
            out,
            "hookd_deliveries_accepted_total",
            &[("tenant", &t.label)],
            n,
        );
    }
    family(
        out,
        "hookd_deliveries_duplicate_total",
        "counter",
        "Copies of already accepted events (HTTP 200, duplicate).",
    );
    for t in labelled {
        let n = t.duplicates.load(Ordering::Relaxed);
        sample(
            out,
            "hookd_deliveries_duplicate_total",
            &[("tenant", &t.label)],
            n,
        );
    }
    family(
        out,
        "hookd_deliveries_rejected_total",
        "counter",
        "Deliveries refused, by error code (docs/error-codes.md).",
    );
    for t in labelled {
        for (code, count) in ErrorCode::ALL.iter().zip(&t.rejected) {
            let n = count.load(Ordering::Relaxed);
            if n > 0 {
                let labels = [("tenant", t.label.as_str()), ("code", code.as_str())];
                sample(out, "hookd_deliveries_rejected_total", &labels, n);
            }
        }
    }
}

fn render_forwards(out: &mut String, labelled: &[Arc<TenantMetrics>]) {
    family(
        out,
        "hookd_forward_attempts_total",
        "counter",
        "Forward attempts by what followed: delivered, retry or dead.",
    );
    for t in labelled {
        for (outcome, count) in ForwardOutcome::ALL.iter().zip(&t.forwards) {
            let labels = [("tenant", t.label.as_str()), ("outcome", outcome.as_str())];
            let n = count.load(Ordering::Relaxed);
            sample(out, "hookd_forward_attempts_total", &labels, n);
        }
    }
    family(
        out,
        "hookd_forward_duration_seconds",
        "histogram",
        "Duration of forward attempts, until the destination answered or failed.",
    );
    for t in labelled {
        let labels = format_labels(&[("tenant", &t.label)]);
        t.forward_latency
            .render(out, "hookd_forward_duration_seconds", &labels);
    }
}

fn render_ingest_latency(out: &mut String, metrics: &Metrics) {
    family(
        out,
        "hookd_ingest_duration_seconds",
        "histogram",
        "Duration of POST /hooks requests, durable write included, by outcome.",
    );
    for (result, histogram) in IngestResult::ALL.iter().zip(&metrics.ingest_latency) {
        let labels = format_labels(&[("outcome", result.as_str())]);
        histogram.render(out, "hookd_ingest_duration_seconds", &labels);
    }
}

fn render_queues(out: &mut String, gauges: &BTreeMap<String, QueueGauges>) {
    family(
        out,
        "hookd_queue_depth",
        "gauge",
        "Deliveries waiting to be forwarded or pulled, or pulled and not yet acknowledged.",
    );
    for (label, g) in gauges {
        sample(out, "hookd_queue_depth", &[("tenant", label)], g.depth);
    }
    family(
        out,
        "hookd_queue_oldest_pending_seconds",
        "gauge",
        "How long the most overdue queued delivery has been due; 0 when none is due.",
    );
    for (label, g) in gauges {
        let labels = [("tenant", label.as_str())];
        sample(
            out,
            "hookd_queue_oldest_pending_seconds",
            &labels,
            g.oldest_due_secs,
        );
    }
    family(
        out,
        "hookd_dead_letters",
        "gauge",
        "Dead letters waiting for redelivery or purge.",
    );
    for (label, g) in gauges {
        sample(out, "hookd_dead_letters", &[("tenant", label)], g.dead);
    }
}

fn render_breakers(out: &mut String, labelled: &[Arc<TenantMetrics>]) {
    family(
        out,
        "hookd_circuit_breaker_open",
        "gauge",
        "Destinations whose circuit breaker is open or half-open (forwarding paused).",
    );
    for t in labelled {
        let n = t.breakers_open.load(Ordering::Relaxed).max(0);
        sample(
            out,
            "hookd_circuit_breaker_open",
            &[("tenant", &t.label)],
            n,
        );
    }
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

fn sample(out: &mut String, name: &str, labels: &[(&str, &str)], value: impl std::fmt::Display) {
    let _ = match labels {
        [] => writeln!(out, "{name} {value}"),
        _ => writeln!(out, "{name}{{{}}} {value}", format_labels(labels)),
    };
}

/// `k="v",k2="v2"` with values escaped as the text format requires.
fn format_labels(labels: &[(&str, &str)]) -> String {
    let mut out = String::new();
    for (i, (key, value)) in labels.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{key}=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{config::MetricsConfig, ids::TenantId};

    #[test]
    fn renders_counters_with_stable_labels_and_escapes_values() {
        let m = Metrics::new(&MetricsConfig {
            enabled: true,
            max_tenant_labels: 10,
            addr: None,
            scan_limit: crate::config::DEPRECATED_SCAN_LIMIT_DEFAULT,
        });
        let acme = m.tenant(&TenantId::try_from("acme").unwrap());
        acme.accepted();
        acme.rejected(ErrorCode::BadSignature);
        m.other().rejected(ErrorCode::TenantNotFound);
        let text = scrape(&m, &[], CommitFigures::default(), 0);
        for line in [
            "hookd_deliveries_accepted_total{tenant=\"acme\"} 1",
            "hookd_deliveries_accepted_total{tenant=\"other\"} 0",
            "hookd_deliveries_rejected_total{tenant=\"acme\",code=\"BAD_SIGNATURE\"} 1",
            "hookd_deliveries_rejected_total{tenant=\"other\",code=\"TENANT_NOT_FOUND\"} 1",
            "hookd_forward_attempts_total{tenant=\"acme\",outcome=\"dead\"} 0",
            "hookd_ingest_duration_seconds_count{outcome=\"accepted\"} 0",
            "# TYPE hookd_forward_duration_seconds histogram",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        assert_eq!(format_labels(&[("a", "x\"y\\z\n")]), "a=\"x\\\"y\\\\z\\n\"");
    }
}
