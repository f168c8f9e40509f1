//! Refused requests are recorded where the refusal is answered: content
//! refused after a valid signature with the first 4 KiB of its body, bad or
//! missing signatures without any; listed by `ListRejections` (scoped like
//! every tenant call) and `hookctl rejections list`.

use hookd_sdk::{
    client::{
        proto::{ListRejectionsRequest, RejectionKind},
        Code,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::{signed, Answer, TestServer, ACME, ADMIN_TOKEN},
    process::hookctl_bin,
};

/// A body over 4 KiB whose signature is valid but that is not JSON.
fn broken_body() -> Vec<u8> {
    let mut body = b"{\"type\": \"order.paid\", \"note\": \"".to_vec();
    body.extend(std::iter::repeat_n(b'x', 5000));
    body
}

/// Sends the broken body signed, and a request with a bad signature;
/// returns both answers.
pub async fn refuse_two(s: &TestServer, tenant: &str) -> (Answer, Answer) {
    let body = broken_body();
    let content = s
        .post(tenant, &signed("evt_broken", s.clock_secs(), &body), &body)
        .await;
    assert_eq!(content.status, StatusCode::BAD_REQUEST);
    assert_eq!(content.code(), "INVALID_JSON");
    // Signed for another body.
    let forged = signed("evt_forged", s.clock_secs(), b"{}");
    let signature = s.post(tenant, &forged, b"{\"secret\":\"payload\"}").await;
    assert_eq!(signature.code(), "BAD_SIGNATURE", "{:?}", signature.body);
    (content, signature)
}

fn request_id(a: &Answer) -> String {
    a.body["request_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn refused_content_and_bad_signatures_are_listed_for_their_tenant_only() {
    let s = TestServer::start(ACME);
    let (content, signature) = refuse_two(&s, "acme").await;
    let admin = s.admin().await;
    let all = admin
        .list_rejections(ListRejectionsRequest {
            tenant_id: "acme".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(all.rejections.len(), 2);
    let found = admin
        .list_rejections(ListRejectionsRequest {
            tenant_id: "acme".into(),
            request_id: request_id(&content),
            ..Default::default()
        })
        .await
        .unwrap();
    let r = &found.rejections[0];
    assert_eq!(
        (found.rejections.len(), r.code.as_str()),
        (1, "INVALID_JSON")
    );
    assert_eq!(r.kind(), RejectionKind::Content);
    assert_eq!(r.body_bytes, broken_body().len() as u64);
    assert_eq!(r.body, broken_body()[..4096]);
    assert_eq!(r.rejected_at_unix_ms, s.clock_secs() * 1000);

    let bad = admin
        .list_rejections(ListRejectionsRequest {
            tenant_id: "acme".into(),
            kind: RejectionKind::Signature.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(bad.rejections.len(), 1);
    assert_eq!(bad.rejections[0].request_id, request_id(&signature));
    assert!(
        bad.rejections[0].body.is_empty(),
        "no body without a valid signature"
    );

    let token = admin.create_token("acme", "t").await.unwrap().token;
    let scoped = s.client(&token).await;
    let foreign = scoped
        .list_rejections(ListRejectionsRequest {
            tenant_id: "beta".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(foreign.code(), Code::PermissionDenied);
    let missing = admin
        .list_rejections(ListRejectionsRequest {
            tenant_id: "nope".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(missing.code(), Code::NotFound);
}

#[tokio::test]
async fn hookctl_finds_a_refused_payload_by_request_id() {
    let s = TestServer::start(ACME);
    let (content, _) = refuse_two(&s, "acme").await;
    let out = tokio::process::Command::new(hookctl_bin())
        .args(["--json", "rejections", "list", "acme", "--request-id"])
        .arg(request_id(&content))
        .env(
            "HOOKCTL_ENDPOINT",
            format!("http://{}", s.server().grpc_addr()),
        )
        .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
        .env_remove("HOOKCTL_TOKEN")
        .output()
        .await
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let found: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(found["code"], "INVALID_JSON");
    assert_eq!(found["kind"], "content");
    assert!(found["body"]
        .as_str()
        .unwrap()
        .starts_with("{\"type\": \"order.paid\""));
}

#[tokio::test]
async fn a_deleted_tenant_takes_its_rejections_along() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let create = || {
        admin.create_tenant(hookd_sdk::client::proto::CreateTenantRequest {
            tenant_id: "gone".into(),
            ..Default::default()
        })
    };
    let created = create().await.unwrap();
    let key = Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap();
    let body = b"not json".to_vec();
    let headers = sign(Scheme::Standard, &key, "evt_gone", s.clock_secs(), &body);
    assert_eq!(s.post("gone", &headers, &body).await.code(), "INVALID_JSON");
    let list = || {
        admin.list_rejections(ListRejectionsRequest {
            tenant_id: "gone".into(),
            ..Default::default()
        })
    };
    assert_eq!(list().await.unwrap().rejections.len(), 1);
    admin.delete_tenant("gone").await.unwrap();
    create().await.unwrap();
    assert!(
        list().await.unwrap().rejections.is_empty(),
        "a new tenant under the old id starts without the old one's rejections"
    );
}

/// Every rejection of `tenant` that `ListRejections` returns, page by page.
async fn all_rejections(s: &TestServer, tenant: &str) -> usize {
    let admin = s.admin().await;
    let (mut total, mut token) = (0, String::new());
    loop {
        let page = admin
            .list_rejections(ListRejectionsRequest {
                tenant_id: tenant.into(),
                page_size: 1000,
                page_token: token,
                ..Default::default()
            })
            .await
            .unwrap();
        total += page.rejections.len();
        if page.next_page_token.is_empty() {
            return total;
        }
        token = page.next_page_token;
    }
}

#[tokio::test]
async fn an_unsigned_flood_is_recorded_up_to_its_budget_and_counted_beyond() {
    let s = TestServer::start(&format!("{ACME}{}", ACME.replace("\"acme\"", "\"beta\"")));
    let forged = signed("evt_forged", s.clock_secs(), b"{}");
    for _ in 0..300 {
        let answer = s.post("acme", &forged, b"{\"not\":\"signed\"}").await;
        assert_eq!(answer.code(), "BAD_SIGNATURE", "{:?}", answer.body);
    }
    let recorded = all_rejections(&s, "acme").await;
    assert_eq!(recorded, 100, "the budget's burst is recorded, no more");
    let metrics = s.get("/metrics").await.text().await.unwrap();
    assert!(
        metrics
            .contains(r#"hookd_rejections_unrecorded_total{tenant="acme",kind="signature"} 200"#),
        "the rest is counted: {}",
        metrics
            .lines()
            .filter(|l| l.contains("unrecorded"))
            .collect::<Vec<_>>()
            .join("\n")
    );

    // Another tenant's budget is its own, and content refusals have theirs.
    refuse_two(&s, "beta").await;
    assert_eq!(all_rejections(&s, "beta").await, 2);
    let body = broken_body();
    let content = s
        .post("acme", &signed("evt_b", s.clock_secs(), &body), &body)
        .await;
    assert_eq!(content.code(), "INVALID_JSON");
    assert_eq!(all_rejections(&s, "acme").await, 101);

    // The budget refills with time.
    s.clock.advance_ms(10_000);
    let answer = s.post("acme", &forged, b"{\"not\":\"signed\"}").await;
    assert_eq!(answer.code(), "BAD_SIGNATURE");
    assert_eq!(all_rejections(&s, "acme").await, 102);
}
