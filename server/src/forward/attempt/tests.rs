use hookd_sdk::signature::Secret;

use super::*;
use crate::{
    egress::AddressPolicy,
    ids::{DeliveryId, EventId},
    store::records::EventMeta,
};

fn settings(url: &str) -> ForwardSettings {
    ForwardSettings {
        url: url.into(),
        secret: Secret::from_provider(Scheme::Standard, "d", "whsec_AAAA").unwrap(),
        timeout: Duration::from_secs(5),
        connect_timeout: Duration::from_secs(5),
        schedule_ms: vec![1_000],
        window_ms: 60_000,
        jitter: 0.0,
        max_in_flight: 1,
        delivery_rate: None,
        breaker_threshold: 5,
        breaker_cooldown_ms: 30_000,
        concurrency: crate::config::ConcurrencySettings::FIXED,
        address_policy: None,
        transform: None,
        ca_certs: Vec::new(),
    }
}

fn event(event_id: &str) -> StoredEvent {
    StoredEvent {
        meta: EventMeta {
            event_id: EventId::new(event_id),
            delivery_id: DeliveryId::new("dlv_1"),
            request_id: RequestId::generate(),
            received_at_ms: 0,
            headers: Vec::new(),
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        },
        body: b"{}".to_vec(),
    }
}

/// An attempt claimed under a lease ends [`LEASE_MARGIN`] before it:
/// its timeout is the destination's cut to what is left, and it is not
/// sent once nothing is.
#[test]
fn an_attempt_under_a_lease_is_timed_out_before_the_lease_ends() {
    let (asked, timeout) = (Instant::now(), Duration::from_secs(30));
    let by = send_by(asked, Duration::from_secs(15));
    assert_eq!(by, asked + Duration::from_secs(14));
    assert_eq!(time_left(timeout, None, asked), Some(timeout));
    assert_eq!(
        time_left(timeout, Some(by), asked),
        Some(Duration::from_secs(14))
    );
    let late = asked + Duration::from_secs(10);
    assert_eq!(
        time_left(timeout, Some(by), late),
        Some(Duration::from_secs(4))
    );
    let short = Duration::from_secs(2);
    assert_eq!(
        time_left(short, Some(by), asked),
        Some(short),
        "a shorter timeout stands"
    );
    assert_eq!(time_left(timeout, Some(by), by), None);
    assert_eq!(
        time_left(timeout, Some(by), by + Duration::from_secs(1)),
        None
    );
    assert_eq!(
        send_by(asked, Duration::from_millis(500)),
        asked,
        "a lease about to end"
    );
}

/// A destination that never answers holds an attempt under a lease only
/// until its `send_by`, far below the destination's 30 s timeout; one
/// whose `send_by` passed is not sent at all.
#[tokio::test]
async fn a_hanging_destination_is_cut_off_at_the_leases_deadline() {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}/hooks", listener.local_addr().unwrap());
    let held = tokio::spawn(async move {
        let mut open = Vec::new();
        loop {
            let (conn, _) = listener.accept().await.unwrap();
            open.push(conn);
        }
    });
    let mut settings = settings(&url);
    settings.timeout = Duration::from_secs(30);
    let client = reqwest::Client::new();
    let started = Instant::now();
    let by = send_by(started, Duration::from_millis(1_500));
    let result = send(&client, &settings, &event("evt_ok"), (1, 0), &[], Some(by))
        .await
        .expect("sent while the lease lasts");
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(450) && took < Duration::from_secs(5),
        "{took:?}"
    );
    assert!(matches!(result.verdict, Verdict::Retryable { .. }));
    assert!(
        result.error.starts_with("timeout after 0.")
            && result
                .error
                .ends_with("before the forwarding lease it was sent under ends"),
        "{}",
        result.error
    );
    let past = send(
        &client,
        &settings,
        &event("evt_ok"),
        (1, 0),
        &[],
        Some(Instant::now()),
    )
    .await;
    assert!(past.is_none(), "nothing is sent past its deadline");
    held.abort();
}

/// A destination that counts the connections it accepts.
fn counting_listener() -> (String, std::net::TcpListener) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    (
        format!("http://{}/hooks", listener.local_addr().unwrap()),
        listener,
    )
}

#[tokio::test]
async fn a_request_that_cannot_be_built_is_permanent_and_never_sent() {
    let (url, listener) = counting_listener();
    let client = reqwest::Client::new();
    for (settings, event, what) in [
        (
            settings(&url),
            event("evt\nsplit"),
            "event id with a newline",
        ),
        (
            settings(&url),
            event("evt\u{7}bell"),
            "event id with a control character",
        ),
        (
            settings("http://exa mple.com/hooks"),
            event("evt_ok"),
            "invalid URL",
        ),
    ] {
        let result = send(&client, &settings, &event, (1, 0), &[], None)
            .await
            .expect("without a lease it is sent");
        assert_eq!(
            result.verdict,
            Verdict::Unsendable,
            "{what}: a request-building error must not be retried: {}",
            result.error
        );
        assert!(
            result.error.starts_with("request could not be built"),
            "{what}: {}",
            result.error
        );
        assert_eq!(result.record.status_code, None, "{what}");
    }
    assert!(
        listener.accept().is_err(),
        "nothing may reach the destination"
    );
}

#[tokio::test]
async fn a_denied_literal_address_is_never_contacted_even_when_already_stored() {
    let (url, listener) = counting_listener();
    let mut settings = settings(&url);
    settings.address_policy = Some(std::sync::Arc::new(AddressPolicy::default()));
    let result = send(
        &reqwest::Client::new(),
        &settings,
        &event("evt_ok"),
        (1, 0),
        &[],
        None,
    )
    .await
    .expect("without a lease it is sent");
    assert_eq!(result.verdict, Verdict::Unsendable, "{}", result.error);
    assert_eq!(
        result.error,
        "destination address not allowed (127.0.0.1 is loopback)"
    );
    assert!(listener.accept().is_err(), "nothing may reach 127.0.0.1");
    drop(listener);

    settings.address_policy = Some(std::sync::Arc::new(AddressPolicy::new(vec![
        "127.0.0.1/32".parse().unwrap(),
    ])));
    let result = send(
        &reqwest::Client::new(),
        &settings,
        &event("evt_ok"),
        (1, 0),
        &[],
        None,
    )
    .await
    .expect("without a lease it is sent");
    assert!(
        result.error.starts_with("could not connect"),
        "allowed, so tried: {}",
        result.error
    );
}
