//! A sink's arrivals tallied against the events the load saw accepted
//! (by event id): how many arrived, how fast, and the latency from each
//! 202 to the event's first arrival.

use std::{
    collections::HashMap,
    time::{Duration, Instant},
};

use hdrhistogram::Histogram;
use serde::Serialize;

use crate::{report::Latency, sink::Arrival};

/// Longest 202-to-arrival latency the histogram holds, in microseconds (an hour).
const MAX_LATENCY_US: u64 = 3_600_000_000;

/// Accepted events against their arrivals at the sink.
#[derive(Debug, Serialize)]
pub struct Delivery {
    /// Deliveries answered 202 (accepted).
    pub accepted: u64,
    /// Seconds from the first request to the last answer of the load.
    pub load_secs: f64,
    /// Accepted per second over the load.
    pub accepted_per_sec: f64,
    /// Accepted events that arrived at the sink (each counted once).
    pub arrived: u64,
    /// Accepted events that had not arrived when the drain ended.
    pub missing: u64,
    /// Arrivals of an event id beyond its first.
    pub duplicates: u64,
    /// Event ids that arrived without a 202 seen for them (e.g. the answer timed out).
    pub unexpected: u64,
    /// Requests at the sink without a `webhook-id`.
    pub without_id: u64,
    /// Seconds from the first 202 to the last arrival.
    pub span_secs: f64,
    /// Arrived events per second over `span_secs`.
    pub delivered_per_sec: f64,
    /// Arrivals during the load, per second of the load.
    pub delivered_per_sec_during_load: f64,
    /// Seconds from the load's end to the last arrival.
    pub drain_secs: f64,
    /// Arrivals after the load, per second of `drain_secs`: forwarding with no ingest beside it.
    pub delivered_per_sec_after_load: f64,
    /// Events that arrived before hookd-bench read their 202 (their latency counts as 0).
    pub arrived_before_202: u64,
    /// From each accepted event's 202 to its first arrival, milliseconds.
    pub latency_ms: Latency,
}

impl Delivery {
    /// Tallies `arrivals` against the 202 instants in `accepted`, for a load
    /// that ran from `load_start` to `load_end`.
    pub fn tally(
        accepted: &HashMap<String, Instant>,
        arrivals: &HashMap<String, Arrival>,
        without_id: u64,
        load_start: Instant,
        load_end: Instant,
    ) -> Delivery {
        let mut latency =
            Histogram::<u64>::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid bounds");
        let (mut arrived, mut before) = (0u64, 0u64);
        let (mut during_load, mut after_load) = (0u64, 0u64);
        let mut last_arrival: Option<Instant> = None;
        for (id, accepted_at) in accepted {
            let Some(arrival) = arrivals.get(id) else {
                continue;
            };
            arrived += 1;
            if arrival.first < *accepted_at {
                before += 1;
            }
            let us = arrival
                .first
                .saturating_duration_since(*accepted_at)
                .as_micros() as u64;
            latency.saturating_record(us.clamp(1, MAX_LATENCY_US));
        }
        for arrival in arrivals.values() {
            last_arrival = last_arrival.max(Some(arrival.first));
            if arrival.first <= load_end {
                during_load += 1;
            } else {
                after_load += 1;
            }
        }
        let duplicates = arrivals.values().map(|a| u64::from(a.count - 1)).sum();
        let unexpected = arrivals
            .keys()
            .filter(|id| !accepted.contains_key(*id))
            .count() as u64;
        let first_202 = accepted.values().min().copied();
        let span = match (first_202, last_arrival) {
            (Some(first), Some(last)) => last.saturating_duration_since(first),
            _ => Duration::ZERO,
        };
        let load = load_end.saturating_duration_since(load_start);
        let drain = last_arrival.map_or(Duration::ZERO, |l| l.saturating_duration_since(load_end));
        let per_sec = |n: u64, d: Duration| {
            if d.is_zero() {
                0.0
            } else {
                n as f64 / d.as_secs_f64()
            }
        };
        Delivery {
            accepted: accepted.len() as u64,
            load_secs: load.as_secs_f64(),
            accepted_per_sec: per_sec(accepted.len() as u64, load),
            arrived,
            missing: accepted.len() as u64 - arrived,
            duplicates,
            unexpected,
            without_id,
            span_secs: span.as_secs_f64(),
            delivered_per_sec: per_sec(arrived, span),
            delivered_per_sec_during_load: per_sec(during_load, load),
            drain_secs: drain.as_secs_f64(),
            delivered_per_sec_after_load: per_sec(after_load, drain),
            arrived_before_202: before,
            latency_ms: Latency::of(&latency),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(t0: Instant, n: u64) -> Instant {
        t0 + Duration::from_millis(n)
    }

    #[test]
    fn tally_counts_arrivals_missing_duplicates_and_rates() {
        let t0 = Instant::now();
        let accepted: HashMap<String, Instant> = [
            ("a".to_owned(), ms(t0, 100)),
            ("b".to_owned(), ms(t0, 200)),
            ("c".to_owned(), ms(t0, 300)),
            ("d".to_owned(), ms(t0, 400)),
        ]
        .into();
        let arrival = |at, count| Arrival {
            first: ms(t0, at),
            count,
        };
        let arrivals: HashMap<String, Arrival> = [
            ("a".to_owned(), arrival(110, 1)),
            // Arrived before its 202 was read: latency 0.
            ("b".to_owned(), arrival(190, 2)),
            ("c".to_owned(), arrival(1100, 1)),
            ("x".to_owned(), arrival(500, 1)),
        ]
        .into();
        let d = Delivery::tally(&accepted, &arrivals, 1, t0, ms(t0, 1000));
        assert_eq!(d.accepted, 4);
        assert_eq!(d.arrived, 3);
        assert_eq!(d.missing, 1);
        assert_eq!(d.duplicates, 1);
        assert_eq!(d.unexpected, 1);
        assert_eq!(d.without_id, 1);
        assert_eq!(d.arrived_before_202, 1);
        assert!((d.load_secs - 1.0).abs() < 1e-9, "{d:?}");
        assert!((d.accepted_per_sec - 4.0).abs() < 1e-9, "{d:?}");
        // First 202 at 100 ms, last arrival at 1100 ms: 3 arrived in 1 s.
        assert!((d.span_secs - 1.0).abs() < 1e-9, "{d:?}");
        assert!((d.delivered_per_sec - 3.0).abs() < 1e-9, "{d:?}");
        // a, b and x arrived within the 1 s load.
        assert!(
            (d.delivered_per_sec_during_load - 3.0).abs() < 1e-9,
            "{d:?}"
        );
        assert!((d.drain_secs - 0.1).abs() < 1e-9, "{d:?}");
        // c arrived 0.1 s after the load.
        assert!(
            (d.delivered_per_sec_after_load - 10.0).abs() < 1e-6,
            "{d:?}"
        );
        assert!((d.latency_ms.max - 800.0).abs() < 1.0, "{d:?}");
        assert!(d.latency_ms.p50 >= 9.0 && d.latency_ms.p50 <= 11.0, "{d:?}");
    }

    #[test]
    fn tally_of_nothing_is_zero_not_nan() {
        let t0 = Instant::now();
        let d = Delivery::tally(&HashMap::new(), &HashMap::new(), 0, t0, t0);
        assert_eq!(d.arrived, 0);
        assert_eq!(d.delivered_per_sec, 0.0);
        assert_eq!(d.accepted_per_sec, 0.0);
    }
}
