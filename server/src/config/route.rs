//! A tenant's routes besides the default one, each with its own delivery of
//! every accepted event and its own forwarding.

use hookd_proto::domain::defaults;
use serde::{Deserialize, Serialize};

use super::forwarding::{
    default_adaptive_concurrency, default_min_in_flight, BreakerConfig, ConcurrencySettings,
    DestinationConfig, Forwarding, RateLimitConfig, RetryConfig,
};

/// Most routes a tenant has, the default one included.
pub const MAX_ROUTES: usize = 16;

/// One extra route, as declared in the config file (`[[tenants.routes]]`).
///
/// A tenant's routes besides the default one: each gets its own delivery of
/// every accepted event, written in the same durable commit, and forwards it
/// to its own destination (or queues it for pulling) with its own retries,
/// concurrency, rate and breaker. The default route is the tenant's own
/// `destination` and forwarding fields, so a tenant with no `routes` is
/// exactly what it was before routes existed.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouteConfig {
    /// Its name: 1-64 characters of a-z, 0-9, '-' or '_', unique within
    /// the tenant, never `default`.
    pub name: String,
    /// Where it forwards; none: its deliveries wait to be pulled.
    #[serde(default)]
    pub destination: Option<DestinationConfig>,
    /// Its retry schedule and window.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Its concurrency limit.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Whether its concurrency limit adapts to its destination
    /// (AIMD between `min_in_flight` and `max_in_flight`).
    #[serde(default = "default_adaptive_concurrency")]
    pub adaptive_concurrency: bool,
    /// The lowest an adaptive limit goes (1..=`max_in_flight`).
    #[serde(default = "default_min_in_flight")]
    pub min_in_flight: usize,
    /// Answers slower than this many ms cut an adaptive limit; none:
    /// latency is no signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_ms: Option<u64>,
    /// Its forward rate limit.
    #[serde(default)]
    pub delivery_rate: Option<RateLimitConfig>,
    /// Its circuit breaker.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Which events it gets: a filter over the body, headers, path and
    /// query (docs/routes.md); none: every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<serde_json::Value>,
    /// JavaScript run on each request the route sends (docs/routes.md):
    /// it may rewrite the path, query, headers and body, or drop the event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
    /// The transform's CPU budget per run, in ms (1..=1000).
    #[serde(default = "default_transform_cpu_ms")]
    pub transform_cpu_ms: u64,
    /// The transform's memory cap per run, in MiB (1..=256).
    #[serde(default = "default_transform_memory_mib")]
    pub transform_memory_mib: usize,
    /// How long after acceptance each delivery waits before its first
    /// attempt (or before it may be pulled), in ms (0..=86400000).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

fn default_transform_cpu_ms() -> u64 {
    u64::from(defaults::TRANSFORM_CPU_MS)
}

fn default_transform_memory_mib() -> usize {
    defaults::TRANSFORM_MEMORY_MIB as usize
}

fn default_max_in_flight() -> usize {
    defaults::MAX_IN_FLIGHT as usize
}

impl RouteConfig {
    /// A route of `name` with every other key at the config file's default,
    /// for routes written elsewhere (the catalog) to be completed from.
    pub fn named(name: &str) -> RouteConfig {
        serde_json::from_value(serde_json::json!({ "name": name }))
            .expect("every key but the name has a default")
    }

    /// This route's forwarding fields, its errors naming `key` (the
    /// route's place in the file, `routes[1]`).
    pub fn forwarding(&self, key: &str) -> Forwarding<'_> {
        Forwarding {
            key: format!("{key} ({}).", self.name),
            destination: self.destination.as_ref(),
            retry: &self.retry,
            max_in_flight: self.max_in_flight,
            delivery_rate: self.delivery_rate,
            breaker: &self.breaker,
            concurrency: ConcurrencySettings {
                adaptive: self.adaptive_concurrency,
                min_in_flight: self.min_in_flight,
                latency_target_ms: self.latency_target_ms,
            },
        }
    }
}
