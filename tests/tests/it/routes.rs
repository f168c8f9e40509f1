//! Routes over real HTTP: one accepted event fans out to every route of
//! its tenant whose filter it passes, each forwarding to its own destination with its own
//! delivery, in the same commit; a duplicate makes no new deliveries; a
//! hanging route holds up only its own deliveries. An event no route
//! passes is stored as `unrouted`, a default route's filter that fails
//! leaves its delivery `filtered`, a transform's failure and drop are
//! statuses of their own, a transform that keeps overrunning its budget
//! backs off while its deliveries wait queued, and the forward metrics name
//! the route.

use std::time::{Duration, Instant};

use hookd_sdk::{
    client::proto::DeliveryStatus,
    signature::{verify, Scheme, Secret},
};
use hookd_server::testing::DeliveryEventKind;
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, DEST_SECRET},
    receiver::{Receiver, Reply},
};

const WAIT: Duration = Duration::from_secs(10);

/// A route of the last tenant forwarding to `url`.
fn route(name: &str, url: &str, top: &str) -> String {
    format!(
        "[[tenants.routes]]\nname = \"{name}\"\n{top}\n[tenants.routes.destination]\nurl = \"{url}\"\nsecret = \"{DEST_SECRET}\"\n"
    )
}

/// Posts event `id` to `shop`, signed at the server's clock.
async fn post(s: &TestServer, id: &str) -> crate::harness::Answer {
    let body = order(id);
    s.post("shop", &signed(id, s.clock_secs(), &body), &body)
        .await
}

#[tokio::test(flavor = "multi_thread")]
async fn one_event_fans_out_to_three_sinks_each_with_its_own_delivery() {
    let sinks = [
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(204)).await,
        Receiver::start(Reply::Status(202)).await,
    ];
    let config = tenant("shop", &sinks[0].url, "", "", "")
        + &route("audit", &sinks[1].url, "")
        + &route("crm", &sinks[2].url, "max_in_flight = 2");
    let s = TestServer::start_live(&config);
    let accepted = post(&s, "evt_fan").await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
    let deliveries = accepted.body["deliveries"].as_array().unwrap().clone();
    let routes: Vec<&str> = deliveries
        .iter()
        .map(|d| d["route"].as_str().unwrap())
        .collect();
    assert_eq!(routes, ["default", "audit", "crm"]);
    assert_eq!(deliveries[0]["delivery_id"], accepted.body["delivery_id"]);
    for (sink, delivery) in sinks.iter().zip(&deliveries) {
        let got = sink.wait_for(1, WAIT).await;
        assert_eq!(got[0].body.as_ref(), order("evt_fan").as_slice());
        assert_eq!(
            got[0].header("hookd-delivery-id"),
            delivery["delivery_id"].as_str(),
            "route {}",
            delivery["route"]
        );
    }

    let again = post(&s, "evt_fan").await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "a duplicate: {:?}",
        again.body
    );
    assert!(again.body.get("deliveries").is_none());
    tokio::time::sleep(Duration::from_millis(300)).await;
    for sink in &sinks {
        assert_eq!(sink.received().len(), 1, "no new delivery for a duplicate");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_filter_keeps_a_route_from_events_it_does_not_match() {
    let everything = Receiver::start(Reply::Status(200)).await;
    let big = Receiver::start(Reply::Status(200)).await;
    let filter = r#"filter = { body = { data = { amount = { "$gte" = 1000 } } }, headers = { "x-shop" = { "$startsWith" = "eu-" } } }"#;
    let config = tenant("shop", &everything.url, "", "", "") + &route("big", &big.url, filter);
    let s = TestServer::start_live(&config);
    let send = |id: &str, amount: u64, shop: &str| {
        let body =
            format!(r#"{{"event_id":"{id}","type":"order.paid","data":{{"amount":{amount}}}}}"#);
        let mut headers = signed(id, s.clock_secs(), body.as_bytes());
        headers.push(("x-shop".into(), shop.into()));
        (headers, body)
    };
    let (headers, body) = send("evt_small", 100, "eu-1");
    let small = s.post("shop", &headers, body.as_bytes()).await;
    assert_eq!(small.status, StatusCode::ACCEPTED);
    assert_eq!(small.body["filtered"], serde_json::json!(["big"]));
    assert_eq!(small.body["deliveries"].as_array().unwrap().len(), 1);
    let (headers, body) = send("evt_us", 5_000, "us-1");
    let us = s.post("shop", &headers, body.as_bytes()).await;
    assert_eq!(us.body["filtered"], serde_json::json!(["big"]));
    let (headers, body) = send("evt_big", 5_000, "eu-2");
    let matched = s.post("shop", &headers, body.as_bytes()).await;
    assert!(matched.body.get("filtered").is_none(), "{:?}", matched.body);
    let got = big.wait_for(1, WAIT).await;
    assert_eq!(got[0].header("webhook-id"), Some("evt_big"));
    everything.wait_for(3, WAIT).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(big.received().len(), 1, "only the event the filter matches");
}

/// A route whose transform is `code` (a TOML multi-line literal string).
fn transformed(name: &str, url: &str, code: &str) -> String {
    route(name, url, &format!("transform = '''\n{code}\n'''"))
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transform_rewrites_path_header_and_body_and_the_sink_gets_exactly_that() {
    let plain = Receiver::start(Reply::Status(200)).await;
    let shaped = Receiver::start(Reply::Status(200)).await;
    let code = r#"addHandler("transform", (request, context) => {
  request.path = request.path + "/" + request.body.type;
  request.query = "v=2";
  request.headers["x-route"] = context.route;
  request.body = { kind: request.body.type, cents: request.body.data.amount * 100 };
  return request;
});"#;
    let config = tenant("shop", &plain.url, "", "", "") + &transformed("shaped", &shaped.url, code);
    let s = TestServer::start_live(&config);
    assert_eq!(post(&s, "evt_t").await.status, StatusCode::ACCEPTED);
    let got = shaped.wait_for(1, WAIT).await;
    assert_eq!(got[0].path, "/hooks/order.paid?v=2");
    assert_eq!(got[0].header("x-route"), Some("shaped"));
    assert_eq!(
        got[0].body.as_ref(),
        br#"{"cents":10000,"kind":"order.paid"}"#
    );
    let secret = Secret::from_provider(Scheme::Standard, "dest", DEST_SECRET).unwrap();
    verify(
        Scheme::Standard,
        &got[0].headers,
        &got[0].body,
        &[secret],
        now_secs(),
        300,
    )
    .expect("signed as sent");
    let untouched = plain.wait_for(1, WAIT).await;
    assert_eq!(
        untouched[0].body.as_ref(),
        order("evt_t").as_slice(),
        "the other route gets the original"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_throwing_transform_dead_letters_its_delivery_as_transform_failed() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let code = r#"addHandler("transform", (request) => { throw new Error("no amount"); });"#;
    let config = tenant("shop", &sink.url, "", "", "") + &transformed("broken", &sink.url, code);
    let s = TestServer::start_live(&config);
    let mut feed = s.server().services().feed.subscribe();
    let accepted = post(&s, "evt_x").await;
    let broken = accepted.body["deliveries"][1]["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::forward::wait_event(&mut feed, &broken, DeliveryEventKind::DeadLettered).await;
    let admin = s.admin().await;
    let delivery = admin.get_delivery("shop", &broken).await.unwrap();
    let error = delivery.attempts[0].error.clone();
    assert!(error.starts_with("transform_failed: "), "{error}");
    assert!(error.contains("no amount"), "{error}");
    assert_eq!(delivery.status(), DeliveryStatus::TransformFailed);
    assert_eq!(
        sink.wait_for(1, WAIT).await.len(),
        1,
        "only the default route sent"
    );
    let metrics = s.get("/metrics").await.text().await.unwrap();
    let failed = r#"hookd_transform_runs_total{tenant="shop",route="broken",outcome="failed"} 1"#;
    assert!(metrics.contains(failed), "{metrics}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_dropping_transform_settles_its_delivery_as_dropped() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let other = Receiver::start(Reply::Status(200)).await;
    let code = r#"addHandler("transform", (request) => null);"#;
    let config = tenant("shop", &sink.url, "", "", "") + &transformed("picky", &other.url, code);
    let s = TestServer::start_live(&config);
    let mut feed = s.server().services().feed.subscribe();
    let accepted = post(&s, "evt_drop").await;
    let picky = accepted.body["deliveries"][1]["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned();
    crate::forward::wait_event(&mut feed, &picky, DeliveryEventKind::Delivered).await;
    let delivery = s.admin().await.get_delivery("shop", &picky).await.unwrap();
    assert_eq!(delivery.status(), DeliveryStatus::Dropped);
    let note = String::from_utf8_lossy(&delivery.attempts[0].response_body).into_owned();
    assert!(note.contains("dropped by the route's transform"), "{note}");
    let metrics = s.get("/metrics").await.text().await.unwrap();
    let dropped = r#"hookd_transform_runs_total{tenant="shop",route="picky",outcome="dropped"} 1"#;
    assert!(metrics.contains(dropped), "{metrics}");
    assert!(other.received().is_empty(), "nothing was sent");
}

/// The status of each of `ids`, in order.
async fn statuses(s: &TestServer, ids: &[String]) -> Vec<DeliveryStatus> {
    let admin = s.admin().await;
    let mut out = Vec::new();
    for id in ids {
        out.push(admin.get_delivery("shop", id).await.unwrap().status());
    }
    out
}

/// How many of `statuses` are `transform_failed`.
fn failed_count(statuses: &[DeliveryStatus]) -> usize {
    statuses
        .iter()
        .filter(|s| **s == DeliveryStatus::TransformFailed)
        .count()
}

#[tokio::test(flavor = "multi_thread")]
async fn a_transform_that_keeps_overrunning_backs_off_and_its_deliveries_wait_queued() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let spin = r#"addHandler("transform", (request) => { while (true) {} });"#;
    let top = format!("max_in_flight = 1\ntransform_cpu_ms = 5\ntransform = '''\n{spin}\n'''");
    let config = tenant("shop", &sink.url, "", "", "") + &route("spin", &sink.url, &top);
    let s = TestServer::start(&config);
    let mut feed = s.server().services().feed.subscribe();
    let mut ids = Vec::new();
    for n in 0..6 {
        let accepted = post(&s, &format!("evt_spin{n}")).await;
        assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
        let id = accepted.body["deliveries"][1]["delivery_id"].as_str();
        ids.push(id.unwrap().to_owned());
    }
    for id in &ids[..3] {
        crate::forward::wait_event(&mut feed, id, DeliveryEventKind::DeadLettered).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let now = statuses(&s, &ids).await;
    assert_eq!(
        failed_count(&now),
        3,
        "three overruns, then one run a second: {now:?}"
    );
    let waiting = now[3..].iter().all(|s| *s == DeliveryStatus::Pending);
    assert!(waiting, "the others wait, queued: {now:?}");

    s.clock.advance_ms(1000);
    crate::forward::wait_event(&mut feed, &ids[3], DeliveryEventKind::DeadLettered).await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    let later = statuses(&s, &ids).await;
    assert_eq!(
        failed_count(&later),
        4,
        "one more run a second later: {later:?}"
    );
    assert_eq!(
        sink.wait_for(6, WAIT).await.len(),
        6,
        "the default route is not held up"
    );
}

/// A filter no `order` passes.
const NEVER: &str = r#"filter = { body = { type = "never" } }"#;

#[tokio::test(flavor = "multi_thread")]
async fn an_event_no_route_passes_is_stored_as_unrouted_with_each_route_filtered() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let config = tenant("shop", &sink.url, NEVER, "", "") + &route("audit", &sink.url, NEVER);
    let s = TestServer::start_live(&config);
    let accepted = post(&s, "evt_none").await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
    assert_eq!(accepted.body["status"], "unrouted", "{:?}", accepted.body);
    assert_eq!(accepted.body["deliveries"], serde_json::json!([]));
    assert_eq!(
        accepted.body["filtered"],
        serde_json::json!(["default", "audit"])
    );
    let id = accepted.body["delivery_id"].as_str().unwrap().to_owned();
    let admin = s.admin().await;
    let unrouted = admin
        .list_all_deliveries("shop", DeliveryStatus::Unrouted)
        .await
        .unwrap();
    let listed: Vec<&str> = unrouted.iter().map(|d| d.delivery_id.as_str()).collect();
    assert_eq!(listed, [id.as_str()]);
    let delivery = admin.get_delivery("shop", &id).await.unwrap();
    assert_eq!(delivery.status(), DeliveryStatus::Unrouted);
    let routes: Vec<(&str, bool)> = delivery
        .routes
        .iter()
        .map(|r| (r.route.as_str(), r.filtered))
        .collect();
    assert_eq!(routes, [("default", true), ("audit", true)]);
    assert!(delivery.attempts.is_empty());
    let again = post(&s, "evt_none").await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "a duplicate: {:?}",
        again.body
    );
    assert_eq!(again.body["delivery_id"], id.as_str());
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(sink.received().is_empty(), "nothing is forwarded");
    let again = admin.redeliver_ids("shop", [id.as_str()]).await.unwrap();
    let got = sink.wait_for(1, WAIT).await;
    assert_eq!(got[0].header("hookd-delivery-id"), Some(again[0].as_str()));
    let original = admin.get_delivery("shop", &id).await.unwrap();
    assert_eq!(
        original.status(),
        DeliveryStatus::Unrouted,
        "kept as it was"
    );
    assert_eq!(original.redelivered_as, again[0]);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_failing_default_filter_leaves_its_delivery_filtered_while_another_route_delivers() {
    let default_sink = Receiver::start(Reply::Status(200)).await;
    let audit_sink = Receiver::start(Reply::Status(200)).await;
    let config =
        tenant("shop", &default_sink.url, NEVER, "", "") + &route("audit", &audit_sink.url, "");
    let s = TestServer::start_live(&config);
    let accepted = post(&s, "evt_some").await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
    assert!(accepted.body.get("status").is_none(), "{:?}", accepted.body);
    assert_eq!(accepted.body["filtered"], serde_json::json!(["default"]));
    let deliveries = accepted.body["deliveries"].as_array().unwrap().clone();
    assert_eq!(deliveries.len(), 1, "{deliveries:?}");
    assert_eq!(deliveries[0]["route"], "audit");
    let audit_id = deliveries[0]["delivery_id"].as_str().unwrap().to_owned();
    let got = audit_sink.wait_for(1, WAIT).await;
    assert_eq!(got[0].header("hookd-delivery-id"), Some(audit_id.as_str()));
    let id = accepted.body["delivery_id"].as_str().unwrap();
    let admin = s.admin().await;
    let delivery = admin.get_delivery("shop", id).await.unwrap();
    assert_eq!(delivery.status(), DeliveryStatus::Filtered);
    let routes: Vec<(&str, &str, bool)> = delivery
        .routes
        .iter()
        .map(|r| (r.route.as_str(), r.delivery_id.as_str(), r.filtered))
        .collect();
    assert_eq!(
        routes,
        [("default", id, true), ("audit", audit_id.as_str(), false)]
    );
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(
        default_sink.received().is_empty(),
        "the default route sent nothing"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn forward_metrics_carry_the_tenant_and_the_route() {
    let sinks = [
        Receiver::start(Reply::Status(200)).await,
        Receiver::start(Reply::Status(200)).await,
    ];
    let config = tenant("shop", &sinks[0].url, "", "", "") + &route("audit", &sinks[1].url, "");
    let s = TestServer::start_live(&config);
    assert_eq!(post(&s, "evt_m").await.status, StatusCode::ACCEPTED);
    for sink in &sinks {
        sink.wait_for(1, WAIT).await;
    }
    let lines: Vec<String> = ["default", "audit"]
        .iter()
        .flat_map(|route| {
            [
                format!(r#"hookd_forward_attempts_total{{tenant="shop",route="{route}",outcome="delivered"}} 1"#),
                format!(r#"hookd_forward_duration_seconds_count{{tenant="shop",route="{route}"}} 1"#),
            ]
        })
        .collect();
    let deadline = Instant::now() + WAIT;
    let metrics = loop {
        let metrics = s.get("/metrics").await.text().await.unwrap();
        if lines.iter().all(|line| metrics.contains(line.as_str())) {
            break metrics;
        }
        assert!(Instant::now() < deadline, "{lines:?} in {metrics}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert!(!metrics.contains("shop~audit"), "{metrics}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hanging_route_holds_up_only_its_own_deliveries() {
    let healthy = Receiver::start(Reply::Status(200)).await;
    let hanging = Receiver::start(Reply::Hang(Duration::from_secs(30))).await;
    let config = tenant("shop", &healthy.url, "", "", "")
        + &route("slow", &hanging.url, "max_in_flight = 2");
    let s = TestServer::start_live(&config);
    let mut worst = Duration::ZERO;
    for i in 0..20 {
        let sent = Instant::now();
        assert_eq!(
            post(&s, &format!("evt_{i}")).await.status,
            StatusCode::ACCEPTED
        );
        healthy.wait_for(i + 1, WAIT).await;
        worst = worst.max(sent.elapsed());
    }
    assert!(
        worst < Duration::from_secs(2),
        "the healthy route's worst ingest-to-delivery latency {worst:?}"
    );
    assert_eq!(
        hanging.received().len(),
        2,
        "the hanging route stays within its own 2 slots"
    );
}
