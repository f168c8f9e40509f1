//! The steady state of a paced `forward` run, worked out after the fact
//! from each event's 202 instant and its first arrival at the sink: a
//! series of one row per second since the load started (over the load and
//! the drain), and whether the backlog stayed flat under the load.

use std::{
    collections::HashMap,
    fmt::Write as _,
    time::{Duration, Instant},
};

use serde::Serialize;

use crate::sink::Arrival;

/// Seconds at the start of the load the verdict leaves out (warm-up).
pub const WARMUP_SECS: usize = 5;
/// How far delivered/s may be from accepted/s for a flat backlog.
const RATE_TOLERANCE: f64 = 0.05;
/// How much older the backlog may get over the load for a flat one.
const AGE_GROWTH_LIMIT_SECS: f64 = 2.0;
/// The text report shows every this many seconds of the series.
const TEXT_EVERY_SECS: u64 = 5;

/// A paced run's steady state.
#[derive(Debug, Serialize)]
pub struct Steady {
    /// The rate the load was paced at, requests a second.
    pub offered_per_sec: f64,
    /// One row per second since the load started, to the last arrival (or,
    /// with events missing, to the end of the drain).
    pub series: Vec<Second>,
    /// Whether the backlog stayed flat, and the figures that say so.
    pub verdict: Verdict,
}

/// One second of a paced run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Second {
    /// Seconds since the load started at this second's end (1, 2, ...);
    /// the last one ends with the run, perhaps early.
    pub second: u64,
    /// Events answered 202 in this second.
    pub accepted: u64,
    /// Accepted events that first arrived at the sink in this second.
    pub delivered: u64,
    /// At this second's end: events accepted so far that have not arrived.
    pub backlog: u64,
    /// At this second's end: how long ago the oldest of them was accepted,
    /// in seconds (0 without a backlog).
    pub backlog_age_secs: f64,
}

/// Whether the backlog stayed flat under the load.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Shape {
    /// Delivered/s within ±5 % of accepted/s after the warm-up, and the
    /// backlog no more than 2 s older at the load's end than at the
    /// warm-up's.
    Flat,
    /// Either of the two is not so.
    NotFlat,
    /// The load had no whole second after the warm-up.
    TooShort,
}

/// The verdict on a paced run, over the whole seconds of the load after
/// the warm-up (seconds `from_second..=to_second`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Verdict {
    /// The verdict.
    pub shape: Shape,
    /// The window's first second.
    pub from_second: u64,
    /// The window's last second: the load's last whole second.
    pub to_second: u64,
    /// Events accepted per second over the window.
    pub accepted_per_sec: f64,
    /// Accepted events arrived per second over the window.
    pub delivered_per_sec: f64,
    /// How far `delivered_per_sec` is from `accepted_per_sec`, in percent
    /// of it (0 when nothing was accepted).
    pub delivered_off_percent: f64,
    /// The backlog's age at the warm-up's end, seconds.
    pub age_at_warmup_end_secs: f64,
    /// The backlog's age at the window's end, seconds.
    pub age_at_load_end_secs: f64,
}

impl Steady {
    /// The series and verdict of a run paced at `offered_per_sec` whose
    /// load started at `start` and lasted `load` (its planned duration),
    /// from the 202 instants in `accepted` (by event id) and the first
    /// arrival of each in `arrivals` (arrivals of other ids are left out;
    /// one before its 202 was read counts at the 202). `drained` is when
    /// the wait for arrivals ended.
    pub fn of(
        offered_per_sec: f64,
        accepted: &HashMap<String, Instant>,
        arrivals: &HashMap<String, Arrival>,
        (start, load, drained): (Instant, Duration, Instant),
    ) -> Steady {
        let since = |at: Instant| at.saturating_duration_since(start);
        let events: Vec<(Duration, Option<Duration>)> = accepted
            .iter()
            .map(|(id, at)| {
                let arrival = arrivals.get(id).map(|a| since(a.first.max(*at)));
                (since(*at), arrival)
            })
            .collect();
        let last = match events.iter().all(|(_, arrival)| arrival.is_some()) {
            true => events.iter().filter_map(|(_, arrival)| *arrival).max(),
            false => Some(since(drained)),
        };
        let end = last.unwrap_or_default().max(load);
        let series = series(events, end);
        let verdict = Verdict::of(&series, load.as_secs() as usize);
        Steady {
            offered_per_sec,
            series,
            verdict,
        }
    }

    /// The table (every 5th second, the load's last whole one and the
    /// last) and the verdict.
    pub fn text(&self) -> String {
        let mut out = format!(
            "steady state at {:.0}/s offered, by second since the load started:\n  \
             {:>6} {:>10} {:>10} {:>9} {:>8}\n",
            self.offered_per_sec, "second", "accepted", "delivered", "backlog", "age s"
        );
        let last = self.series.last().map_or(0, |s| s.second);
        for s in &self.series {
            let shown = s.second % TEXT_EVERY_SECS == 0
                || s.second == self.verdict.to_second
                || s.second == last;
            if shown {
                let _ = writeln!(
                    out,
                    "  {:>6} {:>10} {:>10} {:>9} {:>8.3}",
                    s.second, s.accepted, s.delivered, s.backlog, s.backlog_age_secs
                );
            }
        }
        let _ = writeln!(out, "  {}", self.verdict.text());
        out
    }
}

/// One row per second of `0..end` (the last one perhaps shorter) from
/// `events`: each one's 202 and first arrival (`None`: never), as offsets
/// from the load's start, no arrival before its 202.
fn series(mut events: Vec<(Duration, Option<Duration>)>, end: Duration) -> Vec<Second> {
    let seconds = end.as_nanos().div_ceil(1_000_000_000).max(1) as usize;
    let bucket = |at: Duration| (at.as_secs() as usize).min(seconds - 1);
    let (mut accepted, mut delivered) = (vec![0u64; seconds], vec![0u64; seconds]);
    for (at, arrival) in &events {
        accepted[bucket(*at)] += 1;
        if let Some(arrival) = arrival {
            delivered[bucket(*arrival)] += 1;
        }
    }
    // Oldest first: the events before `oldest` have all arrived by the
    // second being worked out, and so by every later one.
    events.sort_unstable_by_key(|(at, _)| *at);
    let (mut oldest, mut backlog) = (0, 0u64);
    let mut out = Vec::with_capacity(seconds);
    for k in 0..seconds {
        let sampled = Duration::from_secs(k as u64 + 1).min(end);
        backlog = backlog + accepted[k] - delivered[k];
        let arrived_by_then =
            |(_, arrival): &(Duration, Option<Duration>)| arrival.is_some_and(|a| bucket(a) <= k);
        while events.get(oldest).is_some_and(arrived_by_then) {
            oldest += 1;
        }
        let age = match events.get(oldest) {
            Some((at, _)) if bucket(*at) <= k => sampled.saturating_sub(*at),
            _ => Duration::ZERO,
        };
        out.push(Second {
            second: k as u64 + 1,
            accepted: accepted[k],
            delivered: delivered[k],
            backlog,
            backlog_age_secs: age.as_secs_f64(),
        });
    }
    out
}

impl Verdict {
    /// The verdict on `series`, whose load lasted `load_secs` whole seconds.
    fn of(series: &[Second], load_secs: usize) -> Verdict {
        let to = load_secs.min(series.len());
        let window = series.get(WARMUP_SECS..to).unwrap_or_default();
        let secs = window.len().max(1) as f64;
        let accepted_per_sec = window.iter().map(|s| s.accepted).sum::<u64>() as f64 / secs;
        let delivered_per_sec = window.iter().map(|s| s.delivered).sum::<u64>() as f64 / secs;
        let delivered_off_percent = match accepted_per_sec > 0.0 {
            true => 100.0 * (delivered_per_sec / accepted_per_sec - 1.0),
            false => 0.0,
        };
        let age_at = |second: usize| {
            series
                .get(second.wrapping_sub(1))
                .map_or(0.0, |s| s.backlog_age_secs)
        };
        let (age_at_warmup_end_secs, age_at_load_end_secs) = (age_at(WARMUP_SECS), age_at(to));
        let shape = if window.is_empty() {
            Shape::TooShort
        } else if accepted_per_sec > 0.0
            && (delivered_per_sec - accepted_per_sec).abs() <= RATE_TOLERANCE * accepted_per_sec
            && age_at_load_end_secs - age_at_warmup_end_secs <= AGE_GROWTH_LIMIT_SECS
        {
            Shape::Flat
        } else {
            Shape::NotFlat
        };
        Verdict {
            shape,
            from_second: WARMUP_SECS as u64 + 1,
            to_second: to as u64,
            accepted_per_sec,
            delivered_per_sec,
            delivered_off_percent,
            age_at_warmup_end_secs,
            age_at_load_end_secs,
        }
    }

    /// Whether the backlog stayed flat.
    pub fn is_flat(&self) -> bool {
        self.shape == Shape::Flat
    }

    /// One line: the verdict and the figures it rests on.
    pub fn text(&self) -> String {
        let word = match self.shape {
            Shape::Flat => "flat",
            Shape::NotFlat => "not flat",
            Shape::TooShort => {
                return format!(
                    "verdict: too short to judge: the load needs a whole second after its \
                     {WARMUP_SECS} s warm-up (--duration-secs {} or more)",
                    WARMUP_SECS + 1
                );
            }
        };
        let (from, to) = (self.from_second, self.to_second);
        let window = match from == to {
            true => format!("second {to}"),
            false => format!("seconds {from}-{to}"),
        };
        format!(
            "verdict: {word}: over {window} (after a {WARMUP_SECS} s warm-up) delivered \
             {del:.0}/s against {acc:.0}/s accepted ({off:+.1} %, within ±{tol:.0} % for flat); \
             backlog age {a0:.3} s at {WARMUP_SECS} s, {a1:.3} s at {to} s \
             ({grow:+.3} s, at most +{lim:.0} s for flat)",
            del = self.delivered_per_sec,
            acc = self.accepted_per_sec,
            off = self.delivered_off_percent,
            tol = 100.0 * RATE_TOLERANCE,
            a0 = self.age_at_warmup_end_secs,
            a1 = self.age_at_load_end_secs,
            grow = self.age_at_load_end_secs - self.age_at_warmup_end_secs,
            lim = AGE_GROWTH_LIMIT_SECS,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(n: u64) -> Duration {
        Duration::from_millis(n)
    }

    /// A second of the series as (accepted, delivered, backlog, age in ms).
    fn row(s: &Second) -> (u64, u64, u64, u64) {
        let age_ms = (s.backlog_age_secs * 1000.0).round() as u64;
        (s.accepted, s.delivered, s.backlog, age_ms)
    }

    #[test]
    fn each_second_counts_its_202s_and_arrivals_and_ends_with_the_backlog_and_its_age() {
        let events = vec![
            (ms(100), Some(ms(300))),
            (ms(200), Some(ms(1_500))),
            (ms(900), None),
            (ms(1_200), Some(ms(1_250))),
            (ms(1_900), Some(ms(2_100))),
        ];
        let s = series(events, ms(2_500));
        assert_eq!(s.len(), 3);
        assert_eq!(s.iter().map(|s| s.second).collect::<Vec<_>>(), [1, 2, 3]);
        // At 1 s: the 200 ms and 900 ms events are waiting; the oldest is 0.8 s old.
        assert_eq!(row(&s[0]), (3, 1, 2, 800));
        // At 2 s: the 200 ms one arrived; 900 ms (1.1 s old) and 1900 ms wait.
        assert_eq!(row(&s[1]), (2, 2, 2, 1_100));
        // The last second ends with the run, at 2.5 s: 900 ms never came.
        assert_eq!(row(&s[2]), (0, 1, 1, 1_600));
    }

    #[test]
    fn an_empty_run_has_one_second_of_nothing() {
        let s = series(Vec::new(), Duration::ZERO);
        assert_eq!(s.len(), 1);
        assert_eq!(row(&s[0]), (0, 0, 0, 0));
    }

    #[test]
    fn an_event_arrived_at_a_later_seconds_start_still_ages_the_backlog_before_it() {
        // Arrives exactly at 2 s: waiting at 1 s, gone at 2 s.
        let s = series(vec![(ms(500), Some(ms(2_000)))], ms(3_000));
        let rows: Vec<_> = s.iter().map(row).collect();
        assert_eq!(rows, [(1, 0, 1, 500), (0, 0, 1, 1_500), (0, 1, 0, 0)]);
    }

    /// `n` seconds of `accepted` a second each, `delivered` a second each,
    /// and the backlog `age(k)` s old at the end of second `k` (1-based).
    fn steady_series(
        n: u64,
        accepted: u64,
        delivered: u64,
        age: impl Fn(u64) -> f64,
    ) -> Vec<Second> {
        (1..=n)
            .map(|k| Second {
                second: k,
                accepted,
                delivered,
                backlog: 0,
                backlog_age_secs: age(k),
            })
            .collect()
    }

    #[test]
    fn keeping_up_is_flat_and_the_figures_cover_the_load_after_the_warm_up() {
        let mut s = steady_series(12, 1_000, 980, |_| 0.05);
        // The warm-up and the drain after the load do not count.
        s[0].delivered = 0;
        s[10].delivered = 5_000;
        let v = Verdict::of(&s, 10);
        assert_eq!(v.shape, Shape::Flat, "{v:?}");
        assert_eq!((v.from_second, v.to_second), (6, 10));
        assert_eq!((v.accepted_per_sec, v.delivered_per_sec), (1_000.0, 980.0));
        assert!((v.delivered_off_percent + 2.0).abs() < 1e-9, "{v:?}");
        assert!(
            v.text().contains("verdict: flat: over seconds 6-10"),
            "{}",
            v.text()
        );
        assert!(v.is_flat());
        let one = Verdict::of(&s, 6).text();
        assert!(one.contains("flat: over second 6 (after"), "{one}");
    }

    #[test]
    fn delivering_more_than_5_percent_short_or_over_is_not_flat() {
        for delivered in [940, 1_060] {
            let v = Verdict::of(&steady_series(10, 1_000, delivered, |_| 0.0), 10);
            assert_eq!(v.shape, Shape::NotFlat, "{delivered}: {v:?}");
        }
        let v = Verdict::of(&steady_series(10, 1_000, 950, |_| 0.0), 10);
        assert_eq!(v.shape, Shape::Flat, "exactly 5 % short: {v:?}");
    }

    #[test]
    fn a_backlog_more_than_2_s_older_at_the_load_end_is_not_flat() {
        // Aging 0.5 s a second: 2.5 s at 5 s, 5 s at 10 s.
        let v = Verdict::of(&steady_series(10, 1_000, 1_000, |k| 0.5 * k as f64), 10);
        assert_eq!(v.shape, Shape::NotFlat, "{v:?}");
        assert_eq!(
            (v.age_at_warmup_end_secs, v.age_at_load_end_secs),
            (2.5, 5.0)
        );
        assert!(v.text().contains("+2.500 s"), "{}", v.text());
        // Aging 0.4 s a second: 2 s older, still flat.
        let v = Verdict::of(&steady_series(10, 1_000, 1_000, |k| 0.4 * k as f64), 10);
        assert_eq!(v.shape, Shape::Flat, "{v:?}");
    }

    #[test]
    fn nothing_accepted_is_not_flat_and_no_whole_second_after_the_warm_up_is_too_short() {
        let v = Verdict::of(&steady_series(10, 0, 0, |_| 0.0), 10);
        assert_eq!((v.shape, v.delivered_off_percent), (Shape::NotFlat, 0.0));
        let v = Verdict::of(&steady_series(8, 1_000, 1_000, |_| 0.0), 5);
        assert_eq!(v.shape, Shape::TooShort, "{v:?}");
        assert!(!v.is_flat());
        assert!(v.text().contains("--duration-secs 6"), "{}", v.text());
    }

    #[test]
    fn the_steady_state_of_instants_runs_to_the_last_arrival_or_the_drains_end() {
        let t0 = Instant::now();
        let at = |n| t0 + ms(n);
        let accepted: HashMap<String, Instant> =
            [("a".to_owned(), at(100)), ("b".to_owned(), at(1_100))].into();
        let arrival = |n| Arrival {
            first: at(n),
            count: 1,
        };
        // b arrived before its 202 was read: it counts at the 202.
        let arrivals: HashMap<String, Arrival> = [
            ("a".to_owned(), arrival(7_400)),
            ("b".to_owned(), arrival(950)),
            ("x".to_owned(), arrival(200)),
        ]
        .into();
        let steady = Steady::of(2.0, &accepted, &arrivals, (t0, ms(6_000), at(9_000)));
        assert_eq!(steady.series.len(), 8, "to the last arrival");
        assert_eq!(row(&steady.series[0]), (1, 0, 1, 900));
        assert_eq!(row(&steady.series[1]), (1, 1, 1, 1_900));
        assert_eq!(row(&steady.series[7]), (0, 1, 0, 0));
        assert_eq!(steady.verdict.to_second, 6);
        // a never arrives: the series runs to the end of the drain.
        let arrivals: HashMap<String, Arrival> = [("b".to_owned(), arrival(1_150))].into();
        let steady = Steady::of(2.0, &accepted, &arrivals, (t0, ms(6_000), at(9_000)));
        assert_eq!(steady.series.len(), 9);
        assert_eq!(row(&steady.series[8]), (0, 0, 1, 8_900));
        let text = steady.text();
        assert!(text.contains("at 2/s offered"), "{text}");
        // Seconds 5, 6 (the load's last) and 9 (the last) are shown.
        assert_eq!(text.lines().count(), 2 + 3 + 1, "{text}");
    }
}
