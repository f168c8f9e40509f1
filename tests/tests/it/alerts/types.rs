//! One black-box test per alert type the other tests leave out: each makes
//! its condition really happen over HTTP (a rotation's overlap moved past
//! by the clock, a destination that hangs, a transform that throws, a
//! refused handshake, deliveries over the rate limit, bodies a contract
//! refuses), sees exactly one opening at the sink with its type, subject
//! and summary, clears the condition and sees exactly one resolution.

use std::time::Duration;

use hookd_sdk::client::proto::{AlertSettings, AlertSink, CreateTenantRequest};
use serde_json::Value;

use super::{advance, advance_until, post_with, verified, SINK_SECRET};
use crate::{
    harness::{now_secs, order, signed, tenant, TestServer},
    receiver::{Receiver, Reply},
};

/// The tenant's sink at `sink` and one rule of `kind` over the defaults.
fn sink_and_rule(sink: &str, kind: &str, threshold: u64, window_secs: f64) -> String {
    format!(
        "[tenants.alerts.sink]\nurl = \"{sink}\"\nsecret = \"{SINK_SECRET}\"\n[[tenants.alerts.rules]]\ntype = \"{kind}\"\nthreshold = {threshold}\nwindow_secs = {window_secs:.1}\n"
    )
}

/// The events of `kind` (and its resolution) the sink got, each verified.
fn of_kind(sink: &Receiver, secret: &str, kind: &str) -> Vec<Value> {
    let resolved = format!("{kind}.resolved");
    verified(sink, secret)
        .into_iter()
        .map(|(_, e)| e)
        .filter(|e| e["type"] == kind || e["type"] == resolved.as_str())
        .collect()
}

/// Exactly one opening of `kind` on `subject`, then exactly one resolution
/// of the same alert; the opening returned.
fn one_opening_then_one_resolution(events: &[Value], kind: &str, subject: &str) -> Value {
    let got: Vec<(&str, &str)> = events
        .iter()
        .map(|e| (e["type"].as_str().unwrap(), e["state"].as_str().unwrap()))
        .collect();
    let resolved = format!("{kind}.resolved");
    assert_eq!(
        got,
        [(kind, "open"), (resolved.as_str(), "resolved")],
        "{events:?}"
    );
    let (open, done) = (&events[0], &events[1]);
    assert_eq!(open["subject"], subject, "{open}");
    assert_eq!(done["alert_id"], open["alert_id"], "{done}");
    assert_eq!(done["summary"], open["summary"], "{done}");
    assert!(done["resolved_at_unix_ms"].is_i64(), "{done}");
    open.clone()
}

/// Moves the clock one second at a time until the sink got `n` events of
/// `kind` or `max_secs` passed. (The tests' thresholds equal what they
/// send, so an evaluation racing the requests cannot open with fewer.)
async fn until_kind(s: &TestServer, sink: &Receiver, kind: &str, n: usize, max_secs: i64) {
    for _ in 0..max_secs {
        if of_kind(sink, SINK_SECRET, kind).len() >= n {
            break;
        }
        advance(s, 1).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_previous_secret_whose_overlap_ends_soon_opens_and_resolves_once_it_ended() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_at(
        "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n",
        now_secs(),
    );
    let admin = s.admin().await;
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let set = admin
        .set_alert_settings(
            "shop",
            AlertSettings {
                sink: Some(AlertSink {
                    url: sink.url.clone(),
                    ..Default::default()
                }),
                rules: Vec::new(),
            },
        )
        .await
        .unwrap();
    let secret = set.generated_secret;
    assert!(post_with(&s, "shop", &created.secret, "evt_before").await < 300);
    let next = "whsec_bmV3LXByb3ZpZGVyLXNlY3JldC1ub2JvZHktdG9sZC1ob29rZA==";
    admin.rotate_secret_to("shop", 120, next).await.unwrap();
    advance_until(&s, &sink, 1, 20).await;
    let opened = verified(&sink, &secret);
    assert_eq!(opened.len(), 1, "{opened:?}");
    let open = &opened[0].1;
    assert_eq!(open["type"], "secret.previous_expiring", "{open}");
    let kid = open["subject"].as_str().unwrap();
    assert!(!kid.is_empty(), "the subject is the previous key's id");
    let summary = open["summary"].as_str().unwrap();
    let prefix = format!("the previous secret {kid} stops being accepted in ");
    let left: u64 = summary
        .strip_prefix(&prefix)
        .and_then(|rest| rest.strip_suffix(" s; senders still using it will be refused"))
        .unwrap_or_else(|| panic!("{summary}"))
        .parse()
        .unwrap();
    assert!((100..=120).contains(&left), "{summary}");
    assert_eq!(open["threshold"], 86400);

    // The overlap ends: the old secret is refused, and the alert resolves.
    advance(&s, 125).await;
    assert_eq!(
        post_with(&s, "shop", &created.secret, "evt_after").await,
        401
    );
    advance_until(&s, &sink, 2, 20).await;
    advance(&s, 10).await;
    let events = of_kind(&sink, &secret, "secret.previous_expiring");
    one_opening_then_one_resolution(&events, "secret.previous_expiring", kid);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_that_hangs_ages_the_backlog_until_it_answers_again() {
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::Hang(Duration::from_secs(3))]);
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = sink_and_rule(&sink.url, "backlog.lag_exceeded", 20, 10.0);
    let top = "max_in_flight = 1";
    let s = TestServer::start_at(&tenant("acme", &dest.url, top, "", &tables), now_secs());
    for i in 0..3 {
        let id = format!("evt_{i}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        assert!(answer.status.is_success(), "{answer:?}");
    }
    dest.wait_for(1, Duration::from_secs(10)).await;
    until_kind(&s, &sink, "backlog.lag_exceeded", 1, 60).await;
    // The hang ends (in real time); the queue drains and the lag clears.
    dest.wait_for(3, Duration::from_secs(10)).await;
    until_kind(&s, &sink, "backlog.lag_exceeded", 2, 60).await;
    advance(&s, 20).await;
    let events = of_kind(&sink, SINK_SECRET, "backlog.lag_exceeded");
    let open = one_opening_then_one_resolution(&events, "backlog.lag_exceeded", "default");
    let summary = open["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("route default: the oldest pending delivery is ")
            && summary.ends_with(" s late (threshold 20 s)"),
        "{summary}"
    );
    assert!(open["count"].as_u64().unwrap() >= 20, "{open}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_transform_that_throws_opens_transform_failing_on_its_route_and_resolves_after_the_window(
) {
    let dest = Receiver::start(Reply::Status(200)).await;
    let audit = Receiver::start(Reply::Status(200)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        r#"{rule}
[[tenants.routes]]
name = "audit"
transform = '''
addHandler("transform", (request, context) => {{
  throw new Error("no audit today");
}});
'''
[tenants.routes.destination]
url = "{audit}"
secret = "{dest}"
"#,
        rule = sink_and_rule(&sink.url, "transform.failing", 2, 10.0),
        audit = audit.url,
        dest = crate::harness::DEST_SECRET,
    );
    let s = TestServer::start_at(&tenant("acme", &dest.url, "", "", &tables), now_secs());
    for i in 0..2 {
        let id = format!("evt_{i}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        assert!(answer.status.is_success(), "{answer:?}");
    }
    dest.wait_for(2, Duration::from_secs(10)).await;
    until_kind(&s, &sink, "transform.failing", 1, 20).await;
    until_kind(&s, &sink, "transform.failing", 2, 30).await;
    advance(&s, 20).await;
    let events = of_kind(&sink, SINK_SECRET, "transform.failing");
    let open = one_opening_then_one_resolution(&events, "transform.failing", "audit");
    assert_eq!(
        open["summary"],
        "route audit: the transform failed 2 times in 10 s (threshold 2)"
    );
    assert!(audit.received().is_empty(), "nothing was sent to audit");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn refused_meta_handshakes_open_handshake_failed_and_resolve_after_the_window() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let toml = format!(
        "[[tenants]]\nid = \"meta\"\nscheme = \"meta\"\nverify_token = \"meatyhamhock\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"handshake-shared-secret\"\n{}",
        sink_and_rule(&sink.url, "handshake.failed", 3, 10.0)
    );
    let s = TestServer::start_at(&toml, now_secs());
    let path = "/hooks/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=guess";
    for _ in 0..3 {
        let answer = s.request("GET", path, &[], b"").await;
        assert_eq!(answer.status, 403, "{answer:?}");
    }
    until_kind(&s, &sink, "handshake.failed", 1, 20).await;
    until_kind(&s, &sink, "handshake.failed", 2, 30).await;
    advance(&s, 20).await;
    let events = of_kind(&sink, SINK_SECRET, "handshake.failed");
    let open = one_opening_then_one_resolution(&events, "handshake.failed", "");
    assert_eq!(
        open["summary"],
        "3 provider handshakes refused in 10 s (threshold 3)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_over_the_rate_limit_open_ingest_rate_limited_and_resolve_after_the_window() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = sink_and_rule(&sink.url, "ingest.rate_limited", 4, 10.0);
    let top = "rate_limit = { per_sec = 0.1, burst = 1 }";
    let s = TestServer::start_at(&tenant("acme", &dest.url, top, "", &tables), now_secs());
    let mut refused = 0;
    for i in 0..5 {
        let id = format!("evt_{i}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        if answer.status == 429 {
            assert_eq!(answer.code(), "RATE_LIMITED");
            refused += 1;
        }
    }
    assert_eq!(refused, 4, "one token, five deliveries");
    until_kind(&s, &sink, "ingest.rate_limited", 1, 20).await;
    until_kind(&s, &sink, "ingest.rate_limited", 2, 30).await;
    advance(&s, 20).await;
    let events = of_kind(&sink, SINK_SECRET, "ingest.rate_limited");
    let open = one_opening_then_one_resolution(&events, "ingest.rate_limited", "");
    assert_eq!(
        open["summary"],
        "4 deliveries refused by the tenant's rate limit in 10 s (threshold 4)"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_a_contract_refuses_open_contract_rejection_spike_and_resolve_after_the_window() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let sink = Receiver::start(Reply::Status(200)).await;
    let contract = r#"
[[tenants.contracts]]
type = "order.paid"
schema = '''{"type": "object", "required": ["data"], "properties": {"data": {"type": "object", "required": ["order_id"]}}}'''
example = '''{"event_id": "evt_1", "type": "order.paid", "data": {"order_id": "o_1"}}'''
"#;
    let tables = format!(
        "{}{contract}",
        sink_and_rule(&sink.url, "contract.rejection_spike", 3, 10.0)
    );
    let s = TestServer::start_at(&tenant("acme", &dest.url, "", "", &tables), now_secs());
    for i in 0..3 {
        let id = format!("evt_{i}");
        let body = order(&id);
        let answer = s
            .post("acme", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.code(), "CONTRACT_VIOLATION", "{answer:?}");
    }
    until_kind(&s, &sink, "contract.rejection_spike", 1, 20).await;
    until_kind(&s, &sink, "contract.rejection_spike", 2, 30).await;
    advance(&s, 20).await;
    let events = of_kind(&sink, SINK_SECRET, "contract.rejection_spike");
    let open = one_opening_then_one_resolution(&events, "contract.rejection_spike", "");
    assert_eq!(
        open["summary"],
        "3 deliveries refused by the tenant's contracts in 10 s (threshold 3)"
    );
}
