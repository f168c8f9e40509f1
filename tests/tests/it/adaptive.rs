//! Adaptive concurrency seen from outside (docs/routes.md#adaptive-concurrency):
//! an adaptive route's `hookd_route_concurrency_limit` starts at
//! `min_in_flight`, doubles while its destination keeps up and loses a
//! tenth on a 503, while a fixed route stays at `max_in_flight`; a
//! `Retry-After` pauses an adaptive route without cutting its limit; a
//! burst of 503s above the floor cuts the limit and leaves the breaker shut;
//! RouteService sets the keys and answers the limit in force.

use std::{collections::HashSet, time::Duration};

use hookd_sdk::client::{
    proto::{CreateRouteRequest, Route, UpdateRouteRequest},
    Code,
};
use hookd_server::testing::DeliveryEventKind;

use crate::{
    forward::{send, wait_event},
    harness::{tenant, TestServer},
    receiver::{Receiver, Reply},
    route_service::{create_tenant, new_route, LOCAL_DESTINATIONS},
    telemetry::{parse_metrics, scrape},
};

const WAIT: Duration = Duration::from_secs(10);

/// The route's `hookd_route_concurrency_limit` on `/metrics`.
async fn limit_of(s: &TestServer, tenant: &str) -> f64 {
    gauge_of(s, "hookd_route_concurrency_limit", tenant).await
}

/// The value of the route gauge `name` of `tenant`'s default route.
async fn gauge_of(s: &TestServer, name: &str, tenant: &str) -> f64 {
    let series = format!("{name}{{tenant=\"{tenant}\",route=\"default\"}}");
    let metrics = parse_metrics(&scrape(&s.base).await);
    *metrics
        .get(&series)
        .unwrap_or_else(|| panic!("no {series} in {metrics:?}"))
}

/// Sends three events to `tenant` one after the other, each delivered
/// before the next: an adaptive limit of 1 doubles to 2, then to 4.
async fn three_delivered(s: &TestServer, tenant: &str) {
    let mut feed = s.server().services().feed.subscribe();
    for i in 0..3 {
        let id = send(s, tenant, &format!("evt_ok_{i}")).await;
        wait_event(&mut feed, &id, DeliveryEventKind::Delivered).await;
    }
}

#[tokio::test]
async fn an_adaptive_limit_grows_while_answered_and_a_503_cuts_it_but_not_a_fixed_one() {
    let (busy, fixed) = (
        Receiver::start(Reply::Status(503)).await,
        Receiver::start(Reply::Status(503)).await,
    );
    busy.script([Reply::Status(204), Reply::Status(204), Reply::Status(204)]);
    let config = tenant(
        "shop",
        &busy.url,
        "max_in_flight = 8\nadaptive_concurrency = true",
        "",
        "",
    ) + &tenant("fixed", &fixed.url, "max_in_flight = 8", "", "");
    let s = TestServer::start(&config);
    let mut feed = s.server().services().feed.subscribe();
    let other = send(&s, "fixed", "evt_f").await;
    wait_event(&mut feed, &other, DeliveryEventKind::RetryScheduled).await;
    assert_eq!(limit_of(&s, "fixed").await, 8.0, "max_in_flight, fixed");
    three_delivered(&s, "shop").await;
    assert_eq!(limit_of(&s, "shop").await, 4.0, "1, doubled twice");
    let refused = send(&s, "shop", "evt_busy").await;
    wait_event(&mut feed, &refused, DeliveryEventKind::RetryScheduled).await;
    assert_eq!(
        limit_of(&s, "shop").await,
        3.0,
        "4 less a tenth, rounded down"
    );
}

#[tokio::test]
async fn a_retry_after_pauses_an_adaptive_route_and_leaves_its_limit() {
    let dest = Receiver::start(Reply::Status(204)).await;
    dest.script([
        Reply::Status(204),
        Reply::Status(204),
        Reply::Status(204),
        Reply::RetryAfter(503, "60".into()),
    ]);
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 8\nadaptive_concurrency = true",
        "",
        "",
    ));
    three_delivered(&s, "shop").await;
    let mut feed = s.server().services().feed.subscribe();
    let told = send(&s, "shop", "evt_told").await;
    wait_event(&mut feed, &told, DeliveryEventKind::RetryScheduled).await;
    send(&s, "shop", "evt_next").await;
    // The clock stands still: nothing new may start during the pause.
    let early = tokio::time::timeout(Duration::from_millis(500), dest.wait_for(5, WAIT)).await;
    assert!(early.is_err(), "a new attempt during the Retry-After pause");
    assert_eq!(
        limit_of(&s, "shop").await,
        4.0,
        "a Retry-After does not cut"
    );
    s.clock.advance_ms(60_000);
    // The retry of the told event and the next event, once it is over.
    dest.wait_for(6, WAIT).await;
}

#[tokio::test]
async fn a_burst_of_503s_above_the_floor_cuts_the_limit_and_leaves_the_breaker_shut() {
    let dest = Receiver::start(Reply::Status(503)).await;
    dest.script([Reply::Status(204), Reply::Status(204), Reply::Status(204)]);
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 8\nadaptive_concurrency = true",
        "",
        "",
    ));
    three_delivered(&s, "shop").await;
    assert_eq!(limit_of(&s, "shop").await, 4.0, "1, doubled twice");
    // Six 503s, more than the breaker's five: three cuts take the limit
    // from 4 to its floor of 1, so at most three of them count.
    let mut feed = s.server().services().feed.subscribe();
    let names: Vec<String> = (0..6).map(|i| format!("evt_busy_{i}")).collect();
    let ids: Vec<String> =
        futures_util::future::join_all(names.iter().map(|name| send(&s, "shop", name))).await;
    let mut failed = HashSet::new();
    while failed.len() < 5 {
        let event = tokio::time::timeout(WAIT, feed.recv())
            .await
            .expect("five 503s")
            .unwrap();
        let id = event.delivery_id.as_str().to_owned();
        if event.kind == DeliveryEventKind::RetryScheduled && ids.contains(&id) {
            failed.insert(id);
        }
    }
    assert_eq!(
        gauge_of(&s, "hookd_circuit_breaker_open", "shop").await,
        0.0,
        "five 503s above the floor opened the breaker"
    );
    for id in ids.iter().filter(|id| !failed.contains(*id)) {
        wait_event(&mut feed, id, DeliveryEventKind::RetryScheduled).await;
    }
    assert_eq!(dest.received().len(), 9, "every one of the six was sent");
    assert_eq!(
        gauge_of(&s, "hookd_circuit_breaker_open", "shop").await,
        0.0,
        "overload above the floor is not an outage"
    );
    assert!(
        limit_of(&s, "shop").await < 4.0,
        "the limit went down instead"
    );
}

#[tokio::test]
async fn create_and_update_route_answer_the_limit_in_force() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    create_tenant(&admin, "shop", "").await;
    let created = admin
        .create_route(CreateRouteRequest {
            max_in_flight: 6,
            ..new_route("shop", "audit", &dest.url, "")
        })
        .await
        .unwrap();
    assert_eq!(
        created.concurrency_limit, 6,
        "a fixed route's max_in_flight"
    );
    let updated = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "audit".into(),
            max_in_flight: Some(4),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(updated.concurrency_limit, 4, "the new max_in_flight");
}

#[tokio::test]
async fn route_service_creates_reads_and_updates_an_adaptive_route() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    create_tenant(&admin, "shop", "").await;
    let adaptive = CreateRouteRequest {
        max_in_flight: 8,
        adaptive_concurrency: true,
        min_in_flight: 3,
        latency_target_ms: 500,
        ..new_route("shop", "audit", &dest.url, "")
    };
    let keys = |r: &Route| {
        (
            r.adaptive_concurrency,
            r.min_in_flight,
            r.latency_target_ms,
            r.concurrency_limit,
        )
    };
    let created = admin.create_route(adaptive.clone()).await.unwrap();
    assert_eq!(keys(&created), (true, 3, 500, 3), "starts at its floor");
    let read = admin.get_route("shop", "audit").await.unwrap();
    let (adaptive_read, min, target, _) = keys(&read);
    assert_eq!((adaptive_read, min, target), (true, 3, 500), "read back");
    let change = |patch: UpdateRouteRequest| UpdateRouteRequest {
        tenant_id: "shop".into(),
        name: "audit".into(),
        ..patch
    };
    let updated = admin
        .update_route(change(UpdateRouteRequest {
            min_in_flight: Some(2),
            latency_target_ms: Some(0),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(keys(&updated), (true, 2, 0, 2), "0 removes the target");
    let fixed = admin
        .update_route(change(UpdateRouteRequest {
            adaptive_concurrency: Some(false),
            ..Default::default()
        }))
        .await
        .unwrap();
    assert_eq!(keys(&fixed), (false, 2, 0, 8), "a fixed limit");
    let too_high = CreateRouteRequest {
        name: "high".into(),
        min_in_flight: 9,
        ..adaptive.clone()
    };
    let slow = change(UpdateRouteRequest {
        latency_target_ms: Some(600_001),
        ..Default::default()
    });
    for (refused, field) in [
        (
            admin.create_route(too_high).await.unwrap_err(),
            "min_in_flight",
        ),
        (
            admin.update_route(slow).await.unwrap_err(),
            "latency_target_ms",
        ),
    ] {
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused}");
        let message = refused.status().unwrap().message().to_owned();
        assert!(message.starts_with(field), "{message}");
    }
    let unchanged = admin.get_route("shop", "audit").await.unwrap();
    let (adaptive_now, min, target, _) = keys(&unchanged);
    assert_eq!(
        (adaptive_now, min, target),
        (false, 2, 0),
        "a refusal changes nothing"
    );
    assert_eq!(admin.list_routes("shop").await.unwrap().len(), 2);
}
