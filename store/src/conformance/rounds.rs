//! Conformance of a forwarding pass: the due deliveries read at once with
//! the lease, a round of attempts recorded at once, each as the
//! one-at-a-time calls would.

use std::collections::HashSet;

use super::{accepted, attempt, tenant, Engine};
use crate::{
    api::{Fence, FinishedAttempt, TenantStore},
    ids::{DeliveryId, TenantId},
    lifecycle::Next,
    records::DeliveryStatus,
};

/// `owner`'s hold on acme's forwarding lease, for `ttl_ms`.
fn lease(engine: &Engine, owner: &str, ttl_ms: i64) -> Fence {
    let acme = TenantId::try_from("acme").unwrap();
    engine
        .store
        .claim_forwarding(&acme, owner, ttl_ms)
        .unwrap()
        .unwrap()
}

/// The queue's entries, in due order.
fn entries(data: &TenantStore) -> Vec<(crate::api::QueueKey, DeliveryId)> {
    data.queue(None, 100).unwrap()
}

pub(super) async fn due_reads_the_head_of_the_queue_with_each_delivery(engine: Engine) {
    let data = tenant(&engine, "acme");
    let fence = lease(&engine, "me", 15_000);
    let first = accepted(&data, "evt_1", 1_000).await;
    let second = accepted(&data, "evt_2", 2_000).await;
    accepted(&data, "evt_3", 9_000).await;
    let queue = entries(&data);
    let head = data.due(5_000, (10, &HashSet::new()), &fence).unwrap();
    let ids: Vec<&DeliveryId> = head.entries.iter().map(|e| &e.id).collect();
    assert_eq!(ids, [&first, &second], "only what is due, in due order");
    assert_eq!(head.next_due_ms, Some(9_000), "the next one's due time");
    let entry = &head.entries[1];
    assert_eq!(entry.key, queue[1].0);
    assert_eq!(entry.state.as_ref().unwrap().received_at_ms, 2_000);
    assert_eq!(
        entry.event.as_ref().unwrap().body,
        b"{\"event\":\"evt_2\"}"[..]
    );
    assert!(entry.send_for.is_some(), "the holder of the lease may send");
    let busy: HashSet<_> = [queue[0].0.clone()].into();
    let rest = data.due(5_000, (10, &busy), &fence).unwrap();
    let ids: Vec<&DeliveryId> = rest.entries.iter().map(|e| &e.id).collect();
    assert_eq!(ids, [&second], "an entry in flight is left out");
    let one = data.due(5_000, (1, &HashSet::new()), &fence).unwrap();
    assert_eq!(one.entries.len(), 1, "at most the limit");
    assert_eq!(one.entries[0].id, first);
    let none = data.due(500, (10, &HashSet::new()), &fence).unwrap();
    assert!(none.entries.is_empty());
    assert_eq!(none.next_due_ms, Some(1_000));
}

pub(super) async fn a_round_records_each_attempt_as_one_call_would(engine: Engine) {
    let data = tenant(&engine, "acme");
    let fence = lease(&engine, "me", 15_000);
    let ids = [
        accepted(&data, "evt_ok", 1_000).await,
        accepted(&data, "evt_retry", 1_001).await,
        accepted(&data, "evt_dead", 1_002).await,
        accepted(&data, "evt_stale", 1_003).await,
    ];
    let queue = entries(&data);
    // The last one moved on before the round: its entry is stale.
    data.record_attempt(
        &queue[3].0,
        &ids[3],
        &attempt(1, 1_500),
        &Next::Retry { due_ms: 50_000 },
        1_500,
    )
    .unwrap()
    .unwrap();
    let nexts = [
        Next::Delivered,
        Next::Retry { due_ms: 60_000 },
        Next::Dead {
            reason: "gave up".into(),
        },
        Next::Delivered,
    ];
    let round: Vec<FinishedAttempt> = queue
        .iter()
        .zip(nexts)
        .map(|((entry, id), next)| FinishedAttempt {
            entry: entry.clone(),
            id: id.clone(),
            record: attempt(if *id == ids[3] { 2 } else { 1 }, 2_000),
            next,
            fence: fence.clone(),
        })
        .collect();
    let recorded = data.clone().record_attempts(round, 2_000).await.unwrap();
    let statuses: Vec<Option<DeliveryStatus>> = recorded
        .into_iter()
        .map(|r| r.unwrap().map(|s| s.status))
        .collect();
    assert_eq!(
        statuses,
        [
            Some(DeliveryStatus::Delivered),
            Some(DeliveryStatus::Pending),
            Some(DeliveryStatus::Dead),
            None
        ]
    );
    let left: Vec<(i64, DeliveryId)> = entries(&data)
        .into_iter()
        .map(|(key, id)| (key.due_ms(), id))
        .collect();
    assert_eq!(
        left,
        [(50_000, ids[3].clone()), (60_000, ids[1].clone())],
        "the stale entry's delivery keeps its own retry"
    );
    assert_eq!(data.counts().unwrap().dead, 1);
    assert_eq!(data.attempts(&ids[0]).unwrap().len(), 1);
    assert_eq!(data.attempts(&ids[3]).unwrap().len(), 1, "nothing recorded");
    let retried = data.state(&ids[1]).unwrap().unwrap();
    assert_eq!(retried.next_attempt_at_ms, Some(60_000));
}

pub(super) async fn a_passed_lease_claims_and_records_nothing(engine: Engine) {
    if !engine.shared {
        return;
    }
    let data = tenant(&engine, "acme");
    let stale = lease(&engine, "stalled", -1);
    let current = lease(&engine, "taking-over", 15_000);
    let id = accepted(&data, "evt_1", 1_000).await;
    let (entry, _) = entries(&data).remove(0);
    let on_stale = data.due(2_000, (10, &HashSet::new()), &stale).unwrap();
    assert_eq!(
        on_stale.entries[0].send_for, None,
        "the stale holder may not send"
    );
    let on_current = data.due(2_000, (10, &HashSet::new()), &current).unwrap();
    let left = on_current.entries[0].send_for.expect("the holder may send");
    assert!(
        left > std::time::Duration::from_secs(10) && left <= std::time::Duration::from_secs(15),
        "how long the 15 s lease has left: {left:?}"
    );
    let moved = FinishedAttempt {
        entry: entry.clone(),
        id: DeliveryId::due_at(1_000),
        record: attempt(1, 2_000),
        next: Next::Delivered,
        fence: current.clone(),
    };
    let elsewhere = data
        .clone()
        .record_attempts(vec![moved], 2_000)
        .await
        .unwrap();
    assert!(
        elsewhere[0].as_ref().unwrap().is_none(),
        "an entry that names another delivery is not taken: {elsewhere:?}"
    );
    let finished = |fence| FinishedAttempt {
        entry: entry.clone(),
        id: id.clone(),
        record: attempt(1, 2_000),
        next: Next::Delivered,
        fence,
    };
    let on_stale = data
        .clone()
        .record_attempts(vec![finished(stale)], 2_000)
        .await
        .unwrap();
    assert!(on_stale[0].as_ref().unwrap().is_none(), "{on_stale:?}");
    assert_eq!(data.state(&id).unwrap().unwrap().attempts, 0);
    let on_current = data
        .clone()
        .record_attempts(vec![finished(current)], 2_000)
        .await
        .unwrap();
    let state = on_current[0].as_ref().unwrap().as_ref().unwrap();
    assert_eq!(state.status, DeliveryStatus::Delivered);
}
