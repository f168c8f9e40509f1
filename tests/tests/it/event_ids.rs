//! Event ids are checked at ingest: visible ASCII, 1 to 255 bytes, whether
//! from a signed header or the body, so every accepted event can be
//! forwarded with its id in a header.

use hookd_sdk::signature::{sign, Scheme, Secret};
use reqwest::StatusCode;

use crate::harness::{signed, Answer, TestServer, ACME, NOW};

/// `acme` (ids in `webhook-id`) and a hookd-scheme tenant (ids in the body).
fn tenants() -> String {
    format!(
        "{ACME}\n[[tenants]]\nid = \"body\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-body-secret\"\n"
    )
}

async fn body_id(s: &TestServer, id: serde_json::Value) -> Answer {
    let key = Secret::from_provider(Scheme::Hookd, "k1", "hk-body-secret").unwrap();
    let body = serde_json::to_vec(&serde_json::json!({"event_id": id, "type": "t"})).unwrap();
    s.post("body", &sign(Scheme::Hookd, &key, "", NOW, &body), &body)
        .await
}

fn invalid(a: &Answer, field: &str, what: &str) {
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "INVALID_EVENT_ID"),
        "{what}: {:?}",
        a.body
    );
    assert_eq!(a.body["details"]["field"], field, "{what}: {:?}", a.body);
}

#[tokio::test]
async fn unforwardable_event_ids_are_refused_at_ingest() {
    let s = TestServer::start(&tenants());
    let longest = "x".repeat(255);
    for bad in [
        "caf\u{e9}".to_owned(),
        "a\u{1}b".to_owned(),
        "line\nbreak".to_owned(),
        "with space".to_owned(),
        "x".repeat(256),
        String::new(),
    ] {
        invalid(&body_id(&s, bad.clone().into()).await, "event_id", &bad);
    }
    for good in [longest.as_str(), "evt_01:a/b=c~!"] {
        let a = body_id(&s, good.into()).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{good}: {:?}", a.body);
    }
    let a = body_id(&s, 42.into()).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);

    let body = crate::harness::order("ignored");
    for bad in [
        "with space".to_owned(),
        "tab\there".to_owned(),
        "y".repeat(256),
    ] {
        let a = s.post("acme", &signed(&bad, NOW, &body), &body).await;
        invalid(&a, "webhook-id", &bad);
    }
    // Nothing was stored: the same ids, once valid, are new events.
    let a = s.post("acme", &signed("y", NOW, &body), &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
