//! Holding a route, over real HTTP and gRPC on both engines, from REST and
//! the dashboard: a paused route accepts and stores and sends nothing, its
//! waiting deliveries read HELD; resumed, it drains at a ramp the
//! destination sees (its concurrency rising with the server's clock); a
//! pause stays across a restart; across two PostgreSQL replicas a pause on
//! one stops the other within a second.

use std::time::{Duration, Instant};

use hookd_sdk::client::{
    proto::{DeliveryStatus, ListDeliveriesRequest},
    Code, HookdClient,
};
use hookd_server::testing::test_database;
use reqwest::StatusCode;
use serde_json::{json, Value};

use crate::{
    dashboard::http::Http,
    harness::{now_secs, order, signed, tenant, TestServer, ADMIN_TOKEN},
    postgres::{post_to, Cluster, MASTER_KEY},
    receiver::{Receiver, Reply},
};

/// Events sent while the route is paused.
const HELD: usize = 20;

/// How long a test watches the destination to see that nothing arrives:
/// longer than a dispatcher's longest sleep between passes (1 s).
const QUIET: Duration = Duration::from_millis(1_300);

/// Deliveries of acme's default route in `status`.
async fn count(admin: &HookdClient, status: DeliveryStatus) -> usize {
    let request = ListDeliveriesRequest {
        tenant_id: "acme".into(),
        status: status as i32,
        page_size: 100,
        ..Default::default()
    };
    admin
        .list_deliveries(request)
        .await
        .unwrap()
        .deliveries
        .len()
}

/// Posts `n` events to acme, each answered 202.
async fn post_events(s: &TestServer, prefix: &str, n: usize) {
    for i in 0..n {
        let event = format!("evt_{prefix}_{i}");
        let body = order(&event);
        let answer = s
            .post("acme", &signed(&event, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
    }
}

/// Waits `QUIET` and says how many requests the destination got by then.
async fn after_quiet(dest: &Receiver) -> usize {
    tokio::time::sleep(QUIET).await;
    dest.received().len()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_route_holds_everything_and_drains_at_a_ramp_on_sled() {
    let dest = Receiver::start(Reply::Gated).await;
    // The default route's limit is 8.
    let config = tenant("acme", &dest.url, "", "", "");
    let s = TestServer::start_at(&config, now_secs());
    let admin = s.admin().await;

    let paused = admin.pause_route("acme", "default").await.unwrap();
    assert!(paused.paused);
    assert!(paused.hold_changed_at_ms > 0);
    post_events(&s, "held", HELD).await;
    assert_eq!(after_quiet(&dest).await, 0, "a paused route sends nothing");
    assert_eq!(count(&admin, DeliveryStatus::Held).await, HELD);
    assert_eq!(count(&admin, DeliveryStatus::Pending).await, 0);
    let again = admin.pause_route("acme", "default").await.unwrap();
    assert_eq!(
        again.hold_changed_at_ms, paused.hold_changed_at_ms,
        "pausing a paused route changes nothing"
    );

    // Resumed with a 60 s ramp, the clock standing still: one at a time.
    let resumed = admin
        .resume_route("acme", "default", Some(60))
        .await
        .unwrap();
    assert!(!resumed.paused);
    assert_eq!(resumed.ramp_ends_at_ms, resumed.hold_changed_at_ms + 60_000);
    dest.wait_for(1, Duration::from_secs(10)).await;
    assert_eq!(
        after_quiet(&dest).await,
        1,
        "the ramp starts at one in flight"
    );
    assert_eq!(count(&admin, DeliveryStatus::Pending).await, HELD);
    // Half way through the ramp: half the route's limit.
    s.clock.advance_ms(30_000);
    dest.wait_for(4, Duration::from_secs(10)).await;
    assert_eq!(after_quiet(&dest).await, 4, "half way: 4 of 8 in flight");
    // The ramp over: the route's whole limit.
    s.clock.advance_ms(30_000);
    dest.wait_for(8, Duration::from_secs(10)).await;
    assert_eq!(after_quiet(&dest).await, 8, "ramped up: 8 in flight");
    dest.open_gate();
    dest.wait_for(HELD, Duration::from_secs(20)).await;
    let deadline = Instant::now() + Duration::from_secs(20);
    while count(&admin, DeliveryStatus::Delivered).await < HELD {
        assert!(Instant::now() < deadline, "everything held is delivered");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(dest.received().len(), HELD, "each sent once");

    let pulled = admin.pause_route("acme", "nope").await.unwrap_err();
    assert_eq!(pulled.code(), Code::NotFound, "{pulled}");
    let too_long = admin
        .resume_route("acme", "default", Some(3_601))
        .await
        .unwrap_err();
    assert_eq!(too_long.code(), Code::InvalidArgument, "{too_long}");
}

/// A route paused before a restart is still paused after it: nothing is
/// sent in the meantime, even before anyone asks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pause_outlives_a_restart() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let config = tenant("acme", &dest.url, "", "", "");
    let mut s = TestServer::start_at(&config, now_secs());
    s.admin()
        .await
        .pause_route("acme", "default")
        .await
        .unwrap();
    post_events(&s, "before", 3).await;
    s.restart(&config);
    post_events(&s, "after", 2).await;
    assert_eq!(after_quiet(&dest).await, 0, "still paused after a restart");
    let admin = s.admin().await;
    assert!(admin.get_route("acme", "default").await.unwrap().paused);
    assert_eq!(count(&admin, DeliveryStatus::Held).await, 5);
    admin
        .resume_route("acme", "default", Some(0))
        .await
        .unwrap();
    dest.wait_for(5, Duration::from_secs(10)).await;
}

/// Over REST and on the dashboard's routes page.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rest_and_the_routes_page_pause_and_resume_a_route() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let config = tenant("acme", &dest.url, "", "", "");
    let s = TestServer::start_at(&config, now_secs());
    let rest = |action: &str, body: Value| {
        let url = format!(
            "http://{}/v1/tenants/acme/routes/default:{action}",
            s.server().grpc_addr()
        );
        reqwest::Client::new()
            .post(url)
            .bearer_auth(ADMIN_TOKEN)
            .json(&body)
            .send()
    };
    let answer = rest("pause", json!({})).await.unwrap();
    assert_eq!(answer.status(), StatusCode::OK);
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["paused"], true, "{body}");
    post_events(&s, "rest", 2).await;
    assert_eq!(after_quiet(&dest).await, 0);
    let answer = rest("resume", json!({"ramp_secs": 0})).await.unwrap();
    let body: Value = answer.json().await.unwrap();
    assert!(
        body["paused"].is_null() || body["paused"] == false,
        "{body}"
    );
    dest.wait_for(2, Duration::from_secs(10)).await;

    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let page = http
        .submit(
            &session,
            "/t/acme/routes",
            "/t/acme/routes/default/pause",
            &[],
        )
        .await;
    assert_eq!(page.status(), StatusCode::OK);
    let text = page.text().await.unwrap();
    assert!(text.contains("paused. Events are still accepted"), "{text}");
    assert!(text.contains(">Resume<"), "{text}");
    assert!(text.contains(">Cancel held<"), "{text}");
    let admin = s.admin().await;
    assert!(admin.get_route("acme", "default").await.unwrap().paused);
    post_events(&s, "cancelled", 3).await;
    let page = http
        .submit(
            &session,
            "/t/acme/routes",
            "/t/acme/routes/default/cancel-held",
            &[],
        )
        .await;
    let text = page.text().await.unwrap();
    assert!(
        text.contains("3 held deliveries dead-lettered as cancelled"),
        "{text}"
    );
    assert_eq!(count(&admin, DeliveryStatus::Held).await, 0);
    let page = http
        .submit(
            &session,
            "/t/acme/routes",
            "/t/acme/routes/default/resume",
            &[],
        )
        .await;
    let text = page.text().await.unwrap();
    assert!(text.contains("resumed."), "{text}");
    assert!(!admin.get_route("acme", "default").await.unwrap().paused);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_route_holds_everything_on_postgres() {
    let Some(database) = test_database("hookd_it_pause") else {
        return;
    };
    let dest = Receiver::start(Reply::Status(200)).await;
    let config = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n{}",
        database.url,
        tenant("acme", &dest.url, "", "", "")
    );
    let s = TestServer::start_at(&config, now_secs());
    let admin = s.admin().await;
    admin.pause_route("acme", "default").await.unwrap();
    post_events(&s, "pg", HELD).await;
    assert_eq!(after_quiet(&dest).await, 0, "a paused route sends nothing");
    assert_eq!(count(&admin, DeliveryStatus::Held).await, HELD);
    admin
        .resume_route("acme", "default", Some(0))
        .await
        .unwrap();
    dest.wait_for(HELD, Duration::from_secs(20)).await;
}

/// Two replicas on one database: a pause on one holds the route on the
/// other within a second, whichever forwards it; a resume on the other
/// lets everything held through.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_pause_on_one_replica_stops_the_other_within_a_second() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::with_tenants("pause", &tenant("acme", &dest.url, "", "", ""))
    else {
        return;
    };
    let replicas = [cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY)];
    let admins = [replicas[0].admin().await, replicas[1].admin().await];
    for (n, replica) in replicas.iter().enumerate() {
        let (status, _) = post_to(&replica.base, "acme", &format!("evt_warm_{n}"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    dest.wait_for(2, Duration::from_secs(20)).await;

    admins[0].pause_route("acme", "default").await.unwrap();
    let paused_at = Instant::now();
    while !admins[1].get_route("acme", "default").await.unwrap().paused {
        assert!(
            paused_at.elapsed() < Duration::from_secs(1),
            "the other replica holds the route within a second"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let before = dest.received().len();
    for n in 0..10 {
        let replica = &replicas[n % 2];
        let (status, _) = post_to(&replica.base, "acme", &format!("evt_held_{n}"))
            .await
            .unwrap();
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    assert_eq!(after_quiet(&dest).await, before, "neither replica sends");
    admins[1]
        .resume_route("acme", "default", Some(0))
        .await
        .unwrap();
    dest.wait_for(before + 10, Duration::from_secs(20)).await;
}
