//! A route's delay, over real HTTP and gRPC on both engines: each delivery
//! on a delayed route waits its delay after acceptance before its first
//! attempt, on the server's clock, across a restart; the other routes send
//! at once. Set in the config file and over RouteService.

use std::time::Duration;

use hookd_sdk::client::{
    proto::{CreateRouteRequest, ListDeliveriesRequest, UpdateRouteRequest},
    Code,
};
use hookd_server::testing::test_database;
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, DEST_SECRET},
    receiver::{Receiver, Reply},
    route_service::{create_tenant, LOCAL_DESTINATIONS},
};

/// Waits `QUIET` and says how many requests `dest` got by then: longer
/// than a dispatcher's longest sleep between passes (1 s).
async fn after_quiet(dest: &Receiver) -> usize {
    tokio::time::sleep(Duration::from_millis(1_300)).await;
    dest.received().len()
}

async fn post(s: &TestServer, event: &str) {
    let body = order(event);
    let answer = s
        .post("acme", &signed(event, s.clock_secs(), &body), &body)
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
}

/// acme forwards to `now` at once and, on route `later`, to `later` a
/// minute after acceptance.
fn config(storage: &str, now: &Receiver, later: &Receiver) -> String {
    format!(
        "{storage}{}[[tenants.routes]]\nname = \"later\"\ndelay_ms = 60000\n\
         [tenants.routes.destination]\nurl = \"{}\"\nsecret = \"{DEST_SECRET}\"\n",
        tenant("acme", &now.url, "", "", ""),
        later.url
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_route_sends_after_its_delay_and_across_a_restart_on_sled() {
    delayed("").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delayed_route_sends_after_its_delay_and_across_a_restart_on_postgres() {
    let Some(database) = test_database("hookd_it_delay") else {
        return;
    };
    let storage = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n",
        database.url
    );
    delayed(&storage).await;
}

async fn delayed(storage: &str) {
    let now = Receiver::start(Reply::Status(200)).await;
    let later = Receiver::start(Reply::Status(200)).await;
    let config = config(storage, &now, &later);
    let mut s = TestServer::start_at(&config, now_secs());
    let first_received = s.clock_secs() * 1000;
    post(&s, "evt_1").await;
    now.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(after_quiet(&later).await, 0, "held for its delay");
    // Half the delay passes, then a restart: the time it is due stays.
    s.clock.advance_ms(30_000);
    s.restart(&config);
    post(&s, "evt_2").await;
    now.wait_for(2, Duration::from_secs(10)).await;
    assert_eq!(after_quiet(&later).await, 0, "30 s of 60 passed");
    s.clock.advance_ms(30_000);
    let got = later.wait_for(1, Duration::from_secs(10)).await;
    assert!(got[0].body.windows(5).any(|w| w == b"evt_1"));
    assert_eq!(after_quiet(&later).await, 1, "evt_2 has 30 s to go");
    s.clock.advance_ms(30_000);
    later.wait_for(2, Duration::from_secs(10)).await;

    let admin = s.admin().await;
    let route = admin.get_route("acme", "later").await.unwrap();
    assert_eq!(route.delay_ms, 60_000);
    // A delayed delivery is found by when it was received, not when due.
    let received = admin
        .list_deliveries(ListDeliveriesRequest {
            tenant_id: "acme".into(),
            route: "later".into(),
            until_unix_ms: first_received + 1,
            ..Default::default()
        })
        .await
        .unwrap()
        .deliveries;
    assert_eq!(received.len(), 1, "{received:?}");
    assert_eq!(received[0].event_id, "evt_1");
}

/// The default route's delay, from the config file's tenant and over
/// UpdateRoute: the tenant's own destination gets each delivery that long
/// after acceptance, while another route sends at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_default_route_holds_each_delivery_for_its_delay() {
    let own = Receiver::start(Reply::Status(200)).await;
    let other = Receiver::start(Reply::Status(200)).await;
    let config = format!(
        "{}[[tenants.routes]]\nname = \"now\"\n\
         [tenants.routes.destination]\nurl = \"{}\"\nsecret = \"{DEST_SECRET}\"\n",
        tenant("acme", &own.url, "delay_ms = 10000", "", ""),
        other.url
    );
    let s = TestServer::start_at(&config, now_secs());
    post(&s, "evt_d").await;
    other.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        after_quiet(&own).await,
        0,
        "held for the default route's delay"
    );
    s.clock.advance_ms(10_000);
    own.wait_for(1, Duration::from_secs(10)).await;
    let admin = s.admin().await;
    assert_eq!(
        admin.get_route("acme", "default").await.unwrap().delay_ms,
        10_000
    );

    let api = TestServer::start_at(LOCAL_DESTINATIONS, now_secs());
    let admin = api.admin().await;
    create_tenant(&admin, "shop", &own.url).await;
    let changed = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            delay_ms: Some(30_000),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(changed.delay_ms, 30_000);
}

/// Over RouteService: created with a delay, changed, refused past 24 h.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routes_delay_is_set_over_the_api() {
    let now = Receiver::start(Reply::Status(200)).await;
    let later = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_at(LOCAL_DESTINATIONS, now_secs());
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", &now.url).await;
    let post = |event: &'static str| {
        let (s, kid, secret) = (&s, kid.clone(), secret.clone());
        async move {
            let answer = s.post_signed("shop", &kid, &secret, event).await;
            assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
        }
    };
    let created = admin
        .create_route(CreateRouteRequest {
            tenant_id: "shop".into(),
            name: "later".into(),
            destination_url: later.url.clone(),
            delay_ms: 5_000,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(created.delay_ms, 5_000);
    post("evt_api").await;
    now.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(after_quiet(&later).await, 0);
    s.clock.advance_ms(5_000);
    later.wait_for(1, Duration::from_secs(10)).await;

    let changed = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "later".into(),
            delay_ms: Some(0),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(changed.delay_ms, 0);
    post("evt_now").await;
    later.wait_for(2, Duration::from_secs(10)).await;
    let too_long = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "later".into(),
            delay_ms: Some(86_400_001),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(too_long.code(), Code::InvalidArgument, "{too_long}");
    assert!(too_long.to_string().contains("delay_ms"), "{too_long}");
}
