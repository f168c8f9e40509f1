//! What senders send, per `tenant` label: clock skew of timestamped schemes
//! and deliveries by event type.

use std::{
    collections::{BTreeMap, VecDeque},
    sync::{atomic::AtomicU64, Arc, Mutex},
};

use prometheus_client::{
    encoding::{EncodeMetric, MetricEncoder, NoLabelSet},
    metrics::{counter::Counter, family::Family, gauge::Gauge, MetricType},
    registry::{Registry, Unit},
};

/// Upper bounds of the skew histogram, seconds of skew either way (the
/// `sender_clock` label says which way: OpenMetrics histograms take no
/// negative buckets).
pub const SKEW_BUCKETS_SECS: [f64; 10] =
    [0.5, 1.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0];
/// How many recent skews the median gauge is taken over.
pub const SKEW_WINDOW: usize = 128;
/// Shortest time between two skew warnings of one tenant label.
pub const SKEW_WARN_EVERY_MS: i64 = 10 * 60 * 1000;
/// Event types that get a label of their own per tenant label; later ones
/// (and names that are long or unusual) are counted as `other`.
pub const MAX_TYPE_LABELS: usize = 32;
/// The event-type label of everything past the cap, and of bodies without
/// a type.
pub const OTHER_TYPE: &str = "other";
const MAX_TYPE_LABEL_LEN: usize = 64;

/// What happened to a delivery of one event type.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TypeOutcome {
    /// Accepted (a new delivery).
    Accepted,
    /// Refused: `CONTRACT_VIOLATION`.
    ContractViolation,
    /// Refused: `UNKNOWN_EVENT_TYPE`.
    UnknownEventType,
}

impl TypeOutcome {
    const ALL: [TypeOutcome; 3] = [
        TypeOutcome::Accepted,
        TypeOutcome::ContractViolation,
        TypeOutcome::UnknownEventType,
    ];

    fn as_str(self) -> &'static str {
        match self {
            TypeOutcome::Accepted => "accepted",
            TypeOutcome::ContractViolation => "contract_violation",
            TypeOutcome::UnknownEventType => "unknown_event_type",
        }
    }
}

/// One direction's skew histogram.
#[derive(Default, Clone, Copy)]
struct Direction {
    buckets: [u64; SKEW_BUCKETS_SECS.len()],
    count: u64,
    sum_secs: f64,
}

/// `sender_clock` label values: index 0 when hookd's clock is at or past
/// the signed timestamp (the sender's clock is behind, or the request was
/// in transit), 1 when the signed timestamp is in hookd's future.
const DIRECTIONS: [&str; 2] = ["behind", "ahead"];

#[derive(Default)]
struct Skew {
    directions: [Direction; 2],
    recent_ms: VecDeque<i64>,
    last_warning_ms: Option<i64>,
}

impl Skew {
    fn median_secs(&self) -> Option<f64> {
        let mut recent: Vec<i64> = self.recent_ms.iter().copied().collect();
        recent.sort_unstable();
        let n = recent.len();
        match n {
            0 => None,
            _ if n % 2 == 1 => Some(recent[n / 2] as f64 / 1000.0),
            _ => Some((recent[n / 2 - 1] + recent[n / 2]) as f64 / 2000.0),
        }
    }
}

/// The sender metrics of one `tenant` label.
///
/// What senders send, per `tenant` label: the clock skew of accepted
/// deliveries of timestamped schemes (hookd's clock minus the signed
/// timestamp; a histogram and the median of the recent ones) and deliveries
/// by event type (accepted, or refused by a contract), event-type label
/// values capped per tenant label like tenant labels are.
pub struct SenderMetrics {
    label: String,
    skew: Mutex<Skew>,
    types: Mutex<BTreeMap<String, [u64; TypeOutcome::ALL.len()]>>,
}

impl SenderMetrics {
    fn new(label: &str) -> Self {
        SenderMetrics {
            label: label.to_owned(),
            skew: Mutex::default(),
            types: Mutex::default(),
        }
    }

    /// Records the skew of one accepted delivery (`now_ms` minus the signed
    /// timestamp). Returns the recent median, in seconds, when it and this
    /// delivery's skew are past half of `tolerance_secs` either way and no
    /// warning was due in the last [`SKEW_WARN_EVERY_MS`]: the caller logs
    /// it. A median past the mark means half the recent skews are past it
    /// too, so the median is only worked out for those: a sender whose clock
    /// is right costs no sort per delivery.
    pub fn observe_skew(&self, skew_ms: i64, now_ms: i64, tolerance_secs: u64) -> Option<f64> {
        let mut skew = self.skew.lock().expect("skew lock");
        let secs = (skew_ms as f64 / 1000.0).abs();
        let direction = &mut skew.directions[usize::from(skew_ms < 0)];
        if let Some(i) = SKEW_BUCKETS_SECS.iter().position(|le| secs <= *le) {
            direction.buckets[i] += 1;
        }
        direction.count += 1;
        direction.sum_secs += secs;
        if skew.recent_ms.len() == SKEW_WINDOW {
            skew.recent_ms.pop_front();
        }
        skew.recent_ms.push_back(skew_ms);
        let past_half = |secs: f64| secs.abs() * 2.0 > tolerance_secs as f64;
        let quiet = skew
            .last_warning_ms
            .is_none_or(|t| now_ms - t >= SKEW_WARN_EVERY_MS);
        if !quiet || !past_half(secs) {
            return None;
        }
        let median = skew.median_secs()?;
        if past_half(median) {
            skew.last_warning_ms = Some(now_ms);
            return Some(median);
        }
        None
    }

    /// The median skew of the recent accepted deliveries, seconds.
    pub fn median_skew_secs(&self) -> Option<f64> {
        self.skew.lock().expect("skew lock").median_secs()
    }

    /// Counts one delivery of `event_type` (`None`: the body names none).
    pub fn event(&self, event_type: Option<&str>, outcome: TypeOutcome) {
        let mut types = self.types.lock().expect("types lock");
        let label = match event_type {
            Some(t) if types.contains_key(t) => t,
            Some(t) if types.len() < MAX_TYPE_LABELS && label_safe(t) => t,
            _ => OTHER_TYPE,
        };
        let counts = match types.get_mut(label) {
            Some(counts) => counts,
            None => types.entry(label.to_owned()).or_default(),
        };
        counts[outcome as usize] += 1;
    }

    /// The count of `outcome` for `event_type`'s label.
    pub fn events(&self, event_type: &str, outcome: TypeOutcome) -> u64 {
        self.types
            .lock()
            .expect("types lock")
            .get(event_type)
            .map_or(0, |c| c[outcome as usize])
    }
}

/// A type name that is safe and short enough for a label value.
fn label_safe(event_type: &str) -> bool {
    event_type.len() <= MAX_TYPE_LABEL_LEN
        && event_type
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._:/-".contains(&b))
}

/// The sender metrics of every `tenant` label.
#[derive(Default)]
pub struct Senders {
    labels: Mutex<BTreeMap<String, Arc<SenderMetrics>>>,
}

impl Senders {
    /// The metrics of one `tenant` label (already capped by the caller).
    pub fn label(&self, label: &str) -> Arc<SenderMetrics> {
        self.labels
            .lock()
            .expect("senders lock")
            .entry(label.to_owned())
            .or_insert_with(|| Arc::new(SenderMetrics::new(label)))
            .clone()
    }

    /// Registers the three families, as they are now, in `r` (a registry
    /// built for one scrape).
    pub fn register(&self, r: &mut Registry) {
        let labels: Vec<Arc<SenderMetrics>> = self
            .labels
            .lock()
            .expect("senders lock")
            .values()
            .cloned()
            .collect();
        let mut skews = SkewHistograms::default();
        let median: Family<Vec<(&'static str, String)>, Gauge<f64, AtomicU64>> = Family::default();
        let by_type: Family<Vec<(&'static str, String)>, Counter> = Family::default();
        for m in &labels {
            let tenant = vec![("tenant", m.label.clone())];
            let directions = m.skew.lock().expect("skew lock").directions;
            for (d, name) in directions.iter().zip(DIRECTIONS) {
                let in_range: u64 = d.buckets.iter().sum();
                let mut buckets: Vec<(f64, u64)> =
                    SKEW_BUCKETS_SECS.iter().copied().zip(d.buckets).collect();
                buckets.push((f64::INFINITY, d.count - in_range));
                let labels = vec![
                    ("tenant", m.label.clone()),
                    ("sender_clock", name.to_owned()),
                ];
                skews.0.push((labels, d.sum_secs, d.count, buckets));
            }
            if let Some(secs) = m.median_skew_secs() {
                median.get_or_create(&tenant).set(secs);
            }
            for (event_type, counts) in m.types.lock().expect("types lock").iter() {
                for outcome in TypeOutcome::ALL {
                    let labels = vec![
                        ("tenant", m.label.clone()),
                        ("event_type", event_type.clone()),
                        ("outcome", outcome.as_str().to_owned()),
                    ];
                    by_type
                        .get_or_create(&labels)
                        .inc_by(counts[outcome as usize]);
                }
            }
        }
        r.register_with_unit(
            "hookd_sender_clock_skew",
            "How far the signed timestamps of accepted deliveries are from hookd's clock: sender_clock=behind when hookd's clock is past the timestamp (or the request was in transit), ahead when the timestamp is in hookd's future",
            Unit::Seconds,
            skews,
        );
        r.register_with_unit(
            "hookd_sender_clock_skew_median",
            format!("Median clock skew of the last {SKEW_WINDOW} accepted timestamped deliveries"),
            Unit::Seconds,
            median,
        );
        r.register(
            "hookd_event_type_deliveries",
            "Deliveries by event type: accepted, or refused by a contract",
            by_type,
        );
    }
}

/// Skew histograms as they were at a scrape: per `tenant` label, the sum,
/// the count and each bucket's own count (the last bound is infinite).
#[derive(Debug, Default)]
struct SkewHistograms(Vec<SkewSnapshot>);

type SkewSnapshot = (Vec<(&'static str, String)>, f64, u64, Vec<(f64, u64)>);

impl EncodeMetric for SkewHistograms {
    fn encode(&self, mut encoder: MetricEncoder) -> Result<(), std::fmt::Error> {
        for (labels, sum, count, buckets) in &self.0 {
            encoder
                .encode_family(labels)?
                .encode_histogram::<NoLabelSet>(*sum, *count, buckets, None)?;
        }
        Ok(())
    }

    fn metric_type(&self) -> MetricType {
        MetricType::Histogram
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn type_labels_are_capped_and_unsafe_names_are_other() {
        let m = SenderMetrics::new("acme");
        for i in 0..MAX_TYPE_LABELS + 5 {
            m.event(Some(&format!("t{i}")), TypeOutcome::Accepted);
        }
        m.event(Some("t0"), TypeOutcome::ContractViolation);
        m.event(Some("bad\"name"), TypeOutcome::Accepted);
        m.event(None, TypeOutcome::UnknownEventType);
        assert_eq!(m.events("t0", TypeOutcome::Accepted), 1);
        assert_eq!(m.events("t0", TypeOutcome::ContractViolation), 1);
        assert_eq!(m.events(OTHER_TYPE, TypeOutcome::Accepted), 6);
        assert_eq!(m.events(OTHER_TYPE, TypeOutcome::UnknownEventType), 1);
        assert_eq!(
            m.types.lock().unwrap().len(),
            MAX_TYPE_LABELS + 1,
            "plus other"
        );
    }

    #[test]
    fn skew_warning_fires_past_half_the_tolerance_and_is_rate_limited() {
        let m = SenderMetrics::new("acme");
        assert_eq!(m.observe_skew(100_000, 0, 300), None, "100 s < 150 s");
        assert_eq!(m.observe_skew(200_000, 1, 300), None, "median 150 s");
        assert_eq!(m.observe_skew(200_000, 2, 300), Some(200.0));
        assert_eq!(m.observe_skew(200_000, 3, 300), None, "warned just now");
        assert_eq!(
            m.observe_skew(200_000, 2 + SKEW_WARN_EVERY_MS, 300),
            Some(200.0)
        );
        let later = 2 + 2 * SKEW_WARN_EVERY_MS;
        assert_eq!(
            m.observe_skew(1_000, later, 300),
            None,
            "the median is past the mark, this delivery is not"
        );
        assert_eq!(
            m.observe_skew(-400_000, later + 1, 300),
            Some(200.0),
            "behind counts as well"
        );
        let mut out = String::new();
        let senders = Senders::default();
        senders.label("acme").observe_skew(-2_000, 0, 300);
        let mut registry = Registry::default();
        senders.register(&mut registry);
        prometheus_client::encoding::text::encode_registry(&mut out, &registry).unwrap();
        assert!(
            out.contains("hookd_sender_clock_skew_seconds_bucket{le=\"5.0\",tenant=\"acme\",sender_clock=\"ahead\"} 1"),
            "{out}"
        );
        assert!(
            out.contains("hookd_sender_clock_skew_median_seconds{tenant=\"acme\"} -2.0"),
            "{out}"
        );
    }
}
