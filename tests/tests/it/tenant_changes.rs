//! A tenant's actor is the one writer of its state: a rotation, a
//! revocation, a settings change and a contract change made over real gRPC
//! are each in force for the very next delivery over real HTTP, and none of
//! them is lost while at least 1,000 concurrent deliveries race them and the
//! tenant's gate is dropped as idle between any two of them.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicUsize, Ordering},
        Arc,
    },
    time::Duration,
};

use futures_util::{stream, StreamExt};
use hookd_sdk::client::proto::{
    Contract, CreateTenantRequest, RequiredFields, UpdateTenantRequest,
};
use reqwest::StatusCode;

use crate::harness::TestServer;

/// Deliveries racing the changes, at least.
const RACING: usize = 1_000;
/// Deliveries in flight at once.
const IN_FLIGHT: usize = 32;

/// A signed order; `customer` and an integer `amount` when asked for.
async fn send(
    s: &TestServer,
    (kid, secret): (&str, &str),
    id: &str,
    customer: bool,
    amount: &str,
) -> crate::harness::Answer {
    let customer = if customer { r#","customer":"c_1""# } else { "" };
    let body = format!(
        r#"{{"event_id":"{id}","type":"order.paid","data":{{"amount":{amount}}}{customer}}}"#
    );
    let key = hookd_sdk::signature::Secret::from_provider(
        hookd_sdk::signature::Scheme::Standard,
        kid,
        secret,
    )
    .unwrap();
    let headers = hookd_sdk::signature::sign(
        hookd_sdk::signature::Scheme::Standard,
        &key,
        id,
        s.clock_secs(),
        body.as_bytes(),
    );
    s.post("race", &headers, body.as_bytes()).await
}

/// What the four changes leave in force, checked with fresh deliveries
/// (`round` keeps their ids apart).
async fn all_four_in_force(s: &TestServer, old: (&str, &str), new: (&str, &str), round: &str) {
    let fine = send(s, new, &format!("{round}_fine"), true, "5").await;
    assert_eq!(
        fine.status,
        StatusCode::ACCEPTED,
        "{round}: {:?}",
        fine.body
    );
    let revoked = send(s, old, &format!("{round}_old"), true, "5").await;
    assert_eq!(revoked.code(), "BAD_SIGNATURE", "{round}: revocation");
    let bare = send(s, new, &format!("{round}_bare"), false, "5").await;
    assert_eq!(bare.code(), "MISSING_REQUIRED_FIELD", "{round}: settings");
    let text = send(s, new, &format!("{round}_text"), true, r#""5""#).await;
    assert_eq!(text.code(), "CONTRACT_VIOLATION", "{round}: contract");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_change_is_in_force_for_the_next_delivery_and_none_is_lost_in_a_race() {
    let s = Arc::new(TestServer::start(""));
    let admin = s.admin().await;
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "race".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let old = (created.kid.clone(), created.secret.clone());

    let changes_done = Arc::new(AtomicBool::new(false));
    let sent = Arc::new(AtomicUsize::new(0));
    let load = {
        let (s, old, sent, done) = (s.clone(), old.clone(), sent.clone(), changes_done.clone());
        tokio::spawn(async move {
            let answers: Vec<StatusCode> = stream::iter(0..)
                .take_while(|_| {
                    let more = !done.load(Ordering::SeqCst) || sent.load(Ordering::SeqCst) < RACING;
                    std::future::ready(more)
                })
                .map(|n| {
                    let (s, old, sent) = (s.clone(), old.clone(), sent.clone());
                    async move {
                        let a = send(&s, (&old.0, &old.1), &format!("load_{n}"), true, "5").await;
                        sent.fetch_add(1, Ordering::SeqCst);
                        a.status
                    }
                })
                .buffer_unordered(IN_FLIGHT)
                .collect()
                .await;
            answers
        })
    };
    let idle_stops = {
        let (s, done) = (s.clone(), changes_done.clone());
        tokio::spawn(async move {
            let mut stopped = 0;
            while !done.load(Ordering::SeqCst) {
                stopped += s.server().registry().stop_idle_gates(0);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
            stopped
        })
    };
    while sent.load(Ordering::SeqCst) < RACING / 10 {
        tokio::time::sleep(Duration::from_millis(2)).await;
    }

    let rotated = admin.rotate_secret("race", 3600).await.unwrap();
    let new = (rotated.kid.clone(), rotated.secret.clone());
    let first = send(&s, (&new.0, &new.1), "after_rotate", true, "5").await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "rotation in force");

    admin.revoke_secret("race", &old.0).await.unwrap();
    let revoked = send(&s, (&old.0, &old.1), "after_revoke", true, "5").await;
    assert_eq!(revoked.code(), "BAD_SIGNATURE", "revocation in force");

    admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "race".into(),
            required_fields: Some(RequiredFields {
                fields: vec!["customer".into()],
            }),
            ..Default::default()
        })
        .await
        .unwrap();
    let bare = send(&s, (&new.0, &new.1), "after_update", false, "5").await;
    assert_eq!(bare.code(), "MISSING_REQUIRED_FIELD", "settings in force");

    let schema = r#"{"type":"object","properties":{"data":{"type":"object","properties":{"amount":{"type":"integer"}}}}}"#;
    admin
        .put_contract(
            "race",
            Contract {
                r#type: "order.paid".into(),
                version: String::new(),
                schema: schema.into(),
                example: r#"{"event_id":"e","type":"order.paid","data":{"amount":1}}"#.into(),
            },
        )
        .await
        .unwrap();
    let text = send(&s, (&new.0, &new.1), "after_contract", true, r#""5""#).await;
    assert_eq!(text.code(), "CONTRACT_VIOLATION", "contract in force");

    changes_done.store(true, Ordering::SeqCst);
    let answers = load.await.unwrap();
    let stopped = idle_stops.await.unwrap();
    assert!(
        answers.len() >= RACING,
        "{} deliveries raced",
        answers.len()
    );
    assert!(stopped > 0, "the gate was dropped as idle during the race");
    let unexpected: Vec<_> = answers
        .iter()
        .filter(|status| ![StatusCode::ACCEPTED, StatusCode::UNAUTHORIZED].contains(status))
        .collect();
    assert!(
        unexpected.is_empty(),
        "racing deliveries answered {unexpected:?}"
    );

    all_four_in_force(&s, (&old.0, &old.1), (&new.0, &new.1), "settled").await;
    s.server().registry().stop_idle_gates(0);
    all_four_in_force(&s, (&old.0, &old.1), (&new.0, &new.1), "restarted").await;
    let view = admin.get_tenant("race").await.unwrap();
    assert_eq!(view.required_fields, ["customer"]);
    let secrets = admin.list_secrets("race").await.unwrap();
    assert_eq!(secrets.len(), 1, "only the rotated secret is left");
}
