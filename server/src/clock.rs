//! Wall-clock time behind a trait, so tests control time instead of sleeping.

use std::{
    fmt,
    sync::{
        atomic::{AtomicI64, Ordering},
        Arc,
    },
    time::{SystemTime, UNIX_EPOCH},
};

/// Source of the current time in milliseconds since the Unix epoch.
pub trait Clock: Send + Sync + 'static {
    /// Now, in Unix milliseconds.
    fn now_ms(&self) -> i64;

    /// Now, in Unix seconds.
    fn now_secs(&self) -> i64 {
        self.now_ms().div_euclid(1000)
    }
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
}

/// A clock that only moves when told to; shared by clones.
#[derive(Clone, Default)]
pub struct ManualClock(Arc<AtomicI64>);

impl ManualClock {
    /// A clock standing at `unix_secs`.
    pub fn at_secs(unix_secs: i64) -> Self {
        ManualClock(Arc::new(AtomicI64::new(unix_secs * 1000)))
    }

    /// Moves the clock to `unix_secs`.
    pub fn set_secs(&self, unix_secs: i64) {
        self.0.store(unix_secs * 1000, Ordering::SeqCst);
    }

    /// Moves the clock forward by `ms`.
    pub fn advance_ms(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ManualClock({})", self.now_ms())
    }
}

/// Shared handle to whichever clock the server runs on.
pub type SharedClock = Arc<dyn Clock>;
