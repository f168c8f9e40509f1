//! `GetEvent` over real HTTP and gRPC: the stored headers and the body
//! exactly as received (a gzip request's body decoded), the JSON text when
//! it is JSON, an unknown delivery `NOT_FOUND`, another tenant's token
//! refused, and the REST face.

use std::io::Write as _;

use flate2::{write::GzEncoder, Compression};
use reqwest::{Method, StatusCode};
use serde_json::Value;
use tonic::Code;

use crate::harness::{order, signed, TestServer, ACME, ADMIN_TOKEN, NOW};

/// `acme`, and `other` whose token must not read acme's events.
fn tenants() -> String {
    format!(
        "{ACME}\n[[tenants]]\nid = \"other\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-other\"\n"
    )
}

#[tokio::test]
async fn an_event_is_read_back_exactly_as_received() {
    let s = TestServer::start(&tenants());
    let body = order("evt_read_back");
    let mut gzipped = GzEncoder::new(Vec::new(), Compression::default());
    gzipped.write_all(&body).unwrap();
    let mut headers = signed("evt_read_back", NOW, &body);
    headers.push(("content-encoding".into(), "gzip".into()));
    let answer = s.post("acme", &headers, &gzipped.finish().unwrap()).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
    let delivery_id = answer.body["delivery_id"].as_str().unwrap().to_owned();

    let admin = s.admin().await;
    let event = admin.get_event("acme", delivery_id.clone()).await.unwrap();
    assert_eq!(event.body, body, "the body as decoded, byte for byte");
    assert_eq!(event.json.as_bytes(), body.as_slice());
    assert_eq!(event.event_id, "evt_read_back");
    assert_eq!(
        (event.tenant_id.as_str(), event.delivery_id.as_str()),
        ("acme", delivery_id.as_str())
    );
    assert!(event.request_id.starts_with("req_"), "{}", event.request_id);
    assert!(
        event
            .headers
            .iter()
            .any(|h| h.name == "content-type" && h.value == "application/json"),
        "{:?}",
        event.headers
    );

    let unknown = admin
        .get_event("acme", "dlv_01JZZZZZZZZZZZZZZZZZZZZZZZ")
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown}");
    let token = admin.create_token("other", "reader").await.unwrap();
    let other = s.client(&token.token).await;
    let denied = other
        .get_event("acme", delivery_id.clone())
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied}");

    let url = format!(
        "http://{}/v1/tenants/acme/deliveries/{delivery_id}/event",
        s.server().grpc_addr()
    );
    let response = reqwest::Client::new()
        .request(Method::GET, url)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let rest: Value = response.json().await.unwrap();
    assert_eq!(rest["eventId"], "evt_read_back");
    let json: Value = serde_json::from_str(rest["json"].as_str().unwrap()).unwrap();
    assert_eq!(json, serde_json::from_slice::<Value>(&body).unwrap());
}
