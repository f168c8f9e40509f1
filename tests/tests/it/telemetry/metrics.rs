//! `/metrics` after a scripted mix of deliveries: every counter exact, the
//! storage gauges right, and tenant labels bounded whatever senders post.

use std::collections::BTreeMap;

use hookd_server::testing::DeliveryEventKind;
use reqwest::StatusCode;

use super::{parse_metrics, scrape, WAIT};
use crate::{
    harness::tenant,
    harness::{now_secs, order, signed, TestServer, ACME},
    receiver::{Receiver, Reply},
};

/// Waits until the feed has reported `n` events of `kind` for `tenant`.
async fn wait_kind(
    feed: &mut tokio::sync::broadcast::Receiver<hookd_server::testing::DeliveryEvent>,
    seen: &mut Vec<(String, DeliveryEventKind)>,
    tenant: &str,
    kind: DeliveryEventKind,
    n: usize,
) {
    let count = |seen: &Vec<(String, DeliveryEventKind)>| {
        seen.iter()
            .filter(|(t, k)| t == tenant && *k == kind)
            .count()
    };
    while count(seen) < n {
        let event = tokio::time::timeout(WAIT, feed.recv())
            .await
            .unwrap_or_else(|_| panic!("{n} {kind:?} for {tenant}; saw {seen:?}"))
            .unwrap();
        seen.push((event.tenant.to_string(), event.kind));
    }
}

#[tokio::test]
async fn counters_match_a_scripted_mix_exactly() {
    let shop_dest = Receiver::start(Reply::Status(200)).await;
    shop_dest.script([Reply::Status(503)]);
    let sink_dest = Receiver::start(Reply::Status(400)).await;
    let config = format!(
        "{ACME}{}{}",
        tenant("shop", &shop_dest.url, "", "", "schedule_secs = [0.05]"),
        tenant("sink", &sink_dest.url, "", "", ""),
    );
    let s = TestServer::start_live(&config);
    let mut feed = s.server().services().feed.subscribe();
    let ts = now_secs();
    let post = |tenant: &'static str, id: String, ts: i64, body: Vec<u8>, sent: Vec<u8>| {
        let s = &s;
        async move { s.post(tenant, &signed(&id, ts, &body), &sent).await.status }
    };

    for i in 0..3 {
        let body = order(&format!("evt_shop_{i}"));
        let status = post("shop", format!("msg_shop_{i}"), ts, body.clone(), body).await;
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let body = order("evt_shop_0");
    let status = post("shop", "msg_shop_0".into(), ts, body.clone(), body).await;
    assert_eq!(status, StatusCode::OK, "a duplicate");
    for i in 0..2 {
        let body = order(&format!("evt_acme_{i}"));
        let status = post("acme", format!("msg_acme_{i}"), ts, body.clone(), body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "pull mode: stays queued");
    }
    let body = order("evt_sink");
    let status = post("sink", "msg_sink".into(), ts, body.clone(), body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "its destination answers 400");

    let body = order("evt_bad");
    let mut tampered = body.clone();
    tampered[2] = b'X';
    for _ in 0..2 {
        let status = post("shop", "msg_bad".into(), ts, body.clone(), tampered.clone()).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED);
    }
    let status = post(
        "shop",
        "msg_old".into(),
        ts - 3600,
        body.clone(),
        body.clone(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let status = post(
        "shop",
        "msg_json".into(),
        ts,
        b"nope".to_vec(),
        b"nope".to_vec(),
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    for random in ["zz-1", "zz-2"] {
        assert_eq!(
            s.post(random, &[], b"{}").await.status,
            StatusCode::NOT_FOUND
        );
    }

    let mut seen = Vec::new();
    wait_kind(
        &mut feed,
        &mut seen,
        "shop",
        DeliveryEventKind::Delivered,
        3,
    )
    .await;
    wait_kind(
        &mut feed,
        &mut seen,
        "sink",
        DeliveryEventKind::DeadLettered,
        1,
    )
    .await;

    let text = scrape(&s.base).await;
    let m = parse_metrics(&text);
    let expect = |series: &str, value: f64| {
        assert_eq!(m.get(series).copied(), Some(value), "{series} in\n{text}");
    };
    for (tenant, accepted, duplicates) in [
        ("shop", 3.0, 1.0),
        ("acme", 2.0, 0.0),
        ("sink", 1.0, 0.0),
        ("other", 0.0, 0.0),
    ] {
        expect(
            &format!("hookd_deliveries_accepted_total{{tenant=\"{tenant}\"}}"),
            accepted,
        );
        expect(
            &format!("hookd_deliveries_duplicate_total{{tenant=\"{tenant}\"}}"),
            duplicates,
        );
    }
    let rejected: BTreeMap<&str, f64> = m
        .iter()
        .filter(|(k, v)| k.starts_with("hookd_deliveries_rejected_total") && **v > 0.0)
        .map(|(k, v)| (k.as_str(), *v))
        .collect();
    assert_eq!(
        rejected,
        BTreeMap::from([
            (
                "hookd_deliveries_rejected_total{tenant=\"other\",code=\"TENANT_NOT_FOUND\"}",
                2.0
            ),
            (
                "hookd_deliveries_rejected_total{tenant=\"shop\",code=\"BAD_SIGNATURE\"}",
                2.0
            ),
            (
                "hookd_deliveries_rejected_total{tenant=\"shop\",code=\"INVALID_JSON\"}",
                1.0
            ),
            (
                "hookd_deliveries_rejected_total{tenant=\"shop\",code=\"STALE_TIMESTAMP\"}",
                1.0
            ),
        ])
    );
    for (tenant, delivered, retry, dead) in [
        ("shop", 3.0, 1.0, 0.0),
        ("sink", 0.0, 0.0, 1.0),
        ("acme", 0.0, 0.0, 0.0),
    ] {
        for (outcome, n) in [("delivered", delivered), ("retry", retry), ("dead", dead)] {
            expect(
                &format!(
                    "hookd_forward_attempts_total{{tenant=\"{tenant}\",route=\"default\",outcome=\"{outcome}\"}}"
                ),
                n,
            );
        }
        expect(
            &format!(
                "hookd_forward_duration_seconds_count{{tenant=\"{tenant}\",route=\"default\"}}"
            ),
            delivered + retry + dead,
        );
    }
    for (outcome, n) in [("accepted", 6.0), ("duplicate", 1.0), ("rejected", 6.0)] {
        expect(
            &format!("hookd_ingest_duration_seconds_count{{outcome=\"{outcome}\"}}"),
            n,
        );
        expect(
            &format!("hookd_ingest_duration_seconds_bucket{{outcome=\"{outcome}\",le=\"+Inf\"}}"),
            n,
        );
    }
    for (tenant, depth, dead) in [("shop", 0.0, 0.0), ("acme", 2.0, 0.0), ("sink", 0.0, 1.0)] {
        let labels = format!("tenant=\"{tenant}\",route=\"default\"");
        expect(&format!("hookd_queue_depth{{{labels}}}"), depth);
        expect(&format!("hookd_dead_letters{{{labels}}}"), dead);
        expect(&format!("hookd_circuit_breaker_open{{{labels}}}"), 0.0);
    }
    let oldest = m["hookd_queue_oldest_pending_seconds{tenant=\"acme\",route=\"default\"}"];
    assert!((0.0..60.0).contains(&oldest), "{oldest}");
    expect(
        "hookd_queue_oldest_pending_seconds{tenant=\"shop\",route=\"default\"}",
        0.0,
    );
    assert!(
        !text.contains("zz-"),
        "unknown tenant ids never become labels"
    );
}

#[tokio::test]
async fn tenant_labels_are_capped_and_unknown_ids_never_mint_one() {
    let beta = ACME.replace("id = \"acme\"", "id = \"beta\"");
    let s = TestServer::start(&format!("[metrics]\nmax_tenant_labels = 1\n{ACME}{beta}"));
    let ts = s.clock_secs();
    for (tenant, id) in [("acme", "msg_a"), ("beta", "msg_b")] {
        let body = order(id);
        let a = s.post(tenant, &signed(id, ts, &body), &body).await;
        assert_eq!(a.status, StatusCode::ACCEPTED);
    }
    for i in 0..20 {
        s.post(&format!("attacker-{i}"), &[], b"{}").await;
    }
    let text = scrape(&s.base).await;
    let m = parse_metrics(&text);
    assert_eq!(m["hookd_deliveries_accepted_total{tenant=\"acme\"}"], 1.0);
    assert_eq!(
        m["hookd_deliveries_accepted_total{tenant=\"other\"}"], 1.0,
        "beta is past the cap"
    );
    assert_eq!(
        m["hookd_deliveries_rejected_total{tenant=\"other\",code=\"TENANT_NOT_FOUND\"}"],
        20.0
    );
    assert_eq!(
        m["hookd_queue_depth{tenant=\"other\",route=\"default\"}"],
        1.0
    );
    for series in m.keys() {
        if let Some(rest) = series.split("tenant=\"").nth(1) {
            let label = rest.split('"').next().unwrap();
            assert!(
                label == "acme" || label == "other",
                "label {label} in {series}"
            );
        }
    }
}

#[tokio::test]
async fn metrics_can_be_switched_off() {
    let s = TestServer::start(&format!("[metrics]\nenabled = false\n{ACME}"));
    let res = s.get("/metrics").await;
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
}

/// A delivery waiting for its retry, its entry due in ten minutes, is the
/// queue's oldest: the gauge counts how long it has waited since it was
/// accepted, not how overdue the queue's first entry is.
#[tokio::test]
async fn the_oldest_pending_gauge_counts_a_delivery_waiting_for_its_retry() {
    let dest = Receiver::start(Reply::Status(503)).await;
    let s = TestServer::start_at(
        &tenant("acme", &dest.url, "", "", "schedule_secs = [600.0]"),
        now_secs(),
    );
    let body = order("evt_retrying");
    let answer = s
        .post(
            "acme",
            &signed("evt_retrying", s.clock_secs(), &body),
            &body,
        )
        .await;
    assert!(answer.status.is_success(), "{answer:?}");
    dest.wait_for(1, WAIT).await;
    s.clock.advance_ms(120_000);
    let oldest = "hookd_queue_oldest_pending_seconds{tenant=\"acme\",route=\"default\"}";
    let m = parse_metrics(&scrape(&s.base).await);
    assert_eq!(
        m["hookd_queue_depth{tenant=\"acme\",route=\"default\"}"],
        1.0
    );
    assert!((120.0..180.0).contains(&m[oldest]), "{}", m[oldest]);
}
