//! Conformance of retention: one sweep pass removes everything due however
//! many batches it takes, and dead letters and the originals of
//! redeliveries go once past their retention, while what is not due stays.

use super::{accepted, attempt, tenant, Engine};
use crate::{
    ids::DeliveryId,
    store::{
        api::Rejection,
        api::{SweepRequest, TenantStore},
        lifecycle::Next,
        records::DeliveryStatus,
    },
    sweeper::{pass, Due},
};

/// Records one attempt of `id` (which must be queued) leading to `next`.
fn settle(data: &TenantStore, id: &DeliveryId, next: Next, at_ms: i64) {
    let queue = data.queue(None, 10_000).unwrap();
    let (entry, _) = queue.iter().find(|(_, queued)| queued == id).unwrap();
    data.record_attempt(entry, id, &attempt(1, at_ms), &next, at_ms)
        .unwrap()
        .unwrap();
}

fn dead() -> Next {
    Next::Dead {
        reason: "gave up".into(),
    }
}

/// Accepts `event` at `at_ms` and settles it as `next` at once.
async fn settled(data: &TenantStore, event: &str, next: Next, at_ms: i64) -> DeliveryId {
    let id = accepted(data, event, at_ms).await;
    settle(data, &id, next, at_ms);
    id
}

fn rejection(tenant: &str, at_ms: i64, n: usize) -> Rejection {
    Rejection {
        tenant_id: tenant.into(),
        at_ms,
        request_id: format!("req_{n}"),
        code: "INVALID_JSON".into(),
        reason: "refused".into(),
        signature_valid: true,
        body_bytes: 2,
        body: b"{}".to_vec(),
    }
}

/// Everything due before 5 000, ten at a time.
fn due(batch: usize) -> Due {
    Due {
        data: SweepRequest {
            delivered_before_ms: 5_000,
            idem_before_ms: 5_000,
            dead_before_ms: 5_000,
            batch,
        },
        rejections_before_ms: 5_000,
    }
}

fn gone(data: &TenantStore, id: &DeliveryId) -> bool {
    data.event(id).unwrap().is_none()
        && data.state(id).unwrap().is_none()
        && data.attempts(id).unwrap().is_empty()
}

pub(super) async fn one_pass_removes_more_than_one_batch(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut old = Vec::new();
    for n in 0..25 {
        old.push(settled(&data, &format!("evt_d{n}"), Next::Delivered, 1_000).await);
        old.push(settled(&data, &format!("evt_x{n}"), dead(), 1_000).await);
    }
    let fresh = settled(&data, "evt_fresh", Next::Delivered, 9_000).await;
    let log = engine.store.rejections().unwrap();
    for n in 0..23 {
        log.record(rejection("acme", 1_000 + n as i64, n)).unwrap();
    }
    log.record(rejection("acme", 9_000, 99)).unwrap();
    let removed = pass(vec![data.clone()], Some(log.clone()), &due(10)).await;
    assert_eq!(
        (
            removed.data.delivered,
            removed.data.dead,
            removed.data.idempotency,
            removed.rejections
        ),
        (25, 25, 50, 23),
        "one pass removes all that is due: {removed:?}"
    );
    assert!(old.iter().all(|id| gone(&data, id)), "old deliveries gone");
    assert_eq!(data.counts().unwrap().dead, 0);
    assert!(data.event(&fresh).unwrap().is_some());
    assert!(data.idempotency(b"evt_fresh").unwrap().is_some());
    assert!(data.idempotency(b"evt_d0").unwrap().is_none());
    let (kept, _) = log.list("acme", &Default::default(), 100, None).unwrap();
    assert_eq!(kept.len(), 1);
}

pub(super) async fn dead_letters_and_redelivered_originals_go(engine: Engine) {
    let data = tenant(&engine, "acme");
    let plain = settled(&data, "evt_plain", dead(), 1_000).await;
    let once = settled(&data, "evt_once", dead(), 1_000).await;
    let once_again = data.redeliver(&once, 2_000).unwrap();
    settle(&data, &once_again, Next::Delivered, 2_000);
    let chain = settled(&data, "evt_chain", dead(), 1_000).await;
    let chain_1 = data.redeliver(&chain, 1_500).unwrap();
    settle(&data, &chain_1, dead(), 2_000);
    let chain_2 = data.redeliver(&chain_1, 2_500).unwrap();
    settle(&data, &chain_2, dead(), 3_000);
    let recent = settled(&data, "evt_recent", dead(), 9_000).await;
    let pending = settled(&data, "evt_pending", dead(), 1_000).await;
    let pending_again = data.redeliver(&pending, 2_000).unwrap();
    let late = settled(&data, "evt_late", dead(), 1_000).await;
    let late_again = data.redeliver(&late, 8_000).unwrap();
    settle(&data, &late_again, Next::Delivered, 9_000);
    let delivered = settled(&data, "evt_delivered", Next::Delivered, 1_000).await;
    let delivered_again = data.redeliver(&delivered, 9_000).unwrap();

    let mut request = due(100);
    request.data.idem_before_ms = 0;
    let removed = pass(vec![data.clone()], None, &request).await;

    for id in [&plain, &once, &once_again, &chain, &chain_1, &chain_2] {
        assert!(gone(&data, id), "{id} is past retention and goes");
    }
    for id in [&recent, &pending, &pending_again, &late, &late_again] {
        assert!(data.state(id).unwrap().is_some(), "{id} is kept");
    }
    assert!(
        gone(&data, &delivered),
        "a delivered original goes by its own time"
    );
    let again = data.state(&delivered_again).unwrap().unwrap();
    assert_eq!(again.status, DeliveryStatus::Pending);
    assert!(data.event(&delivered_again).unwrap().is_some());
    assert_eq!(
        (
            removed.data.delivered,
            removed.data.dead,
            removed.data.originals
        ),
        (2, 2, 3),
        "{removed:?}"
    );
    assert_eq!(
        data.counts().unwrap().dead,
        1,
        "only the recent dead letter"
    );
}
