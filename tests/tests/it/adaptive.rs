//! Adaptive concurrency seen from outside (docs/routes.md#adaptive-concurrency):
//! `hookd_route_concurrency_limit` loses a tenth on a 503 of an adaptive route and
//! stays at `max_in_flight` on a fixed one; a `Retry-After` pauses an
//! adaptive route without cutting its limit.

use std::time::Duration;

use hookd_server::testing::DeliveryEventKind;

use crate::{
    forward::{send, wait_event},
    harness::{tenant, TestServer},
    receiver::{Receiver, Reply},
    telemetry::{parse_metrics, scrape},
};

const WAIT: Duration = Duration::from_secs(10);

/// The route's `hookd_route_concurrency_limit` on `/metrics`.
async fn limit_of(s: &TestServer, tenant: &str) -> f64 {
    let series = format!("hookd_route_concurrency_limit{{tenant=\"{tenant}\",route=\"default\"}}");
    let metrics = parse_metrics(&scrape(&s.base).await);
    *metrics
        .get(&series)
        .unwrap_or_else(|| panic!("no {series} in {metrics:?}"))
}

#[tokio::test]
async fn a_503_cuts_an_adaptive_routes_limit_and_leaves_a_fixed_one() {
    let (busy, fixed) = (
        Receiver::start(Reply::Status(503)).await,
        Receiver::start(Reply::Status(503)).await,
    );
    let config = tenant(
        "shop",
        &busy.url,
        "max_in_flight = 8\nadaptive_concurrency = true",
        "",
        "",
    ) + &tenant("fixed", &fixed.url, "max_in_flight = 8", "", "");
    let s = TestServer::start(&config);
    let mut feed = s.server().registry().feed().subscribe();
    let (shop, other) = (
        send(&s, "shop", "evt_a").await,
        send(&s, "fixed", "evt_f").await,
    );
    wait_event(&mut feed, &shop, DeliveryEventKind::RetryScheduled).await;
    wait_event(&mut feed, &other, DeliveryEventKind::RetryScheduled).await;
    assert_eq!(
        limit_of(&s, "shop").await,
        7.0,
        "8 less a tenth, rounded down"
    );
    assert_eq!(limit_of(&s, "fixed").await, 8.0, "max_in_flight, fixed");
}

#[tokio::test]
async fn a_retry_after_pauses_an_adaptive_route_and_leaves_its_limit() {
    let dest = Receiver::start(Reply::Status(204)).await;
    dest.script([Reply::RetryAfter(503, "60".into())]);
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 8\nadaptive_concurrency = true",
        "",
        "",
    ));
    let mut feed = s.server().registry().feed().subscribe();
    let first = send(&s, "shop", "evt_first").await;
    wait_event(&mut feed, &first, DeliveryEventKind::RetryScheduled).await;
    send(&s, "shop", "evt_second").await;
    // The clock stands still: nothing new may start during the pause.
    let early = tokio::time::timeout(Duration::from_millis(500), dest.wait_for(2, WAIT)).await;
    assert!(early.is_err(), "a new attempt during the Retry-After pause");
    assert_eq!(
        limit_of(&s, "shop").await,
        8.0,
        "a Retry-After does not cut"
    );
    s.clock.advance_ms(60_000);
    // The retry of the first event and the second event, once it is over.
    dest.wait_for(3, WAIT).await;
}
