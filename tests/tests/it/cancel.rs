//! Cancelling pending deliveries over real HTTP and gRPC, on both engines:
//! by filter after a dry run, each becomes a dead letter with reason
//! `cancelled` and is never sent; a cancelled one redelivers.

use std::time::{Duration, Instant};

use hookd_sdk::client::{
    proto::{CancelDeliveriesRequest, DeliveryStatus, ListDeadLettersRequest, RedeliverRequest},
    Code, HookdClient,
};
use hookd_server::testing::test_database;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

/// Deliveries waiting when the operator cancels.
const BACKLOG: usize = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_deliveries_are_cancelled_by_filter_on_sled() {
    cancels("").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_deliveries_are_cancelled_by_filter_on_postgres() {
    let Some(database) = test_database("hookd_it_cancel") else {
        return;
    };
    let storage = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n",
        database.url
    );
    cancels(&storage).await;
}

/// Waits until `admin` lists `n` dead letters of acme whose reason says
/// cancelled.
async fn cancelled(admin: &HookdClient, n: usize) -> Vec<String> {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let letters = admin
            .list_dead_letters(ListDeadLettersRequest {
                tenant_id: "acme".into(),
                reason_contains: "cancelled".into(),
                ..Default::default()
            })
            .await
            .unwrap()
            .dead_letters;
        if letters.len() == n {
            return letters.into_iter().map(|l| l.delivery_id).collect();
        }
        assert!(Instant::now() < deadline, "{} cancelled", letters.len());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

async fn cancels(storage: &str) {
    let dest = Receiver::start(Reply::Status(503)).await;
    let config = format!(
        "{storage}{}",
        tenant("acme", &dest.url, "", "", "schedule_secs = [3600.0]")
    );
    let s = TestServer::start_at(&config, now_secs());
    for n in 0..BACKLOG {
        let event = format!("evt_{n}");
        let body = order(&event);
        let answer = s
            .post("acme", &signed(&event, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    }
    dest.wait_for(BACKLOG, Duration::from_secs(10)).await;
    let admin = s.admin().await;
    let all = CancelDeliveriesRequest {
        tenant_id: "acme".into(),
        all_pending: true,
        ..Default::default()
    };
    let other_type = admin
        .cancel_deliveries(CancelDeliveriesRequest {
            dry_run: true,
            event_type: "order.refunded".into(),
            ..all.clone()
        })
        .await
        .unwrap();
    assert_eq!(other_type.matched, 0);
    let dry = admin
        .cancel_deliveries(CancelDeliveriesRequest {
            dry_run: true,
            event_type: "order.paid".into(),
            ..all.clone()
        })
        .await
        .unwrap();
    assert_eq!(dry.matched as usize, BACKLOG, "every pending one counted");
    let done = admin.cancel_deliveries(all.clone()).await.unwrap();
    assert_eq!(done.matched as usize, BACKLOG);
    let ids = cancelled(&admin, BACKLOG).await;
    for id in &ids {
        let d = admin.get_delivery("acme", id.clone()).await.unwrap();
        assert_eq!(d.status, DeliveryStatus::Dead as i32);
        let last = d.attempts.last().unwrap();
        assert_eq!(last.status_code, 0, "nothing was sent for it");
    }
    assert_eq!(
        admin.cancel_deliveries(all).await.unwrap().matched,
        0,
        "nothing is pending any more"
    );
    let unknown = admin
        .cancel_deliveries(CancelDeliveriesRequest {
            tenant_id: "acme".into(),
            delivery_ids: vec!["dlv_01JZZZZZZZZZZZZZZZZZZZZZZZ".into()],
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unknown.code(), Code::NotFound, "{unknown}");

    // The destination is back: a cancelled one redelivers.
    dest.set_default(Reply::Status(200));
    let again = admin
        .redeliver(RedeliverRequest {
            tenant_id: "acme".into(),
            delivery_ids: vec![ids[0].clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(again.len(), 1);
    dest.wait_for(BACKLOG + 1, Duration::from_secs(10)).await;
    rest(&s).await;
}

/// Over REST: a dry run by filter, once the redelivery's attempt is
/// recorded (it reached the destination before its outcome was written).
async fn rest(s: &TestServer) {
    let url = format!(
        "http://{}/v1/tenants/acme/deliveries:cancel",
        s.server().grpc_addr()
    );
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let answer = reqwest::Client::new()
            .post(&url)
            .bearer_auth(ADMIN_TOKEN)
            .json(&json!({"allPending": true, "dryRun": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::OK);
        let body: Value = answer.json().await.unwrap();
        if body["matched"].is_null() || body["matched"] == "0" {
            return;
        }
        assert!(std::time::Instant::now() < deadline, "{body}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
