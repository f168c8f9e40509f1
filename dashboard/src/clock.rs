//! The time the dashboard reads: session ages, sign-in form freshness and the
//! live tail's keep-alives.

use std::sync::Arc;

use futures_util::future::BoxFuture;

/// Source of the current time in milliseconds since the Unix epoch.
///
/// The time the dashboard reads: session ages, sign-in form freshness and
/// the live tail's keep-alives. hookd hands in its own clock, so a test that
/// moves hookd's time moves the dashboard's too.
pub trait Clock: Send + Sync + 'static {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;

    /// Resolves once this clock reads `at_ms` or later.
    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()>;
}

/// The clock every part of the dashboard shares.
pub type SharedClock = Arc<dyn Clock>;

#[cfg(test)]
pub(crate) use manual::ManualClock;

#[cfg(test)]
mod manual {
    use std::sync::{
        atomic::{AtomicI64, Ordering},
        Arc,
    };

    use futures_util::future::{self, BoxFuture};

    use super::Clock;

    /// A clock that only moves when a test moves it; shared by clones. Its
    /// sleepers never wake.
    #[derive(Clone)]
    pub(crate) struct ManualClock(Arc<AtomicI64>);

    impl ManualClock {
        /// A clock standing at `unix_secs`.
        pub(crate) fn at_secs(unix_secs: i64) -> Self {
            ManualClock(Arc::new(AtomicI64::new(unix_secs * 1000)))
        }

        /// Moves the clock forward by `ms`.
        pub(crate) fn advance_ms(&self, ms: i64) {
            self.0.fetch_add(ms, Ordering::Relaxed);
        }
    }

    impl Clock for ManualClock {
        fn now_ms(&self) -> i64 {
            self.0.load(Ordering::Relaxed)
        }

        fn sleep_until(&self, _at_ms: i64) -> BoxFuture<'static, ()> {
            Box::pin(future::pending())
        }
    }
}
