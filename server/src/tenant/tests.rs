//! The tenant actor as the one owner of a running tenant: each change is
//! in force for the next delivery and restarts only what it touched.

use std::{collections::HashMap, sync::Arc};

use actix_web::http::header::HeaderMap;
use futures_util::future::AbortHandle;
use hookd_sdk::signature::{sign, Scheme, Secret};

use super::{Registry, Services, TenantHandle};
use crate::tenant::TenantSettings;
use crate::{
    clock::{ManualClock, SharedClock},
    config::TenantConfig,
    feed::DeliveryFeed,
    forward::ForwardRuntime,
    ingest::{Ingest, IngestError, IngestOutcome},
    store::{api::Storage, SledStore},
    telemetry::Telemetry,
};

const NOW_SECS: i64 = 1_700_000_000;
const FIRST: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const SECOND: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
const DEST_SECRET: &str = "whsec_ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl";

/// A running registry on a fresh store, its actors on an arbiter of their
/// own so the test thread can wait for their changes.
struct Running {
    registry: Registry,
    _arbiter: actix_rt::Arbiter,
    _system: actix_rt::SystemRunner,
    _committer: Box<dyn std::any::Any>,
    _dir: tempfile::TempDir,
}

fn running() -> Running {
    let system = actix_rt::System::new();
    let dir = tempfile::tempdir().unwrap();
    let (store, committer) = SledStore::open(dir.path(), 64, false).unwrap();
    let store: Arc<dyn Storage> = Arc::new(store);
    let clock: SharedClock = Arc::new(ManualClock::at_secs(NOW_SECS));
    let telemetry = Telemetry::new(None, &crate::metrics::tests::config(8));
    let forwarding = ForwardRuntime::new(1).unwrap();
    let services = Services::new(store, clock, forwarding, DeliveryFeed::default(), telemetry);
    let arbiter = actix_rt::Arbiter::new();
    let registry = Registry::new(vec![arbiter.handle()], Arc::new(services));
    Running {
        registry,
        _arbiter: arbiter,
        _system: system,
        _committer: Box::new(committer),
        _dir: dir,
    }
}

/// Tenant `acme` signing with `secret`, forwarding to `default_url`, with a
/// route to each `(name, url)` of `routes`; `extra` adds top-level keys.
fn settings(
    secret: &str,
    default_url: &str,
    routes: &[(&str, &str)],
    extra: serde_json::Value,
) -> TenantSettings {
    let destination = |url: &str| serde_json::json!({ "url": url, "secret": DEST_SECRET });
    let routes: Vec<serde_json::Value> = routes
        .iter()
        .map(|(name, url)| serde_json::json!({ "name": name, "destination": destination(url) }))
        .collect();
    let mut config = serde_json::json!({
        "id": "acme",
        "scheme": "standard",
        "secrets": [{ "kid": "k1", "secret": secret }],
        "destination": destination(default_url),
        "routes": routes,
    });
    for (key, value) in extra.as_object().into_iter().flatten() {
        config[key] = value.clone();
    }
    let config: TenantConfig = serde_json::from_value(config).unwrap();
    TenantSettings::resolve_under(&config, 1024 * 1024).unwrap()
}

fn acme(running: &Running) -> TenantHandle {
    running.registry.get("acme").expect("acme runs")
}

fn dispatchers(handle: &TenantHandle) -> HashMap<String, AbortHandle> {
    handle.state().dispatchers()
}

/// The names of the dispatchers among `before` that were stopped since.
fn stopped(before: &HashMap<String, AbortHandle>) -> Vec<&str> {
    let mut names: Vec<&str> = before
        .iter()
        .filter(|(_, abort)| abort.is_aborted())
        .map(|(name, _)| name.as_str())
        .collect();
    names.sort_unstable();
    names
}

fn post(handle: &TenantHandle, secret: &str, id: &str) -> Result<IngestOutcome, IngestError> {
    let body = format!("{{\"type\":\"order.paid\",\"id\":\"{id}\"}}");
    let key = Secret::from_provider(Scheme::Standard, "k1", secret).unwrap();
    let signed = sign(Scheme::Standard, &key, id, NOW_SECS, body.as_bytes());
    let headers: HeaderMap = Ingest::headers(signed);
    let body = bytes::Bytes::from(body);
    let answer = handle.ingest(Ingest::post(&headers, &body));
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
        .block_on(async { answer.await })
}

const URL: &str = "http://127.0.0.1:9/";

/// The actor publishes a rotated secret: the very next delivery is checked
/// against it, and no dispatcher restarts for it.
#[test]
fn a_rotated_secret_is_in_force_for_the_next_delivery_and_restarts_nothing() {
    let running = running();
    let first = settings(FIRST, URL, &[("audit", URL)], serde_json::json!({}));
    running.registry.start_tenant(first).unwrap();
    let handle = acme(&running);
    let before = dispatchers(&handle);
    assert_eq!(before.len(), 2, "the default route and audit forward");
    assert!(matches!(
        post(&handle, SECOND, "msg_1"),
        Err(IngestError::Verify { .. })
    ));

    let rotated = settings(SECOND, URL, &[("audit", URL)], serde_json::json!({}));
    handle.rotate(rotated).unwrap();
    assert!(!post(&handle, SECOND, "msg_1").unwrap().duplicate);
    assert!(matches!(
        post(&handle, FIRST, "msg_2"),
        Err(IngestError::Verify { .. })
    ));
    assert!(stopped(&before).is_empty());
}

/// A settings change that leaves every route's forwarding as it was
/// (here: a rate limit and a tolerance) restarts no dispatcher; a change
/// to one route's destination restarts that route's alone; a removed
/// route's dispatcher stops and a new route's starts.
#[test]
fn a_change_restarts_only_the_dispatchers_of_the_routes_it_touched() {
    let running = running();
    let routes = [("audit", URL), ("ops", URL)];
    let start = settings(FIRST, URL, &routes, serde_json::json!({}));
    running.registry.start_tenant(start).unwrap();
    let handle = acme(&running);
    let before = dispatchers(&handle);
    assert_eq!(before.len(), 3);

    let limited = serde_json::json!({
        "rate_limit": { "per_sec": 50.0, "burst": 10 },
        "tolerance_secs": 120,
    });
    handle
        .update(settings(FIRST, URL, &routes, limited.clone()))
        .unwrap();
    assert!(stopped(&before).is_empty(), "no dispatcher restarted");
    assert_eq!(handle.settings().tolerance_secs, 120, "in force");
    assert!(dispatchers(&handle)
        .iter()
        .all(|(name, abort)| !abort.is_aborted() && before.contains_key(name)));

    let moved = [("audit", "http://127.0.0.1:10/"), ("ops", URL)];
    handle
        .update(settings(FIRST, URL, &moved, limited.clone()))
        .unwrap();
    assert_eq!(
        stopped(&before),
        ["audit"],
        "only audit's dispatcher restarted"
    );
    let after = dispatchers(&handle);
    assert_eq!(after.len(), 3);
    assert!(!after["audit"].is_aborted(), "audit forwards again");

    let swapped = [("audit", "http://127.0.0.1:10/"), ("billing", URL)];
    handle
        .update(settings(FIRST, URL, &swapped, limited))
        .unwrap();
    assert_eq!(
        stopped(&after),
        ["ops"],
        "the removed route's dispatcher stopped"
    );
    let names: Vec<String> = handle.routes().iter().map(|r| r.name.clone()).collect();
    assert_eq!(names, ["default", "audit", "billing"]);
    let now = dispatchers(&handle);
    assert!(now.contains_key("billing") && !now.contains_key("ops"));
    assert!(!now["default"].is_aborted() && !now["audit"].is_aborted());
}

/// Removing a tenant stops its dispatchers for good: a change that was
/// still on its way is refused instead of starting them again.
#[test]
fn a_removed_tenant_starts_no_dispatcher_again() {
    let running = running();
    let start = settings(FIRST, URL, &[("audit", URL)], serde_json::json!({}));
    running.registry.start_tenant(start).unwrap();
    let handle = acme(&running);
    let before = dispatchers(&handle);
    assert!(running.registry.remove("acme"));
    assert_eq!(stopped(&before), ["audit", "default"]);
    let moved = settings(FIRST, "http://127.0.0.1:10/", &[], serde_json::json!({}));
    assert!(handle.update(moved).is_err());
    assert!(dispatchers(&handle).is_empty());
}
