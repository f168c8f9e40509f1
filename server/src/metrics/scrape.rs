//! A scrape: the metrics kept as things happen plus those read for it,
//! rendered in the Prometheus text format or OpenMetrics.

use std::sync::atomic::AtomicU64;

use prometheus_client::{
    encoding::{prometheus_text, text},
    metrics::{counter::ConstCounter, family::Family, gauge::ConstGauge, gauge::Gauge},
    registry::{Registry, Unit},
};

use super::{process, Metrics, StorageReadings};

/// The exposition format of a scrape.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `text/plain; version=0.0.4`, the default.
    Prometheus,
    /// `application/openmetrics-text; version=1.0.0`, with exemplars.
    OpenMetrics,
}

impl Format {
    /// OpenMetrics when `accept` (the request's `Accept` header) lists it,
    /// as Prometheus does when it can take exemplars; the text format
    /// otherwise.
    pub fn negotiate(accept: Option<&str>) -> Format {
        let wants = accept.is_some_and(|a| {
            a.split(',').any(|part| {
                part.split(';').next().is_some_and(|t| {
                    t.trim()
                        .eq_ignore_ascii_case("application/openmetrics-text")
                })
            })
        });
        if wants {
            Format::OpenMetrics
        } else {
            Format::Prometheus
        }
    }

    /// The `Content-Type` of an answer in this format.
    pub fn content_type(self) -> &'static str {
        match self {
            Format::Prometheus => prometheus_text::CONTENT_TYPE,
            Format::OpenMetrics => "application/openmetrics-text; version=1.0.0; charset=utf-8",
        }
    }
}

/// Renders every metric in `format`: `metrics`, `storage` (read just
/// before) and the process's own resources.
///
/// A scrape: the registry of metrics kept as things happen, plus one built
/// for this scrape from storage's readings and `/proc`, rendered in the
/// Prometheus text format 0.0.4 or, when the scraper asks for it, in
/// OpenMetrics 1.0 (the only one of the two that carries exemplars).
pub fn scrape(
    metrics: &Metrics,
    storage: &StorageReadings,
    format: Format,
) -> Result<String, std::fmt::Error> {
    let mut now = at_scrape(storage, process::read().as_ref());
    metrics.senders().register(&mut now);
    let mut out = String::with_capacity(32 * 1024);
    match format {
        Format::Prometheus => {
            prometheus_text::encode(&mut out, metrics.registry())?;
            prometheus_text::encode(&mut out, &now)?;
        }
        Format::OpenMetrics => {
            text::encode_registry(&mut out, metrics.registry())?;
            text::encode_registry(&mut out, &now)?;
            text::encode_eof(&mut out)?;
        }
    }
    Ok(out)
}

/// A registry of what is read at scrape time.
fn at_scrape(storage: &StorageReadings, process: Option<&process::ProcessStats>) -> Registry {
    let mut r = Registry::default();
    r.register(
        "hookd_storage_commits",
        "Durable commits of the group committer (a write-ahead log fdatasync on sled, a transaction on PostgreSQL)",
        ConstCounter::new(storage.commit_batches),
    );
    r.register(
        "hookd_storage_commit_writes",
        "Writes those batches carried; writes / commits = requests sharing one fsync",
        ConstCounter::new(storage.commit_writes),
    );
    let depth: Family<Vec<(&str, String)>, Gauge> = Family::default();
    let oldest: Family<Vec<(&str, String)>, Gauge<f64, AtomicU64>> = Family::default();
    let dead: Family<Vec<(&str, String)>, Gauge> = Family::default();
    for ((tenant, route), g) in &storage.queues {
        let labels = vec![("tenant", tenant.clone()), ("route", route.clone())];
        depth
            .get_or_create(&labels)
            .set(i64::try_from(g.depth).unwrap_or(i64::MAX));
        oldest.get_or_create(&labels).set(g.oldest_pending_secs);
        dead.get_or_create(&labels)
            .set(i64::try_from(g.dead).unwrap_or(i64::MAX));
    }
    r.register(
        "hookd_queue_depth",
        "Deliveries waiting to be forwarded or pulled, or pulled and not yet acknowledged",
        depth,
    );
    r.register(
        "hookd_queue_oldest_pending_seconds",
        "How long the oldest queued delivery has waited since it was accepted or redelivered, one scheduled for a retry included; 0 when the queue is empty",
        oldest,
    );
    r.register(
        "hookd_dead_letters",
        "Dead letters waiting for redelivery or purge",
        dead,
    );
    if let Some(p) = process {
        register_process(&mut r, p);
    }
    r
}

fn register_process(r: &mut Registry, p: &process::ProcessStats) {
    r.register_with_unit(
        "process_cpu",
        "Total user and system CPU time spent in seconds",
        Unit::Seconds,
        ConstCounter::new(p.cpu_seconds),
    );
    r.register_with_unit(
        "process_resident_memory",
        "Resident memory size in bytes",
        Unit::Bytes,
        ConstGauge::new(i64::try_from(p.resident_bytes).unwrap_or(i64::MAX)),
    );
    r.register_with_unit(
        "process_virtual_memory",
        "Virtual memory size in bytes",
        Unit::Bytes,
        ConstGauge::new(i64::try_from(p.virtual_bytes).unwrap_or(i64::MAX)),
    );
    r.register(
        "process_open_fds",
        "Number of open file descriptors",
        ConstGauge::new(i64::try_from(p.open_fds).unwrap_or(i64::MAX)),
    );
    if let Some(max) = p.max_fds {
        r.register(
            "process_max_fds",
            "Maximum number of open file descriptors",
            ConstGauge::new(i64::try_from(max).unwrap_or(i64::MAX)),
        );
    }
    r.register_with_unit(
        "process_start_time",
        "Start time of the process since unix epoch in seconds",
        Unit::Seconds,
        ConstGauge::new(p.start_time_seconds),
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{error::ErrorCode, ids::TenantId, metrics::tests::config};

    #[test]
    fn every_series_starts_at_zero_and_openmetrics_carries_exemplars() {
        let m = Metrics::new(&config(10));
        let acme = m.tenant(&TenantId::try_from("acme").unwrap());
        let _default = m.route(&acme, "default");
        acme.accepted();
        acme.rejected(ErrorCode::BadSignature);
        m.other().rejected(ErrorCode::TenantNotFound);
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        m.ingest_latency(
            super::super::IngestResult::Accepted,
            std::time::Duration::from_millis(3),
            Some(trace.to_owned()),
        );
        let text = scrape(&m, &StorageReadings::default(), Format::Prometheus).unwrap();
        for line in [
            "hookd_deliveries_accepted_total{tenant=\"acme\"} 1",
            "hookd_deliveries_accepted_total{tenant=\"other\"} 0",
            "hookd_deliveries_rejected_total{tenant=\"acme\",code=\"BAD_SIGNATURE\"} 1",
            "hookd_deliveries_rejected_total{tenant=\"acme\",code=\"STORAGE_UNAVAILABLE\"} 0",
            "hookd_deliveries_rejected_total{tenant=\"other\",code=\"TENANT_NOT_FOUND\"} 1",
            "hookd_forward_attempts_total{tenant=\"acme\",route=\"default\",outcome=\"dead\"} 0",
            "hookd_ingest_duration_seconds_count{outcome=\"accepted\"} 1",
            "# TYPE hookd_forward_duration_seconds histogram",
            "hookd_storage_commits_total 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
        }
        let zeros = text
            .lines()
            .filter(|l| l.starts_with("hookd_deliveries_rejected_total{tenant=\"acme\""))
            .count();
        assert_eq!(zeros, ErrorCode::ALL.len(), "a series per code");
        assert!(text.contains("hookd_build_info{version=\""), "{text}");
        assert!(
            !text.contains(".."),
            "help texts end with one period: {text}"
        );
        assert!(!text.contains("trace_id"), "no exemplars in 0.0.4");

        let open = scrape(&m, &StorageReadings::default(), Format::OpenMetrics).unwrap();
        let bucket = open
            .lines()
            .find(|l| {
                l.starts_with(
                    "hookd_ingest_duration_seconds_bucket{le=\"0.005\",outcome=\"accepted\"}",
                )
            })
            .unwrap_or_else(|| panic!("{open}"));
        assert!(
            bucket.ends_with(&format!("1 # {{trace_id=\"{trace}\"}} 0.003")),
            "{bucket}"
        );
        assert!(open.ends_with("# EOF\n"));
    }

    #[test]
    fn openmetrics_only_when_asked_for() {
        assert_eq!(Format::negotiate(None), Format::Prometheus);
        assert_eq!(
            Format::negotiate(Some("text/plain;version=0.0.4;q=0.5,*/*;q=0.1")),
            Format::Prometheus
        );
        assert_eq!(
            Format::negotiate(Some(
                "application/openmetrics-text;version=1.0.0;q=0.9,text/plain;q=0.5"
            )),
            Format::OpenMetrics
        );
    }
}
