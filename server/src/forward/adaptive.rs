//! Adaptive concurrency of one route: an AIMD limit cut together with every
//! other adaptive route to the same destination host.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, OnceLock, Weak},
};

use super::{attempt::AttemptResult, policy::Verdict};
use crate::config::ConcurrencySettings;

/// A cut keeps this many tenths of the limit: gentle enough that the limit
/// stays near the destination's capacity (a halving would leave it a
/// quarter under on average); the AIMD limit of Netflix's
/// concurrency-limits library backs off by the same ratio.
const KEEP_TENTHS: usize = 9;

/// Most missed cuts applied at once: enough to reach the floor from 1024.
const MAX_CATCH_UP: u64 = 80;

/// Longest one `Retry-After` pauses a whole route, in ms; the delivery
/// that carried it still waits the full time before its own retry.
pub const MAX_PAUSE_MS: i64 = 300_000;

/// What one finished attempt says about its destination's load.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Signal {
    /// Answered 2xx within the latency target: room to grow.
    Fine,
    /// An answer that says "too much": 429, 503, or an answer slower than
    /// the latency target. The destination is up, so the cut is the
    /// answer and the breaker never counts it.
    Overloaded,
    /// No answer in time: cut like an overload, and counted by the breaker
    /// once the limit is at its floor (the destination may be down).
    TimedOut,
    /// A retryable answer with `Retry-After`: the destination said when to
    /// come back, so the route starts nothing new until `until_ms`.
    Wait {
        /// End of the pause.
        until_ms: i64,
    },
    /// Nothing about load (another failure, or nothing was sent).
    Neutral,
}

/// What [`signal_of`] reads of one attempt.
#[derive(Debug, Clone, Copy)]
pub struct Observed<'a> {
    /// How the attempt ended.
    pub verdict: &'a Verdict,
    /// The answer's status, if there was one.
    pub status: Option<u16>,
    /// The failure's class (`timeout`, `connect_timeout`, a status, ...).
    pub error_type: Option<&'a str>,
    /// How long the attempt took, in ms.
    pub elapsed_ms: u64,
}

/// The load signal of an attempt finished at `now_ms`; `latency_target_ms`:
/// answers slower than this count as overload.
pub fn signal_of(seen: Observed<'_>, latency_target_ms: Option<u64>, now_ms: i64) -> Signal {
    if let Verdict::Retryable {
        retry_after_ms: Some(wait),
    } = seen.verdict
    {
        return Signal::Wait {
            until_ms: now_ms.saturating_add((*wait).clamp(0, MAX_PAUSE_MS)),
        };
    }
    if matches!(seen.error_type, Some("timeout" | "connect_timeout")) {
        return Signal::TimedOut;
    }
    let slow = seen.status.is_some() && latency_target_ms.is_some_and(|t| seen.elapsed_ms > t);
    if matches!(seen.status, Some(429 | 503)) || slow {
        return Signal::Overloaded;
    }
    match seen.verdict {
        Verdict::Success => Signal::Fine,
        _ => Signal::Neutral,
    }
}

/// The cuts of every adaptive route forwarding to one host: one overload
/// cuts them all, at most once per round trip.
#[derive(Debug, Default)]
pub struct HostSignal(Mutex<HostCuts>);

#[derive(Debug, Default, Clone, Copy)]
struct HostCuts {
    /// Cuts so far; a route cuts its own limit once per new one.
    count: u64,
    /// When the last one happened.
    last_ms: Option<i64>,
}

impl HostSignal {
    /// An overload seen by an attempt started at `started_ms`: a new cut,
    /// unless one already happened after that attempt started (it was sent
    /// under the old limits, so a burst of answers counts once).
    fn overloaded(&self, started_ms: i64, now_ms: i64) {
        let mut cuts = self.0.lock().expect("host signal lock");
        if cuts.last_ms.is_some_and(|last| started_ms <= last) {
            return;
        }
        cuts.count += 1;
        cuts.last_ms = Some(now_ms);
    }

    /// Cuts so far.
    fn count(&self) -> u64 {
        self.0.lock().expect("host signal lock").count
    }
}

/// The [`HostSignal`] of each destination host with an adaptive route.
///
/// Adaptive concurrency of one route (docs/routes.md#adaptive-concurrency):
/// an AIMD limit between `min_in_flight` and `max_in_flight`, cut together
/// with every other adaptive route to the same destination host, so routes
/// sharing a host converge to equal shares and none starves another.
#[derive(Debug, Default)]
pub struct HostSignals(Mutex<HashMap<String, Weak<HostSignal>>>);

impl HostSignals {
    /// The process's table: every dispatcher to one host shares its signal.
    pub fn shared() -> &'static HostSignals {
        static SHARED: OnceLock<HostSignals> = OnceLock::new();
        SHARED.get_or_init(HostSignals::default)
    }

    /// The signal of the host `url` names (`host:port`); hosts no route
    /// uses any more are forgotten.
    pub fn of(&self, url: &str) -> Arc<HostSignal> {
        let key = reqwest::Url::parse(url)
            .ok()
            .and_then(|u| Some(format!("{}:{}", u.host_str()?, u.port_or_known_default()?)))
            .unwrap_or_else(|| url.to_owned());
        let mut hosts = self.0.lock().expect("host signals lock");
        hosts.retain(|_, signal| signal.strong_count() > 0);
        if let Some(signal) = hosts.get(&key).and_then(Weak::upgrade) {
            return signal;
        }
        let signal = Arc::new(HostSignal::default());
        hosts.insert(key, Arc::downgrade(&signal));
        signal
    }
}

/// One route's concurrency limit: `max_in_flight` when not adaptive;
/// otherwise it starts at `min_in_flight` and doubles per limit's worth of
/// successes until the first cut (slow start), then grows by one per
/// limit's worth and loses a tenth on overload, never under `min_in_flight`.
#[derive(Debug)]
pub struct ConcurrencyLimit {
    settings: ConcurrencySettings,
    ceiling: usize,
    limit: usize,
    /// Successes since the limit last moved.
    successes: usize,
    /// No cut yet: the limit doubles instead of growing by one.
    slow_start: bool,
    host: Arc<HostSignal>,
    /// The host's cuts this route has applied.
    seen: u64,
    paused_until_ms: Option<i64>,
}

impl ConcurrencyLimit {
    /// The limit of a route with `max_in_flight` slots, sharing `host`.
    pub fn new(settings: ConcurrencySettings, max_in_flight: usize, host: Arc<HostSignal>) -> Self {
        ConcurrencyLimit {
            settings,
            ceiling: max_in_flight,
            limit: settings.starting_limit(max_in_flight),
            successes: 0,
            slow_start: true,
            seen: host.count(),
            host,
            paused_until_ms: None,
        }
    }

    /// Attempts that may be in flight at `now_ms`: none while a
    /// `Retry-After` pauses the route, else the current limit.
    pub fn allowed(&mut self, now_ms: i64) -> usize {
        if self.paused_until(now_ms).is_some() {
            return 0;
        }
        self.current()
    }

    /// When a `Retry-After` pause in force at `now_ms` ends.
    pub fn paused_until(&mut self, now_ms: i64) -> Option<i64> {
        self.paused_until_ms = self.paused_until_ms.filter(|until| *until > now_ms);
        self.paused_until_ms
    }

    /// The current limit, with every cut of the host applied.
    pub fn current(&mut self) -> usize {
        if self.settings.adaptive {
            let cuts = self.host.count();
            // Cuts missed while no attempt finished are applied too, so
            // every route to the host backs off by the same factor.
            for _ in 0..cuts.saturating_sub(self.seen).min(MAX_CATCH_UP) {
                self.limit = (self.limit * KEEP_TENTHS / 10).max(self.settings.min_in_flight);
                self.successes = 0;
                self.slow_start = false;
            }
            self.seen = cuts;
        }
        self.limit.max(self.settings.min_in_flight)
    }

    /// Takes the signal of a finished attempt (see [`Self::observe`]);
    /// true if it was an overload the limit answered by a cut.
    pub fn observe_attempt(&mut self, result: &AttemptResult, now_ms: i64, in_use: usize) -> bool {
        let seen = Observed {
            verdict: &result.verdict,
            status: result.record.status_code,
            error_type: result.error_type.as_deref(),
            elapsed_ms: result.record.duration_ms,
        };
        let signal = signal_of(seen, self.settings.latency_target_ms, now_ms);
        self.observe(signal, result.record.started_at_ms, now_ms, in_use)
    }

    /// Takes the signal of an attempt started at `started_ms` and finished
    /// at `now_ms`, with `in_use` attempts (itself included) in flight when
    /// it finished. Successes grow the limit only while at least half of
    /// it is in use, so an idle route does not claim slots it never tried.
    /// Returns true when the cut is the answer and the breaker need not
    /// count it: an answered overload, or a timeout while the limit was
    /// above its floor.
    pub fn observe(&mut self, signal: Signal, started_ms: i64, now_ms: i64, in_use: usize) -> bool {
        if !self.settings.adaptive {
            return false;
        }
        match signal {
            Signal::Fine => {
                let limit = self.current();
                if in_use * 2 >= limit {
                    self.successes += 1;
                    if self.successes >= limit {
                        let grown = if self.slow_start {
                            2 * limit
                        } else {
                            limit + 1
                        };
                        self.limit = grown.min(self.ceiling);
                        self.successes = 0;
                    }
                }
            }
            Signal::Overloaded | Signal::TimedOut => {
                let above_floor = self.current() > self.floor();
                self.host.overloaded(started_ms, now_ms);
                self.current();
                return above_floor || signal == Signal::Overloaded;
            }
            Signal::Wait { until_ms } => {
                self.paused_until_ms = self.paused_until_ms.max(Some(until_ms));
            }
            Signal::Neutral => {}
        }
        false
    }

    /// The lowest the limit goes: `min_in_flight`, within `max_in_flight`.
    fn floor(&self) -> usize {
        self.settings.min_in_flight.min(self.ceiling)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn adaptive(min_in_flight: usize) -> ConcurrencySettings {
        ConcurrencySettings {
            adaptive: true,
            min_in_flight,
            latency_target_ms: None,
        }
    }

    /// An adaptive limit of `max` sharing `host`, grown to its ceiling.
    fn limit(max: usize, host: &Arc<HostSignal>) -> ConcurrencyLimit {
        let mut l = ConcurrencyLimit::new(adaptive(1), max, host.clone());
        while l.current() < max {
            succeed(&mut l, 1, 0);
        }
        l
    }

    /// `n` successes, each started just before it finished at `at`, with
    /// the whole limit in use.
    fn succeed(l: &mut ConcurrencyLimit, n: usize, at: i64) {
        for _ in 0..n {
            let in_use = l.current();
            l.observe(Signal::Fine, at - 1, at, in_use);
        }
    }

    #[test]
    fn starts_at_the_floor_and_doubles_per_window_until_the_first_cut() {
        let host = Arc::new(HostSignal::default());
        let mut l = ConcurrencyLimit::new(adaptive(2), 64, host);
        assert_eq!(l.current(), 2, "starts at min_in_flight");
        for expected in [4, 8, 16] {
            let window = l.current();
            succeed(&mut l, window - 1, 1);
            assert_eq!(l.current(), window, "one short of a window");
            succeed(&mut l, 1, 1);
            assert_eq!(l.current(), expected);
        }
        l.observe(Signal::Overloaded, 1, 2, 16);
        assert_eq!(l.current(), 14);
        succeed(&mut l, 14, 3);
        assert_eq!(l.current(), 15, "after a cut, one per window");
    }

    #[test]
    fn grows_by_one_per_limits_worth_of_successes_up_to_the_ceiling() {
        let host = Arc::new(HostSignal::default());
        let mut l = limit(20, &host);
        l.observe(Signal::Overloaded, 0, 1, 20);
        assert_eq!(l.current(), 18);
        succeed(&mut l, 17, 2);
        assert_eq!(l.current(), 18, "17 successes are not a window of 18");
        succeed(&mut l, 1, 2);
        assert_eq!(l.current(), 19, "18 are");
        succeed(&mut l, 1_000, 3);
        assert_eq!(l.current(), 20, "never over max_in_flight");
    }

    #[test]
    fn an_idle_route_does_not_grow() {
        let host = Arc::new(HostSignal::default());
        let mut l = limit(16, &host);
        l.observe(Signal::Overloaded, 0, 1, 16);
        assert_eq!(l.current(), 14);
        for _ in 0..100 {
            l.observe(Signal::Fine, 1, 2, 6);
        }
        assert_eq!(l.current(), 14, "six in use of 14");
    }

    #[test]
    fn loses_a_tenth_on_overload_down_to_the_floor() {
        let host = Arc::new(HostSignal::default());
        let mut l = ConcurrencyLimit::new(adaptive(3), 64, host);
        while l.current() < 64 {
            succeed(&mut l, 1, 0);
        }
        let mut now = 0;
        let mut overload = |l: &mut ConcurrencyLimit| {
            now += 10;
            l.observe(Signal::Overloaded, now - 1, now, 1);
            l.current()
        };
        for expected in [57, 51, 45, 40] {
            assert_eq!(overload(&mut l), expected);
        }
        for _ in 0..30 {
            overload(&mut l);
        }
        assert_eq!(overload(&mut l), 3, "never under min_in_flight");
    }

    #[test]
    fn an_answered_overload_is_the_cuts_answer_and_a_timeout_counts_at_the_floor() {
        let host = Arc::new(HostSignal::default());
        let mut l = ConcurrencyLimit::new(adaptive(2), 8, host);
        succeed(&mut l, 2, 0);
        assert_eq!(l.current(), 4);
        let answered: Vec<(bool, usize)> = (1..=4)
            .map(|at| {
                (
                    l.observe(Signal::Overloaded, at * 10 - 1, at * 10, 4),
                    l.current(),
                )
            })
            .collect();
        assert_eq!(
            answered,
            [(true, 3), (true, 2), (true, 2), (true, 2)],
            "a destination that answers 429 or 503 is up: the cut is the answer, at the floor too"
        );
        assert!(
            !l.observe(Signal::TimedOut, 40, 41, 2),
            "unanswered at the floor of 2: the breaker counts it"
        );
        assert!(!l.observe(Signal::Neutral, 50, 51, 2));
        assert!(!l.observe(Signal::Wait { until_ms: 99 }, 50, 51, 2));
        succeed(&mut l, 2, 60);
        assert!(l.observe(Signal::Overloaded, 70, 71, 3), "above it again");
        succeed(&mut l, 4, 80);
        assert!(
            l.observe(Signal::TimedOut, 90, 91, 4),
            "unanswered above the floor: the cut"
        );
        let fixed = ConcurrencySettings {
            adaptive: false,
            ..adaptive(1)
        };
        let mut f = ConcurrencyLimit::new(fixed, 8, Arc::new(HostSignal::default()));
        assert!(!f.observe(Signal::Overloaded, 0, 1, 8), "a fixed route");
    }

    #[test]
    fn a_burst_of_overloads_sent_under_the_old_limit_cuts_once() {
        let host = Arc::new(HostSignal::default());
        let mut l = limit(40, &host);
        // Forty attempts sent at 100 ms, all answered 503 between 110 and 150.
        for at in 110..150 {
            l.observe(Signal::Overloaded, 100, at, 40);
        }
        assert_eq!(l.current(), 36, "one cut for the whole round");
        l.observe(Signal::Overloaded, 151, 160, 36);
        assert_eq!(l.current(), 32, "one sent after the cut counts again");
    }

    #[test]
    fn a_retry_after_pauses_the_route_and_does_not_cut() {
        let host = Arc::new(HostSignal::default());
        let mut l = limit(8, &host);
        l.observe(Signal::Wait { until_ms: 5_000 }, 0, 1_000, 8);
        assert_eq!(l.allowed(1_000), 0, "nothing starts during the pause");
        assert_eq!(l.paused_until(4_999), Some(5_000));
        assert_eq!(l.allowed(5_000), 8, "the limit itself is untouched");
        assert_eq!(l.paused_until(5_000), None);
    }

    #[test]
    fn retry_after_wins_over_overload_and_latency() {
        let wait = Verdict::Retryable {
            retry_after_ms: Some(2_000),
        };
        let seen = |verdict: &Verdict, status, error_type, elapsed_ms| {
            signal_of(
                Observed {
                    verdict,
                    status,
                    error_type,
                    elapsed_ms,
                },
                Some(100),
                10_000,
            )
        };
        assert_eq!(
            seen(&wait, Some(503), Some("503"), 500),
            Signal::Wait { until_ms: 12_000 }
        );
        let huge = Verdict::Retryable {
            retry_after_ms: Some(i64::MAX),
        };
        assert_eq!(
            seen(&huge, Some(429), Some("429"), 1),
            Signal::Wait {
                until_ms: 10_000 + MAX_PAUSE_MS
            }
        );
        let retryable = Verdict::Retryable {
            retry_after_ms: None,
        };
        for (status, error_type, signal) in [
            (Some(429), Some("429"), Signal::Overloaded),
            (Some(503), Some("503"), Signal::Overloaded),
            (None, Some("timeout"), Signal::TimedOut),
            (None, Some("connect_timeout"), Signal::TimedOut),
        ] {
            assert_eq!(
                seen(&retryable, status, error_type, 1),
                signal,
                "{error_type:?}"
            );
        }
        assert_eq!(
            seen(&Verdict::Success, Some(200), None, 101),
            Signal::Overloaded
        );
        assert_eq!(seen(&Verdict::Success, Some(200), None, 100), Signal::Fine);
        assert_eq!(seen(&retryable, Some(500), Some("500"), 1), Signal::Neutral);
        assert_eq!(seen(&retryable, None, Some("connect"), 1), Signal::Neutral);
        assert_eq!(
            seen(&Verdict::Unsendable, None, Some("unsendable"), 1),
            Signal::Neutral
        );
    }

    #[test]
    fn a_fixed_limit_ignores_every_signal() {
        let host = Arc::new(HostSignal::default());
        let fixed = ConcurrencySettings {
            adaptive: false,
            ..adaptive(1)
        };
        let mut l = ConcurrencyLimit::new(fixed, 8, host.clone());
        l.observe(Signal::Overloaded, 0, 1, 8);
        l.observe(Signal::Wait { until_ms: 1_000 }, 0, 1, 8);
        let mut other = limit(8, &host);
        other.observe(Signal::Overloaded, 2, 3, 8);
        assert_eq!((l.allowed(1), l.current()), (8, 8));
        assert_eq!(other.current(), 7);
    }

    #[test]
    fn routes_to_one_host_cut_together_and_converge_to_equal_shares() {
        let signals = HostSignals::default();
        let host = signals.of("http://sink.example:8080/a");
        assert!(Arc::ptr_eq(
            &host,
            &signals.of("http://sink.example:8080/b")
        ));
        let elsewhere = signals.of("http://other.example:8080/a");
        assert!(!Arc::ptr_eq(&host, &elsewhere));
        let (mut peer, mut small, mut apart) =
            (limit(64, &host), limit(64, &host), limit(64, &elsewhere));
        for at in [1, 3, 5] {
            small.observe(Signal::Overloaded, at - 1, at, 64);
        }
        assert_eq!((peer.current(), small.current()), (45, 45), "cut together");
        assert_eq!(apart.current(), 64, "another host is not cut");
        for at in (7..40).step_by(2) {
            small.observe(Signal::Overloaded, at - 1, at, 64);
        }
        assert_eq!(small.current(), 4);
        // A route that joins later grows to its ceiling, far above `small`.
        let mut big = limit(64, &host);
        assert_eq!(big.current(), 64, "earlier cuts are not its own");
        // Capacity 40 shared: each grows one per round trip, and whenever
        // the sum passes capacity one of them sees an overload, cutting all.
        let mut now = 100;
        for _ in 0..400 {
            now += 10;
            let (b, s) = (big.current(), small.current());
            succeed(&mut big, b, now);
            succeed(&mut small, s, now);
            if big.current() + small.current() > 40 {
                small.observe(Signal::Overloaded, now, now + 1, s);
            }
        }
        let (b, s) = (big.current() as f64, small.current() as f64);
        assert!((b - s).abs() <= 0.15 * (b + s), "shares {b} and {s}");
    }
}
