//! gRPC message sizes over the real control plane: Pull's response is
//! bounded by bytes as well as by count, a delivery larger than the budget
//! still goes out alone, and an oversized request is refused.

use hookd_sdk::{
    client::{
        proto::{tenant_service_client::TenantServiceClient, CreateTenantRequest},
        Code, HookdClient, MAX_REQUEST_BYTES, PULL_RESPONSE_BUDGET_BYTES,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;
use tonic::{transport::Endpoint, Request};

use crate::harness::{TestServer, ADMIN_TOKEN};

const MIB: usize = 1024 * 1024;

/// Creates a pull-mode tenant accepting bodies up to 8 MiB; returns its key.
async fn pull_tenant(admin: &HookdClient, id: &str) -> Secret {
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            max_body_bytes: 8 * MIB as u64,
            ..Default::default()
        })
        .await
        .unwrap();
    Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap()
}

/// Sends a JSON body of about `size` bytes, signed at the server's clock.
async fn send_sized(s: &TestServer, tenant: &str, key: &Secret, event_id: &str, size: usize) {
    let body = format!(
        r#"{{"event_id":"{event_id}","pad":"{}"}}"#,
        "x".repeat(size)
    )
    .into_bytes();
    let headers = sign(Scheme::Standard, key, event_id, s.clock_secs(), &body);
    let answer = s.post(tenant, &headers, &body).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
}

#[tokio::test]
async fn pull_stops_at_the_byte_budget_and_sends_a_larger_delivery_alone() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let key = pull_tenant(&admin, "bulky").await;
    let part = PULL_RESPONSE_BUDGET_BYTES * 3 / 8;
    for id in ["b1", "b2", "b3"] {
        send_sized(&s, "bulky", &key, id, part).await;
    }

    let first = admin.pull("bulky", 10, 30).await.unwrap();
    let ids: Vec<&str> = first.iter().map(|d| d.event_id.as_str()).collect();
    assert_eq!(ids, ["b1", "b2"], "a third would pass the byte budget");
    let bytes: usize = first.iter().map(|d| d.body.len()).sum();
    assert!(bytes <= PULL_RESPONSE_BUDGET_BYTES, "{bytes} bytes");
    let second = admin.pull("bulky", 10, 30).await.unwrap();
    assert_eq!(second.len(), 1, "the one left out was not hidden");
    assert_eq!(second[0].event_id, "b3");
    assert_eq!(second[0].attempt, 1);

    send_sized(&s, "bulky", &key, "huge", PULL_RESPONSE_BUDGET_BYTES + MIB).await;
    send_sized(&s, "bulky", &key, "after", 10).await;
    let alone = admin.pull("bulky", 10, 30).await.unwrap();
    assert_eq!(alone.len(), 1, "a delivery over the budget goes alone");
    assert_eq!(alone[0].event_id, "huge");
    assert!(alone[0].body.len() > PULL_RESPONSE_BUDGET_BYTES);
    let rest = admin.pull("bulky", 10, 30).await.unwrap();
    assert_eq!(rest.len(), 1);
    assert_eq!(rest[0].event_id, "after");
}

#[tokio::test]
async fn a_request_over_the_limit_is_refused_and_changes_nothing() {
    let s = TestServer::start("");
    let oversized = || CreateTenantRequest {
        tenant_id: "oversized".into(),
        required_fields: vec!["f".repeat(MAX_REQUEST_BYTES)],
        ..Default::default()
    };
    let admin = s.admin().await;
    let err = admin.create_tenant(oversized()).await.unwrap_err();
    assert_eq!(err.code(), Code::OutOfRange, "{err}");
    assert!(err.to_string().contains("too large"), "{err}");

    // A client without a send limit of its own: hookd refuses to read it.
    let channel = Endpoint::from_shared(format!("http://{}", s.server().grpc_addr()))
        .unwrap()
        .connect()
        .await
        .unwrap();
    let mut raw = TenantServiceClient::new(channel);
    let mut request = Request::new(oversized());
    request.metadata_mut().insert(
        "authorization",
        format!("Bearer {ADMIN_TOKEN}").parse().unwrap(),
    );
    let status = raw.create_tenant(request).await.unwrap_err();
    assert_eq!(status.code(), Code::OutOfRange, "{status:?}");
    assert!(status.message().contains("too large"), "{status:?}");

    let gone = admin.get_tenant("oversized").await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound);
}
