//! Tenant-scoped API tokens over real gRPC live exactly as long as the
//! tenant they were made for: deleting the tenant, dropping it from the
//! config file, or a crash half-way through a delete never leaves a token,
//! or data, that a later tenant with the same id inherits.

use futures_util::StreamExt;
use hookd_sdk::client::{
    proto::{CreateTenantRequest, DeliveryStatus},
    Code, HookdClient,
};
use reqwest::StatusCode;

use crate::harness::{order, signed, TestServer, ACME, NOW};

async fn create(admin: &HookdClient, id: &str) {
    admin
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap();
}

/// The gRPC status a call with `token` on `tenant` gets.
async fn status_of(s: &TestServer, token: &str, tenant: &str) -> Code {
    match s.client(token).await.get_tenant(tenant).await {
        Ok(_) => Code::Ok,
        Err(e) => e.code(),
    }
}

#[tokio::test]
async fn token_of_a_deleted_tenant_is_refused_after_the_id_is_reused() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "reused").await;
    let token = admin.create_token("reused", "ci").await.unwrap().token;
    assert_eq!(status_of(&s, &token, "reused").await, Code::Ok);

    admin.delete_tenant("reused").await.unwrap();
    assert_eq!(status_of(&s, &token, "reused").await, Code::Unauthenticated);
    create(&admin, "reused").await;
    assert_eq!(
        status_of(&s, &token, "reused").await,
        Code::Unauthenticated,
        "a new tenant with a re-used id inherited the old tenant's token"
    );
    assert!(admin.list_tokens("reused").await.unwrap().is_empty());
}

#[tokio::test]
async fn token_of_a_half_deleted_tenant_is_refused_after_restart() {
    let mut s = TestServer::start("");
    create(&s.admin().await, "halfway").await;
    let token = s
        .admin()
        .await
        .create_token("halfway", "ci")
        .await
        .unwrap()
        .token;
    // A crash half-way through a delete: the tenant and its secrets are
    // gone, its tokens and data trees are not.
    s.restart_with("", |data| {
        let db = sled::Config::new()
            .path(data.join("store"))
            .segment_size(8 * 1024 * 1024)
            .open()
            .unwrap();
        db.open_tree("tenants").unwrap().remove("halfway").unwrap();
        db.open_tree("secrets").unwrap().remove("halfway").unwrap();
        db.flush().unwrap();
    });
    assert_eq!(
        status_of(&s, &token, "halfway").await,
        Code::Unauthenticated,
        "a token of a tenant that no longer exists was accepted"
    );
    create(&s.admin().await, "halfway").await;
    assert_eq!(
        status_of(&s, &token, "halfway").await,
        Code::Unauthenticated,
        "a re-created tenant inherited a token of the half-deleted one"
    );
}

#[tokio::test]
async fn token_of_a_tenant_removed_from_the_config_file_is_refused_after_restart() {
    let mut s = TestServer::start(ACME);
    let token = s
        .admin()
        .await
        .create_token("acme", "ci")
        .await
        .unwrap()
        .token;
    assert_eq!(status_of(&s, &token, "acme").await, Code::Ok);

    s.restart("");
    assert_eq!(
        status_of(&s, &token, "acme").await,
        Code::Unauthenticated,
        "a token of a tenant removed from the config file was accepted"
    );
    assert!(
        s.admin().await.list_tokens("").await.unwrap().is_empty(),
        "tokens of tenants that are gone are revoked at start"
    );
    create(&s.admin().await, "acme").await;
    assert_eq!(
        status_of(&s, &token, "acme").await,
        Code::Unauthenticated,
        "a tenant created over the API inherited a config tenant's token"
    );
}

#[tokio::test]
async fn a_tenant_created_with_the_id_of_a_removed_config_tenant_sees_none_of_its_data() {
    let mut s = TestServer::start(ACME);
    let body = order("evt_config_era");
    let accepted = s
        .post("acme", &signed("evt_config_era", NOW, &body), &body)
        .await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);

    s.restart("");
    let admin = s.admin().await;
    create(&admin, "acme").await;
    let token = admin.create_token("acme", "ci").await.unwrap().token;
    let seen = s
        .client(&token)
        .await
        .list_all_deliveries("acme", DeliveryStatus::Unspecified)
        .await
        .unwrap();
    assert!(
        seen.is_empty(),
        "the new tenant sees {} deliveries of the removed one",
        seen.len()
    );
}

/// The next item of a watch, within five seconds.
async fn next_of(
    feed: &mut hookd_sdk::client::DeliveryEventStream,
) -> Option<Result<hookd_sdk::client::proto::DeliveryEvent, hookd_sdk::client::ClientError>> {
    tokio::time::timeout(std::time::Duration::from_secs(5), feed.next())
        .await
        .expect("the watch neither ended nor sent anything")
}

#[tokio::test]
async fn a_watch_ends_unauthenticated_when_its_token_is_revoked() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "watched").await;
    let token = admin.create_token("watched", "watch").await.unwrap();
    let mut feed = s
        .client(&token.token)
        .await
        .watch_deliveries("watched")
        .await
        .unwrap();
    admin.revoke_token(&token.token_id).await.unwrap();
    match next_of(&mut feed).await {
        Some(Err(e)) => assert_eq!(e.code(), Code::Unauthenticated, "{e}"),
        other => panic!("expected UNAUTHENTICATED, got {other:?}"),
    }
    assert!(next_of(&mut feed).await.is_none(), "the watch ended");
}

#[tokio::test]
async fn an_admin_watch_of_a_tenant_ends_when_the_tenant_is_deleted() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "watched").await;
    let mut feed = admin.watch_deliveries("watched").await.unwrap();
    admin.delete_tenant("watched").await.unwrap();
    create(&admin, "watched").await;
    match next_of(&mut feed).await {
        Some(Err(e)) => assert_eq!(e.code(), Code::NotFound, "{e}"),
        other => panic!("expected NOT_FOUND, got {other:?}"),
    }
}

#[tokio::test]
async fn a_token_holds_at_most_eight_watches() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "watched").await;
    let token = admin.create_token("watched", "watch").await.unwrap().token;
    let client = s.client(&token).await;
    let mut open = Vec::new();
    for _ in 0..8 {
        open.push(client.watch_deliveries("watched").await.unwrap());
    }
    let ninth = client.watch_deliveries("watched").await.err();
    assert_eq!(
        ninth.as_ref().map(|e| e.code()),
        Some(Code::ResourceExhausted),
        "{ninth:?}"
    );
    drop(open.pop());
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while client.watch_deliveries("watched").await.is_err() {
        assert!(
            std::time::Instant::now() < deadline,
            "a closed watch's place was never freed"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    // Another token has places of its own.
    let _admin = admin.watch_deliveries("watched").await.unwrap();
}

#[tokio::test]
async fn a_tenant_watch_is_not_pushed_behind_by_other_tenants_events() {
    use hookd_server::{
        ids::{DeliveryId, EventId, TenantId},
        testing::{DeliveryEvent, DeliveryEventKind},
    };
    let s = TestServer::start(ACME);
    let admin = s.admin().await;
    let mut feed = admin.watch_deliveries("acme").await.unwrap();
    let busy = TenantId::try_from("busy").unwrap();
    for n in 0..20_000 {
        s.server().services().feed.publish(DeliveryEvent {
            kind: DeliveryEventKind::Accepted,
            tenant: busy.clone(),
            delivery_id: DeliveryId::new(format!("dlv_{n}")),
            event_id: EventId::new(format!("evt_{n}")),
            at_ms: 0,
            attempt: 0,
            status_code: None,
            reason: None,
        });
    }
    let body = order("evt_quiet");
    let answer = s
        .post("acme", &signed("evt_quiet", NOW, &body), &body)
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    match next_of(&mut feed).await {
        Some(Ok(event)) => assert_eq!(event.event_id, "evt_quiet"),
        other => panic!("expected acme's event, got {other:?}"),
    }
}
