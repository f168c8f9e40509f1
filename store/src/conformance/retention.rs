//! Conformance of retention: bounded sweep steps remove everything due, dead
//! letters and redeliveries' originals included, and leave what is not due.

use super::{accepted, attempt, tenant, Engine};
use crate::{
    api::{Rejection, RejectionLog, SweepRequest, TenantStore},
    ids::DeliveryId,
    lifecycle::{Next, Resend, Swept},
    records::DeliveryStatus,
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

/// Everything due before 5 000, `batch` at a time.
fn due(batch: usize) -> SweepRequest {
    SweepRequest {
        delivered_before_ms: 5_000,
        idem_before_ms: 5_000,
        dead_before_ms: 5_000,
        batch,
        idem_scan: batch,
    }
}

/// Sweeps `data` in bounded steps, carrying the idempotency cursor from
/// one to the next, until a step finds nothing more due; returns what all
/// of them removed and how many steps it took.
fn sweep_all(data: &TenantStore, request: &SweepRequest) -> (Swept, usize) {
    let (mut total, mut cursor, mut steps) = (Swept::default(), Vec::new(), 0);
    loop {
        let step = data.sweep(request, &mut cursor).unwrap();
        steps += 1;
        total += step;
        if !step.more {
            return (total, steps);
        }
    }
}

/// Sweeps `tenant`'s rejections before 5 000 in steps of `batch` until a
/// step removes fewer than a batch.
fn sweep_rejections(log: &dyn RejectionLog, tenant: &str, batch: usize) -> usize {
    let mut removed = 0;
    loop {
        let step = log.sweep(tenant, 5_000, batch).unwrap();
        removed += step;
        if step < batch {
            return removed;
        }
    }
}

fn gone(data: &TenantStore, id: &DeliveryId) -> bool {
    data.event(id).unwrap().is_none()
        && data.state(id).unwrap().is_none()
        && data.attempts(id).unwrap().is_empty()
}

pub(super) async fn steps_remove_more_than_one_batch(engine: Engine) {
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
    let (removed, steps) = sweep_all(&data, &due(10));
    let rejections = sweep_rejections(&*log, "acme", 10);
    assert_eq!(
        (
            removed.delivered,
            removed.dead,
            removed.idempotency,
            rejections
        ),
        (25, 25, 50, 23),
        "steps remove all that is due: {removed:?}"
    );
    assert!(steps > 1, "more than one bounded step: {steps}");
    assert!(old.iter().all(|id| gone(&data, id)), "old deliveries gone");
    assert_eq!(data.counts().unwrap().dead, 0);
    assert!(data.event(&fresh).unwrap().is_some());
    assert!(data.idempotency(b"evt_fresh").unwrap().is_some());
    assert!(data.idempotency(b"evt_d0").unwrap().is_none());
    let (kept, _) = log.list("acme", &Default::default(), 100, None).unwrap();
    assert_eq!(kept.len(), 1);
}

/// A step that scans no idempotency records (`idem_scan` 0) still removes
/// the deliveries that are due, forgets no record and leaves the scan's
/// cursor where it was; steps that scan fewer records than their batch
/// carry the cursor on until every old record is forgotten.
pub(super) async fn the_idempotency_scan_is_sized_apart(engine: Engine) {
    let data = tenant(&engine, "acme");
    for n in 0..5 {
        settled(&data, &format!("evt_old{n}"), Next::Delivered, 1_000).await;
    }
    settled(&data, "evt_fresh", Next::Delivered, 9_000).await;
    let none = SweepRequest {
        idem_scan: 0,
        ..due(100)
    };
    let mut cursor = b"where it was".to_vec();
    let step = data.sweep(&none, &mut cursor).unwrap();
    assert_eq!((step.delivered, step.idempotency), (5, 0), "{step:?}");
    assert!(
        !step.more,
        "nothing else is due when no scan is asked for: {step:?}"
    );
    assert_eq!(cursor, b"where it was");
    assert!(data.idempotency(b"evt_old0").unwrap().is_some());

    let (removed, steps) = sweep_all(
        &data,
        &SweepRequest {
            idem_scan: 2,
            ..due(100)
        },
    );
    assert_eq!(removed.idempotency, 5, "{removed:?}");
    assert_eq!(
        steps, 4,
        "six records, two a step, then one that finds the end"
    );
    assert!(data.idempotency(b"evt_old4").unwrap().is_none());
    assert!(data.idempotency(b"evt_fresh").unwrap().is_some());
}

/// The engine says, for many tenants at once and in order, which have
/// delivered events or dead letters past their cut-offs, and which have
/// rejections recorded before one; once swept, none.
pub(super) async fn sweep_due_names_each_tenant_with_something_due(engine: Engine) {
    let [done, dead_letter, fresh, idle] =
        ["old-done", "old-dead", "fresh", "idle"].map(|id| tenant(&engine, id));
    settled(&done, "evt_done", Next::Delivered, 1_000).await;
    settled(&dead_letter, "evt_dead", dead(), 1_000).await;
    settled(&fresh, "evt_fresh", Next::Delivered, 9_000).await;
    settled(&fresh, "evt_fresh_dead", dead(), 9_000).await;
    let all = [done.clone(), dead_letter.clone(), fresh, idle];
    assert_eq!(
        engine.store.sweep_due(&all, &due(100)).unwrap(),
        [true, true, false, false]
    );
    sweep_all(&done, &due(100));
    sweep_all(&dead_letter, &due(100));
    assert_eq!(engine.store.sweep_due(&all, &due(100)).unwrap(), [false; 4]);
    assert!(engine.store.sweep_due(&[], &due(100)).unwrap().is_empty());

    let log = engine.store.rejections().unwrap();
    log.record(rejection("refused", 1_000, 0)).unwrap();
    log.record(rejection("recent", 9_000, 1)).unwrap();
    let ids = ["recent", "idle", "refused"].map(String::from);
    assert_eq!(log.sweep_due(&ids, 5_000).unwrap(), [false, false, true]);
    assert_eq!(sweep_rejections(&*log, "refused", 10), 1);
    assert_eq!(log.sweep_due(&ids, 5_000).unwrap(), [false; 3]);
}

pub(super) async fn dead_letters_and_redelivered_originals_go(engine: Engine) {
    let data = tenant(&engine, "acme");
    let plain = settled(&data, "evt_plain", dead(), 1_000).await;
    let once = settled(&data, "evt_once", dead(), 1_000).await;
    let once_again = data.redeliver(&once, 2_000, Resend::Any).unwrap();
    settle(&data, &once_again, Next::Delivered, 2_000);
    let chain = settled(&data, "evt_chain", dead(), 1_000).await;
    let chain_1 = data.redeliver(&chain, 1_500, Resend::Any).unwrap();
    settle(&data, &chain_1, dead(), 2_000);
    let chain_2 = data.redeliver(&chain_1, 2_500, Resend::Any).unwrap();
    settle(&data, &chain_2, dead(), 3_000);
    let recent = settled(&data, "evt_recent", dead(), 9_000).await;
    let pending = settled(&data, "evt_pending", dead(), 1_000).await;
    let pending_again = data.redeliver(&pending, 2_000, Resend::Any).unwrap();
    let late = settled(&data, "evt_late", dead(), 1_000).await;
    let late_again = data.redeliver(&late, 8_000, Resend::Any).unwrap();
    settle(&data, &late_again, Next::Delivered, 9_000);
    let delivered = settled(&data, "evt_delivered", Next::Delivered, 1_000).await;
    let delivered_again = data.redeliver(&delivered, 9_000, Resend::Any).unwrap();

    let mut request = due(100);
    request.idem_before_ms = 0;
    let (removed, _) = sweep_all(&data, &request);

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
        (removed.delivered, removed.dead, removed.originals),
        (2, 2, 3),
        "{removed:?}"
    );
    assert_eq!(
        data.counts().unwrap().dead,
        1,
        "only the recent dead letter"
    );
}
