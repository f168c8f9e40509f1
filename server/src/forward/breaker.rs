//! Circuit breaker per destination: after N consecutive failures forwarding
//! pauses, then one probe at a time is let through until one succeeds.

/// Breaker state, visible in logs (and metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BreakerState {
    /// Forwarding normally.
    Closed,
    /// Paused until `until_ms`.
    Open {
        /// End of the pause.
        until_ms: i64,
    },
    /// One probe is in flight; the rest wait for its verdict.
    HalfOpen,
}

/// A consecutive-failure circuit breaker.
#[derive(Debug, Clone)]
pub struct Breaker {
    threshold: u32,
    cooldown_ms: i64,
    failures: u32,
    state: BreakerState,
}

impl Breaker {
    /// A closed breaker.
    pub fn new(threshold: u32, cooldown_ms: i64) -> Self {
        Breaker {
            threshold,
            cooldown_ms,
            failures: 0,
            state: BreakerState::Closed,
        }
    }

    /// The current state.
    pub fn state(&self) -> BreakerState {
        self.state
    }

    /// Whether one more attempt may start now; an open breaker whose pause
    /// is over lets exactly one probe through.
    pub fn admit(&mut self, now_ms: i64) -> bool {
        match self.state {
            BreakerState::Closed => true,
            BreakerState::HalfOpen => false,
            BreakerState::Open { until_ms } if now_ms >= until_ms => {
                self.state = BreakerState::HalfOpen;
                true
            }
            BreakerState::Open { .. } => false,
        }
    }

    /// An operator said the destination is back (a retry now): an open
    /// breaker lets its probe through from `now_ms` instead of after its
    /// pause.
    pub fn probe_now(&mut self, now_ms: i64) {
        if let BreakerState::Open { until_ms } = self.state {
            self.state = BreakerState::Open {
                until_ms: until_ms.min(now_ms),
            };
        }
    }

    /// When an open breaker lets its next probe through.
    pub fn reopens_at(&self) -> Option<i64> {
        match self.state {
            BreakerState::Open { until_ms } => Some(until_ms),
            _ => None,
        }
    }

    /// The destination answered (any HTTP answer that is not a server-side
    /// failure counts: it is up). Returns true if this closed the breaker.
    pub fn on_success(&mut self) -> bool {
        self.failures = 0;
        let was_open = self.state != BreakerState::Closed;
        self.state = BreakerState::Closed;
        was_open
    }

    /// An attempt failed in a way that suggests the destination is down.
    /// Returns true if this opened the breaker.
    pub fn on_failure(&mut self, now_ms: i64) -> bool {
        self.failures = self.failures.saturating_add(1);
        let open = self.state == BreakerState::HalfOpen || self.failures >= self.threshold;
        let was_closed = self.state == BreakerState::Closed;
        if open {
            self.state = BreakerState::Open {
                until_ms: now_ms + self.cooldown_ms,
            };
        }
        open && was_closed
    }

    /// An overload answer an adaptive limit took as a cut above its floor:
    /// the destination is up but busy, and backing off is the answer, so
    /// the failure count stays and a probe gives its turn to the next one.
    pub fn on_cut(&mut self, now_ms: i64) {
        self.on_not_sent(now_ms);
    }

    /// An admitted attempt was never sent (it could not be built, or its
    /// address is not allowed): it says nothing about the destination, so
    /// the failure count stays, and a probe gives its turn to the next one.
    pub fn on_not_sent(&mut self, now_ms: i64) {
        if self.state == BreakerState::HalfOpen {
            self.state = BreakerState::Open { until_ms: now_ms };
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_after_threshold_then_probes_one_at_a_time() {
        let mut b = Breaker::new(3, 1_000);
        assert!(!b.on_failure(0));
        assert!(!b.on_failure(0));
        assert!(b.on_failure(0));
        assert!(!b.admit(999));
        assert!(b.admit(1_000));
        assert_eq!(b.state(), BreakerState::HalfOpen);
        assert!(!b.admit(1_000), "only one probe");
        b.on_failure(1_100);
        assert_eq!(b.reopens_at(), Some(2_100));
        assert!(b.admit(2_100));
        assert!(b.on_success());
        assert!(b.admit(2_100) && b.admit(2_100));
    }

    #[test]
    fn an_attempt_never_sent_neither_counts_nor_holds_the_probe() {
        let mut b = Breaker::new(2, 1_000);
        b.on_failure(0);
        b.on_not_sent(0);
        assert_eq!(b.state(), BreakerState::Closed);
        assert!(b.on_failure(0), "the earlier failure still counts");
        assert!(b.admit(1_000));
        b.on_not_sent(1_200);
        assert_eq!(b.reopens_at(), Some(1_200));
        assert!(b.admit(1_200), "the next probe goes at once");
    }

    #[test]
    fn a_success_resets_the_count() {
        let mut b = Breaker::new(2, 1_000);
        b.on_failure(0);
        b.on_success();
        assert!(!b.on_failure(0));
        assert_eq!(b.state(), BreakerState::Closed);
    }

    #[test]
    fn a_retry_now_lets_an_open_breakers_probe_through_at_once() {
        let mut b = Breaker::new(1, 30_000);
        b.probe_now(0);
        assert_eq!(b.state(), BreakerState::Closed, "a closed breaker stays");
        assert!(b.on_failure(0));
        assert!(!b.admit(10));
        b.probe_now(10);
        assert!(b.admit(10), "the probe goes before the pause ends");
        assert_eq!(b.state(), BreakerState::HalfOpen);
        b.probe_now(10);
        assert!(!b.admit(10), "still one probe at a time");
    }
}
