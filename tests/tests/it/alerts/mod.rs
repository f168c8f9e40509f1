//! Operational alerts over real HTTP: conditions raised by deliveries and
//! forwards, notified to a sink (a fake receiver) in signed Standard
//! Webhooks form, each verified with the `standardwebhooks` crate; the
//! server's clock is moved by the test (it stands at the real time, which
//! that crate checks the signed timestamp against). The issues view and
//! the settings' checks are in `issues`.

mod issues;
mod operator;
mod stale;
mod types;

use std::time::Duration;

use hookd_sdk::{
    client::proto::{
        AlertRule, AlertSettings, AlertSink, AlertState as ProtoAlertState, CreateTenantRequest,
    },
    signature::{sign, Scheme, Secret},
};
use hookd_server::testing::test_database;
use serde_json::Value;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer},
    receiver::{Receiver, Reply},
};

/// The secret the tenant's sink checks its events with, in the config file.
const SINK_SECRET: &str = "whsec_c2luay1zZWNyZXQtb2YtdGhlLWFsZXJ0cy1zaW5rLTEyMzQ=";

/// Every request the sink got, each verified with the Standard Webhooks
/// library and parsed, with its signed timestamp.
fn verified(sink: &Receiver, secret: &str) -> Vec<(i64, Value)> {
    let webhook = standardwebhooks::Webhook::new(secret).unwrap();
    sink.received()
        .into_iter()
        .map(|got| {
            let mut headers = http::HeaderMap::new();
            for (name, value) in &got.headers {
                headers.append(
                    http::HeaderName::from_bytes(name.as_bytes()).unwrap(),
                    http::HeaderValue::from_str(value).unwrap(),
                );
            }
            webhook
                .verify(&got.body, &headers)
                .unwrap_or_else(|e| panic!("alert does not verify: {e:?}"));
            let at: i64 = got.header("webhook-timestamp").unwrap().parse().unwrap();
            (at, serde_json::from_slice(&got.body).unwrap())
        })
        .collect()
}

/// Moves the server's clock one second at a time, giving hookd a moment
/// after each, until `sink` got `n` requests or `max_secs` passed; the
/// seconds it took.
async fn advance_until(s: &TestServer, sink: &Receiver, n: usize, max_secs: i64) -> i64 {
    for secs in 1..=max_secs {
        s.clock.advance_ms(1000);
        tokio::time::sleep(Duration::from_millis(25)).await;
        if sink.received().len() >= n {
            return secs;
        }
    }
    max_secs
}

/// Moves the clock by `secs`, one second at a time.
async fn advance(s: &TestServer, secs: i64) {
    for _ in 0..secs {
        s.clock.advance_ms(1000);
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// The value of one series on `/metrics`.
async fn metric(s: &TestServer, series: &str) -> Option<String> {
    let text = s.get("/metrics").await.text().await.unwrap();
    text.lines().find_map(|line| {
        line.strip_prefix(series)?
            .strip_prefix(' ')
            .map(str::to_owned)
    })
}

fn types(events: &[(i64, Value)]) -> Vec<&str> {
    events
        .iter()
        .map(|(_, e)| e["type"].as_str().unwrap())
        .collect()
}

/// A delivery to `tenant` signed with `secret` (kid `kid`) now.
async fn post_with(s: &TestServer, tenant: &str, secret: &str, event_id: &str) -> u16 {
    let key = Secret::from_provider(Scheme::Standard, "any", secret).unwrap();
    let body = order(event_id);
    let mut headers = sign(Scheme::Standard, &key, event_id, s.clock_secs(), &body);
    headers.push(("content-type".into(), "application/json".into()));
    s.post(tenant, &headers, &body).await.status.as_u16()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_secret_rotated_at_the_provider_raises_one_spike_and_one_resolution_after_the_update() {
    rotated_behind_hookds_back("").await;
}

/// The same on PostgreSQL: the alert, its settings and its sink's queue
/// are stored there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_rotated_secret_raises_one_spike_and_one_resolution() {
    let Some(database) = test_database("hookd_it_alerts_rotation") else {
        return;
    };
    let storage = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n",
        database.url
    );
    rotated_behind_hookds_back(&storage).await;
}

/// A tenant created over the control plane with its own sink, whose
/// provider signs with a secret hookd does not know, until hookd is told;
/// `storage` is prepended to the config.
async fn rotated_behind_hookds_back(storage: &str) {
    let sink = Receiver::start(Reply::Status(200)).await;
    let config = format!("{storage}[forward]\nallow_networks = [\"127.0.0.1/32\"]\n");
    let s = TestServer::start_at(&config, now_secs());
    let admin = s.admin().await;
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    // Over the real gRPC control plane, as an operator would.
    let set = admin
        .set_alert_settings(
            "shop",
            AlertSettings {
                sink: Some(AlertSink {
                    url: sink.url.clone(),
                    ..Default::default()
                }),
                rules: vec![
                    AlertRule {
                        r#type: "verification.failure_spike".into(),
                        enabled: true,
                        threshold: 3,
                        window_secs: 30.0,
                        mode: String::new(),
                        overridden: false,
                    },
                    // The update below rotates with the default overlap (24 h,
                    // the rule's threshold): not what this test counts.
                    AlertRule {
                        r#type: "secret.previous_expiring".into(),
                        enabled: false,
                        ..Default::default()
                    },
                ],
            },
        )
        .await
        .unwrap();
    let sink_secret = set.generated_secret.clone();
    assert!(
        sink_secret.starts_with("whsec_"),
        "a new sink gets a secret"
    );
    assert!(set.settings.unwrap().sink.unwrap().has_secret);

    // The provider rotated its secret and signs with the new one.
    let rotated = "whsec_bmV3LXByb3ZpZGVyLXNlY3JldC1ub2JvZHktdG9sZC1ob29rZA==";
    assert!(post_with(&s, "shop", &created.secret, "evt_ok").await < 300);
    for i in 0..5 {
        assert_eq!(
            post_with(&s, "shop", rotated, &format!("evt_bad_{i}")).await,
            401
        );
    }
    let took = advance_until(&s, &sink, 1, 30).await;
    let events = verified(&sink, &sink_secret);
    assert_eq!(
        types(&events),
        ["verification.failure_spike"],
        "after {took} s"
    );
    let spike = &events[0].1;
    assert_eq!(spike["version"], 1);
    assert_eq!(spike["tenant"], "shop");
    assert_eq!(spike["count"], 5);
    assert!(spike["summary"]
        .as_str()
        .unwrap()
        .contains("rotated its secret"));
    let open = r#"hookd_alerts_open{tenant="shop",type="verification.failure_spike"}"#;
    assert_eq!(metric(&s, open).await.as_deref(), Some("1"));

    // hookd is told; deliveries verify again, and the spike clears once.
    admin.rotate_secret_to("shop", 0, rotated).await.unwrap();
    for i in 0..3 {
        assert!(post_with(&s, "shop", rotated, &format!("evt_new_{i}")).await < 300);
    }
    advance_until(&s, &sink, 2, 60).await;
    advance(&s, 60).await;
    let events = verified(&sink, &sink_secret);
    assert_eq!(
        types(&events),
        [
            "verification.failure_spike",
            "verification.failure_spike.resolved"
        ]
    );
    assert_eq!(events[1].1["alert_id"], events[0].1["alert_id"]);
    assert_eq!(metric(&s, open).await.as_deref(), Some("0"));
    let queued = r#"hookd_alert_notifications_total{tenant="shop",type="verification.failure_spike",outcome="queued"}"#;
    assert_eq!(metric(&s, queued).await.as_deref(), Some("2"));

    let alerts = admin.list_all_alerts("shop", &[]).await.unwrap();
    assert_eq!(alerts.len(), 1);
    assert_eq!(alerts[0].state(), ProtoAlertState::Resolved);
    assert_eq!(alerts[0].notifications, 2);

    // Another tenant's token sees none of it.
    admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "other".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let token = admin.create_token("other", "other's worker").await.unwrap();
    let other = s.client(&token.token).await;
    let denied = other.list_all_alerts("shop", &[]).await.unwrap_err();
    assert_eq!(denied.code(), tonic::Code::PermissionDenied, "{denied}");
}

/// A config-file tenant forwarding to `dest`, whose breaker opens on the
/// first failure, with its alert sink at `sink` and `rules`.
fn flapping_tenant(dest: &str, sink: &str, rules: &str) -> String {
    let tables = format!(
        r#"
[tenants.breaker]
failure_threshold = 1
cooldown_secs = 1.0
[tenants.alerts.sink]
url = "{sink}"
secret = "{SINK_SECRET}"
{rules}
"#
    );
    tenant(
        "acme",
        dest,
        "",
        "",
        &format!("schedule_secs = [1.0]\n{tables}"),
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flapping_destination_raises_at_most_two_notifications_per_window() {
    let dest = Receiver::start(Reply::Status(500)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let rules = "[[tenants.alerts.rules]]\ntype = \"route.circuit_opened\"\nwindow_secs = 30.0\n";
    let s = TestServer::start_at(&flapping_tenant(&dest.url, &sink.url, rules), now_secs());
    // The destination fails for 5 s, then answers for 5 s, for 90 s.
    for second in 0..90 {
        let failing = (second / 5) % 2 == 0;
        dest.set_default(Reply::Status(if failing { 500 } else { 200 }));
        let id = format!("evt_{second}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        assert!(answer.status.is_success(), "{answer:?}");
        advance(&s, 1).await;
    }
    let events = verified(&sink, SINK_SECRET);
    assert!(
        types(&events).contains(&"route.circuit_opened"),
        "the breaker opened: {:?}",
        types(&events)
    );
    let breaker: Vec<_> = events
        .iter()
        .filter(|(_, e)| e["type"].as_str().unwrap().starts_with("route.circuit_"))
        .collect();
    for (at, _) in &breaker {
        let within = breaker
            .iter()
            .filter(|(t, _)| t >= at && t - at < 30)
            .count();
        assert!(
            within <= 2,
            "{within} notifications in 30 s from {at}: {events:?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_alert_arrives_within_its_window_while_routes_are_saturated_and_a_breaker_open() {
    let hanging = Receiver::start(Reply::Hang(Duration::from_secs(60))).await;
    let failing = Receiver::start(Reply::Status(503)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let toml = format!(
        r#"
[[tenants]]
id = "acme"
scheme = "standard"
max_in_flight = 1
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
[tenants.destination]
url = "{hanging}"
secret = "{dest}"
[[tenants.routes]]
name = "audit"
[tenants.routes.destination]
url = "{failing}"
secret = "{dest}"
[tenants.routes.breaker]
failure_threshold = 1
cooldown_secs = 600.0
[tenants.alerts.sink]
url = "{sink}"
secret = "{SINK_SECRET}"
[[tenants.alerts.rules]]
type = "verification.failure_spike"
threshold = 3
window_secs = 30.0
"#,
        hanging = hanging.url,
        failing = failing.url,
        sink = sink.url,
        dest = crate::harness::DEST_SECRET,
    );
    let s = TestServer::start_at(&toml, now_secs());
    for i in 0..4 {
        let id = format!("evt_{i}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        assert!(answer.status.is_success(), "{answer:?}");
    }
    // The default route's one slot hangs; the audit route's breaker opens.
    hanging.wait_for(1, Duration::from_secs(10)).await;
    failing.wait_for(1, Duration::from_secs(10)).await;
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for i in 0..4 {
        assert_eq!(
            post_with(&s, "acme", wrong, &format!("evt_bad_{i}")).await,
            401
        );
    }
    let took = advance_until(&s, &sink, 2, 30).await;
    let events = verified(&sink, SINK_SECRET);
    let got = types(&events);
    assert!(
        got.contains(&"verification.failure_spike"),
        "after {took} s: {got:?}"
    );
    assert!(
        got.contains(&"route.circuit_opened"),
        "after {took} s: {got:?}"
    );
    assert!(took < 30, "within the window: {took} s");
    assert_eq!(
        hanging.received().len(),
        1,
        "the saturated route sent no more"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_slack_sink_gets_a_tenants_alert_which_resolves_once_after_a_restart() {
    let ops = Receiver::start(Reply::Status(200)).await;
    let dest = Receiver::start(Reply::Status(200)).await;
    let operator = format!(
        "[alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\nformat = \"slack\"\n",
        ops.url
    );
    let rules = "[[tenants.alerts.rules]]\ntype = \"verification.failure_spike\"\nthreshold = 3\nwindow_secs = 30.0\n";
    let acme = tenant("acme", &dest.url, "", "", "");
    let toml = format!("{operator}{acme}[tenants.alerts]\n{rules}");
    let mut s = TestServer::start_at(&toml, now_secs());
    let wrong = "whsec_d3Jvbmctc2VjcmV0LWZyb20tYS1yb3RhdGVkLXByb3ZpZGVy";
    for i in 0..3 {
        assert_eq!(
            post_with(&s, "acme", wrong, &format!("evt_bad_{i}")).await,
            401
        );
    }
    advance_until(&s, &ops, 1, 10).await;
    let opened = verified(&ops, SINK_SECRET);
    let text = opened[0].1["text"].as_str().unwrap().to_owned();
    assert!(
        text.starts_with("hookd: verification.failure_spike for tenant acme: 3 deliveries refused"),
        "{text}"
    );

    s.restart(&toml);
    advance_until(&s, &ops, 2, 60).await;
    advance(&s, 40).await;
    let events = verified(&ops, SINK_SECRET);
    let texts: Vec<&str> = events
        .iter()
        .map(|(_, e)| e["text"].as_str().unwrap())
        .collect();
    assert_eq!(texts.len(), 2, "{texts:?}");
    assert!(
        texts[1].starts_with("hookd: verification.failure_spike.resolved for tenant acme"),
        "{texts:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_lettered_delivery_raises_route_failing_and_the_dead_letter_depth() {
    let dest = Receiver::start(Reply::Status(500)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        "window_secs = 2.0\nschedule_secs = [1.0]\n[tenants.alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n[[tenants.alerts.rules]]\ntype = \"deadletters.depth_exceeded\"\nthreshold = 1\nwindow_secs = 30.0\n[[tenants.alerts.rules]]\ntype = \"route.failing\"\nthreshold = 1\nmode = \"last_attempt\"\n",
        sink.url
    );
    let s = TestServer::start_at(&tenant("acme", &dest.url, "", "", &tables), now_secs());
    let body = order("evt_doomed");
    let answer = s
        .post("acme", &signed("evt_doomed", s.clock_secs(), &body), &body)
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    advance_until(&s, &sink, 2, 40).await;
    let events = verified(&sink, SINK_SECRET);
    let got = types(&events);
    assert!(got.contains(&"route.failing"), "{got:?}");
    assert!(got.contains(&"deadletters.depth_exceeded"), "{got:?}");
    let failing = events
        .iter()
        .find(|(_, e)| e["type"] == "route.failing")
        .unwrap();
    assert_eq!(failing.1["subject"], "default");
    assert!(dest.received().len() >= 2, "it was retried before it died");
}

/// The outage of a quiet tenant's destination: connections refused, its
/// one delivery dead after three attempts. `route.failing` opens on the
/// third failure in a row, stays open through the silence that follows
/// (over three times its window), and resolves only once an attempt
/// delivers, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refused_destination_opens_route_failing_which_resolves_only_when_it_delivers_again() {
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = closed.local_addr().unwrap();
    drop(closed);
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        "window_secs = 12.0\nschedule_secs = [5.0]\n[tenants.alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n[[tenants.alerts.rules]]\ntype = \"route.failing\"\nwindow_secs = 60.0\n",
        sink.url
    );
    let url = format!("http://{addr}/");
    let s = TestServer::start_at(&tenant("acme", &url, "", "", &tables), now_secs());
    let body = order("evt_refused");
    let answer = s
        .post("acme", &signed("evt_refused", s.clock_secs(), &body), &body)
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    let refused_id = answer.body["delivery_id"].clone();
    let secs = advance_until(&s, &sink, 1, 60).await;
    assert!(secs <= 15, "opened on the third failure, {secs} s in");
    let events = verified(&sink, SINK_SECRET);
    assert_eq!(types(&events), ["route.failing"]);
    assert_eq!(
        events[0].1["delivery_ids"],
        serde_json::json!([refused_id]),
        "the alert names the delivery behind it"
    );
    let listed = s.admin().await.list_all_alerts("acme", &[]).await.unwrap();
    assert_eq!(listed.len(), 1, "{listed:?}");
    let refused_id = refused_id.as_str().unwrap();
    assert_eq!(listed[0].delivery_ids, [refused_id]);
    let http = crate::dashboard::http::Http::new(&s);
    let session = http.sign_in(crate::harness::ADMIN_TOKEN).await;
    let page = http
        .get(&session, "/t/acme/alerts")
        .await
        .text()
        .await
        .unwrap();
    assert!(
        page.contains(&format!("href=\"/t/acme/deliveries/{refused_id}\"")),
        "the Issues page links the delivery: {page}"
    );
    let summary = events[0].1["summary"].as_str().unwrap();
    assert!(summary.contains("the last 3 attempts failed"), "{summary}");
    advance(&s, 200).await;
    assert_eq!(
        sink.received().len(),
        1,
        "silence after the dead letter is no recovery"
    );
    let dest = Receiver::start_on(addr, Reply::Status(200)).await;
    let body = order("evt_back");
    let answer = s
        .post("acme", &signed("evt_back", s.clock_secs(), &body), &body)
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    advance_until(&s, &sink, 2, 30).await;
    assert_eq!(dest.received().len(), 1, "the new event delivered");
    let events = verified(&sink, SINK_SECRET);
    assert_eq!(types(&events), ["route.failing", "route.failing.resolved"]);
    let summary = events[1].1["summary"].as_str().unwrap();
    assert!(
        summary.contains("delivering again") && !summary.contains("is failing"),
        "{summary}"
    );
}

/// A delivery held by a pause waits by the operator's choice: however long
/// the route is paused, `route.failing` stays shut; after the resume its
/// age counts from then.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_routes_held_deliveries_do_not_open_route_failing_until_it_resumes() {
    let dest = Receiver::start(Reply::Status(503)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        "schedule_secs = [600.0]\n[tenants.alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n[[tenants.alerts.rules]]\ntype = \"route.failing\"\nthreshold = 10\nwindow_secs = 60.0\n",
        sink.url
    );
    let s = TestServer::start_at(&tenant("acme", &dest.url, "", "", &tables), now_secs());
    let admin = s.admin().await;
    admin.pause_route("acme", "default").await.unwrap();
    let body = order("evt_held");
    let answer = s
        .post("acme", &signed("evt_held", s.clock_secs(), &body), &body)
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    advance(&s, 120).await;
    assert!(
        sink.received().is_empty(),
        "held by an operator, not failing"
    );
    admin
        .resume_route("acme", "default", Some(0))
        .await
        .unwrap();
    dest.wait_for(1, Duration::from_secs(10)).await;
    let secs = advance_until(&s, &sink, 1, 120).await;
    assert!(
        (60..=80).contains(&secs),
        "opened {secs} s after the resume"
    );
    assert_eq!(types(&verified(&sink, SINK_SECRET)), ["route.failing"]);
}

/// A delivery that waits for its retry as long as the rule's window opens
/// `route.failing` although too few attempts failed in a row to open it:
/// the age of the oldest queued delivery counts, however quiet the route.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_waiting_longer_than_the_window_opens_route_failing() {
    let dest = Receiver::start(Reply::Status(503)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        "schedule_secs = [600.0]\n[tenants.alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n[[tenants.alerts.rules]]\ntype = \"route.failing\"\nthreshold = 10\nwindow_secs = 60.0\n",
        sink.url
    );
    let s = TestServer::start_at(&tenant("acme", &dest.url, "", "", &tables), now_secs());
    let body = order("evt_waiting");
    let answer = s
        .post("acme", &signed("evt_waiting", s.clock_secs(), &body), &body)
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    dest.wait_for(1, Duration::from_secs(10)).await;
    let secs = advance_until(&s, &sink, 1, 120).await;
    assert!((60..=80).contains(&secs), "opened {secs} s in");
    let events = verified(&sink, SINK_SECRET);
    assert_eq!(types(&events), ["route.failing"]);
    let summary = events[0].1["summary"].as_str().unwrap();
    assert!(
        summary.contains("its oldest delivery has waited") && summary.contains("over 60 s"),
        "{summary}"
    );
}
