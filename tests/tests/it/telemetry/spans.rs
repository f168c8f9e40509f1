//! Spans of an in-process hookd, read from an in-memory exporter: one trace
//! from the sender's `traceparent` through ingest, actor, durable write and
//! forward to the destination; duplicates and rejections marked.

use opentelemetry::trace::{SpanId, SpanKind, Status};
use reqwest::StatusCode;

use super::{attr, span_of, Traced, WAIT};
use crate::{
    harness::tenant,
    harness::{now_secs, order, signed, ACME},
    receiver::{Receiver, Reply},
};

#[tokio::test]
async fn one_trace_runs_from_the_sender_through_hookd_to_the_destination() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = Traced::start(&tenant("shop", &dest.url, "", "", ""));
    let (sender_trace, sender_span) = ("4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7");
    let body = order("evt_trace");
    let mut headers = signed("msg_trace", now_secs(), &body);
    headers.push((
        "traceparent".into(),
        format!("00-{sender_trace}-{sender_span}-01"),
    ));
    let (status, answer) = s.post("shop", &headers, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let (event_id, delivery_id, request_id) = (
        answer["event_id"].as_str().unwrap(),
        answer["delivery_id"].as_str().unwrap(),
        answer["request_id"].as_str().unwrap(),
    );
    let got = dest.wait_for(1, WAIT).await;
    let forward = s
        .wait_spans(1, |span| span.name == "hookd.forward")
        .await
        .remove(0);
    let spans = s.spans();

    let ingest = span_of(&spans, "hookd.ingest", request_id);
    let trace_id = ingest.span_context.trace_id();
    assert_eq!(
        trace_id.to_string(),
        sender_trace,
        "the sender's trace goes on"
    );
    assert_eq!(ingest.parent_span_id.to_string(), sender_span);
    assert!(ingest.parent_span_is_remote);
    assert_eq!(ingest.span_kind, SpanKind::Server);
    for (key, value) in [
        ("tenant", "shop"),
        ("event_id", event_id),
        ("delivery_id", delivery_id),
        ("request_id", request_id),
        ("scheme", "standard"),
        ("verification", "verified"),
        ("duplicate", "false"),
        ("http.response.status_code", "202"),
    ] {
        assert_eq!(attr(ingest, key).as_deref(), Some(value), "ingest {key}");
    }

    let child_of = |name: &str, parent: SpanId| {
        let found: Vec<_> = spans.iter().filter(|s| s.name == name).collect();
        assert_eq!(found.len(), 1, "one {name}: {spans:#?}");
        assert_eq!(found[0].span_context.trace_id(), trace_id, "{name} trace");
        assert_eq!(found[0].parent_span_id, parent, "{name} parent");
        found[0].span_context.span_id()
    };
    let actor = child_of("hookd.actor", ingest.span_context.span_id());
    child_of("hookd.commit", actor);

    assert_eq!(forward.span_context.trace_id(), trace_id, "same trace");
    assert_eq!(forward.parent_span_id, ingest.span_context.span_id());
    assert_eq!(forward.span_kind, SpanKind::Client);
    for (key, value) in [
        ("tenant", "shop"),
        ("event_id", event_id),
        ("delivery_id", delivery_id),
        ("request_id", request_id),
        ("attempt", "1"),
        ("server.address", "127.0.0.1"),
        ("outcome", "delivered"),
        ("http.response.status_code", "204"),
    ] {
        assert_eq!(attr(&forward, key).as_deref(), Some(value), "forward {key}");
    }
    assert!(attr(&forward, "duration_ms").is_some());

    let expected = format!("00-{trace_id}-{}-01", forward.span_context.span_id());
    assert_eq!(got[0].header("traceparent"), Some(expected.as_str()));
}

#[tokio::test]
async fn a_routes_forward_span_names_its_tenant_and_its_route() {
    let default_sink = Receiver::start(Reply::Status(204)).await;
    let audit_sink = Receiver::start(Reply::Status(204)).await;
    let config = tenant("shop", &default_sink.url, "", "", "")
        + &format!(
            "[[tenants.routes]]\nname = \"audit\"\n[tenants.routes.destination]\nurl = \"{}\"\nsecret = \"{}\"\n",
            audit_sink.url,
            crate::harness::DEST_SECRET
        );
    let s = Traced::start(&config);
    let body = order("evt_routed");
    let (status, answer) = s
        .post("shop", &signed("msg_routed", now_secs(), &body), &body)
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let audit_id = answer["deliveries"][1]["delivery_id"].as_str().unwrap();
    let forwards = s.wait_spans(2, |span| span.name == "hookd.forward").await;
    let audit = forwards
        .iter()
        .find(|span| attr(span, "hookd.delivery_id").as_deref() == Some(audit_id))
        .unwrap_or_else(|| panic!("no forward span of {audit_id}: {forwards:#?}"));
    for (key, value) in [("hookd.tenant", "shop"), ("hookd.route", "audit")] {
        assert_eq!(attr(audit, key).as_deref(), Some(value), "forward {key}");
    }
    let default = forwards
        .iter()
        .find(|span| attr(span, "hookd.delivery_id").as_deref() != Some(audit_id))
        .unwrap();
    assert_eq!(attr(default, "hookd.route").as_deref(), Some("default"));
}

#[tokio::test]
async fn duplicates_and_rejections_are_marked_on_their_ingest_span() {
    let s = Traced::start(ACME);
    let body = order("evt_dup");
    let ts = now_secs();
    let (first_status, first) = s.post("acme", &signed("msg_dup", ts, &body), &body).await;
    assert_eq!(first_status, StatusCode::ACCEPTED);
    let (again_status, again) = s.post("acme", &signed("msg_dup", ts, &body), &body).await;
    assert_eq!(again_status, StatusCode::OK);
    let mut tampered = body.clone();
    tampered[2] = b'X';
    let (bad_status, bad) = s
        .post("acme", &signed("msg_bad", ts, &body), &tampered)
        .await;
    assert_eq!(bad_status, StatusCode::UNAUTHORIZED);
    let (unknown_status, unknown) = s.post("nobody", &[], b"{}").await;
    assert_eq!(unknown_status, StatusCode::NOT_FOUND);

    let spans = s.wait_spans(4, |span| span.name == "hookd.ingest").await;
    let of = |answer: &serde_json::Value| {
        span_of(
            &spans,
            "hookd.ingest",
            answer["request_id"].as_str().unwrap(),
        )
    };
    let (first_span, dup_span) = (of(&first), of(&again));
    assert_eq!(attr(first_span, "duplicate").as_deref(), Some("false"));
    assert_eq!(attr(dup_span, "duplicate").as_deref(), Some("true"));
    assert_eq!(
        attr(dup_span, "http.response.status_code").as_deref(),
        Some("200")
    );
    assert_eq!(attr(dup_span, "event_id"), attr(first_span, "event_id"));
    assert_eq!(
        attr(dup_span, "delivery_id").as_deref(),
        first["delivery_id"].as_str(),
        "a duplicate points at the first delivery"
    );
    assert_eq!(
        first_span.parent_span_id,
        SpanId::INVALID,
        "no traceparent: a new trace"
    );
    assert_ne!(
        first_span.span_context.trace_id(),
        dup_span.span_context.trace_id()
    );

    let bad_span = of(&bad);
    assert_eq!(attr(bad_span, "verification").as_deref(), Some("failed"));
    assert_eq!(
        attr(bad_span, "error.code").as_deref(),
        Some("BAD_SIGNATURE")
    );
    assert_eq!(
        attr(bad_span, "http.response.status_code").as_deref(),
        Some("401")
    );
    assert!(attr(bad_span, "event_id").is_none(), "nothing was accepted");
    assert_eq!(
        bad_span.status,
        Status::Unset,
        "a 4xx is the sender's error"
    );

    let unknown_span = of(&unknown);
    assert_eq!(attr(unknown_span, "tenant").as_deref(), Some("nobody"));
    assert_eq!(
        attr(unknown_span, "verification").as_deref(),
        Some("not_checked")
    );
    assert_eq!(
        attr(unknown_span, "error.code").as_deref(),
        Some("TENANT_NOT_FOUND")
    );
}
