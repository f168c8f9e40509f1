//! Tenant gates start on a tenant's first delivery and are dropped once it has
//! been quiet for `limits.tenant_idle_secs`; nothing a dropped gate knew is
//! needed for a correct answer.

use reqwest::StatusCode;

use crate::harness::{order, signed, TestServer, ACME, NOW};

/// acme, and a second tenant nobody sends to.
fn two_tenants() -> String {
    format!("{ACME}{}", ACME.replace("id = \"acme\"", "id = \"quiet\""))
}

/// The default `limits.tenant_idle_secs`, in ms.
const IDLE_MS: i64 = 300_000;

#[tokio::test]
async fn gates_start_on_the_first_delivery_and_stop_when_idle() {
    let s = TestServer::start(&two_tenants());
    let registry = s.server().registry();
    assert_eq!(registry.running_gates(), 0, "no gate before any delivery");

    let body = order("evt_idle_1");
    let first = s
        .post("acme", &signed("evt_idle_1", NOW, &body), &body)
        .await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{:?}", first.body);
    assert_eq!(registry.running_gates(), 1, "only acme's gate runs");

    s.clock.advance_ms(IDLE_MS - 1);
    assert_eq!(registry.stop_idle_gates(IDLE_MS), 0, "not idle long enough");
    s.clock.advance_ms(1);
    assert_eq!(registry.stop_idle_gates(IDLE_MS), 1);
    assert_eq!(registry.running_gates(), 0);

    // The replay cache went with the gate: the durable log still knows the
    // event, and the resend is answered as the duplicate it is.
    let now = NOW + IDLE_MS / 1000;
    let resend = s
        .post("acme", &signed("evt_idle_1", now, &body), &body)
        .await;
    assert_eq!(resend.status, StatusCode::OK, "{:?}", resend.body);
    assert_eq!(resend.body["delivery_id"], first.body["delivery_id"]);
    assert_eq!(registry.running_gates(), 1, "started again by the resend");

    let body = order("evt_idle_2");
    let next = s
        .post("acme", &signed("evt_idle_2", now, &body), &body)
        .await;
    assert_eq!(next.status, StatusCode::ACCEPTED, "{:?}", next.body);
}

#[tokio::test]
async fn a_gate_is_kept_until_its_rate_limiter_has_filled_up_again() {
    // 10 tokens at one per 100 s: refilled 1,000 s after the last delivery.
    let toml = ACME.replace(
        "max_body_bytes",
        "rate_limit = { per_sec = 0.01, burst = 10 }\nmax_body_bytes",
    );
    let s = TestServer::start(&toml);
    let registry = s.server().registry();
    for n in 0..11 {
        let id = format!("evt_burst_{n}");
        let body = order(&id);
        let answer = s.post("acme", &signed(&id, NOW, &body), &body).await;
        let expected = if n < 10 {
            StatusCode::ACCEPTED
        } else {
            StatusCode::TOO_MANY_REQUESTS
        };
        assert_eq!(answer.status, expected, "delivery {n}: {:?}", answer.body);
    }
    s.clock.advance_ms(IDLE_MS);
    assert_eq!(
        registry.stop_idle_gates(IDLE_MS),
        0,
        "a limiter still short of tokens is kept"
    );
    let id = "evt_burst_late";
    let body = order(id);
    let now = NOW + IDLE_MS / 1000;
    let answer = s.post("acme", &signed(id, now, &body), &body).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "3 tokens came back");

    s.clock.advance_ms(1_000_000);
    assert_eq!(registry.stop_idle_gates(IDLE_MS), 1);
}
