//! Forwarding through real HTTP to fake destinations on 127.0.0.1. Retry
//! schedules, Retry-After, breaker cooldowns and delivery rates run on the
//! test's clock, which the tests move; the first test and the hanging
//! destination run end to end on the system clock.

use std::time::{Duration, Instant};

use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use hookd_sdk::signature::{verify, Scheme, Secret};
use hookd_server::testing::{DeliveryEvent, DeliveryEventKind};
use reqwest::StatusCode;
use sha2::Sha256;
use tokio::sync::broadcast;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, DEST_SECRET, NOW},
    receiver::{Received, Receiver, Reply},
};

const WAIT: Duration = Duration::from_secs(10);

/// Sends one signed event to `tenant` and returns its delivery id.
pub async fn send(s: &TestServer, tenant: &str, event_id: &str) -> String {
    let body = order(event_id);
    let a = s
        .post(tenant, &signed(event_id, s.clock_secs(), &body), &body)
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    a.body["delivery_id"].as_str().unwrap().to_owned()
}

/// Waits for the feed to report `kind` for `delivery_id`.
pub async fn wait_event(
    feed: &mut broadcast::Receiver<DeliveryEvent>,
    delivery_id: &str,
    kind: DeliveryEventKind,
) -> DeliveryEvent {
    let deadline = Instant::now() + WAIT;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let event = tokio::time::timeout(left, feed.recv())
            .await
            .unwrap_or_else(|_| panic!("no {kind:?} for {delivery_id}"))
            .unwrap();
        if event.delivery_id.as_str() == delivery_id && event.kind == kind {
            return event;
        }
    }
}

#[tokio::test]
async fn delivered_once_byte_for_byte_and_signed_for_the_tenant() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start_live(&tenant("shop", &dest.url, "", "", ""));
    let mut feed = s.server().services().feed.subscribe();
    let body = order("evt_fwd");
    let a = s
        .post("shop", &signed("msg_fwd", now_secs(), &body), &body)
        .await;
    let delivery_id = a.body["delivery_id"].as_str().unwrap();
    wait_event(&mut feed, delivery_id, DeliveryEventKind::Delivered).await;

    let got = dest.received();
    assert_eq!(got.len(), 1);
    let r = &got[0];
    assert_eq!(
        r.body.as_ref(),
        body.as_slice(),
        "body forwarded byte for byte"
    );
    assert_eq!(r.header("webhook-id"), Some("msg_fwd"));
    assert_eq!(r.header("hookd-attempt"), Some("1"));
    assert_eq!(r.header("hookd-delivery-id"), Some(delivery_id));
    assert_eq!(r.header("content-type"), Some("application/json"));
    let traceparent = r.header("traceparent").unwrap();
    assert!(
        traceparent.starts_with("00-") && traceparent.len() == 55,
        "{traceparent}"
    );

    // The SDK's verifier accepts it with the destination secret...
    let secret = Secret::from_provider(Scheme::Standard, "dest", DEST_SECRET).unwrap();
    let verified = verify(
        Scheme::Standard,
        &r.headers,
        &r.body,
        &[secret],
        now_secs(),
        300,
    )
    .unwrap();
    assert_eq!(verified.header_event_id.as_deref(), Some("msg_fwd"));

    // ...and so does the Standard Webhooks rule written out by hand:
    // base64(HMAC-SHA256(base64decode(secret), "id.timestamp.body")).
    let key = base64::engine::general_purpose::STANDARD
        .decode(DEST_SECRET.trim_start_matches("whsec_"))
        .unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("msg_fwd.{}.", r.header("webhook-timestamp").unwrap()).as_bytes());
    mac.update(&r.body);
    let expected = format!(
        "v1,{}",
        base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes())
    );
    assert_eq!(r.header("webhook-signature"), Some(expected.as_str()));

    tokio::time::sleep(Duration::from_millis(300)).await;
    assert_eq!(dest.received().len(), 1, "delivered exactly once");
}

/// The `webhook-timestamp` hookd signed a forward with: the server clock's
/// second when the attempt was made.
fn sent_at(r: &Received) -> i64 {
    r.header("webhook-timestamp").unwrap().parse().unwrap()
}

#[tokio::test]
async fn server_error_is_retried_then_delivered() {
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::Status(503)]);
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", "schedule_secs = [60]"));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_503").await;
    let retry = wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
    assert_eq!(retry.status_code, Some(503));
    s.clock.advance_ms(60_000);
    let done = wait_event(&mut feed, &id, DeliveryEventKind::Delivered).await;
    assert_eq!(done.attempt, 2);
    let got = dest.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].header("hookd-attempt"), Some("2"));
    assert_eq!(got[0].header("webhook-id"), got[1].header("webhook-id"));
    assert_eq!(sent_at(&got[1]), NOW + 60, "retried on the schedule");
}

#[tokio::test]
async fn client_error_dead_letters_after_exactly_one_attempt() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 1",
        "",
        "schedule_secs = [60]",
    ));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_400").await;
    let dead = wait_event(&mut feed, &id, DeliveryEventKind::DeadLettered).await;
    assert!(dead.reason.as_deref().unwrap().contains("400"), "{dead:?}");
    // Past the schedule, one slot: a retry of evt_400 would be due before
    // the marker and sent ahead of it.
    s.clock.advance_ms(120_000);
    let marker = send(&s, "shop", "evt_marker").await;
    wait_event(&mut feed, &marker, DeliveryEventKind::DeadLettered).await;
    let ids: Vec<_> = dest
        .received()
        .iter()
        .map(|r| r.header("webhook-id").unwrap().to_owned())
        .collect();
    assert_eq!(ids, ["evt_400", "evt_marker"]);
}

#[tokio::test]
async fn retry_after_is_honoured() {
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::RetryAfter(429, "120".into())]);
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_in_flight = 1",
        "",
        "schedule_secs = [1]",
    ));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_429").await;
    wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
    // Past the schedule's 1 s: a retry due then would go before the marker.
    s.clock.advance_ms(2_000);
    let marker = send(&s, "shop", "evt_marker").await;
    wait_event(&mut feed, &marker, DeliveryEventKind::Delivered).await;
    assert_eq!(dest.received().len(), 2, "no retry before Retry-After");
    s.clock.advance_ms(118_000);
    wait_event(&mut feed, &id, DeliveryEventKind::Delivered).await;
    let got = dest.received();
    assert_eq!(got[2].header("webhook-id"), Some("evt_429"));
    assert_eq!(
        sent_at(&got[2]),
        NOW + 120,
        "second attempt after Retry-After: 120"
    );
}

#[tokio::test]
async fn timeouts_are_retried() {
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::Hang(Duration::from_secs(3))]);
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "",
        "timeout_secs = 0.3",
        "schedule_secs = [60]",
    ));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_slow").await;
    let retry = wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
    assert!(
        retry.reason.as_deref().unwrap().contains("timeout"),
        "{retry:?}"
    );
    s.clock.advance_ms(60_000);
    wait_event(&mut feed, &id, DeliveryEventKind::Delivered).await;
}

#[tokio::test]
async fn exhausted_window_dead_letters_with_the_last_reason() {
    let dest = Receiver::start(Reply::Status(502)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "",
        "",
        "schedule_secs = [10]\nwindow_secs = 35",
    ));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_window").await;
    // Attempts at 0, 10, 20 and 30 s; a fifth at 40 s lies past the window.
    for _ in 0..3 {
        wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
        s.clock.advance_ms(10_000);
    }
    let dead = wait_event(&mut feed, &id, DeliveryEventKind::DeadLettered).await;
    let reason = dead.reason.unwrap();
    assert!(
        reason.contains("window exhausted after 4 attempts") && reason.contains("502"),
        "{reason}"
    );
    let sent: Vec<i64> = dest.received().iter().map(sent_at).collect();
    assert_eq!(sent, [NOW, NOW + 10, NOW + 20, NOW + 30]);
}

#[tokio::test]
async fn dead_letter_is_redelivered_as_a_new_delivery() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let s = TestServer::start_live(&tenant("shop", &dest.url, "", "", ""));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_redo").await;
    wait_event(&mut feed, &id, DeliveryEventKind::DeadLettered).await;

    dest.set_default(Reply::Status(200));
    let old = hookd_server::ids::DeliveryId::new(id.clone());
    let new_id = s.server().registry().redeliver("shop", &old).unwrap();
    assert_ne!(new_id.as_str(), id);
    wait_event(&mut feed, new_id.as_str(), DeliveryEventKind::Delivered).await;
    let got = dest.received();
    assert_eq!(got.len(), 2);
    assert_eq!(got[1].header("webhook-id"), Some("evt_redo"));
    assert_eq!(got[1].header("hookd-delivery-id"), Some(new_id.as_str()));
    let again = s.server().registry().redeliver("shop", &old);
    assert!(
        again.is_err(),
        "a redelivered dead letter is not redelivered twice"
    );
}

#[tokio::test]
async fn circuit_breaker_pauses_a_failing_destination() {
    let dest = Receiver::start(Reply::Status(503)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "breaker = { failure_threshold = 2, cooldown_secs = 600 }",
        "",
        "schedule_secs = [1]",
    ));
    let mut feed = s.server().services().feed.subscribe();
    let id = send(&s, "shop", "evt_cb").await;
    wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
    s.clock.advance_ms(1_000);
    let second = wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
    assert_eq!(second.attempt, 2, "second attempt follows the schedule");
    // The retry is due, but the breaker opened at the second failure. Time
    // stands still while the receiver is watched, so nothing may arrive.
    s.clock.advance_ms(300_000);
    let early = tokio::time::timeout(Duration::from_millis(500), dest.wait_for(3, WAIT)).await;
    assert!(early.is_err(), "an attempt half-way through the cooldown");
    s.clock.advance_ms(300_000);
    let got = dest.wait_for(3, WAIT).await;
    assert_eq!(
        sent_at(&got[2]) - sent_at(&got[1]),
        600,
        "the breaker pauses for its cooldown"
    );
}

#[tokio::test]
async fn a_hanging_destination_does_not_delay_another_tenant() {
    let slow = Receiver::start(Reply::Hang(Duration::from_secs(30))).await;
    let fast = Receiver::start(Reply::Status(200)).await;
    let config = tenant("slow", &slow.url, "max_in_flight = 4", "", "")
        + &tenant("fast", &fast.url, "", "", "");
    let s = TestServer::start_live(&config);
    for i in 0..20 {
        send(&s, "slow", &format!("slow_{i}")).await;
    }
    slow.wait_for(4, WAIT).await;
    let started = Instant::now();
    let mut worst = Duration::ZERO;
    for i in 0..20 {
        let sent = Instant::now();
        send(&s, "fast", &format!("fast_{i}")).await;
        fast.wait_for(i + 1, WAIT).await;
        worst = worst.max(sent.elapsed());
    }
    assert!(
        worst < Duration::from_secs(2),
        "healthy tenant's worst ingest-to-delivery latency {worst:?}"
    );
    assert_eq!(
        slow.received().len(),
        4,
        "the slow tenant stays within its own 4 slots"
    );
    println!(
        "healthy tenant: 20 deliveries in {:?}, worst {worst:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn delivery_rate_spaces_out_forwards() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "delivery_rate = { per_sec = 1.0, burst = 1 }",
        "",
        "",
    ));
    for i in 0..4 {
        send(&s, "shop", &format!("evt_rate_{i}")).await;
    }
    for n in 1..4 {
        dest.wait_for(n, WAIT).await;
        s.clock.advance_ms(1_000);
    }
    let mut sent: Vec<i64> = dest.wait_for(4, WAIT).await.iter().map(sent_at).collect();
    sent.sort();
    assert_eq!(
        sent,
        [NOW, NOW + 1, NOW + 2, NOW + 3],
        "4 forwards at 1/s with burst 1"
    );
}

/// With no span exporter (the harness sets none) the destination still gets
/// the sender's trace and sampling decision, under a span id of hookd's
/// own; without a `traceparent`, a new sampled trace.
#[tokio::test]
async fn without_an_exporter_the_destination_gets_the_senders_trace_and_sampling() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start_live(&tenant("shop", &dest.url, "", "", ""));
    let mut feed = s.server().services().feed.subscribe();
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    for (event_id, flags) in [
        ("evt_unsampled", Some("00")),
        ("evt_sampled", Some("01")),
        ("evt_untraced", None),
    ] {
        let body = order(event_id);
        let mut headers = signed(event_id, now_secs(), &body);
        if let Some(flags) = flags {
            let parent = format!("00-{trace}-00f067aa0ba902b7-{flags}");
            headers.push(("traceparent".into(), parent));
        }
        let a = s.post("shop", &headers, &body).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
        let delivery_id = a.body["delivery_id"].as_str().unwrap();
        wait_event(&mut feed, delivery_id, DeliveryEventKind::Delivered).await;
        let got = dest.received();
        let r = got.last().unwrap();
        let sent = r.header("traceparent").unwrap();
        let parts: Vec<&str> = sent.split('-').collect();
        assert_eq!(parts.len(), 4, "{sent}");
        assert_ne!(
            parts[2], "00f067aa0ba902b7",
            "a span id of hookd's own: {sent}"
        );
        assert_ne!(parts[2], "0000000000000000", "{sent}");
        match flags {
            Some(flags) => assert_eq!((parts[1], parts[3]), (trace, flags), "{sent}"),
            None => {
                assert_ne!(parts[1], "00000000000000000000000000000000", "{sent}");
                assert_eq!(parts[3], "01", "{sent}");
            }
        }
    }
}
