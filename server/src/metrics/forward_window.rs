//! A route's forwarding outcomes over the last day, in one-minute buckets:
//! delivered and failed attempts and their latency, for the metrics query
//! of the control plane.

use std::{collections::VecDeque, sync::Mutex, time::Duration};

use crate::store::lifecycle::Next;

/// One bucket's width.
const BUCKET_MS: i64 = 60_000;
/// How far back the buckets reach: a day.
const WINDOW_MS: i64 = 24 * 3_600_000;

/// Upper bounds of the latency bins, in ms; a last bin takes the rest.
pub const LATENCY_BOUNDS_MS: [u64; 13] = [
    5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 30_000, 60_000,
];

/// Counts of one span of time.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct ForwardCounts {
    /// When the span starts (Unix ms).
    pub start_ms: i64,
    /// Attempts the destination took (2xx), and drops by the transform.
    pub delivered: u64,
    /// Attempts that failed (a retry follows or it was dead-lettered).
    pub failed: u64,
    /// Of those, deliveries dead-lettered.
    pub dead: u64,
    /// The most deliveries held by a pause at once.
    pub held: u64,
    /// Attempts by latency bin ([`LATENCY_BOUNDS_MS`], then the rest).
    latency: [u64; LATENCY_BOUNDS_MS.len() + 1],
}

impl ForwardCounts {
    /// The latency under which a share `q` (0..=1) of the attempts
    /// finished, as the upper bound of its bin (ms); `None` without
    /// attempts, and past the last bound.
    pub fn latency_ms(&self, q: f64) -> Option<u64> {
        let total: u64 = self.latency.iter().sum();
        if total == 0 {
            return None;
        }
        let wanted = ((total as f64) * q).ceil().max(1.0) as u64;
        let mut seen = 0;
        for (bin, n) in self.latency.iter().enumerate() {
            seen += n;
            if seen >= wanted {
                return LATENCY_BOUNDS_MS.get(bin).copied();
            }
        }
        None
    }

    fn add(&mut self, other: &ForwardCounts) {
        self.delivered += other.delivered;
        self.failed += other.failed;
        self.dead += other.dead;
        self.held = self.held.max(other.held);
        for (mine, theirs) in self.latency.iter_mut().zip(other.latency) {
            *mine += theirs;
        }
    }
}

/// A route's buckets, oldest first.
///
/// A route's forwarding outcomes over the last day, in one-minute buckets
/// on hookd's clock: kept in memory by the process that forwards the
/// route, so after a restart (or on a replica that does not hold the
/// route's lease) they start empty.
#[derive(Debug, Default)]
pub struct ForwardWindow {
    buckets: Mutex<VecDeque<ForwardCounts>>,
}

impl ForwardWindow {
    /// Counts one recorded attempt leading to `next` that took `elapsed`,
    /// at `now_ms`.
    pub fn record(&self, next: &Next, elapsed: Duration, now_ms: i64) {
        self.at(now_ms, |bucket| {
            match next {
                Next::Delivered | Next::Dropped => bucket.delivered += 1,
                Next::Retry { .. } => bucket.failed += 1,
                Next::Dead { .. } | Next::TransformFailed { .. } => {
                    bucket.failed += 1;
                    bucket.dead += 1;
                }
            }
            let ms = elapsed.as_millis() as u64;
            let bin = LATENCY_BOUNDS_MS
                .iter()
                .position(|bound| ms <= *bound)
                .unwrap_or(LATENCY_BOUNDS_MS.len());
            bucket.latency[bin] += 1;
        });
    }

    /// Records that `held` deliveries were held by a pause at `now_ms`.
    pub fn held(&self, held: u64, now_ms: i64) {
        self.at(now_ms, |bucket| bucket.held = bucket.held.max(held));
    }

    /// Runs `change` on the bucket of `now_ms`, made if need be, after
    /// dropping those older than a day.
    fn at(&self, now_ms: i64, change: impl FnOnce(&mut ForwardCounts)) {
        let start = now_ms - now_ms.rem_euclid(BUCKET_MS);
        let mut buckets = self.buckets.lock().expect("window lock");
        while buckets
            .front()
            .is_some_and(|b| b.start_ms <= start - WINDOW_MS)
        {
            buckets.pop_front();
        }
        if buckets.back().is_none_or(|b| b.start_ms < start) {
            buckets.push_back(ForwardCounts {
                start_ms: start,
                ..ForwardCounts::default()
            });
        }
        // A clock set back counts into the newest bucket.
        change(buckets.back_mut().expect("a bucket was pushed"));
    }

    /// The counts from `since_ms` to `now_ms` in spans of `step_ms` (a
    /// whole number of minutes), oldest first, each starting at a multiple
    /// of `step_ms`; spans without attempts are there, empty.
    pub fn series(&self, since_ms: i64, now_ms: i64, step_ms: i64) -> Vec<ForwardCounts> {
        let step = step_ms.max(BUCKET_MS);
        let first = since_ms.max(now_ms - WINDOW_MS);
        let first = first - first.rem_euclid(step);
        let mut out: Vec<ForwardCounts> = (first..=now_ms)
            .step_by(step as usize)
            .map(|start_ms| ForwardCounts {
                start_ms,
                ..ForwardCounts::default()
            })
            .collect();
        let buckets = self.buckets.lock().expect("window lock");
        for bucket in buckets.iter().filter(|b| b.start_ms >= first) {
            let i = ((bucket.start_ms - first) / step) as usize;
            if let Some(span) = out.get_mut(i) {
                span.add(bucket);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A whole hour (Unix ms).
    const T0: i64 = 1_764_000_000_000;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    #[test]
    fn outcomes_are_counted_by_minute_and_summed_by_hour() {
        let window = ForwardWindow::default();
        window.record(&Next::Delivered, ms(3), T0 + 1_000);
        window.record(&Next::Retry { due_ms: 0 }, ms(40), T0 + 2_000);
        window.record(&Next::Dead { reason: "x".into() }, ms(40), T0 + 61_000);
        window.record(&Next::Delivered, ms(900), T0 + 3_600_000 + 5);
        let minutes = window.series(T0, T0 + 120_000, 60_000);
        assert_eq!(minutes.len(), 3);
        assert_eq!((minutes[0].delivered, minutes[0].failed), (1, 1));
        assert_eq!((minutes[1].failed, minutes[1].dead), (1, 1));
        assert_eq!(
            minutes[2],
            ForwardCounts {
                start_ms: T0 + 120_000,
                ..Default::default()
            }
        );
        let hours = window.series(T0, T0 + 3_600_000 + 10, 3_600_000);
        assert_eq!(hours.len(), 2);
        assert_eq!(
            (hours[0].delivered, hours[0].failed, hours[0].dead),
            (1, 2, 1)
        );
        assert_eq!(hours[1].delivered, 1);
    }

    #[test]
    fn latency_quantiles_are_the_bounds_of_their_bins() {
        let window = ForwardWindow::default();
        for _ in 0..98 {
            window.record(&Next::Delivered, ms(20), T0);
        }
        window.record(&Next::Delivered, ms(700), T0);
        window.record(&Next::Delivered, ms(700), T0);
        let span = &window.series(T0, T0, 60_000)[0];
        assert_eq!(span.latency_ms(0.5), Some(25));
        assert_eq!(span.latency_ms(0.99), Some(1_000));
        assert_eq!(ForwardCounts::default().latency_ms(0.5), None);
    }

    #[test]
    fn held_is_the_most_seen_in_a_span() {
        let window = ForwardWindow::default();
        window.held(7, T0 + 1_000);
        window.held(3, T0 + 11_000);
        window.held(12, T0 + 61_000);
        let minutes = window.series(T0, T0 + 120_000, 60_000);
        let held: Vec<u64> = minutes.iter().map(|m| m.held).collect();
        assert_eq!(held, [7, 12, 0]);
        assert_eq!(window.series(T0, T0 + 120_000, 3_600_000)[0].held, 12);
    }

    #[test]
    fn buckets_older_than_a_day_are_dropped() {
        let window = ForwardWindow::default();
        window.record(&Next::Delivered, ms(1), T0);
        window.record(&Next::Delivered, ms(1), T0 + WINDOW_MS + 60_000);
        let all = window.series(T0 - WINDOW_MS, T0 + WINDOW_MS + 60_000, 3_600_000);
        let delivered: u64 = all.iter().map(|s| s.delivered).sum();
        assert_eq!(delivered, 1);
    }
}
