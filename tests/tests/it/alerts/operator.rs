//! What bounds alerts across tenants, with the defaults an operator gets:
//! the operator's sink hears of a flood over many tenants as its budget
//! (20 notifications per 300 s) and then one digest, not one notification
//! each; a resolved alert is removed once `alerts.retention_secs` (30 days)
//! passed. The clock jumps; nothing waits for it.

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use hookd_control::model::{AlertFilter, AlertState, AlertView, PageRequest};

use super::{verified, SINK_SECRET};
use crate::{
    harness::{now_secs, order, tenant, TestServer},
    receiver::{Receiver, Reply},
};

/// A destination nothing is forwarded to: every request here is refused.
const NOWHERE: &str = "http://127.0.0.1:9/";

/// A verification spike's rule that opens on 3 refusals in 30 s.
const SPIKE_RULE: &str = "[[tenants.alerts.rules]]\ntype = \"verification.failure_spike\"\nthreshold = 3\nwindow_secs = 30.0\n";

/// Three unsigned requests to `tenant`, each refused.
async fn unsigned(s: &TestServer, tenant: &str) {
    for i in 0..3 {
        let body = order(&format!("evt_unsigned_{i}"));
        let answer = s.post(tenant, &[], &body).await;
        assert_eq!(answer.status, 401, "{answer:?}");
    }
}

/// Every alert of `tenant`, newest first.
async fn alerts_of(s: &TestServer, tenant: &str) -> Vec<AlertView> {
    s.server()
        .control()
        .list_alerts(
            tenant,
            AlertFilter { states: Vec::new() },
            PageRequest {
                size: 100,
                token: None,
            },
        )
        .await
        .unwrap()
        .items
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_sink_gets_its_budget_then_one_digest_of_what_was_held_back() {
    let ops = Receiver::start(Reply::Status(200)).await;
    let tenants: Vec<String> = (0..12).map(|n| format!("t{n:02}")).collect();
    let mut toml = format!(
        "[alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n",
        ops.url
    );
    for id in &tenants {
        toml.push_str(&tenant(id, NOWHERE, "", "", ""));
        toml.push_str(&format!("[tenants.alerts]\n{SPIKE_RULE}"));
    }
    // Behind the real time, so the digest 300 s on is still signed within
    // the tolerance the Standard Webhooks library checks.
    let s = TestServer::start_at(&toml, now_secs() - 200);
    for id in &tenants {
        unsigned(&s, id).await;
    }
    // 12 spikes open: each goes to the operator (12 of its 20).
    s.clock.advance_ms(1_000);
    ops.wait_for(12, Duration::from_secs(20)).await;
    // 12 resolutions: 8 go, 4 are held back.
    s.clock.advance_ms(31_000);
    ops.wait_for(20, Duration::from_secs(20)).await;
    // The window (from the first opening) ends: one digest of the 4.
    s.clock.advance_ms(270_000);
    ops.wait_for(21, Duration::from_secs(20)).await;

    let events: Vec<_> = verified(&ops, SINK_SECRET)
        .into_iter()
        .map(|(_, e)| e)
        .collect();
    assert_eq!(events.len(), 21, "{events:?}");
    let (digests, sent): (Vec<_>, Vec<_>) = events
        .into_iter()
        .partition(|e| e["type"] == "alerts.digest");
    assert_eq!(digests.len(), 1, "{digests:?}");
    let digest = &digests[0];
    assert_eq!(digest["held_back"], 4, "{digest}");
    assert_eq!(digest["max_per_window"], 20, "{digest}");
    assert_eq!(digest["window_secs"], 300, "{digest}");
    let mut told: BTreeMap<(String, String), u64> = BTreeMap::new();
    for e in &sent {
        let key = (
            e["tenant"].as_str().unwrap().to_owned(),
            e["type"].as_str().unwrap().to_owned(),
        );
        *told.entry(key).or_default() += 1;
    }
    for held in digest["held"].as_array().unwrap() {
        let key = (
            held["tenant"].as_str().unwrap().to_owned(),
            held["type"].as_str().unwrap().to_owned(),
        );
        *told.entry(key).or_default() += held["count"].as_u64().unwrap();
    }
    let every: BTreeMap<(String, String), u64> = tenants
        .iter()
        .flat_map(|t| {
            [
                "verification.failure_spike",
                "verification.failure_spike.resolved",
            ]
            .map(|kind| ((t.clone(), kind.to_owned()), 1))
        })
        .collect();
    assert_eq!(
        told, every,
        "each notification sent or named in the digest, once"
    );
    let summary = digest["summary"].as_str().unwrap();
    assert!(
        summary.starts_with("4 notifications held back (at most 20 per 300 s): t"),
        "{summary}"
    );
    assert_eq!(
        ops.received().len(),
        21,
        "nothing held back was sent after all"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_resolved_alert_is_kept_for_the_retention_then_removed() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let tables = format!(
        "[tenants.alerts]\n[tenants.alerts.sink]\nurl = \"{}\"\nsecret = \"{SINK_SECRET}\"\n{SPIKE_RULE}",
        sink.url
    );
    let s = TestServer::start_at(&(tenant("acme", NOWHERE, "", "", "") + &tables), now_secs());
    unsigned(&s, "acme").await;
    s.clock.advance_ms(1_000);
    sink.wait_for(1, Duration::from_secs(20)).await;
    s.clock.advance_ms(31_000);
    sink.wait_for(2, Duration::from_secs(20)).await;
    let first = alerts_of(&s, "acme").await;
    assert_eq!(first.len(), 1);
    assert_eq!(first[0].state, AlertState::Resolved);

    // A second spike 100 s before the first one's 30 days are up: when it
    // opens, the first is still kept.
    let retention_ms = 2_592_000_000;
    s.clock.advance_ms(retention_ms - 100_000);
    unsigned(&s, "acme").await;
    s.clock.advance_ms(1_000);
    sink.wait_for(3, Duration::from_secs(20)).await;
    let both = alerts_of(&s, "acme").await;
    assert_eq!(both.len(), 2, "{both:?}");
    assert_eq!(both[1].id, first[0].id);

    // Past the first's 30 days: it goes, the second (resolving now) stays.
    s.clock.advance_ms(100_000);
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let left = alerts_of(&s, "acme").await;
        if left.len() == 1 {
            assert_eq!(left[0].id, both[0].id, "the second alert stays");
            break;
        }
        assert!(Instant::now() < deadline, "still kept: {left:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}
