//! Retry now after an outage, over real HTTP and gRPC on both engines and
//! from the dashboard: a backlog waiting an hour for its retry is attempted
//! at once when asked, its attempt counts unchanged, without the clock
//! moving.

use std::time::Duration;

use hookd_sdk::client::proto::{DeliveryStatus, RetryNowRequest};
use hookd_server::testing::test_database;
use reqwest::{Method, StatusCode};
use serde_json::{json, Value};

use crate::{
    dashboard::http::Http,
    harness::{now_secs, order, signed, tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

/// Deliveries the outage leaves waiting.
const BACKLOG: usize = 5;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_waiting_for_its_retry_is_attempted_now_on_sled() {
    backlog_after_an_outage("").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_waiting_for_its_retry_is_attempted_now_on_postgres() {
    let Some(database) = test_database("hookd_it_retry_now") else {
        return;
    };
    let storage = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n",
        database.url
    );
    backlog_after_an_outage(&storage).await;
}

/// `storage` is prepended to the config.
async fn backlog_after_an_outage(storage: &str) {
    let dest = Receiver::start(Reply::Status(503)).await;
    let config = format!(
        "{storage}{}",
        tenant("acme", &dest.url, "", "", "schedule_secs = [3600.0]")
    );
    let s = TestServer::start_at(&config, now_secs());
    let mut ids = Vec::new();
    for n in 0..BACKLOG {
        let event = format!("evt_{n}");
        let body = order(&event);
        let answer = s
            .post("acme", &signed(&event, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
        ids.push(answer.body["delivery_id"].as_str().unwrap().to_owned());
    }
    dest.wait_for(BACKLOG, Duration::from_secs(10)).await;
    let admin = s.admin().await;
    let waiting = RetryNowRequest {
        tenant_id: "acme".into(),
        all_waiting: true,
        ..Default::default()
    };
    // The first attempts are recorded just after the destination got them.
    let counted = loop {
        let dry = admin
            .retry_now(RetryNowRequest {
                dry_run: true,
                ..waiting.clone()
            })
            .await
            .unwrap();
        if dry.matched as usize == BACKLOG {
            break dry;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!counted.more);
    assert_eq!(dest.received().len(), BACKLOG, "a dry run sends nothing");
    // By filter: the type each delivery keeps, and when it was received.
    let filtered = |event_type: &str, since_unix_ms: i64| {
        admin.retry_now(RetryNowRequest {
            dry_run: true,
            event_type: event_type.into(),
            since_unix_ms,
            ..waiting.clone()
        })
    };
    assert_eq!(
        filtered("order.paid", 0).await.unwrap().matched as usize,
        BACKLOG
    );
    assert_eq!(filtered("order.refunded", 0).await.unwrap().matched, 0);
    let later = (s.clock_secs() + 1) * 1000;
    assert_eq!(filtered("", later).await.unwrap().matched, 0);
    let by_ids_with_a_filter = admin
        .retry_now(RetryNowRequest {
            tenant_id: "acme".into(),
            delivery_ids: vec![ids[0].clone()],
            event_type: "order.paid".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(by_ids_with_a_filter.code(), tonic::Code::InvalidArgument);

    dest.set_default(Reply::Status(200));
    let done = admin.retry_now(waiting.clone()).await.unwrap();
    assert_eq!(done.matched as usize, BACKLOG);
    let mut made: Vec<_> = done.delivery_ids.clone();
    made.sort();
    let mut want = ids.clone();
    want.sort();
    assert_eq!(made, want);
    let got = dest.wait_for(2 * BACKLOG, Duration::from_secs(10)).await;
    assert_eq!(
        got.len(),
        2 * BACKLOG,
        "each attempted again, the clock still"
    );
    for id in &ids {
        let delivery = loop {
            let d = admin.get_delivery("acme", id.clone()).await.unwrap();
            if d.status == DeliveryStatus::Delivered as i32 {
                break d;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        };
        assert_eq!(
            delivery.attempt_count, 2,
            "no attempt counted for the retry now"
        );
    }
    let again = admin.retry_now(waiting).await.unwrap();
    assert_eq!(again.matched, 0, "nothing waits any more");

    let unknown = admin
        .retry_now(RetryNowRequest {
            tenant_id: "acme".into(),
            delivery_ids: vec!["dlv_01JZZZZZZZZZZZZZZZZZZZZZZZ".into()],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), tonic::Code::NotFound, "{unknown}");
    let both = admin
        .retry_now(RetryNowRequest {
            tenant_id: "acme".into(),
            delivery_ids: vec![ids[0].clone()],
            all_waiting: true,
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(both.code(), tonic::Code::InvalidArgument, "{both}");
    rest_face(&s, &ids[0]).await;
}

/// Over REST: by id, a delivered delivery is skipped and not counted.
async fn rest_face(s: &TestServer, delivery_id: &str) {
    let url = format!(
        "http://{}/v1/tenants/acme/deliveries/{delivery_id}:retryNow",
        s.server().grpc_addr()
    );
    let response = reqwest::Client::new()
        .request(Method::POST, url)
        .bearer_auth(ADMIN_TOKEN)
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    let body: Value = response.json().await.unwrap();
    let matched = &body["matched"];
    assert!(
        matched.is_null() || *matched == json!("0") || *matched == json!(0),
        "{body}"
    );
}

/// On the dashboard's routes page: "Retry waiting now" on a route attempts
/// its waiting deliveries at once and says how many.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_routes_page_retries_a_routes_waiting_deliveries_now() {
    let dest = Receiver::start(Reply::Status(503)).await;
    let config = tenant("acme", &dest.url, "", "", "schedule_secs = [3600.0]");
    let s = TestServer::start_at(&config, now_secs());
    for n in 0..2 {
        let event = format!("evt_page_{n}");
        let body = order(&event);
        let answer = s
            .post("acme", &signed(&event, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    }
    dest.wait_for(2, Duration::from_secs(10)).await;
    let admin = s.admin().await;
    let dry = RetryNowRequest {
        tenant_id: "acme".into(),
        all_waiting: true,
        dry_run: true,
        ..Default::default()
    };
    while admin.retry_now(dry.clone()).await.unwrap().matched < 2 {
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    dest.set_default(Reply::Status(200));
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let answer = http
        .submit(
            &session,
            "/t/acme/routes",
            "/t/acme/routes/default/retry-now",
            &[],
        )
        .await;
    assert_eq!(answer.status(), StatusCode::OK);
    let text = answer.text().await.unwrap();
    assert!(
        text.contains("2 deliveries waiting for their retry are being attempted now"),
        "{text}"
    );
    let got = dest.wait_for(4, Duration::from_secs(10)).await;
    assert_eq!(got.len(), 4);
}
