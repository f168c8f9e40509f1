//! A tenant's routes besides the default one, each with its own delivery of
//! every accepted event and its own forwarding.

use hookd_proto::domain::{defaults, DEFAULT_ROUTE};
use serde::{Deserialize, Serialize};

use std::{sync::Arc, time::Duration};

use sha2::{Digest, Sha256};

use super::forwarding::{
    default_adaptive_concurrency, default_min_in_flight, BreakerConfig, ConcurrencySettings,
    DestinationConfig, ForwardSettings, Forwarding, RateLimitConfig, RetryConfig,
};
use crate::{
    error::InvalidSetting,
    ids::TenantId,
    routes::{
        filter::RouteFilter,
        transform::{
            apply::RouteTransform, pool::TransformPool, InvalidLimits, Transform, TransformLimits,
            DEFAULT_CPU, DEFAULT_MEMORY_BYTES,
        },
    },
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
}

fn default_transform_cpu_ms() -> u64 {
    DEFAULT_CPU.as_millis() as u64
}

fn default_transform_memory_mib() -> usize {
    DEFAULT_MEMORY_BYTES >> 20
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
}

/// One extra route, validated.
#[derive(Debug, Clone)]
pub struct RouteSettings {
    /// Its name.
    pub name: String,
    /// Where its deliveries are stored ([`TenantId::route_scope`]).
    pub scope: TenantId,
    /// How it forwards (`None`: pull mode).
    pub forward: Option<ForwardSettings>,
    /// Which events it gets (`None`: every event).
    pub filter: Option<RouteFilter>,
}

/// Validates `routes` of tenant `tenant`: names valid and unique, at most
/// [`MAX_ROUTES`] with the default one, every number in bounds.
pub(super) fn resolve_routes(
    tenant: &TenantId,
    routes: &[RouteConfig],
) -> Result<Vec<RouteSettings>, InvalidSetting> {
    if routes.len() + 1 > MAX_ROUTES {
        return Err(InvalidSetting::new(
            "routes",
            format!("at most {MAX_ROUTES} routes, the default one included"),
        ));
    }
    let mut names = vec![DEFAULT_ROUTE];
    routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let key = format!("routes[{i}]");
            if !TenantId::is_valid(&route.name) {
                return Err(InvalidSetting::new(
                    format!("{key}.name"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_'",
                ));
            }
            if names.contains(&route.name.as_str()) {
                return Err(InvalidSetting::new(
                    format!("{key}.name"),
                    format!(
                        "{:?} is taken (`default` is the tenant's own destination)",
                        route.name
                    ),
                ));
            }
            names.push(&route.name);
            resolve_route(tenant, &key, route)
        })
        .collect()
}

/// Resolves route `route`, declared at `key`: its forwarding, filter and
/// transform checked and compiled (its name is checked by the caller).
fn resolve_route(
    tenant: &TenantId,
    key: &str,
    route: &RouteConfig,
) -> Result<RouteSettings, InvalidSetting> {
    let forwarding = Forwarding {
        key: format!("{key} ({}).", route.name),
        destination: route.destination.as_ref(),
        retry: &route.retry,
        max_in_flight: route.max_in_flight,
        delivery_rate: route.delivery_rate,
        breaker: &route.breaker,
        concurrency: ConcurrencySettings {
            adaptive: route.adaptive_concurrency,
            min_in_flight: route.min_in_flight,
            latency_target_ms: route.latency_target_ms,
        },
    };
    forwarding.check_bounds()?;
    let filter = route
        .filter
        .as_ref()
        .map(RouteFilter::compile)
        .transpose()
        .map_err(|e| InvalidSetting::new(format!("{key}.filter{}", e.pointer), e.reason))?;
    let mut forward = forwarding.settings()?;
    if let Some(code) = &route.transform {
        let Some(forward) = forward.as_mut() else {
            return Err(InvalidSetting::new(
                format!("{key}.transform"),
                "a transform needs a destination (a pulled route sends nothing)",
            ));
        };
        forward.transform = Some(route_transform(tenant, key, route, code)?);
    }
    Ok(RouteSettings {
        name: route.name.clone(),
        scope: tenant.route_scope(&route.name),
        forward,
        filter,
    })
}

/// Compiles the transform `code` of route `route`, declared at `key`, with
/// its CPU and memory limits.
fn route_transform(
    tenant: &TenantId,
    key: &str,
    route: &RouteConfig,
    code: &str,
) -> Result<Arc<RouteTransform>, InvalidSetting> {
    let limits = TransformLimits::new(
        route.transform_memory_mib.saturating_mul(1 << 20),
        Duration::from_millis(route.transform_cpu_ms),
    )
    .map_err(|e| {
        let field = match e {
            InvalidLimits::Memory => "transform_memory_mib",
            InvalidLimits::Cpu => "transform_cpu_ms",
        };
        InvalidSetting::new(format!("{key}.{field}"), e)
    })?;
    let transform = Transform::new(code, version_of(code))
        .map_err(|e| InvalidSetting::new(format!("{key}.transform"), e))?;
    Ok(Arc::new(RouteTransform {
        transform,
        limits,
        tenant: tenant.clone(),
        route: route.name.clone(),
        share: TransformPool::shared().route_share(),
    }))
}

/// A transform's version: the first four bytes of the SHA-256 of its code,
/// so it changes exactly when the code does, and every attempt records the
/// code that ran.
pub(crate) fn version_of(code: &str) -> u32 {
    let digest = Sha256::digest(code.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::TenantConfig;

    fn tenant(routes: serde_json::Value) -> Result<Vec<RouteSettings>, InvalidSetting> {
        let config: TenantConfig = serde_json::from_value(serde_json::json!({
            "id": "acme",
            "secrets": [{ "kid": "k1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }],
            "routes": routes,
        }))
        .unwrap();
        config.resolve().map(|settings| settings.routes)
    }

    #[test]
    fn routes_resolve_with_their_own_forwarding_and_scope() {
        let routes = tenant(serde_json::json!([
            { "name": "audit", "max_in_flight": 3, "destination": {
                "url": "http://127.0.0.1:9/a", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" } },
            { "name": "pull" },
        ]))
        .unwrap();
        assert_eq!(routes.len(), 2);
        assert_eq!(routes[0].scope.as_str(), "acme~audit");
        let forward = routes[0].forward.as_ref().unwrap();
        assert_eq!(
            (forward.url.as_str(), forward.max_in_flight),
            ("http://127.0.0.1:9/a", 3)
        );
        assert!(
            routes[1].forward.is_none(),
            "a route without a URL is pulled"
        );
    }

    #[test]
    fn bad_routes_are_refused_naming_the_key() {
        let refused = |routes| tenant(routes).unwrap_err().to_string();
        assert!(refused(serde_json::json!([{ "name": "default" }])).contains("routes[0].name"));
        assert!(
            refused(serde_json::json!([{ "name": "a" }, { "name": "a" }]))
                .contains("routes[1].name")
        );
        assert!(refused(serde_json::json!([{ "name": "Bad Name" }])).contains("routes[0].name"));
        let bad_filter =
            serde_json::json!([{ "name": "a", "filter": { "body": { "n": { "$gte": [] } } } }]);
        assert!(refused(bad_filter).contains("routes[0].filter/body/n/$gte"));
        let slow = serde_json::json!([{ "name": "a", "max_in_flight": 0 }]);
        assert!(refused(slow).contains("routes[0] (a).max_in_flight"));
        let many: Vec<_> = (0..MAX_ROUTES)
            .map(|i| serde_json::json!({ "name": format!("r{i}") }))
            .collect();
        assert!(refused(serde_json::Value::Array(many)).contains("routes"));
    }

    #[test]
    fn adaptive_concurrency_is_off_by_default_and_its_keys_are_bounded() {
        let route = |extra: serde_json::Value| {
            let mut route = serde_json::json!({ "name": "a", "max_in_flight": 8, "destination": {
                "url": "http://127.0.0.1:9/a", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" } });
            route
                .as_object_mut()
                .unwrap()
                .extend(extra.as_object().unwrap().clone());
            tenant(serde_json::json!([route])).map(|r| r[0].forward.as_ref().unwrap().concurrency)
        };
        let fixed = route(serde_json::json!({})).unwrap();
        assert_eq!(
            (fixed.adaptive, fixed.min_in_flight, fixed.latency_target_ms),
            (false, 1, None)
        );
        let adaptive = route(serde_json::json!({
            "adaptive_concurrency": true, "min_in_flight": 2, "latency_target_ms": 250 }))
        .unwrap();
        assert_eq!(
            (
                adaptive.adaptive,
                adaptive.min_in_flight,
                adaptive.latency_target_ms
            ),
            (true, 2, Some(250))
        );
        for (extra, key) in [
            (serde_json::json!({ "min_in_flight": 0 }), "min_in_flight"),
            (serde_json::json!({ "min_in_flight": 9 }), "min_in_flight"),
            (
                serde_json::json!({ "latency_target_ms": 0 }),
                "latency_target_ms",
            ),
            (
                serde_json::json!({ "latency_target_ms": 600_001 }),
                "latency_target_ms",
            ),
        ] {
            let err = route(extra.clone()).unwrap_err().to_string();
            assert!(
                err.contains(&format!("routes[0] (a).{key}")),
                "{extra}: {err}"
            );
        }
    }

    fn transformed(extra: serde_json::Value) -> Result<Vec<RouteSettings>, InvalidSetting> {
        let mut route = serde_json::json!({
            "name": "shaped",
            "transform": "addHandler('transform', (r) => r)",
            "destination": { "url": "http://127.0.0.1:9/a", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" },
        });
        route
            .as_object_mut()
            .unwrap()
            .extend(extra.as_object().unwrap().clone());
        tenant(serde_json::json!([route]))
    }

    #[test]
    fn a_route_sets_its_transform_budget_within_bounds() {
        let routes =
            transformed(serde_json::json!({ "transform_cpu_ms": 200, "transform_memory_mib": 64 }))
                .unwrap();
        let limits = routes[0]
            .forward
            .as_ref()
            .unwrap()
            .transform
            .as_ref()
            .unwrap()
            .limits;
        assert_eq!(
            (limits.cpu(), limits.memory_bytes()),
            (Duration::from_millis(200), 64 << 20)
        );
        let defaults = transformed(serde_json::json!({})).unwrap();
        let limits = defaults[0]
            .forward
            .as_ref()
            .unwrap()
            .transform
            .as_ref()
            .unwrap()
            .limits;
        assert_eq!(
            (limits.cpu(), limits.memory_bytes()),
            (DEFAULT_CPU, DEFAULT_MEMORY_BYTES)
        );
        for (key, value) in [
            ("transform_cpu_ms", 0),
            ("transform_cpu_ms", 1001),
            ("transform_memory_mib", 0),
            ("transform_memory_mib", 257),
        ] {
            let err = transformed(serde_json::json!({ key: value }))
                .unwrap_err()
                .to_string();
            assert!(
                err.contains(&format!("routes[0].{key}")),
                "{key}={value}: {err}"
            );
        }
    }

    #[test]
    fn the_default_routes_filter_is_validated_like_a_routes() {
        let resolve = |filter: serde_json::Value| {
            let config: TenantConfig = serde_json::from_value(serde_json::json!({
                "id": "acme",
                "secrets": [{ "kid": "k1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }],
                "filter": filter,
            }))
            .unwrap();
            config.resolve()
        };
        let settings = resolve(serde_json::json!({ "body": { "type": "order.paid" } })).unwrap();
        assert!(settings.filter.is_some());
        let refused = resolve(serde_json::json!({ "body": { "n": { "$gte": [] } } }))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("filter/body/n/$gte"), "{refused}");
        assert!(!refused.contains("routes"), "{refused}");
    }
}
