//! Wall-clock time behind a trait, so tests control time instead of sleeping
//! ([`ManualClock`]).

use std::{
    fmt,
    sync::Arc,
    time::{Duration, SystemTime, UNIX_EPOCH},
};

use futures_util::future::BoxFuture;
use tokio::sync::watch;

/// Source of the current time in milliseconds since the Unix epoch.
///
/// Wall-clock time behind a trait, so tests control time instead of sleeping:
/// the clock tells the time and also sleeps, and a [`ManualClock`] wakes its
/// sleepers when a test moves it.
pub trait Clock: Send + Sync + 'static {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;

    /// Now, in Unix seconds.
    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }

    /// Resolves once this clock reads `at_ms` or later. Works on any tokio
    /// runtime (actix arbiters included).
    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()>;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as i64)
            .unwrap_or_default()
    }

    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()> {
        let wait = u64::try_from(at_ms - self.now_ms()).unwrap_or(0);
        Box::pin(tokio::time::sleep(Duration::from_millis(wait)))
    }
}

/// A clock that only moves when told to; shared by clones. Its sleepers
/// wake when a move reaches their deadline, never on their own.
#[derive(Clone)]
pub struct ManualClock(Arc<watch::Sender<i64>>);

impl Default for ManualClock {
    fn default() -> Self {
        ManualClock::at_secs(0)
    }
}

impl ManualClock {
    /// A clock standing at `unix_secs`.
    pub fn at_secs(unix_secs: i64) -> Self {
        ManualClock(Arc::new(watch::Sender::new(unix_secs * 1000)))
    }

    /// Moves the clock to `unix_secs`.
    pub fn set_secs(&self, unix_secs: i64) {
        self.0.send_replace(unix_secs * 1000);
    }

    /// Moves the clock forward by `ms`.
    pub fn advance_ms(&self, ms: i64) {
        self.0.send_modify(|now| *now += ms);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        *self.0.borrow()
    }

    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()> {
        let mut moves = self.0.subscribe();
        Box::pin(async move {
            while *moves.borrow_and_update() < at_ms {
                if moves.changed().await.is_err() {
                    // Every handle is gone: this clock never moves again.
                    std::future::pending::<()>().await;
                }
            }
        })
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ManualClock({})", self.now_ms())
    }
}

/// Shared handle to whichever clock the server runs on.
pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_manual_sleep_ends_when_the_clock_is_moved_to_its_deadline() {
        let clock = ManualClock::at_secs(10);
        let mut sleep = clock.sleep_until(12_000);
        assert!(futures_util::poll!(&mut sleep).is_pending());
        clock.advance_ms(1_999);
        assert!(futures_util::poll!(&mut sleep).is_pending());
        clock.advance_ms(1);
        assert!(futures_util::poll!(&mut sleep).is_ready());
        assert!(futures_util::poll!(clock.sleep_until(11_000)).is_ready());
    }
}
