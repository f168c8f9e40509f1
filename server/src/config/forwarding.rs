//! The forwarding half of a route as written: destination, retries,
//! in-flight attempts, rate and circuit breaker, and their bounds.

use std::path::PathBuf;

use hookd_proto::domain::defaults;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

use super::bounds;
use crate::error::InvalidSetting;

/// The forwarding fields of one route, with the key prefix its errors name
/// (`routes[1] (audit).`, empty for the default route).
///
/// The forwarding half of a route, as written and as validated: where it
/// sends (`destination`), how it retries, how many attempts it keeps in
/// flight, its rate and its circuit breaker, and a route's transform. The
/// default route reads these keys from the tenant itself, any other route
/// from its `[[tenants.routes]]` entry; both are validated here, naming the
/// key with the route's prefix.
pub struct Forwarding<'a> {
    /// The prefix of every key its errors name.
    pub key: String,
    /// Where it sends; none: its deliveries wait to be pulled.
    pub destination: Option<&'a DestinationConfig>,
    /// Its retry schedule and window.
    pub retry: &'a RetryConfig,
    /// Its concurrency limit.
    pub max_in_flight: usize,
    /// Its forward rate limit.
    pub delivery_rate: Option<RateLimitConfig>,
    /// Its circuit breaker.
    pub breaker: &'a BreakerConfig,
    /// How its concurrency limit moves.
    pub concurrency: ConcurrencySettings,
}

/// How a route's concurrency limit moves (docs/routes.md#adaptive-concurrency):
/// the keys `adaptive_concurrency`, `min_in_flight` and `latency_target_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ConcurrencySettings {
    /// The limit adapts (AIMD) between `min_in_flight` and `max_in_flight`;
    /// off: it stays at `max_in_flight`.
    pub adaptive: bool,
    /// The lowest the limit goes.
    pub min_in_flight: usize,
    /// Answers slower than this (ms) count as overload; none: latency is
    /// no signal.
    pub latency_target_ms: Option<u64>,
}

impl ConcurrencySettings {
    /// A limit that stays at `max_in_flight`: what a route without the
    /// keys gets, and what hookd's own deliveries (alert sinks) run with.
    pub const FIXED: ConcurrencySettings = ConcurrencySettings {
        adaptive: false,
        min_in_flight: 1,
        latency_target_ms: None,
    };

    /// The limit a route with `max_in_flight` slots starts with:
    /// `min_in_flight` when adaptive (slow start), else `max_in_flight`.
    pub fn starting_limit(&self, max_in_flight: usize) -> usize {
        if self.adaptive {
            self.min_in_flight.min(max_in_flight)
        } else {
            max_in_flight
        }
    }
}

/// Off by default: a route keeps the fixed `max_in_flight` it was tuned
/// for until its operator turns adaptation on.
pub(super) fn default_adaptive_concurrency() -> bool {
    false
}

/// The floor of an adaptive limit unless a route sets one.
pub(super) fn default_min_in_flight() -> usize {
    1
}

/// When to stop hammering a failing destination.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failed attempts that open the breaker.
    #[serde(default = "default_failure_threshold")]
    pub failure_threshold: u32,
    /// How long it stays open before one probe is let through.
    #[serde(default = "default_cooldown")]
    pub cooldown_secs: f64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_threshold: default_failure_threshold(),
            cooldown_secs: default_cooldown(),
        }
    }
}

/// Token-bucket rate limit of one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Sustained deliveries per second.
    pub per_sec: f64,
    /// Burst size.
    pub burst: u32,
}

/// A tenant's destination for forwarded events.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    /// URL hookd POSTs each event to.
    pub url: String,
    /// Standard Webhooks secret hookd signs forwarded deliveries with.
    #[serde(default, skip_serializing)]
    pub secret: Option<SecretString>,
    /// Environment variable holding the destination secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// File holding the destination secret.
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// Whole-request timeout, connect included.
    #[serde(default = "default_forward_timeout")]
    pub timeout_secs: f64,
    /// Connect timeout.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: f64,
    /// PEM bundle of private CAs this destination's certificate may chain
    /// to, trusted on top of the system's and the public roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// When failed forwards are retried.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Delays between attempts; the last one repeats until the window ends.
    #[serde(default = "default_schedule")]
    pub schedule_secs: Vec<f64>,
    /// After this long since acceptance a failing delivery is dead-lettered.
    #[serde(default = "default_window")]
    pub window_secs: f64,
    /// Random spread of each delay, as a fraction (0.1 = ±10 %).
    #[serde(default = "default_jitter")]
    pub jitter: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            schedule_secs: default_schedule(),
            window_secs: default_window(),
            jitter: default_jitter(),
        }
    }
}

fn default_forward_timeout() -> f64 {
    30.0
}

fn default_connect_timeout() -> f64 {
    10.0
}

fn default_schedule() -> Vec<f64> {
    defaults::RETRY_SCHEDULE_SECS.to_vec()
}

fn default_jitter() -> f64 {
    defaults::RETRY_JITTER
}

fn default_failure_threshold() -> u32 {
    defaults::BREAKER_FAILURE_THRESHOLD
}

fn default_cooldown() -> f64 {
    defaults::BREAKER_COOLDOWN_SECS
}

/// The retry window of a tenant that sets none, as every tenant created
/// over the control plane does.
pub(super) fn default_window() -> f64 {
    defaults::RETRY_WINDOW_SECS
}

impl DestinationConfig {
    /// A destination at `url` with the config file's default timeouts and
    /// no secret of its own (the control plane generates one).
    pub fn with_defaults(url: String) -> DestinationConfig {
        DestinationConfig {
            url,
            secret: None,
            secret_env: None,
            secret_file: None,
            timeout_secs: default_forward_timeout(),
            connect_timeout_secs: default_connect_timeout(),
            ca_file: None,
        }
    }
}

impl Forwarding<'_> {
    /// Every number of these forwarding fields against [`bounds`].
    pub fn check_bounds(&self) -> Result<(), InvalidSetting> {
        let key = |name: &str| format!("{}{name}", self.key);
        bounds::check_usize(
            bounds::MAX_IN_FLIGHT,
            &key("max_in_flight"),
            self.max_in_flight,
        )?;
        if let Some(rate) = &self.delivery_rate {
            bounds::RATE_PER_SEC.check(&key("delivery_rate.per_sec"), rate.per_sec)?;
            bounds::RATE_BURST.check(&key("delivery_rate.burst"), u64::from(rate.burst))?;
        }
        let retry = self.retry;
        bounds::check_usize(
            bounds::RETRY_STEPS,
            &key("retry.schedule_secs (number of delays)"),
            retry.schedule_secs.len(),
        )?;
        for (i, delay) in retry.schedule_secs.iter().enumerate() {
            bounds::RETRY_DELAY_SECS.check(&key(&format!("retry.schedule_secs[{i}]")), *delay)?;
        }
        bounds::RETRY_WINDOW_SECS.check(&key("retry.window_secs"), retry.window_secs)?;
        bounds::RETRY_JITTER.check(&key("retry.jitter"), retry.jitter)?;
        bounds::BREAKER_THRESHOLD.check(
            &key("breaker.failure_threshold"),
            u64::from(self.breaker.failure_threshold),
        )?;
        bounds::BREAKER_COOLDOWN_SECS
            .check(&key("breaker.cooldown_secs"), self.breaker.cooldown_secs)?;
        self.check_concurrency()?;
        if let Some(dest) = self.destination {
            bounds::FORWARD_TIMEOUT_SECS
                .check(&key("destination.timeout_secs"), dest.timeout_secs)?;
            bounds::CONNECT_TIMEOUT_SECS.check(
                &key("destination.connect_timeout_secs"),
                dest.connect_timeout_secs,
            )?;
        }
        Ok(())
    }

    /// `min_in_flight` (at most `max_in_flight`) and `latency_target_ms`.
    fn check_concurrency(&self) -> Result<(), InvalidSetting> {
        let key = |name: &str| format!("{}{name}", self.key);
        let floor = self.concurrency.min_in_flight;
        bounds::check_usize(bounds::MAX_IN_FLIGHT, &key("min_in_flight"), floor)?;
        if floor > self.max_in_flight {
            return Err(InvalidSetting::new(
                key("min_in_flight"),
                format!("{floor} is over max_in_flight ({})", self.max_in_flight),
            ));
        }
        if let Some(target) = self.concurrency.latency_target_ms {
            bounds::LATENCY_TARGET_MS.check(&key("latency_target_ms"), target)?;
        }
        Ok(())
    }
}
