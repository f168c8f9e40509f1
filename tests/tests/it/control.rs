//! The control plane over real gRPC (with the SDK client) and its effect on
//! real HTTP ingest: tenants, rotation, restart, dead letters, paging, auth,
//! pull mode and the live feed.

use std::time::{Duration, Instant};

use futures_util::StreamExt;
use hookd_sdk::client::{
    proto::{
        CreateTenantRequest, DeliveryEventKind, DeliveryStatus, ListDeadLettersRequest,
        ListTenantsRequest, UpdateTenantRequest,
    },
    Code, HookdClient,
};
use reqwest::StatusCode;

use crate::{
    harness::{order, TestServer, ACME, NOW},
    receiver::{Receiver, Reply},
};

/// The setting that lets destinations created over the API reach the fake
/// receivers on 127.0.0.1 (by default such an address is refused).
const LOCAL_DESTINATIONS: &str = "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n";

/// Sends a Standard Webhooks delivery signed with `secret` at the server's clock.
async fn send(
    s: &TestServer,
    tenant: &str,
    kid: &str,
    secret: &str,
    event_id: &str,
) -> crate::harness::Answer {
    s.post_signed(tenant, kid, secret, event_id).await
}

async fn create(client: &HookdClient, id: &str, destination: &str) -> (String, String) {
    let created = client
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            destination_url: destination.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        created.tenant.as_ref().unwrap().ingest_path,
        format!("/hooks/{id}")
    );
    assert!(created.destination_secret.starts_with("whsec_"));
    (created.kid, created.secret)
}

/// Polls until `check` holds, bounded.
async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let deadline = Instant::now() + Duration::from_secs(10);
    while !check().await {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn created_tenant_accepts_deliveries_signed_with_the_returned_secret() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "orders", "").await;
    let a = send(&s, "orders", &kid, &secret, "evt_1").await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    let a = send(
        &s,
        "orders",
        &kid,
        "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
        "evt_2",
    )
    .await;
    assert_eq!(a.code(), "BAD_SIGNATURE");
    let err = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::AlreadyExists);
}

#[tokio::test]
async fn rotation_keeps_the_old_secret_during_the_overlap_only() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (old_kid, old) = create(&admin, "rot", "").await;
    let rotated = admin.rotate_secret("rot", 3600).await.unwrap();
    assert_eq!(rotated.previous_kid, old_kid);
    assert_ne!(rotated.secret, old);
    assert_eq!(
        send(&s, "rot", &rotated.kid, &rotated.secret, "new_1")
            .await
            .status,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        send(&s, "rot", &old_kid, &old, "old_1").await.status,
        StatusCode::ACCEPTED
    );
    let secrets = admin.list_secrets("rot").await.unwrap();
    assert_eq!(secrets.len(), 2);

    s.clock.set_secs(NOW + 3601);
    assert_eq!(
        send(&s, "rot", &old_kid, &old, "old_2").await.code(),
        "BAD_SIGNATURE"
    );
    assert_eq!(
        send(&s, "rot", &rotated.kid, &rotated.secret, "new_2")
            .await
            .status,
        StatusCode::ACCEPTED
    );

    let again = admin.rotate_secret("rot", 3600).await.unwrap();
    assert_eq!(
        send(&s, "rot", &rotated.kid, &rotated.secret, "mid_1")
            .await
            .status,
        StatusCode::ACCEPTED
    );
    admin.revoke_secret("rot", &rotated.kid).await.unwrap();
    assert_eq!(
        send(&s, "rot", &rotated.kid, &rotated.secret, "mid_2")
            .await
            .code(),
        "BAD_SIGNATURE"
    );
    assert_eq!(
        send(&s, "rot", &again.kid, &again.secret, "new_3")
            .await
            .status,
        StatusCode::ACCEPTED
    );
    let err = admin.revoke_secret("rot", &again.kid).await.unwrap_err();
    assert_eq!(
        err.code(),
        Code::FailedPrecondition,
        "the current secret cannot be revoked"
    );
}

#[tokio::test]
async fn a_key_pair_scheme_gets_no_generated_secret() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let err = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "bot".into(),
            scheme: "discord".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::FailedPrecondition, "{err:?}");
    let message = err.status().expect("hookd answered").message();
    assert!(
        message.starts_with("scheme discord verifies with the provider's public key"),
        "{message}"
    );
    let listed = admin
        .list_tenants(ListTenantsRequest::default())
        .await
        .unwrap();
    assert!(
        listed.tenants.iter().all(|t| t.tenant_id != "bot"),
        "nothing was stored"
    );
}

#[tokio::test]
async fn dead_letter_survives_restart_and_is_redelivered_after_the_fix() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let mut s = TestServer::start(LOCAL_DESTINATIONS);
    let (kid, secret) = create(&s.admin().await, "shop", &dest.url).await;
    let first = send(&s, "shop", &kid, &secret, "evt_dead").await;
    let delivery_id = first.body["delivery_id"].as_str().unwrap().to_owned();
    {
        let admin = s.admin().await;
        eventually("the dead letter", || async {
            let page = admin
                .list_dead_letters(ListDeadLettersRequest {
                    tenant_id: "shop".into(),
                    ..Default::default()
                })
                .await
                .unwrap();
            !page.dead_letters.is_empty()
        })
        .await;
    }

    s.restart(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let tenant = admin.get_tenant("shop").await.unwrap();
    assert_eq!(tenant.destination_url, dest.url);
    assert_eq!(admin.list_secrets("shop").await.unwrap()[0].kid, kid);
    assert_eq!(
        send(&s, "shop", &kid, &secret, "evt_after_restart")
            .await
            .status,
        StatusCode::ACCEPTED
    );
    let dead = admin
        .list_dead_letters(ListDeadLettersRequest {
            tenant_id: "shop".into(),
            reason_contains: "400".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .dead_letters;
    let letter = dead
        .iter()
        .find(|d| d.delivery_id == delivery_id)
        .expect("dead letter kept across restart");
    assert!(letter.reason.contains("400"), "{}", letter.reason);
    assert_eq!(letter.event_id, "evt_dead");

    dest.set_default(Reply::Status(200));
    let new_ids = admin
        .redeliver_ids("shop", [delivery_id.clone()])
        .await
        .unwrap();
    assert_eq!(new_ids.len(), 1);
    assert_ne!(new_ids[0], delivery_id);
    eventually("the redelivery", || async {
        admin
            .get_delivery("shop", new_ids[0].clone())
            .await
            .unwrap()
            .status
            == DeliveryStatus::Delivered as i32
    })
    .await;
    let redelivered = admin
        .get_delivery("shop", new_ids[0].clone())
        .await
        .unwrap();
    assert_eq!(redelivered.attempts.len(), 1);
    assert_eq!(redelivered.attempts[0].status_code, 200);
    assert_eq!(redelivered.redelivery_of, delivery_id);
    let old = admin
        .get_delivery("shop", delivery_id.clone())
        .await
        .unwrap();
    assert_eq!(old.redelivered_as, new_ids[0]);
    assert_eq!(old.attempts[0].status_code, 400);
    assert!(dest
        .received()
        .iter()
        .any(|r| r.header("hookd-delivery-id") == Some(new_ids[0].as_str())));
}

#[tokio::test]
async fn paging_returns_every_tenant_exactly_once() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    for i in 0..25 {
        create(&admin, &format!("tenant-{i:02}"), "").await;
    }
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = 0;
    loop {
        let page = admin
            .list_tenants(ListTenantsRequest {
                page_size: 10,
                page_token: token.clone(),
            })
            .await
            .unwrap();
        pages += 1;
        assert!(page.tenants.len() <= 10);
        seen.extend(page.tenants.into_iter().map(|t| t.tenant_id));
        if page.next_page_token.is_empty() {
            break;
        }
        token = page.next_page_token;
    }
    assert_eq!(pages, 3);
    let mut unique = seen.clone();
    unique.sort();
    unique.dedup();
    assert_eq!((seen.len(), unique.len()), (25, 25));
    assert_eq!(admin.list_all_tenants().await.unwrap().len(), 25);
}

#[tokio::test]
async fn tokens_are_checked_and_scoped_to_their_tenant() {
    let s = TestServer::start(ACME);
    let admin = s.admin().await;
    create(&admin, "one", "").await;
    create(&admin, "two", "").await;

    let endpoint = format!("http://{}", s.server().grpc_addr());
    let anonymous = HookdClient::connect(endpoint, "").await.unwrap();
    assert_eq!(
        anonymous.get_tenant("one").await.unwrap_err().code(),
        Code::Unauthenticated
    );
    let wrong = s.client("hka_not_the_admin_token_at_all").await;
    assert_eq!(
        wrong.get_tenant("one").await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let scoped_token = admin.create_token("one", "ci").await.unwrap();
    let scoped = s.client(&scoped_token.token).await;
    assert_eq!(scoped.get_tenant("one").await.unwrap().tenant_id, "one");
    assert_eq!(
        scoped.get_tenant("two").await.unwrap_err().code(),
        Code::PermissionDenied
    );
    let err = scoped
        .create_tenant(CreateTenantRequest {
            tenant_id: "three".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::PermissionDenied);
    let visible: Vec<String> = scoped
        .list_all_tenants()
        .await
        .unwrap()
        .into_iter()
        .map(|t| t.tenant_id)
        .collect();
    assert_eq!(visible, ["one"]);

    admin.revoke_token(scoped_token.token_id).await.unwrap();
    assert_eq!(
        scoped.get_tenant("one").await.unwrap_err().code(),
        Code::Unauthenticated
    );

    let err = admin.get_tenant("nobody").await.unwrap_err();
    assert_eq!(err.code(), Code::NotFound);
    let err = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "acme".into(),
            enabled: Some(false),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(
        err.code(),
        Code::FailedPrecondition,
        "config-file tenants are read-only: {err}"
    );
    assert!(admin.get_tenant("acme").await.unwrap().from_config);
}

#[tokio::test]
async fn pull_mode_hands_out_deliveries_until_acked() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "puller", "").await;
    for id in ["p1", "p2"] {
        assert_eq!(
            send(&s, "puller", &kid, &secret, id).await.status,
            StatusCode::ACCEPTED
        );
    }
    let pulled = admin.pull("puller", 10, 30).await.unwrap();
    assert_eq!(pulled.len(), 2);
    assert_eq!(pulled[0].body, order(&pulled[0].event_id));
    assert!(
        admin.pull("puller", 10, 30).await.unwrap().is_empty(),
        "hidden while being processed"
    );
    assert_eq!(
        admin
            .ack("puller", [pulled[0].delivery_id.clone()])
            .await
            .unwrap(),
        1
    );

    s.clock.set_secs(NOW + 31);
    let again = admin.pull("puller", 10, 30).await.unwrap();
    assert_eq!(again.len(), 1, "the unacked one comes back");
    assert_eq!(again[0].delivery_id, pulled[1].delivery_id);
    assert_eq!(again[0].attempt, 2);
}

#[tokio::test]
async fn watch_streams_accepted_deliveries() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "watched", "").await;
    let mut feed = admin.watch_deliveries("watched").await.unwrap();
    let a = send(&s, "watched", &kid, &secret, "w1").await;
    let event = tokio::time::timeout(Duration::from_secs(10), feed.next())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    assert_eq!(event.kind, DeliveryEventKind::Accepted as i32);
    assert_eq!(event.delivery_id, a.body["delivery_id"].as_str().unwrap());
    assert_eq!(event.event_id, "w1");
}

#[tokio::test]
async fn deleted_tenant_is_gone_with_its_data() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "temp", "").await;
    assert_eq!(
        send(&s, "temp", &kid, &secret, "t1").await.status,
        StatusCode::ACCEPTED
    );
    admin.delete_tenant("temp").await.unwrap();
    assert_eq!(
        send(&s, "temp", &kid, &secret, "t2").await.code(),
        "TENANT_NOT_FOUND"
    );
    assert_eq!(
        admin.get_tenant("temp").await.unwrap_err().code(),
        Code::NotFound
    );
    let (kid, secret) = create(&admin, "temp", "").await;
    assert_eq!(
        send(&s, "temp", &kid, &secret, "t1").await.status,
        StatusCode::ACCEPTED,
        "old idempotency log dropped with the tenant"
    );
}

#[tokio::test]
async fn update_switches_a_tenant_between_pull_mode_and_forwarding() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "flex", "").await;
    let updated = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "flex".into(),
            destination_url: Some(dest.url.clone()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(updated.destination_url, dest.url);
    assert_eq!(
        send(&s, "flex", &kid, &secret, "u1").await.status,
        StatusCode::ACCEPTED
    );
    dest.wait_for(1, Duration::from_secs(10)).await;
    let err = admin.pull("flex", 10, 30).await.unwrap_err();
    assert_eq!(
        err.code(),
        Code::FailedPrecondition,
        "a forwarding tenant cannot be pulled"
    );

    admin.set_tenant_enabled("flex", false).await.unwrap();
    assert_eq!(
        send(&s, "flex", &kid, &secret, "u2").await.code(),
        "TENANT_DISABLED"
    );
    let err = admin
        .update_tenant(UpdateTenantRequest {
            tenant_id: "flex".into(),
            destination_url: Some("ftp://nope".into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(err.code(), Code::InvalidArgument, "{err}");
}

#[tokio::test]
async fn attempts_keep_4_kib_of_the_answer_and_dead_letters_can_be_purged() {
    let dest = Receiver::start(Reply::Body(422, 10_000)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "shop", &dest.url).await;
    let mut feed = admin.watch_deliveries("shop").await.unwrap();
    let ids: Vec<String> = futures_util::future::join_all(
        ["d1", "d2", "d3"].map(|e| send(&s, "shop", &kid, &secret, e)),
    )
    .await
    .into_iter()
    .map(|a| a.body["delivery_id"].as_str().unwrap().to_owned())
    .collect();
    let mut dead = 0;
    while dead < 3 {
        let event = tokio::time::timeout(Duration::from_secs(10), feed.next())
            .await
            .unwrap()
            .unwrap()
            .unwrap();
        if event.kind == DeliveryEventKind::DeadLettered as i32 {
            assert!(event.reason.contains("422"), "{}", event.reason);
            dead += 1;
        }
    }
    let delivery = admin.get_delivery("shop", ids[0].clone()).await.unwrap();
    assert_eq!(
        delivery.attempts[0].response_body.len(),
        4096,
        "first 4 KiB of a 10 KB answer"
    );
    assert_eq!(delivery.attempts[0].status_code, 422);

    let purged = admin
        .purge_dead_letters(hookd_sdk::client::proto::PurgeDeadLettersRequest {
            tenant_id: "shop".into(),
            delivery_ids: vec![ids[0].clone()],
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(
        admin
            .get_delivery("shop", ids[0].clone())
            .await
            .unwrap_err()
            .code(),
        Code::NotFound
    );
    let left = admin
        .list_all_dead_letters("shop", &Default::default())
        .await
        .unwrap();
    assert_eq!(left.len(), 2);
    let purged = admin
        .purge_dead_letters(hookd_sdk::client::proto::PurgeDeadLettersRequest {
            tenant_id: "shop".into(),
            all: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 2);
    assert!(admin
        .list_all_dead_letters("shop", &Default::default())
        .await
        .unwrap()
        .is_empty());
}

#[tokio::test]
async fn nack_returns_a_pulled_delivery_at_once() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    let (kid, secret) = create(&admin, "puller", "").await;
    send(&s, "puller", &kid, &secret, "n1").await;
    let pulled = admin.pull("puller", 10, 300).await.unwrap();
    assert_eq!(pulled.len(), 1);
    assert!(admin.pull("puller", 10, 300).await.unwrap().is_empty());
    admin
        .nack("puller", [pulled[0].delivery_id.clone()])
        .await
        .unwrap();
    let again = admin.pull("puller", 10, 300).await.unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].attempt, 2);
}
