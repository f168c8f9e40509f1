//! The retry policy: which outcomes are retried, when, and when to give up.

use std::time::SystemTime;

use rand::Rng;

use crate::routes::settings::ForwardSettings;
use crate::store::lifecycle::Next;

/// How an attempt ended, as far as retrying is concerned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict {
    /// 2xx.
    Success,
    /// Timeout, connection error, 408, 429 or 5xx; `retry_after_ms` from
    /// the answer's `Retry-After`, when it had one.
    Retryable {
        /// Requested wait, if any.
        retry_after_ms: Option<i64>,
    },
    /// Any other answer: retrying cannot help.
    Permanent,
    /// The request was never sent: it could not be built (an event id that
    /// is no valid header value, an invalid URL) or its destination address
    /// is not allowed. Dead-lettered at once; since the destination was not
    /// contacted, the circuit breaker does not count it either way.
    Unsendable,
    /// The route's transform dropped the event: nothing was sent, and the
    /// delivery is final (the breaker does not count it).
    Dropped,
    /// The route's transform threw, overran its budget or returned a bad
    /// request: nothing was sent, and the delivery is a dead letter of its
    /// own status at once (the breaker does not count it).
    TransformFailed,
}

/// Classifies an HTTP status.
pub fn verdict_for_status(status: u16, retry_after_ms: Option<i64>) -> Verdict {
    match status {
        200..=299 => Verdict::Success,
        408 | 429 | 500..=599 => Verdict::Retryable { retry_after_ms },
        _ => Verdict::Permanent,
    }
}

/// Parses `Retry-After` (delta seconds or an HTTP date) into a wait in ms.
pub fn parse_retry_after(value: &str, now_ms: i64) -> Option<i64> {
    let value = value.trim();
    if let Ok(secs) = value.parse::<u64>() {
        return Some(secs.saturating_mul(1000).min(i64::MAX as u64) as i64);
    }
    let when = httpdate::parse_http_date(value).ok()?;
    let when_ms = when
        .duration_since(SystemTime::UNIX_EPOCH)
        .ok()?
        .as_millis() as i64;
    Some((when_ms - now_ms).max(0))
}

/// Decides what follows attempt number `attempt` (1-based) of a delivery
/// accepted at `accepted_at_ms`, which ended with `verdict` and `error`.
pub fn next_step(
    settings: &ForwardSettings,
    attempt: u32,
    accepted_at_ms: i64,
    now_ms: i64,
    verdict: &Verdict,
    error: &str,
    rng: &mut impl Rng,
) -> Next {
    let retry_after_ms = match verdict {
        Verdict::Success => return Next::Delivered,
        Verdict::Permanent => {
            return Next::Dead {
                reason: format!("permanent failure: {error}"),
            }
        }
        Verdict::Unsendable => {
            return Next::Dead {
                reason: error.to_owned(),
            }
        }
        Verdict::Dropped => return Next::Dropped,
        Verdict::TransformFailed => {
            return Next::TransformFailed {
                reason: error.to_owned(),
            }
        }
        Verdict::Retryable { retry_after_ms } => *retry_after_ms,
    };
    let window_end = accepted_at_ms.saturating_add(settings.window_ms);
    let index = (attempt.max(1) as usize - 1).min(settings.schedule_ms.len() - 1);
    let base = settings.schedule_ms[index] as f64;
    let spread = if settings.jitter > 0.0 {
        rng.random_range(-settings.jitter..=settings.jitter)
    } else {
        0.0
    };
    let scheduled = now_ms + (base * (1.0 + spread)).round() as i64;
    let due = match retry_after_ms {
        Some(wait) if now_ms.saturating_add(wait) <= window_end => now_ms + wait,
        _ => scheduled,
    };
    if due > window_end {
        Next::Dead {
            reason: format!("retry window exhausted after {attempt} attempts; last error: {error}"),
        }
    } else {
        Next::Retry { due_ms: due }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use hookd_sdk::signature::{Scheme, Secret};
    use rand::{rngs::StdRng, SeedableRng};

    use super::*;

    fn settings(schedule_ms: Vec<i64>, window_ms: i64, jitter: f64) -> ForwardSettings {
        ForwardSettings {
            url: "http://127.0.0.1:1/".into(),
            secret: Secret::from_provider(Scheme::Standard, "d", "whsec_AAAA").unwrap(),
            timeout: Duration::from_secs(30),
            connect_timeout: Duration::from_secs(10),
            schedule_ms,
            window_ms,
            jitter,
            max_in_flight: 8,
            delivery_rate: None,
            breaker_threshold: 5,
            breaker_cooldown_ms: 30_000,
            concurrency: crate::config::ConcurrencySettings::FIXED,
            address_policy: None,
            transform: None,
            ca_certs: Vec::new(),
        }
    }

    fn retryable(after: Option<i64>) -> Verdict {
        Verdict::Retryable {
            retry_after_ms: after,
        }
    }

    #[test]
    fn classifies_statuses() {
        assert_eq!(verdict_for_status(204, None), Verdict::Success);
        for s in [408, 429, 500, 502, 503] {
            assert_eq!(verdict_for_status(s, None), retryable(None));
        }
        for s in [301, 400, 401, 404, 410, 422] {
            assert_eq!(verdict_for_status(s, None), Verdict::Permanent);
        }
    }

    #[test]
    fn follows_the_schedule_then_repeats_the_last_delay() {
        let s = settings(vec![30_000, 120_000], 86_400_000, 0.0);
        let mut rng = StdRng::seed_from_u64(1);
        let mut at = |attempt| next_step(&s, attempt, 0, 1_000, &retryable(None), "503", &mut rng);
        assert_eq!(at(1), Next::Retry { due_ms: 31_000 });
        assert_eq!(at(2), Next::Retry { due_ms: 121_000 });
        assert_eq!(at(7), Next::Retry { due_ms: 121_000 });
    }

    #[test]
    fn jitter_stays_within_ten_percent() {
        let s = settings(vec![100_000], 86_400_000, 0.1);
        let mut rng = StdRng::seed_from_u64(7);
        for _ in 0..200 {
            let Next::Retry { due_ms } = next_step(&s, 1, 0, 0, &retryable(None), "x", &mut rng)
            else {
                panic!("retry expected")
            };
            assert!((90_000..=110_000).contains(&due_ms), "{due_ms}");
        }
    }

    #[test]
    fn retry_after_wins_inside_the_window_only() {
        let s = settings(vec![1_000], 60_000, 0.0);
        let mut rng = StdRng::seed_from_u64(1);
        assert_eq!(
            next_step(&s, 1, 0, 0, &retryable(Some(20_000)), "429", &mut rng),
            Next::Retry { due_ms: 20_000 }
        );
        assert_eq!(
            next_step(&s, 1, 0, 0, &retryable(Some(90_000)), "429", &mut rng),
            Next::Retry { due_ms: 1_000 }
        );
    }

    #[test]
    fn window_exhaustion_and_permanent_errors_dead_letter_with_the_reason() {
        let s = settings(vec![10_000], 15_000, 0.0);
        let mut rng = StdRng::seed_from_u64(1);
        let Next::Dead { reason } =
            next_step(&s, 2, 0, 10_000, &retryable(None), "HTTP 503", &mut rng)
        else {
            panic!("dead expected")
        };
        assert!(
            reason.contains("window exhausted") && reason.contains("HTTP 503"),
            "{reason}"
        );
        let Next::Dead { reason } =
            next_step(&s, 1, 0, 0, &Verdict::Permanent, "HTTP 400", &mut rng)
        else {
            panic!("dead expected")
        };
        assert!(reason.contains("HTTP 400"), "{reason}");
        let why = "destination address not allowed (localhost resolves to an address the destination address policy denies)";
        assert_eq!(
            next_step(&s, 1, 0, 0, &Verdict::Unsendable, why, &mut rng),
            Next::Dead { reason: why.into() }
        );
    }

    #[test]
    fn parses_retry_after_in_both_forms() {
        assert_eq!(parse_retry_after("120", 0), Some(120_000));
        let now_ms = 1_700_000_000_000;
        let date = httpdate::fmt_http_date(
            SystemTime::UNIX_EPOCH + Duration::from_millis(now_ms as u64 + 30_000),
        );
        assert_eq!(parse_retry_after(&date, now_ms), Some(30_000));
        assert_eq!(parse_retry_after("soon", 0), None);
    }
}
