//! Conformance of the queue counts: read for many tenants at once
//! (`Storage::counts_of`) in order, each the same as its own handle's; the
//! oldest pending delivery counted from its acceptance.

use super::{accepted, attempt, kill, tenant, Engine};
use crate::{
    api::QueueCounts,
    ids::TenantId,
    lifecycle::{Next, Resend},
};

pub(super) async fn counts_of_many_tenants_are_each_their_own(engine: Engine) {
    let (acme, globex) = (tenant(&engine, "acme"), tenant(&engine, "globex"));
    let empty = tenant(&engine, "initech");
    accepted(&acme, "evt_dead", 1_000).await;
    kill(&acme, 1_500);
    accepted(&acme, "evt_1", 2_000).await;
    accepted(&acme, "evt_2", 3_000).await;
    accepted(&globex, "evt_1", 4_000).await;
    let scope = TenantId::try_from("acme").unwrap().alert_scope("webhook");
    let sink = engine.store.tenant(&scope).unwrap();

    let handles = [empty, acme, sink, globex];
    let read = engine.store.counts_of(&handles).unwrap();

    let each: Vec<QueueCounts> = handles.iter().map(|h| h.counts().unwrap()).collect();
    assert_eq!(read, each);
    assert_eq!((read[1].depth, read[1].dead), (2, 1), "{read:?}");
    assert_eq!(read[3].depth, 1, "{read:?}");
    assert!(read[1].oldest_due_ms.is_some() && read[0].oldest_due_ms.is_none());
    assert!(engine.store.counts_of(&[]).unwrap().is_empty());
}

/// The oldest delivery in the queue is counted from when it was accepted,
/// whether its entry is due now or scheduled for a retry later; a
/// redelivery waits from when it was made; none once every delivery left
/// the queue.
pub(super) async fn the_oldest_pending_delivery_counts_one_scheduled_for_a_retry(engine: Engine) {
    let data = tenant(&engine, "acme");
    assert_eq!(data.counts().unwrap().oldest_pending_ms, None);
    let first = accepted(&data, "evt_1", 1_000).await;
    accepted(&data, "evt_2", 2_000).await;
    let counts = data.counts().unwrap();
    assert_eq!(
        (counts.oldest_due_ms, counts.oldest_pending_ms),
        (Some(1_000), Some(1_000))
    );

    let entry = data
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .find(|(_, id)| *id == first)
        .unwrap()
        .0;
    let retry = Next::Retry { due_ms: 600_000 };
    data.record_attempt(&entry, &first, &attempt(1, 3_000), &retry, 3_000)
        .unwrap()
        .unwrap();
    let counts = data.counts().unwrap();
    assert_eq!(counts.oldest_due_ms, Some(2_000), "the retry is due later");
    assert_eq!(
        counts.oldest_pending_ms,
        Some(1_000),
        "it still waits since 1 s"
    );

    for (entry, id) in data.queue(None, 10).unwrap() {
        let at = if id == first { 600_000 } else { 4_000 };
        data.record_attempt(&entry, &id, &attempt(2, at), &Next::Delivered, at)
            .unwrap()
            .unwrap();
    }
    let counts = data.counts().unwrap();
    assert_eq!((counts.depth, counts.oldest_pending_ms), (0, None));
    let again = data.redeliver(&first, 700_000, Resend::Any).unwrap();
    let counts = data.counts().unwrap();
    assert_eq!(
        counts.oldest_pending_ms,
        Some(700_000),
        "{again} waits since it was made"
    );
    let read = engine.store.counts_of(std::slice::from_ref(&data)).unwrap();
    assert_eq!(read[0], counts);
}

/// A retry now makes a delivery waiting for its retry due at the caller's
/// time, its attempts unchanged; one due already, or never attempted, is
/// left as it is.
pub(super) async fn retry_now_makes_a_waiting_delivery_due_at_once(engine: Engine) {
    let data = tenant(&engine, "acme");
    let waiting = accepted(&data, "evt_waiting", 1_000).await;
    let fresh = accepted(&data, "evt_fresh", 2_000).await;
    let entry = data
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .find(|(_, id)| *id == waiting)
        .unwrap()
        .0;
    let retry = Next::Retry { due_ms: 600_000 };
    data.record_attempt(&entry, &waiting, &attempt(1, 3_000), &retry, 3_000)
        .unwrap()
        .unwrap();
    let both = [waiting.clone(), fresh.clone()];
    assert_eq!(
        data.retry_now(&both, 10_000).unwrap(),
        1,
        "only the waiting one"
    );
    let queue = data.queue(None, 10).unwrap();
    let due: Vec<_> = queue
        .iter()
        .map(|(key, id)| (id.clone(), key.due_ms()))
        .collect();
    assert!(due.contains(&(waiting.clone(), 10_000)), "{due:?}");
    assert!(due.contains(&(fresh, 2_000)), "{due:?}");
    let state = data.state(&waiting).unwrap().unwrap();
    assert_eq!(
        (state.attempts, state.next_attempt_at_ms),
        (1, Some(10_000))
    );
    assert_eq!(data.retry_now(&both, 10_000).unwrap(), 0, "due already");
}
