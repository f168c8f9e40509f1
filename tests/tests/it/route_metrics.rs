//! A route's metrics over real gRPC and REST: the tenant's accepted,
//! duplicate and refused requests and the route's delivered and failed
//! attempts by minute, with latency, and its queue and held deliveries now.

use std::time::{Duration, Instant};

use hookd_sdk::client::{proto::RouteMetrics, Code, HookdClient};
use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

/// acme's default route's metrics over the last hour, by minute, once
/// `ready` holds of them.
async fn metrics(admin: &HookdClient, ready: impl Fn(&RouteMetrics) -> bool) -> RouteMetrics {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let m = admin
            .route_metrics("acme", "default", (60, 3600))
            .await
            .unwrap();
        if ready(&m) {
            return m;
        }
        assert!(Instant::now() < deadline, "{m:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

fn sum(
    m: &RouteMetrics,
    field: impl Fn(&hookd_sdk::client::proto::RouteMetricsPoint) -> u64,
) -> u64 {
    m.points.iter().map(field).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routes_metrics_count_what_it_took_in_and_sent() {
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::Status(200), Reply::Status(200), Reply::Status(200)]);
    dest.set_default(Reply::Status(503));
    let config = tenant("acme", &dest.url, "", "", "schedule_secs = [3600.0]");
    let s = TestServer::start_at(&config, now_secs());
    for n in 0..5 {
        let event = format!("evt_{n}");
        let body = order(&event);
        let answer = s
            .post("acme", &signed(&event, s.clock_secs(), &body), &body)
            .await;
        assert_eq!(answer.status, StatusCode::ACCEPTED);
    }
    let again = order("evt_0");
    let duplicate = s
        .post("acme", &signed("evt_0", s.clock_secs(), &again), &again)
        .await;
    assert_eq!(duplicate.status, StatusCode::OK);
    let forged = s
        .post("acme", &signed("evt_x", s.clock_secs(), b"{}"), &again)
        .await;
    assert_eq!(forged.status, StatusCode::UNAUTHORIZED);
    dest.wait_for(5, Duration::from_secs(10)).await;

    let admin = s.admin().await;
    let m = metrics(&admin, |m| sum(m, |p| p.delivered + p.failed) == 5).await;
    assert_eq!(
        m.points.len(),
        61,
        "a point a minute over the hour, and this one"
    );
    assert_eq!(sum(&m, |p| p.accepted), 5);
    assert_eq!(sum(&m, |p| p.duplicates), 1);
    assert_eq!(sum(&m, |p| p.rejected), 1);
    assert_eq!(sum(&m, |p| p.delivered), 3);
    assert_eq!(sum(&m, |p| p.failed), 2);
    assert_eq!(sum(&m, |p| p.dead_lettered), 0);
    let now = m.points.last().unwrap();
    assert!(now.latency_p50_ms > 0 && now.latency_p99_ms >= now.latency_p50_ms);
    assert_eq!(m.queue_depth, 2, "two wait for their retry");
    assert_eq!(m.held, 0);
    assert_eq!(sum(&m, |p| p.held), 0, "never paused");

    admin.pause_route("acme", "default").await.unwrap();
    let paused = metrics(&admin, |_| true).await;
    assert_eq!(paused.held, 2);
    assert_eq!(paused.points.last().unwrap().held, 2, "held this minute");
    admin
        .resume_route("acme", "default", Some(0))
        .await
        .unwrap();
    s.clock.advance_ms(60_000);
    let later = metrics(&admin, |m| m.points.len() == 61).await;
    assert_eq!(later.held, 0);
    let minutes: Vec<u64> = later.points.iter().map(|p| p.held).collect();
    assert_eq!(
        minutes[minutes.len() - 2..],
        [2, 0],
        "the paused minute keeps its figure"
    );
    admin.pause_route("acme", "default").await.unwrap();

    let hours = admin
        .route_metrics("acme", "default", (3600, 86_400))
        .await
        .unwrap();
    assert_eq!(sum(&hours, |p| p.accepted), 5);
    let bad = admin
        .route_metrics("acme", "default", (90, 0))
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument, "{bad}");

    let url = format!(
        "http://{}/v1/tenants/acme/routes/default/metrics?stepSecs=3600&spanSecs=86400",
        s.server().grpc_addr()
    );
    let rest: Value = reqwest::Client::new()
        .get(url)
        .bearer_auth(ADMIN_TOKEN)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let accepted: u64 = rest["points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["accepted"].as_str().map_or(0, |n| n.parse().unwrap()))
        .sum();
    assert_eq!(accepted, 5, "{rest}");
}
