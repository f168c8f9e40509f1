//! A route's back-off from a transform that keeps overrunning its limits.

use std::{sync::Mutex, time::Duration};

use super::{Oversize, TransformError, TransformLimits};

/// Overruns in a row after which the route backs off.
pub const OVERRUNS_BEFORE_BACKOFF: u32 = 3;
/// The shortest interval between two runs of a route that backs off: 1 s.
pub const MIN_BACKOFF_INTERVAL: Duration = Duration::from_secs(1);
/// How many times its CPU budget the interval is, at least
/// [`MIN_BACKOFF_INTERVAL`]: a route backing off spins at most a tenth of
/// a core.
pub const BACKOFF_FACTOR: u32 = 10;

/// One route's overrun count and, while it backs off, when its next run
/// may start. Shared by every attempt of the route.
///
/// A route's back-off from a transform that keeps overrunning its limits:
/// after [`OVERRUNS_BEFORE_BACKOFF`] runs in a row stopped at their CPU
/// budget, wall-clock limit or memory limit, that returned a request over
/// its size cap or whose worker process stopped, the route starts at most one
/// run per [`interval`] until a run ends within its
/// limits. Nothing is skipped or failed by it: the deliveries waiting stay
/// queued, and each one still gets its run, later.
#[derive(Debug, Default)]
pub struct Backoff(Mutex<State>);

/// What [`Backoff`] holds.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct State {
    /// Runs in a row that overran a limit.
    overruns: u32,
    /// While backing off: the earliest start of the next run (Unix ms).
    next_ms: i64,
}

/// The interval between two runs while backing off, for `limits`:
/// [`BACKOFF_FACTOR`] times the CPU budget, at least
/// [`MIN_BACKOFF_INTERVAL`].
pub fn interval(limits: &TransformLimits) -> Duration {
    (limits.cpu() * BACKOFF_FACTOR).max(MIN_BACKOFF_INTERVAL)
}

impl State {
    /// Whether the route backs off now.
    fn backing_off(&self) -> bool {
        self.overruns >= OVERRUNS_BEFORE_BACKOFF
    }
}

/// Whether a run's failure is an overrun of the route's limits, the kind
/// that costs a core (or memory) for its whole budget each time.
pub fn is_overrun(error: &TransformError) -> bool {
    matches!(
        error,
        TransformError::Timeout { .. }
            | TransformError::Starved { .. }
            | TransformError::OutOfMemory { .. }
            | TransformError::TooLarge(Oversize::Output)
            | TransformError::Stopped(_)
    )
}

impl Backoff {
    /// Whether a run may start at `now_ms`: always, unless the route backs
    /// off; then one per interval, and the others learn when to ask again
    /// (`Err`, Unix ms).
    pub fn admit(&self, now_ms: i64, limits: &TransformLimits) -> Result<(), i64> {
        let mut state = self.0.lock().expect("transform back-off lock");
        if !state.backing_off() {
            return Ok(());
        }
        if now_ms < state.next_ms {
            return Err(state.next_ms);
        }
        state.next_ms = now_ms + millis(interval(limits));
        Ok(())
    }

    /// Whether the route backs off now (one run per interval).
    pub fn backing_off(&self) -> bool {
        self.0
            .lock()
            .expect("transform back-off lock")
            .backing_off()
    }

    /// When the next run may start, if the route backs off and that is
    /// after `now_ms`; takes no turn.
    pub fn paused_until(&self, now_ms: i64) -> Option<i64> {
        let state = self.0.lock().expect("transform back-off lock");
        (state.backing_off() && now_ms < state.next_ms).then_some(state.next_ms)
    }

    /// Counts a run that started at `started_ms`: an overrun adds one (the
    /// one that starts the back-off also starts its first interval), any
    /// other end, a failure or not, ends the back-off.
    pub fn record(&self, overran: bool, started_ms: i64, limits: &TransformLimits) {
        let mut state = self.0.lock().expect("transform back-off lock");
        if !overran {
            *state = State::default();
            return;
        }
        state.overruns = state.overruns.saturating_add(1);
        if state.overruns == OVERRUNS_BEFORE_BACKOFF {
            state.next_ms = started_ms + millis(interval(limits));
        }
    }
}

fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(cpu_ms: u64) -> TransformLimits {
        TransformLimits::new(16 << 20, Duration::from_millis(cpu_ms)).expect("valid")
    }

    #[test]
    fn three_overruns_in_a_row_let_one_run_through_per_interval() {
        let (backoff, limits) = (Backoff::default(), limits(50));
        for at in [0, 60, 120] {
            assert_eq!(backoff.admit(at, &limits), Ok(()));
            backoff.record(true, at, &limits);
        }
        assert_eq!(backoff.admit(130, &limits), Err(1120));
        assert_eq!(backoff.paused_until(500), Some(1120));
        assert_eq!(backoff.admit(1120, &limits), Ok(()));
        assert_eq!(backoff.admit(1121, &limits), Err(2120));
        backoff.record(true, 1120, &limits);
        assert_eq!(backoff.admit(2119, &limits), Err(2120));
        assert_eq!(backoff.admit(2120, &limits), Ok(()));
    }

    #[test]
    fn a_run_within_its_limits_ends_the_back_off() {
        let (backoff, limits) = (Backoff::default(), limits(50));
        for at in 0..3 {
            backoff.record(true, at, &limits);
        }
        assert!(backoff.admit(10, &limits).is_err());
        backoff.record(false, 1002, &limits);
        assert_eq!(backoff.paused_until(1003), None);
        for at in 1003..1010 {
            assert_eq!(backoff.admit(at, &limits), Ok(()));
        }
    }

    #[test]
    fn overruns_not_in_a_row_never_start_it() {
        let (backoff, limits) = (Backoff::default(), limits(50));
        for at in 0..10 {
            backoff.record(at % 3 != 2, at, &limits);
            assert_eq!(backoff.admit(at, &limits), Ok(()));
        }
    }

    #[test]
    fn the_interval_is_ten_budgets_and_at_least_a_second() {
        assert_eq!(interval(&limits(50)), MIN_BACKOFF_INTERVAL);
        assert_eq!(interval(&limits(1000)), Duration::from_secs(10));
    }

    #[test]
    fn only_limit_overruns_count() {
        let budget = Duration::from_millis(50);
        assert!(is_overrun(&TransformError::Timeout { budget }));
        assert!(is_overrun(&TransformError::Starved { limit: budget }));
        assert!(is_overrun(&TransformError::OutOfMemory { limit_bytes: 1 }));
        assert!(is_overrun(&TransformError::TooLarge(Oversize::Output)));
        assert!(is_overrun(&TransformError::Stopped("killed".into())));
        assert!(!is_overrun(&TransformError::TooLarge(Oversize::Code)));
        assert!(!is_overrun(&TransformError::Threw("x".into())));
        assert!(!is_overrun(&TransformError::StackOverflow));
    }
}
