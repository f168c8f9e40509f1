//! Replays of schemes that sign no timestamp (GitHub, Shopify): a captured
//! delivery resent with a fresh delivery-id header is the duplicate of the
//! first, from the replay cache and, after a restart, from the durable
//! idempotency log.

use hookd_sdk::signature::{sign, Scheme, Secret};
use reqwest::StatusCode;

use crate::harness::{Answer, TestServer};

/// A GitHub tenant and a Shopify tenant.
const TENANTS: &str = r#"
[[tenants]]
id = "gh"
scheme = "github"
[[tenants.secrets]]
kid = "k1"
secret = "github-webhook-secret"

[[tenants]]
id = "shop"
scheme = "shopify"
[[tenants.secrets]]
kid = "k1"
secret = "shopify-webhook-secret"
"#;

fn secret(scheme: Scheme) -> Secret {
    let raw = match scheme {
        Scheme::Github => "github-webhook-secret",
        _ => "shopify-webhook-secret",
    };
    Secret::from_provider(scheme, "k1", raw).unwrap()
}

/// The signed headers of `body` with `delivery` as the (unsigned) id header.
fn headers(scheme: Scheme, delivery: &str, body: &[u8]) -> Vec<(String, String)> {
    sign(scheme, &secret(scheme), delivery, 0, body)
}

fn accepted(a: &Answer) -> String {
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    a.body["delivery_id"].as_str().unwrap().to_owned()
}

fn duplicate_of(a: &Answer, first: &str, what: &str) {
    assert_eq!(a.status, StatusCode::OK, "{what}: {:?}", a.body);
    assert_eq!(a.body["duplicate"], true, "{what}: {:?}", a.body);
    assert_eq!(a.body["delivery_id"], first, "{what}: {:?}", a.body);
}

#[tokio::test]
async fn a_resend_with_a_fresh_id_header_is_a_duplicate_also_after_restart() {
    let mut s = TestServer::start(TENANTS);
    let cases = [
        ("gh", Scheme::Github, "X-GitHub-Delivery"),
        ("shop", Scheme::Shopify, "X-Shopify-Webhook-Id"),
    ];
    let body = br#"{"action":"opened","number":7}"#;
    let mut firsts = Vec::new();
    for (tenant, scheme, header) in cases {
        let first = accepted(&s.post(tenant, &headers(scheme, "d-1", body), body).await);
        let a = s.post(tenant, &headers(scheme, "d-2", body), body).await;
        duplicate_of(&a, &first, &format!("{tenant}: fresh {header}"));
        assert_eq!(a.body["event_id"], "d-1", "the first delivery's event id");
        firsts.push(first);
    }

    s.restart(TENANTS);
    for ((tenant, scheme, header), first) in cases.into_iter().zip(&firsts) {
        let a = s.post(tenant, &headers(scheme, "d-3", body), body).await;
        duplicate_of(
            &a,
            first,
            &format!("{tenant}: after restart, fresh {header}"),
        );
        let a = s.post(tenant, &headers(scheme, "d-1", body), body).await;
        duplicate_of(
            &a,
            first,
            &format!("{tenant}: after restart, same {header}"),
        );
        let other = br#"{"action":"closed","number":7}"#;
        accepted(&s.post(tenant, &headers(scheme, "d-4", other), other).await);
    }
}

/// Linear signs a timestamp inside its body but not its `Linear-Delivery`
/// header: a captured delivery resent inside the tolerance under a fresh
/// delivery id is the duplicate of the first, also after a restart.
#[tokio::test]
async fn a_linear_resend_under_a_fresh_delivery_id_is_a_duplicate() {
    use hookd_sdk::signature::{sign_message, Message};

    let tenants = "[[tenants]]\nid = \"lin\"\nscheme = \"linear\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"lin_wh_secret\"\n";
    let mut s = TestServer::start(tenants);
    let key = Secret::from_provider(Scheme::Linear, "k1", "lin_wh_secret").unwrap();
    let event = br#"{"action":"create","type":"Issue","data":{"id":"iss_1"}}"#;
    let message = Message {
        event_id: "del-1",
        timestamp: s.clock_secs(),
        body: event,
        method: "POST",
        url: None,
    };
    let signed = sign_message(Scheme::Linear, &key, &message);
    let with_delivery = |id: &str| {
        let mut headers = signed.headers.clone();
        headers.retain(|(name, _)| !name.eq_ignore_ascii_case("Linear-Delivery"));
        headers.push(("Linear-Delivery".to_owned(), id.to_owned()));
        headers
    };
    let first = accepted(&s.post("lin", &with_delivery("del-1"), &signed.body).await);
    let a = s.post("lin", &with_delivery("del-2"), &signed.body).await;
    duplicate_of(&a, &first, "fresh Linear-Delivery");
    s.restart(tenants);
    let a = s.post("lin", &with_delivery("del-3"), &signed.body).await;
    duplicate_of(&a, &first, "after restart, fresh Linear-Delivery");
}
