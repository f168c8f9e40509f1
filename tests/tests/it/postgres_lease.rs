//! On PostgreSQL a forward attempt ends before the forwarding lease it was
//! claimed under: a destination that never answers holds the attempt until
//! shortly before the lease runs out, not for the destination's whole
//! timeout, so a replica that takes the tenant over once the lease ran out
//! does not send while this one still is (short of a stall of this process
//! itself; docs/postgres.md). Skipped without `HOOKD_TEST_POSTGRES_URL`
//! unless `HOOKD_REQUIRE_POSTGRES=1`.

use std::time::{Duration, Instant};

use hookd_server::testing::test_database;
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer},
    receiver::{Receiver, Reply},
};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_ends_before_its_forwarding_lease_not_at_the_destinations_timeout() {
    let Some(database) = test_database("hookd_it_send_deadline") else {
        return;
    };
    let dest = Receiver::start(Reply::Hang(Duration::from_secs(60))).await;
    let acme = tenant(
        "acme",
        &dest.url,
        "",
        "timeout_secs = 30",
        "schedule_secs = [600.0]",
    );
    let s = TestServer::start_live(&format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\nforward_lease_secs = 3\n{acme}",
        database.url
    ));
    let body = order("evt_slow");
    let answer = s
        .post("acme", &signed("evt_slow", now_secs(), &body), &body)
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    let delivery_id = answer.body["delivery_id"].as_str().unwrap().to_owned();
    dest.wait_for(1, Duration::from_secs(10)).await;
    let sent = Instant::now();

    let admin = s.admin().await;
    let deadline = sent + Duration::from_secs(10);
    let attempt = loop {
        let delivery = admin
            .get_delivery("acme", delivery_id.clone())
            .await
            .unwrap();
        if let Some(attempt) = delivery.attempts.first() {
            break attempt.clone();
        }
        assert!(
            Instant::now() < deadline,
            "the attempt was still in flight 10 s after it was sent (timeout 30 s, lease 3 s)"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(
        attempt.duration_ms < 3_000,
        "an attempt outlived its 3 s lease: {attempt:?}"
    );
    assert!(
        attempt.error.starts_with("timeout after ")
            && attempt
                .error
                .ends_with("before the forwarding lease it was sent under ends"),
        "{attempt:?}"
    );
    assert_eq!(attempt.status_code, 0);
    assert_eq!(dest.received().len(), 1, "sent once");
}
