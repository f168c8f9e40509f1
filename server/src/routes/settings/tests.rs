//! Routes resolved from their declaration: names, bounds, forwarding,
//! filters and transform budgets.

use super::*;
use crate::{
    config::TenantConfig,
    routes::transform::{DEFAULT_CPU, DEFAULT_MEMORY_BYTES},
    tenant::TenantSettings,
};

fn tenant(routes: serde_json::Value) -> Result<Vec<RouteSettings>, InvalidSetting> {
    let config: TenantConfig = serde_json::from_value(serde_json::json!({
        "id": "acme",
        "secrets": [{ "kid": "k1", "secret": "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw" }],
        "routes": routes,
    }))
    .unwrap();
    TenantSettings::resolve(&config).map(|settings| settings.routes)
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
        refused(serde_json::json!([{ "name": "a" }, { "name": "a" }])).contains("routes[1].name")
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
        TenantSettings::resolve(&config)
    };
    let settings = resolve(serde_json::json!({ "body": { "type": "order.paid" } })).unwrap();
    assert!(settings.filter.is_some());
    let refused = resolve(serde_json::json!({ "body": { "n": { "$gte": [] } } }))
        .unwrap_err()
        .to_string();
    assert!(refused.contains("filter/body/n/$gte"), "{refused}");
    assert!(!refused.contains("routes"), "{refused}");
}
