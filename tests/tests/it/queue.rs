//! Pull-mode consumers and redelivery racing over real gRPC: many clients
//! at once, each answer checked against what the others got.

use std::collections::HashSet;

use futures_util::future::join_all;
use hookd_sdk::{
    client::{
        proto::{CreateTenantRequest, ListDeliveriesRequest},
        Code,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;

use crate::harness::{order, TestServer};

const CONSUMERS: usize = 8;
const DAY_MS: i64 = 86_400_000;

/// A pull-mode tenant `id` holding `events` accepted deliveries.
async fn pull_tenant_with(s: &TestServer, id: &str, events: usize) {
    let created = s
        .admin()
        .await
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let key = Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap();
    for n in 0..events {
        let event_id = format!("evt_{n}");
        let body = order(&event_id);
        let headers = sign(Scheme::Standard, &key, &event_id, s.clock_secs(), &body);
        let answer = s.post(id, &headers, &body).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_pulls_over_grpc_hand_each_delivery_to_one_consumer() {
    let s = TestServer::start("");
    pull_tenant_with(&s, "puller", 60).await;
    let mut clients = Vec::new();
    for _ in 0..CONSUMERS {
        clients.push(s.admin().await);
    }
    let pulls = clients.iter().map(|client| async move {
        let mut got = Vec::new();
        loop {
            let batch = client.pull("puller", 3, 300).await.unwrap();
            if batch.is_empty() {
                return got;
            }
            got.extend(batch.into_iter().map(|d| (d.delivery_id, d.attempt)));
        }
    });
    let mut seen = HashSet::new();
    for (delivery_id, attempt) in join_all(pulls).await.into_iter().flatten() {
        assert_eq!(attempt, 1, "{delivery_id} pulled before");
        assert!(
            seen.insert(delivery_id.clone()),
            "{delivery_id} handed to two consumers within the visibility timeout"
        );
    }
    assert_eq!(seen.len(), 60, "every delivery handed out once");
    let admin = s.admin().await;
    assert_eq!(admin.ack("puller", seen.iter()).await.unwrap(), 60);
    assert_eq!(admin.ack("puller", seen.iter()).await.unwrap(), 0);
    // Past the visibility timeout and the retry window: nothing comes back
    // and nothing acked turns into a dead letter.
    s.clock.advance_ms(2 * DAY_MS);
    assert!(admin.pull("puller", 100, 30).await.unwrap().is_empty());
    let dead = admin
        .list_all_dead_letters("puller", &Default::default())
        .await
        .unwrap();
    assert!(dead.is_empty(), "acked deliveries dead-lettered: {dead:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_redeliver_of_one_dead_letter_over_grpc_makes_one_delivery() {
    let s = TestServer::start("");
    pull_tenant_with(&s, "puller", 1).await;
    let admin = s.admin().await;
    let pulled = admin.pull("puller", 1, 30).await.unwrap();
    let dead_id = pulled[0].delivery_id.clone();
    // Never acked: past the retry window the next pull dead-letters it.
    s.clock.advance_ms(DAY_MS + 60_000);
    assert!(admin.pull("puller", 1, 30).await.unwrap().is_empty());
    assert_eq!(
        admin
            .list_all_dead_letters("puller", &Default::default())
            .await
            .unwrap()
            .len(),
        1
    );

    let mut clients = Vec::new();
    for _ in 0..CONSUMERS {
        clients.push(s.admin().await);
    }
    let answers = join_all(
        clients
            .iter()
            .map(|c| c.redeliver_ids("puller", [dead_id.clone()])),
    )
    .await;
    let made: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
    assert_eq!(made.len(), 1, "exactly one redelivery wins: {answers:?}");
    let new_id = &made[0][0];
    for lost in answers.iter().filter_map(|a| a.as_ref().err()) {
        assert_eq!(lost.code(), Code::FailedPrecondition, "{lost}");
        assert!(lost.to_string().contains(new_id.as_str()), "{lost}");
    }
    let all = admin
        .list_deliveries(ListDeliveriesRequest {
            tenant_id: "puller".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .deliveries;
    let copies: Vec<_> = all.iter().filter(|d| d.redelivery_of == dead_id).collect();
    assert_eq!(copies.len(), 1, "one new delivery: {copies:?}");
    let again = admin.pull("puller", 10, 30).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(&again[0].delivery_id, new_id);
}
