//! A latency histogram with fixed buckets: one relaxed atomic add per bucket
//! hit, no lock, so it can sit on the ingest path.

use std::{
    fmt::Write,
    sync::atomic::{AtomicU64, Ordering},
    time::Duration,
};

/// Bucket bounds (seconds) of `hookd_ingest_duration_seconds`: the ingest
/// path is sub-millisecond to a few ms, more under a slow disk.
pub const INGEST_BUCKETS: &[f64] = &[
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0,
];

/// Bucket bounds (seconds) of `hookd_forward_duration_seconds`: destinations
/// answer in milliseconds to the 30 s default timeout.
pub const FORWARD_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0,
];

/// Counts of observations per bucket (not cumulative; rendering adds them
/// up) plus the sum.
pub struct Histogram {
    bounds: &'static [f64],
    /// One slot per bound, then the `+Inf` slot.
    counts: Box<[AtomicU64]>,
    sum_nanos: AtomicU64,
}

impl Histogram {
    /// An empty histogram over `bounds` (ascending).
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_nanos: AtomicU64::new(0),
        }
    }

    /// Records one duration.
    pub fn observe(&self, elapsed: Duration) {
        let secs = elapsed.as_secs_f64();
        let slot = self
            .bounds
            .iter()
            .position(|bound| secs <= *bound)
            .unwrap_or(self.bounds.len());
        self.counts[slot].fetch_add(1, Ordering::Relaxed);
        let nanos = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        self.sum_nanos.fetch_add(nanos, Ordering::Relaxed);
    }

    /// Writes the `_bucket`, `_sum` and `_count` samples of `name` with
    /// `labels` (already formatted, without braces; may be empty).
    pub fn render(&self, out: &mut String, name: &str, labels: &str) {
        let sep = if labels.is_empty() { "" } else { "," };
        let mut cumulative = 0;
        for (bound, count) in self.bounds.iter().zip(self.counts.iter()) {
            cumulative += count.load(Ordering::Relaxed);
            let _ = writeln!(
                out,
                "{name}_bucket{{{labels}{sep}le=\"{bound}\"}} {cumulative}"
            );
        }
        cumulative += self.counts[self.bounds.len()].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{sep}le=\"+Inf\"}} {cumulative}"
        );
        let sum = self.sum_nanos.load(Ordering::Relaxed) as f64 / 1e9;
        let braces = |s: &str| {
            if s.is_empty() {
                String::new()
            } else {
                format!("{{{s}}}")
            }
        };
        let _ = writeln!(out, "{name}_sum{} {sum}", braces(labels));
        let _ = writeln!(out, "{name}_count{} {cumulative}", braces(labels));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_cumulative_and_inf_equals_count() {
        let h = Histogram::new(&[0.01, 0.1]);
        h.observe(Duration::from_millis(5));
        h.observe(Duration::from_millis(10));
        h.observe(Duration::from_millis(50));
        h.observe(Duration::from_secs(2));
        let mut out = String::new();
        h.render(&mut out, "x_seconds", "tenant=\"a\"");
        assert_eq!(
            out,
            "x_seconds_bucket{tenant=\"a\",le=\"0.01\"} 2\n\
             x_seconds_bucket{tenant=\"a\",le=\"0.1\"} 3\n\
             x_seconds_bucket{tenant=\"a\",le=\"+Inf\"} 4\n\
             x_seconds_sum{tenant=\"a\"} 2.065\n\
             x_seconds_count{tenant=\"a\"} 4\n"
        );
        let mut bare = String::new();
        Histogram::new(&[1.0]).render(&mut bare, "y", "");
        assert!(
            bare.contains("y_bucket{le=\"+Inf\"} 0\ny_sum 0\ny_count 0\n"),
            "{bare}"
        );
    }
}
