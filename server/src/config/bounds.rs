//! The one set of bounds on every number an operator or a tenant can set.

use crate::error::InvalidSetting;

/// Seconds in a day.
const DAY: u64 = 86_400;

/// An inclusive range of whole numbers.
///
/// The one set of bounds on every number an operator or a tenant can set.
/// The config file and the control plane both validate through
/// `TenantConfig::resolve` and `Config::validate`, which check here, so a
/// value is either refused with an error naming its key or is small enough
/// that no duration, timer or cache built from it can overflow or panic.
#[derive(Debug, Clone, Copy)]
pub struct Count {
    /// Smallest allowed value.
    pub min: u64,
    /// Largest allowed value.
    pub max: u64,
}

/// A range of seconds (or any finite real); `min_open` excludes `min` itself.
#[derive(Debug, Clone, Copy)]
pub struct Real {
    /// Lower end.
    pub min: f64,
    /// Whether `min` itself is refused (`> min` rather than `>= min`).
    pub min_open: bool,
    /// Largest allowed value.
    pub max: f64,
}

impl Count {
    /// `Ok` when `value` is in range; otherwise an error naming `key`.
    pub fn check(self, key: &str, value: u64) -> Result<(), InvalidSetting> {
        if (self.min..=self.max).contains(&value) {
            Ok(())
        } else {
            Err(InvalidSetting::new(
                key,
                format!(
                    "{value} is out of range; it must be between {} and {}",
                    self.min, self.max
                ),
            ))
        }
    }
}

impl Real {
    /// `Ok` when `value` is finite and in range; otherwise an error naming `key`.
    pub fn check(self, key: &str, value: f64) -> Result<(), InvalidSetting> {
        let above_min = if self.min_open {
            value > self.min
        } else {
            value >= self.min
        };
        if value.is_finite() && above_min && value <= self.max {
            Ok(())
        } else {
            let low = if self.min_open { "above" } else { "at least" };
            Err(InvalidSetting::new(
                key,
                format!(
                    "{value} is out of range; it must be {low} {} and at most {}",
                    self.min, self.max
                ),
            ))
        }
    }
}

const fn count(min: u64, max: u64) -> Count {
    Count { min, max }
}

const fn positive(max: f64) -> Real {
    Real {
        min: 0.0,
        min_open: true,
        max,
    }
}

const fn non_negative(max: f64) -> Real {
    Real {
        min: 0.0,
        min_open: false,
        max,
    }
}

/// Hard cap on any tenant's `max_body_bytes`: past it one delivery could
/// exhaust memory.
pub const MAX_BODY_LIMIT: usize = 64 * 1024 * 1024;

// Tenant settings (config file `[[tenants]]` and the control plane).

/// `limits.tenant_max_body_bytes`: the operator's cap on every tenant's
/// `max_body_bytes`, itself under [`MAX_BODY_LIMIT`].
pub const TENANT_BODY_CAP: Count = count(1, MAX_BODY_LIMIT as u64);

/// `max_body_bytes` of one tenant against the operator's cap.
pub fn check_body_under_cap(cap: usize, value: usize) -> Result<(), InvalidSetting> {
    if value > cap {
        return Err(InvalidSetting::new(
            "max_body_bytes",
            format!("{value} is over this hookd's limit of {cap} (limits.tenant_max_body_bytes)"),
        ));
    }
    Ok(())
}

/// `tolerance_secs`: a day at most (the replay cache keeps entries twice as long).
pub const TOLERANCE_SECS: Count = count(1, DAY);
/// `max_body_bytes`, under [`MAX_BODY_LIMIT`].
pub const MAX_BODY_BYTES: Count = count(1, MAX_BODY_LIMIT as u64);
/// Longest tenant `event_id_field`, in bytes.
pub const MAX_EVENT_ID_RULE_LEN: usize = 512;
/// Most placeholders in one `event_id_field` template.
pub const MAX_TEMPLATE_PARTS: usize = 8;
/// Longest tenant `public_url`, in bytes.
pub const MAX_PUBLIC_URL_LEN: usize = 2_048;
/// `replay_cache_capacity`.
pub const REPLAY_CACHE_CAPACITY: Count = count(1, 10_000_000);
/// `max_in_flight`: forwards of one tenant in flight at once.
pub const MAX_IN_FLIGHT: Count = count(1, 1_024);
/// `latency_target_ms` of an adaptive route: ten minutes at most, the
/// longest `destination.timeout_secs`.
pub const LATENCY_TARGET_MS: Count = count(1, 600_000);
/// `rate_limit.per_sec` and `delivery_rate.per_sec`.
pub const RATE_PER_SEC: Real = positive(100_000.0);
/// `rate_limit.burst` and `delivery_rate.burst`.
pub const RATE_BURST: Count = count(1, 1_000_000);
/// Number of entries in `retry.schedule_secs`.
pub const RETRY_STEPS: Count = count(1, 32);
/// Each delay of `retry.schedule_secs`: a week at most.
pub const RETRY_DELAY_SECS: Real = non_negative(7.0 * DAY as f64);
/// `retry.window_secs`: 30 days at most.
pub const RETRY_WINDOW_SECS: Real = positive(30.0 * DAY as f64);
/// `retry.jitter`, a fraction.
pub const RETRY_JITTER: Real = non_negative(1.0);
/// `destination.timeout_secs`.
pub const FORWARD_TIMEOUT_SECS: Real = positive(600.0);
/// `destination.connect_timeout_secs`.
pub const CONNECT_TIMEOUT_SECS: Real = positive(300.0);
/// `breaker.failure_threshold`.
pub const BREAKER_THRESHOLD: Count = count(1, 10_000);
/// `breaker.cooldown_secs`.
pub const BREAKER_COOLDOWN_SECS: Real = positive(DAY as f64);

// Process settings (config file and `HOOKD_*` only).

/// `http.workers` (0 = one per core).
pub const HTTP_WORKERS: Count = count(0, 1_024);
/// `http.shutdown_timeout_secs`.
pub const HTTP_SHUTDOWN_SECS: Count = count(0, 3_600);
/// The largest request head actix-http itself reads before answering a
/// bare 431.
pub const FRAMEWORK_MAX_HEAD_BYTES: usize = 128 * 1024;
/// `http.request_timeout_secs`: a day at most.
pub const HTTP_REQUEST_TIMEOUT_SECS: Count = count(1, DAY);
/// `http.max_header_bytes`, up to what actix-http reads at all.
pub const HTTP_MAX_HEADER_BYTES: Count = count(1_024, FRAMEWORK_MAX_HEAD_BYTES as u64);
/// `http.max_connections`, per worker.
pub const HTTP_MAX_CONNECTIONS: Count = count(1, 1_048_576);
/// `http.keep_alive_secs` (0 closes a connection after one answer).
pub const HTTP_KEEP_ALIVE_SECS: Count = count(0, 3_600);
/// `grpc.shutdown_grace_secs`.
pub const GRPC_SHUTDOWN_SECS: Real = non_negative(3_600.0);
/// `grpc.watch_streams_per_token`.
pub const GRPC_WATCHES_PER_TOKEN: Count = count(1, 1_024);
/// `dashboard.session_max_secs`: five minutes to a week.
pub const DASHBOARD_SESSION_MAX_SECS: Count = count(300, 7 * DAY);
/// `dashboard.tail_streams_per_session`.
pub const DASHBOARD_TAILS_PER_SESSION: Count = count(1, 16);
/// `dashboard.tail_streams_total`: below the dashboard's 256 connections,
/// leaving at least 56 for pages.
pub const DASHBOARD_TAILS_TOTAL: Count = count(1, 200);
/// `metrics.max_tenant_labels`.
pub const METRICS_TENANT_LABELS: Count = count(0, 100_000);
/// `metrics.scan_limit`.
pub const METRICS_SCAN_LIMIT: Count = count(1, 10_000_000);
/// `storage.commit_batch_max`.
pub const COMMIT_BATCH_MAX: Count = count(1, 65_536);
/// `storage.cache_capacity_bytes`: 1 MiB to 1 TiB.
pub const CACHE_CAPACITY_BYTES: Count = count(1 << 20, 1 << 40);
/// `retention.idempotency_secs`, `retention.delivered_secs` and
/// `retention.dead_secs`: ten years.
pub const RETENTION_SECS: Count = count(1, 3_650 * DAY);
/// `retention.sweep_interval_secs`.
pub const SWEEP_INTERVAL_SECS: Real = positive(DAY as f64);
/// `retention.sweep_batch`.
pub const SWEEP_BATCH: Count = count(1, 1_000_000);
/// `limits.max_decompression_ratio`: at least 2 (1 would refuse every
/// compressed body that compresses at all).
pub const DECOMPRESSION_RATIO: Count = count(2, 100_000);
/// `limits.tenant_idle_secs`: longer than any request may take.
pub const TENANT_IDLE_SECS: Count = count(60, DAY);
/// `limits.replay_cache_keys`.
pub const REPLAY_CACHE_KEYS: Count = count(1, 100_000_000);

// Alerts (`[alerts]`, `[tenants.alerts]`, SetAlertSettings).

/// `alerts.evaluate_every_secs`.
pub const ALERT_EVALUATE_SECS: Real = Real {
    min: 0.1,
    min_open: false,
    max: 3_600.0,
};
/// `alerts.sink_max_in_flight`.
pub const ALERT_SINK_IN_FLIGHT: Count = count(1, 64);
/// A rule's `threshold` (occurrences, a depth, or seconds).
pub const ALERT_THRESHOLD: Count = count(1, 10_000_000);
/// A rule's `window_secs`.
pub const ALERT_WINDOW_SECS: Real = Real {
    min: 1.0,
    min_open: false,
    max: DAY as f64,
};

/// `alerts.operator_max_per_window`.
pub const ALERT_OPERATOR_MAX: Count = count(1, 100_000);
/// `alerts.retention_secs`: from a minute to ten years.
pub const ALERT_RETENTION_SECS: Count = count(60, 3_650 * DAY);

/// A `usize` setting as a [`Count`] check.
pub fn check_usize(bound: Count, key: &str, value: usize) -> Result<(), InvalidSetting> {
    bound.check(key, u64::try_from(value).unwrap_or(u64::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_include_both_ends_and_name_the_key() {
        assert!(TOLERANCE_SECS.check("tolerance_secs", 1).is_ok());
        assert!(TOLERANCE_SECS.check("tolerance_secs", DAY).is_ok());
        let e = TOLERANCE_SECS
            .check("tolerance_secs", 0)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("tolerance_secs: 0 is out of range"), "{e}");
        assert!(TOLERANCE_SECS.check("tolerance_secs", u64::MAX).is_err());
    }

    #[test]
    fn reals_refuse_nan_infinity_and_open_ends() {
        for bad in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY, 0.0, -1.0, 601.0] {
            let e = FORWARD_TIMEOUT_SECS
                .check("destination.timeout_secs", bad)
                .unwrap_err()
                .to_string();
            assert!(e.starts_with("destination.timeout_secs: "), "{e}");
        }
        assert!(FORWARD_TIMEOUT_SECS.check("t", 600.0).is_ok());
        assert!(RETRY_JITTER.check("retry.jitter", 0.0).is_ok());
        assert!(RETRY_JITTER.check("retry.jitter", 1.0).is_ok());
        assert!(RETRY_JITTER.check("retry.jitter", 1.01).is_err());
    }

    /// The largest values allowed still make durations and millisecond
    /// arithmetic that cannot overflow.
    #[test]
    fn the_largest_allowed_values_are_safe_to_compute_with() {
        let _ = std::time::Duration::from_secs(TOLERANCE_SECS.max * 2);
        for secs in [HTTP_REQUEST_TIMEOUT_SECS.max, HTTP_KEEP_ALIVE_SECS.max] {
            let later = std::time::Instant::now() + std::time::Duration::from_secs(secs);
            assert!(later > std::time::Instant::now());
        }
        for real in [
            RETRY_DELAY_SECS,
            RETRY_WINDOW_SECS,
            FORWARD_TIMEOUT_SECS,
            CONNECT_TIMEOUT_SECS,
            BREAKER_COOLDOWN_SECS,
            GRPC_SHUTDOWN_SECS,
            SWEEP_INTERVAL_SECS,
        ] {
            let _ = std::time::Duration::from_secs_f64(real.max);
            assert!(real.max * 1000.0 < (i64::MAX / 4) as f64);
        }
        assert!(RETENTION_SECS.max.checked_mul(1000).unwrap() < (i64::MAX / 4) as u64);
    }
}
