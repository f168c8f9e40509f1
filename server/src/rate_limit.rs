//! Token bucket: a tenant's accepted (`rate_limit`) and forwarded
//! (`delivery_rate`) deliveries per second, and its recorded rejections.

use std::sync::Mutex;

use crate::config::RateLimitConfig;

/// A token bucket refilled continuously at `per_sec`, holding up to `burst`.
///
/// Token bucket: how many deliveries a tenant may have accepted (`rate_limit`)
/// or forwarded (`delivery_rate`) per second, and how many of its rejections
/// are recorded (`[limits.rejection_records]`).
#[derive(Debug, Clone)]
pub struct TokenBucket {
    per_ms: f64,
    burst: f64,
    tokens: f64,
    last_ms: i64,
}

impl TokenBucket {
    /// A full bucket.
    pub fn new(config: RateLimitConfig, now_ms: i64) -> Self {
        TokenBucket {
            per_ms: config.per_sec / 1000.0,
            burst: f64::from(config.burst),
            tokens: f64::from(config.burst),
            last_ms: now_ms,
        }
    }

    /// Takes one token, or says how many whole seconds until one is there.
    pub fn try_take(&mut self, now_ms: i64) -> Result<(), u64> {
        self.whole(now_ms)?;
        self.tokens -= 1.0;
        Ok(())
    }

    /// How many whole tokens there are at `now_ms` (at least one), taking
    /// none; or how many whole seconds until one is there.
    pub fn whole(&mut self, now_ms: i64) -> Result<usize, u64> {
        let elapsed = (now_ms - self.last_ms).max(0) as f64;
        self.tokens = (self.tokens + elapsed * self.per_ms).min(self.burst);
        self.last_ms = now_ms.max(self.last_ms);
        if self.tokens >= 1.0 {
            Ok(self.tokens as usize)
        } else {
            let wait_ms = (1.0 - self.tokens) / self.per_ms;
            Err(((wait_ms / 1000.0).ceil() as u64).max(1))
        }
    }
}

/// One tenant's budget for recording rejections: a bucket for bad or missing
/// signatures, which anyone can send, and one for content rejected after a
/// valid signature, so a flood of the first never crowds out the second.
#[derive(Debug)]
pub struct RejectionBudget {
    buckets: Mutex<[TokenBucket; 2]>,
}

impl RejectionBudget {
    /// Both buckets full.
    pub fn new(config: RateLimitConfig, now_ms: i64) -> Self {
        let bucket = TokenBucket::new(config, now_ms);
        RejectionBudget {
            buckets: Mutex::new([bucket.clone(), bucket]),
        }
    }

    /// Whether one more rejection of this kind may be recorded now.
    pub fn try_take(&self, signature_valid: bool, now_ms: i64) -> bool {
        let mut buckets = self.buckets.lock().expect("rejection budget lock");
        buckets[usize::from(signature_valid)]
            .try_take(now_ms)
            .is_ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn whole_counts_the_tokens_there_without_taking_one() {
        let mut b = TokenBucket::new(
            RateLimitConfig {
                per_sec: 2.0,
                burst: 3,
            },
            0,
        );
        assert_eq!(b.whole(0), Ok(3));
        assert_eq!(b.whole(0), Ok(3), "counting takes nothing");
        for _ in 0..3 {
            b.try_take(0).unwrap();
        }
        assert_eq!(b.whole(0), Err(1), "empty: a token in 500 ms, said as 1 s");
        assert_eq!(b.whole(1_000), Ok(2));
    }

    #[test]
    fn burst_then_refill() {
        let mut b = TokenBucket::new(
            RateLimitConfig {
                per_sec: 1.0,
                burst: 2,
            },
            0,
        );
        assert!(b.try_take(0).is_ok());
        assert!(b.try_take(0).is_ok());
        assert_eq!(b.try_take(0), Err(1));
        assert!(b.try_take(999).is_err());
        assert!(b.try_take(1000).is_ok());
    }

    #[test]
    fn wait_is_rounded_up_to_whole_seconds() {
        let mut b = TokenBucket::new(
            RateLimitConfig {
                per_sec: 0.1,
                burst: 1,
            },
            0,
        );
        assert!(b.try_take(0).is_ok());
        assert_eq!(b.try_take(0), Err(10));
    }

    #[test]
    fn refusal_kinds_have_budgets_of_their_own() {
        let budget = RejectionBudget::new(
            RateLimitConfig {
                per_sec: 1.0,
                burst: 2,
            },
            0,
        );
        assert!(budget.try_take(false, 0));
        assert!(budget.try_take(false, 0));
        assert!(!budget.try_take(false, 0));
        assert!(budget.try_take(true, 0), "content has its own bucket");
        assert!(budget.try_take(false, 1000), "refilled");
    }
}
