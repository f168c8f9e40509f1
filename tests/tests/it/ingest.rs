//! The ingest contract through real HTTP: accepted, duplicate, and every
//! rejection changing nothing.

use futures_util::future::join_all;
use reqwest::StatusCode;

use crate::harness::{order, signed, TestServer, ACME, NOW};

#[tokio::test]
async fn valid_delivery_is_accepted_then_answered_as_duplicate() {
    let s = TestServer::start(ACME);
    let body = order("evt_1");
    let first = s.post("acme", &signed("msg_1", NOW, &body), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{:?}", first.body);
    assert_eq!(first.body["event_id"], "msg_1");
    let delivery_id = first.body["delivery_id"].as_str().unwrap().to_owned();
    assert!(delivery_id.starts_with("dlv_"));
    assert_eq!(
        first.body["request_id"].as_str(),
        first.request_id_header.as_deref()
    );
    assert!(first.body.get("duplicate").is_none());

    let again = s.post("acme", &signed("msg_1", NOW, &body), &body).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body["duplicate"], true);
    assert_eq!(again.body["delivery_id"], delivery_id.as_str());
    assert_ne!(again.body["request_id"], first.body["request_id"]);
}

#[tokio::test]
async fn duplicate_is_found_in_the_durable_log_after_a_restart() {
    let mut s = TestServer::start(ACME);
    let body = order("evt_r");
    let first = s.post("acme", &signed("msg_r", NOW, &body), &body).await;
    assert_eq!(first.status, StatusCode::ACCEPTED);
    s.restart(ACME);
    // A fresh signature (new timestamp) misses the replay cache; the
    // idempotency log still knows the event.
    s.clock.set_secs(NOW + 10);
    let again = s
        .post("acme", &signed("msg_r", NOW + 10, &body), &body)
        .await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
    assert_eq!(again.body["duplicate"], true);
    assert_eq!(again.body["delivery_id"], first.body["delivery_id"]);
}

#[tokio::test]
async fn twenty_concurrent_copies_yield_exactly_one_acceptance() {
    let s = TestServer::start(ACME);
    let body = order("evt_c");
    let headers = signed("msg_c", NOW, &body);
    let answers = join_all((0..20).map(|_| s.post("acme", &headers, &body))).await;
    let accepted: Vec<_> = answers
        .iter()
        .filter(|a| a.status == StatusCode::ACCEPTED)
        .collect();
    assert_eq!(accepted.len(), 1, "{answers:?}");
    let delivery_id = &accepted[0].body["delivery_id"];
    for a in &answers {
        assert!(
            a.status == StatusCode::ACCEPTED || a.status == StatusCode::OK,
            "{a:?}"
        );
        assert_eq!(&a.body["delivery_id"], delivery_id);
    }
}

/// Sends a rejected variant, checks its code, then proves nothing was
/// stored: the genuine delivery is still accepted as new.
async fn rejected_then_genuine_is_new(
    s: &TestServer,
    id: &str,
    headers: Vec<(String, String)>,
    body: &[u8],
    status: StatusCode,
    code: &str,
) {
    let a = s.post("acme", &headers, body).await;
    assert_eq!((a.status, a.code()), (status, code), "{id}: {:?}", a.body);
    let keys: Vec<&str> = a
        .body
        .as_object()
        .unwrap()
        .keys()
        .map(|k| k.as_str())
        .collect();
    assert_eq!(keys, ["code", "details", "message", "request_id"], "{id}");
    assert_eq!(
        a.body["request_id"].as_str(),
        a.request_id_header.as_deref()
    );
    let genuine = order(id);
    let ok = s.post("acme", &signed(id, NOW, &genuine), &genuine).await;
    assert_eq!(
        ok.status,
        StatusCode::ACCEPTED,
        "{id}: genuine after rejection: {:?}",
        ok.body
    );
}

#[tokio::test]
async fn tampered_stale_future_and_unsigned_deliveries_are_rejected_and_store_nothing() {
    let s = TestServer::start(ACME);
    let unauthorized = StatusCode::UNAUTHORIZED;

    let body = order("m_reser");
    let reserialized =
        serde_json::to_vec_pretty(&serde_json::from_slice::<serde_json::Value>(&body).unwrap())
            .unwrap();
    rejected_then_genuine_is_new(
        &s,
        "m_reser",
        signed("m_reser", NOW, &body),
        &reserialized,
        unauthorized,
        "BAD_SIGNATURE",
    )
    .await;

    let body = order("m_nl");
    let mut with_newline = body.clone();
    with_newline.push(b'\n');
    rejected_then_genuine_is_new(
        &s,
        "m_nl",
        signed("m_nl", NOW, &body),
        &with_newline,
        unauthorized,
        "BAD_SIGNATURE",
    )
    .await;

    let body = order("m_wrong");
    let wrong = hookd_sdk::signature::Secret::from_bytes("k9", b"not-the-tenant-secret".to_vec());
    let headers = hookd_sdk::signature::sign(
        hookd_sdk::signature::Scheme::Standard,
        &wrong,
        "m_wrong",
        NOW,
        &body,
    );
    rejected_then_genuine_is_new(&s, "m_wrong", headers, &body, unauthorized, "BAD_SIGNATURE")
        .await;

    let body = order("m_stale");
    rejected_then_genuine_is_new(
        &s,
        "m_stale",
        signed("m_stale", NOW - 301, &body),
        &body,
        unauthorized,
        "STALE_TIMESTAMP",
    )
    .await;

    let body = order("m_future");
    rejected_then_genuine_is_new(
        &s,
        "m_future",
        signed("m_future", NOW + 301, &body),
        &body,
        unauthorized,
        "FUTURE_TIMESTAMP",
    )
    .await;

    let body = order("m_missing");
    let headers: Vec<_> = signed("m_missing", NOW, &body)
        .into_iter()
        .filter(|(k, _)| k != "webhook-signature")
        .collect();
    rejected_then_genuine_is_new(
        &s,
        "m_missing",
        headers,
        &body,
        unauthorized,
        "MISSING_SIGNATURE",
    )
    .await;

    let body = order("m_empty");
    let headers: Vec<_> = signed("m_empty", NOW, &body)
        .into_iter()
        .map(|(k, v)| {
            if k == "webhook-signature" {
                (k, "v1,".to_owned())
            } else {
                (k, v)
            }
        })
        .collect();
    rejected_then_genuine_is_new(
        &s,
        "m_empty",
        headers,
        &body,
        unauthorized,
        "INVALID_SIGNATURE_FORMAT",
    )
    .await;
}

#[tokio::test]
async fn stale_answer_explains_itself() {
    let s = TestServer::start(ACME);
    let body = order("m_old");
    let a = s
        .post("acme", &signed("m_old", NOW - 900, &body), &body)
        .await;
    assert_eq!(a.code(), "STALE_TIMESTAMP");
    assert!(
        a.body["message"].as_str().unwrap().contains("too old"),
        "{:?}",
        a.body
    );
    assert_eq!(a.body["details"]["tolerance_secs"], 300);
}

#[tokio::test]
async fn signed_broken_json_and_missing_fields_are_rejected_by_name() {
    let s = TestServer::start(ACME);
    let broken = br#"{"event_id":"x","type":"order.paid""#.to_vec();
    rejected_then_genuine_is_new(
        &s,
        "m_json",
        signed("m_json", NOW, &broken),
        &broken,
        StatusCode::BAD_REQUEST,
        "INVALID_JSON",
    )
    .await;

    let no_type = br#"{"event_id":"x","data":{}}"#.to_vec();
    let a = s
        .post("acme", &signed("m_type", NOW, &no_type), &no_type)
        .await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::BAD_REQUEST, "MISSING_REQUIRED_FIELD")
    );
    assert_eq!(a.body["details"]["field"], "type");

    let bad_type = br#"{"type":42}"#.to_vec();
    let a = s
        .post("acme", &signed("m_badtype", NOW, &bad_type), &bad_type)
        .await;
    assert_eq!(
        (a.code(), &a.body["details"]["field"]),
        ("INVALID_FIELD", &serde_json::json!("type"))
    );
}

#[tokio::test]
async fn unknown_extra_fields_are_accepted() {
    let s = TestServer::start(ACME);
    let body =
        br#"{"type":"order.paid","brand_new_field":{"nested":[1,2,3]},"another":null}"#.to_vec();
    let a = s.post("acme", &signed("m_extra", NOW, &body), &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}

#[tokio::test]
async fn unknown_tenant_and_unknown_routes_get_documented_errors() {
    let s = TestServer::start(ACME);
    let body = order("e");
    let a = s.post("nobody", &signed("m", NOW, &body), &body).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::NOT_FOUND, "TENANT_NOT_FOUND")
    );
    let res = s.get("/nowhere").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    assert!(res.headers().contains_key("x-request-id"));
    let res = s.get("/hooks/acme").await;
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(
        res.json::<serde_json::Value>().await.unwrap()["code"],
        "METHOD_NOT_ALLOWED"
    );
    let http = reqwest::Client::new();
    let put = http
        .put(format!("{}/hooks/acme", s.base))
        .body(body.clone());
    let res = put.send().await.unwrap();
    assert_eq!(res.status(), StatusCode::METHOD_NOT_ALLOWED);
    for path in [
        "/hooks",
        "/hooks/",
        "/hooks/acme/",
        "/hooks/acme/more",
        "/hooksacme",
    ] {
        let post = http.post(format!("{}{path}", s.base)).body(body.clone());
        let res = post.send().await.unwrap();
        assert_eq!(res.status(), StatusCode::NOT_FOUND, "{path}");
        let code = res.json::<serde_json::Value>().await.unwrap()["code"].clone();
        assert_eq!(code, "ROUTE_NOT_FOUND", "{path}");
    }
}

#[tokio::test]
async fn disabled_tenant_is_refused() {
    let s = TestServer::start(&ACME.replace(
        "scheme = \"standard\"",
        "scheme = \"standard\"\nenabled = false",
    ));
    let body = order("e");
    let a = s.post("acme", &signed("m", NOW, &body), &body).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::FORBIDDEN, "TENANT_DISABLED")
    );
}

#[tokio::test]
async fn rate_limited_tenant_gets_retry_after() {
    let s = TestServer::start(&ACME.replace(
        "max_body_bytes",
        "rate_limit = { per_sec = 1.0, burst = 2 }\nmax_body_bytes",
    ));
    for i in 0..2 {
        let body = order("e");
        let a = s
            .post("acme", &signed(&format!("rl_{i}"), NOW, &body), &body)
            .await;
        assert_eq!(a.status, StatusCode::ACCEPTED);
    }
    let body = order("e");
    let a = s.post("acme", &signed("rl_x", NOW, &body), &body).await;
    assert_eq!(
        (a.status, a.code()),
        (StatusCode::TOO_MANY_REQUESTS, "RATE_LIMITED")
    );
    assert_eq!(a.body["details"]["retry_after_secs"], 1);
    s.clock.advance_ms(1000);
    let a = s.post("acme", &signed("rl_x", NOW, &body), &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}

#[tokio::test]
async fn probes_answer() {
    let s = TestServer::start(ACME);
    assert_eq!(s.get("/healthz").await.status(), StatusCode::OK);
    let ready = s.get("/readyz").await;
    assert_eq!(ready.status(), StatusCode::OK);
    assert_eq!(
        ready.json::<serde_json::Value>().await.unwrap()["status"],
        "ready"
    );
}
