//! Alerts that cannot go stale: ListAlerts shows an open alert's last
//! sighting and occurrences as the evaluator sees them (keeping an
//! acknowledgement), and an open alert
//! whose subject went away (its route deleted, its key revoked, its rule
//! disabled) resolves once, its summary saying why.

use hookd_sdk::{
    client::{
        proto::{
            Alert, AlertRule, AlertSettings, AlertSink, AlertState, CreateRouteRequest,
            CreateTenantRequest, RouteBreaker,
        },
        HookdClient,
    },
    signature::{sign, Scheme, Secret},
};
use serde_json::Value;

use super::{advance, advance_until, metric, post_with, verified};
use crate::{
    harness::{now_secs, order, TestServer},
    receiver::{Receiver, Reply},
};

/// A server whose API tenants may forward to 127.0.0.1.
fn server() -> TestServer {
    TestServer::start_at(
        "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n",
        now_secs(),
    )
}

/// Creates `shop` with its sink at `sink` and `rules`; its secret and the
/// sink's.
async fn shop(admin: &HookdClient, sink: &Receiver, rules: Vec<AlertRule>) -> (String, String) {
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let set = admin
        .set_alert_settings("shop", settings(sink, rules))
        .await
        .unwrap();
    (created.secret, set.generated_secret)
}

fn settings(sink: &Receiver, rules: Vec<AlertRule>) -> AlertSettings {
    AlertSettings {
        sink: Some(AlertSink {
            url: sink.url.clone(),
            ..Default::default()
        }),
        rules,
    }
}

fn rule(kind: &str, enabled: bool, threshold: u64, window_secs: f64) -> AlertRule {
    AlertRule {
        r#type: kind.into(),
        enabled,
        threshold,
        window_secs,
        mode: String::new(),
        overridden: false,
    }
}

/// The one alert of `shop`.
async fn the_alert(admin: &HookdClient) -> Alert {
    let alerts = admin.list_all_alerts("shop", &[]).await.unwrap();
    assert_eq!(alerts.len(), 1, "{alerts:?}");
    alerts[0].clone()
}

/// The sink's events' (type, summary).
fn sent(sink: &Receiver, secret: &str) -> Vec<(String, String)> {
    verified(sink, secret)
        .into_iter()
        .map(|(_, e): (i64, Value)| {
            let text = |k: &str| e[k].as_str().unwrap().to_owned();
            (text("type"), text("summary"))
        })
        .collect()
}

/// Asserts one opening of `kind` then one resolution `resolved` whose
/// summary is the opening's and `; resolved: {why}`.
fn resolved_because(events: &[(String, String)], kind: &str, resolved: &str, why: &str) {
    let got: Vec<&str> = events.iter().map(|(t, _)| t.as_str()).collect();
    assert_eq!(got, [kind, resolved], "{events:?}");
    assert_eq!(
        events[1].1,
        format!("{}; resolved: {why}", events[0].1),
        "{events:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_acknowledged_alert_lists_its_last_sighting_and_occurrences_as_they_grow() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let s = server();
    let admin = s.admin().await;
    let spike = rule("verification.failure_spike", true, 3, 60.0);
    let (_, sink_secret) = shop(&admin, &sink, vec![spike]).await;
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for i in 0..3 {
        assert_eq!(
            post_with(&s, "shop", wrong, &format!("evt_a{i}")).await,
            401
        );
    }
    advance_until(&s, &sink, 1, 10).await;
    assert_eq!(verified(&sink, &sink_secret).len(), 1);
    let opened = the_alert(&admin).await;
    assert_eq!(opened.occurrences, 3, "{opened:?}");
    admin.acknowledge_alert("shop", &opened.id).await.unwrap();

    for i in 0..4 {
        assert_eq!(
            post_with(&s, "shop", wrong, &format!("evt_b{i}")).await,
            401
        );
    }
    advance(&s, 5).await;
    let now = the_alert(&admin).await;
    assert_eq!(now.state(), AlertState::Acknowledged, "kept: {now:?}");
    assert_eq!(
        now.occurrences, 7,
        "ListAlerts counts what came since: {now:?}"
    );
    assert!(
        now.last_seen_at_unix_ms >= opened.opened_at_unix_ms + 5_000,
        "last seen moved on with the clock: {now:?}"
    );
    assert_eq!(
        verified(&sink, &sink_secret).len(),
        1,
        "still one notification"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_breaker_alert_resolves_once_when_its_route_is_deleted() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let failing = Receiver::start(Reply::Status(503)).await;
    let s = server();
    let admin = s.admin().await;
    let (secret, sink_secret) = shop(&admin, &sink, Vec::new()).await;
    admin
        .create_route(CreateRouteRequest {
            tenant_id: "shop".into(),
            name: "billing".into(),
            destination_url: failing.url.clone(),
            breaker: Some(RouteBreaker {
                failure_threshold: 1,
                cooldown_secs: 3600.0,
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    assert!(post_with(&s, "shop", &secret, "evt_1").await < 300);
    failing
        .wait_for(1, std::time::Duration::from_secs(10))
        .await;
    advance_until(&s, &sink, 1, 10).await;
    let opened = sent(&sink, &sink_secret);
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].0, "route.circuit_opened");

    admin.delete_route("shop", "billing", true).await.unwrap();
    advance_until(&s, &sink, 2, 30).await;
    advance(&s, 10).await;
    resolved_because(
        &sent(&sink, &sink_secret),
        "route.circuit_opened",
        "route.circuit_closed",
        "route removed",
    );
    assert_eq!(the_alert(&admin).await.state(), AlertState::Resolved);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_expiring_secret_alert_resolves_once_when_the_key_is_revoked() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let s = server();
    let admin = s.admin().await;
    let (secret, sink_secret) = shop(&admin, &sink, Vec::new()).await;
    assert!(post_with(&s, "shop", &secret, "evt_1").await < 300);
    let next = "whsec_bmV3LXByb3ZpZGVyLXNlY3JldC1ub2JvZHktdG9sZC1ob29rZA==";
    admin.rotate_secret_to("shop", 3600, next).await.unwrap();
    advance_until(&s, &sink, 1, 10).await;
    let events = verified(&sink, &sink_secret);
    assert_eq!(events.len(), 1, "{events:?}");
    let kid = events[0].1["subject"].as_str().unwrap().to_owned();

    admin.revoke_secret("shop", &kid).await.unwrap();
    let key = Secret::from_provider(Scheme::Standard, "k", &secret).unwrap();
    let body = order("evt_2");
    let headers = sign(Scheme::Standard, &key, "evt_2", s.clock_secs(), &body);
    assert_eq!(s.post("shop", &headers, &body).await.status, 401);
    advance_until(&s, &sink, 2, 30).await;
    advance(&s, 10).await;
    resolved_because(
        &sent(&sink, &sink_secret),
        "secret.previous_expiring",
        "secret.previous_expiring.resolved",
        "key removed",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_alert_resolves_once_when_its_rule_is_disabled() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let s = server();
    let admin = s.admin().await;
    let spike = |enabled| rule("verification.failure_spike", enabled, 2, 600.0);
    let (_, sink_secret) = shop(&admin, &sink, vec![spike(true)]).await;
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for i in 0..3 {
        assert_eq!(post_with(&s, "shop", wrong, &format!("evt_{i}")).await, 401);
    }
    advance_until(&s, &sink, 1, 10).await;
    admin
        .set_alert_settings("shop", settings(&sink, vec![spike(false)]))
        .await
        .unwrap();
    advance_until(&s, &sink, 2, 30).await;
    advance(&s, 10).await;
    resolved_because(
        &sent(&sink, &sink_secret),
        "verification.failure_spike",
        "verification.failure_spike.resolved",
        "rule disabled",
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tenant_deleted_and_created_again_between_two_evaluations_starts_without_alerts() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let s = server();
    let admin = s.admin().await;
    let spike = rule("verification.failure_spike", true, 1, 10.0);
    let (_, first_secret) = shop(&admin, &sink, vec![spike.clone()]).await;
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    assert_eq!(post_with(&s, "shop", wrong, "evt_old").await, 401);
    advance_until(&s, &sink, 1, 10).await;
    let opened = sent(&sink, &first_secret);
    assert_eq!(opened.len(), 1, "{opened:?}");
    assert_eq!(opened[0].0, "verification.failure_spike");

    // Gone and back under the same id with no evaluation in between: the
    // old tenant's open alert is not the new one's.
    admin.delete_tenant("shop").await.unwrap();
    let again = Receiver::start(Reply::Status(200)).await;
    let (secret, again_secret) = shop(&admin, &again, vec![spike]).await;
    assert!(post_with(&s, "shop", &secret, "evt_new").await < 300);
    advance(&s, 30).await;
    assert_eq!(sent(&again, &again_secret), Vec::new());
    assert_eq!(
        sink.received().len(),
        1,
        "the deleted tenant's sink got nothing more"
    );
    let alerts = admin.list_all_alerts("shop", &[]).await.unwrap();
    assert!(alerts.is_empty(), "{alerts:?}");
    let open = r#"hookd_alerts_open{tenant="shop",type="verification.failure_spike"}"#;
    assert_eq!(metric(&s, open).await.as_deref(), Some("0"));

    assert_eq!(post_with(&s, "shop", wrong, "evt_bad").await, 401);
    advance_until(&s, &again, 1, 10).await;
    let events = sent(&again, &again_secret);
    assert_eq!(events.len(), 1, "{events:?}");
    assert_eq!(events[0].0, "verification.failure_spike");
    assert_eq!(the_alert(&admin).await.state(), AlertState::Open);
    assert_eq!(metric(&s, open).await.as_deref(), Some("1"));
}
