//! Routes over real HTTP: one accepted event fans out to every route of
//! its tenant whose filter it passes, each forwarding to its own destination with its own
//! delivery, in the same commit; a duplicate makes no new deliveries; a
//! hanging route holds up only its own deliveries.

use std::time::{Duration, Instant};

use hookd_sdk::signature::{verify, Scheme, Secret};
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
    let mut feed = s.server().registry().feed().subscribe();
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
    assert_eq!(
        sink.wait_for(1, WAIT).await.len(),
        1,
        "only the default route sent"
    );
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
