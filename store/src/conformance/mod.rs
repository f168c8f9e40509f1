//! One storage conformance suite, run against both engines: every case is a
//! function of an engine ([`Engine`]) that `engines!` runs on each.

use super::{
    api::{
        Listing, PullRequest, QueueKey, Receipt, RejectionLog, RouteCopy, RowChange, SweepRequest,
        Table, TenantStore,
    },
    api::{Rejection, RejectionFilter},
    lifecycle::{Next, Resend},
    records::{AttemptRecord, DeliveryStatus, EventMeta},
    testing::Engine,
    CommitOutcome, NewDelivery,
};
use crate::{
    error::Error,
    ids::{DeliveryId, EventId, RequestId, TenantId},
};

mod counts;
mod pull;
mod redirects;
mod resend;
mod retention;
mod rounds;
mod routes;
mod sinks;
mod statuses;
use counts::{
    counts_of_many_tenants_are_each_their_own, retry_now_makes_a_waiting_delivery_due_at_once,
    the_oldest_pending_delivery_counts_one_scheduled_for_a_retry,
};
use pull::{concurrent_pulls_never_share_a_delivery, pull_ack_nack};
use redirects::redirects_are_kept_with_their_delivery;
use resend::a_delivered_delivery_is_resent_once_by_concurrent_calls_that_ask_so;
use retention::{
    dead_letters_and_redelivered_originals_go, steps_remove_more_than_one_batch,
    sweep_due_names_each_tenant_with_something_due, the_idempotency_scan_is_sized_apart,
};
use rounds::{
    a_passed_lease_claims_and_records_nothing, a_round_records_each_attempt_as_one_call_would,
    due_reads_the_head_of_the_queue_with_each_delivery,
};
use routes::{
    a_fan_out_is_one_commit_and_a_duplicate_writes_none,
    a_route_copy_is_a_delivery_from_its_receipt_on,
    a_route_copy_keeps_its_event_when_the_default_delivery_goes,
    copies_sharing_a_place_are_each_a_delivery, route_queues_are_apart,
};
use sinks::a_sink_queue_is_apart_from_the_tenants_deliveries;
use statuses::{
    a_transform_failure_is_a_dead_letter_and_a_drop_is_final,
    filtered_and_unrouted_are_final_at_receipt_and_swept,
};

crate::engines!(
    commit_and_duplicates,
    listed_by_time,
    listed_by_event_type,
    content_key_duplicates,
    concurrent_copies_make_one_delivery,
    record_attempt_is_a_compare_and_set,
    a_cancel_dead_letters_pending_deliveries,
    redeliver_exactly_once_under_concurrency,
    pull_ack_nack,
    concurrent_pulls_never_share_a_delivery,
    dead_letters_page_newest_first,
    sweep_forgets_old_work,
    steps_remove_more_than_one_batch,
    the_idempotency_scan_is_sized_apart,
    sweep_due_names_each_tenant_with_something_due,
    counts_of_many_tenants_are_each_their_own,
    the_oldest_pending_delivery_counts_one_scheduled_for_a_retry,
    retry_now_makes_a_waiting_delivery_due_at_once,
    dead_letters_and_redelivered_originals_go,
    catalog_rows_are_atomic,
    a_catalog_row_is_created_once,
    drop_tenant_removes_only_its_data,
    forwarding_leases,
    redirects_are_kept_with_their_delivery,
    rejection_pages_filtered_by_signature_are_full,
    a_fan_out_is_one_commit_and_a_duplicate_writes_none,
    route_queues_are_apart,
    a_route_copy_keeps_its_event_when_the_default_delivery_goes,
    a_route_copy_is_a_delivery_from_its_receipt_on,
    copies_sharing_a_place_are_each_a_delivery,
    filtered_and_unrouted_are_final_at_receipt_and_swept,
    a_transform_failure_is_a_dead_letter_and_a_drop_is_final,
    a_delivered_delivery_is_resent_once_by_concurrent_calls_that_ask_so,
    a_sink_queue_is_apart_from_the_tenants_deliveries,
    due_reads_the_head_of_the_queue_with_each_delivery,
    a_round_records_each_attempt_as_one_call_would,
    a_passed_lease_claims_and_records_nothing,
);

/// `engines!` runs each case on sled and on PostgreSQL (a fresh database
/// per case, see [`super::postgres::testing`]).
fn tenant(engine: &Engine, id: &str) -> TenantStore {
    engine
        .store
        .tenant(&TenantId::try_from(id).unwrap())
        .unwrap()
}

pub(super) fn new_delivery(event: &str, at_ms: i64, content_key: Option<&[u8]>) -> NewDelivery {
    NewDelivery {
        event_id: EventId::new(event),
        meta: EventMeta {
            event_id: EventId::new(event),
            delivery_id: DeliveryId::due_at(at_ms),
            request_id: RequestId::generate(),
            received_at_ms: at_ms,
            headers: vec![("content-type".into(), "application/json".into())],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        },
        body: bytes::Bytes::from(format!("{{\"event\":\"{event}\"}}")),
        due_ms: at_ms,
        content_key: content_key.map(<[u8]>::to_vec),
        copies: Vec::new(),
        receipt: Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

/// Commits a new event and returns its delivery id.
pub(super) async fn accepted(data: &TenantStore, event: &str, at_ms: i64) -> DeliveryId {
    let item = new_delivery(event, at_ms, None);
    let id = item.meta.delivery_id.clone();
    assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
    id
}

fn attempt(n: u32, at_ms: i64) -> AttemptRecord {
    AttemptRecord {
        attempt: n,
        started_at_ms: at_ms,
        duration_ms: 3,
        status_code: Some(500),
        error: Some("HTTP 500".into()),
        response_body: b"no".to_vec(),
        next_retry_at_ms: None,
        request_id: RequestId::generate(),
        transform_version: None,
    }
}

/// The live queue entry of the only queued delivery.
fn only_entry(data: &TenantStore) -> (QueueKey, DeliveryId) {
    let mut queue = data.queue(None, 10).unwrap();
    assert_eq!(queue.len(), 1, "one queue entry: {queue:?}");
    queue.remove(0)
}

/// Dead-letters the only queued delivery at `at_ms`.
fn kill(data: &TenantStore, at_ms: i64) -> DeliveryId {
    let (entry, id) = only_entry(data);
    let dead = Next::Dead {
        reason: "gave up".into(),
    };
    let state = data
        .record_attempt(&entry, &id, &attempt(1, at_ms), &dead, at_ms)
        .unwrap()
        .unwrap();
    assert_eq!(state.status, DeliveryStatus::Dead);
    id
}

async fn commit_and_duplicates(engine: Engine) {
    let data = tenant(&engine, "acme");
    let first = accepted(&data, "evt_1", 1_000).await;
    let again = data
        .commit(new_delivery("evt_1", 2_000, None))
        .await
        .unwrap();
    assert_eq!(again, CommitOutcome::Duplicate(first.clone()));
    let event = data.event(&first).unwrap().unwrap();
    assert_eq!(event.body, b"{\"event\":\"evt_1\"}");
    let state = data.state(&first).unwrap().unwrap();
    assert_eq!(state.status, DeliveryStatus::Pending);
    let counts = data.counts().unwrap();
    assert_eq!((counts.depth, counts.dead), (1, 0));
    assert_eq!(counts.oldest_due_ms, Some(1_000));
    let other = tenant(&engine, "other");
    accepted(&other, "evt_1", 1_000).await;
    let listed = data.deliveries(None, None, 10).unwrap();
    assert_eq!(listed.len(), 1, "one tenant's event id is not another's");
}

/// A time window is a range of ids: only the deliveries made in it are
/// listed, newest first, with or without a status.
async fn listed_by_time(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut made = Vec::new();
    for n in 0..10 {
        made.push(accepted(&data, &format!("evt_{n}"), 10_000 + n * 1_000).await);
    }
    let window = (
        Some(&DeliveryId::lowest_at(17_001)),
        Some(&DeliveryId::lowest_at(13_000)),
    );
    let any = Listing::default();
    let listed: Vec<DeliveryId> = data
        .deliveries_in(&any, window, 100)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let want: Vec<DeliveryId> = made[3..=7].iter().rev().cloned().collect();
    assert_eq!(listed, want);
    let of = |status| Listing {
        status: Some(status),
        event_type: None,
    };
    let pending = data
        .deliveries_in(&of(DeliveryStatus::Pending), window, 2)
        .unwrap();
    assert_eq!(pending.len(), 2);
    assert_eq!(pending[0].0, made[7]);
    let delivered = data
        .deliveries_in(&of(DeliveryStatus::Delivered), window, 10)
        .unwrap();
    assert!(delivered.is_empty());
    let from = data
        .deliveries_in(&any, (None, Some(&DeliveryId::lowest_at(18_000))), 100)
        .unwrap();
    assert_eq!(from.len(), 2);
}

/// Each delivery keeps its event's type, the route copies too, and a
/// listing by type finds exactly those of that type.
async fn listed_by_event_type(engine: Engine) {
    let data = tenant(&engine, "acme");
    let scope = TenantId::try_from("acme").unwrap().route_scope("audit");
    let audit = engine.store.tenant(&scope).unwrap();
    let mut paid = Vec::new();
    for n in 0..30 {
        let mut item = new_delivery(&format!("evt_{n}"), 1_000 + n, None);
        let kind = if n % 3 == 0 {
            "invoice.paid"
        } else {
            "invoice.created"
        };
        item.event_type = Some(kind.to_owned());
        if n % 10 == 0 {
            item.event_type = None;
        }
        let copy = RouteCopy {
            route: "audit".into(),
            scope: scope.clone(),
            delivery_id: DeliveryId::sharing(1_000 + n),
            due_ms: 1_000 + n,
        };
        item.copies = vec![copy.clone()];
        if item.event_type.as_deref() == Some("invoice.paid") {
            paid.push((item.meta.delivery_id.clone(), copy.delivery_id));
        }
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
    }
    let of_type = Listing {
        status: None,
        event_type: Some("invoice.paid".into()),
    };
    let listed: Vec<DeliveryId> = data
        .deliveries_in(&of_type, (None, None), 100)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let want: Vec<DeliveryId> = paid.iter().rev().map(|(id, _)| id.clone()).collect();
    assert_eq!(listed, want);
    let copies: Vec<DeliveryId> = audit
        .deliveries_in(&of_type, (None, None), 100)
        .unwrap()
        .into_iter()
        .map(|(id, _)| id)
        .collect();
    let want: Vec<DeliveryId> = paid.iter().rev().map(|(_, id)| id.clone()).collect();
    assert_eq!(copies, want, "a route's copy keeps the type");
}

async fn content_key_duplicates(engine: Engine) {
    let data = tenant(&engine, "acme");
    let first = new_delivery("evt_a", 1_000, Some(b"\0digest-1"));
    let first_id = first.meta.delivery_id.clone();
    assert_eq!(data.commit(first).await.unwrap(), CommitOutcome::Accepted);
    let replay = data
        .commit(new_delivery("evt_b", 1_500, Some(b"\0digest-1")))
        .await
        .unwrap();
    assert_eq!(
        replay,
        CommitOutcome::DuplicateOf(first_id, EventId::new("evt_a"))
    );
    // The replay recorded nothing: its event id is still unknown.
    accepted(&data, "evt_b", 2_000).await;
    assert_eq!(data.counts().unwrap().depth, 2);
}

async fn concurrent_copies_make_one_delivery(engine: Engine) {
    let data = tenant(&engine, "acme");
    let copies = (0..12).map(|_| data.commit(new_delivery("evt_same", 1_000, None)));
    let outcomes: Vec<CommitOutcome> = futures_util::future::join_all(copies)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    let accepted = outcomes
        .iter()
        .filter(|o| **o == CommitOutcome::Accepted)
        .count();
    assert_eq!(
        accepted, 1,
        "one copy is new, the rest duplicates: {outcomes:?}"
    );
    let (_, first) = only_entry(&data);
    for outcome in outcomes.iter().filter(|o| **o != CommitOutcome::Accepted) {
        assert_eq!(*outcome, CommitOutcome::Duplicate(first.clone()));
    }
}

async fn record_attempt_is_a_compare_and_set(engine: Engine) {
    let data = tenant(&engine, "acme");
    let id = accepted(&data, "evt_1", 1_000).await;
    let (entry, queued) = only_entry(&data);
    assert_eq!(queued, id);
    let retry = Next::Retry { due_ms: 5_000 };
    let state = data
        .record_attempt(&entry, &id, &attempt(1, 1_000), &retry, 1_000)
        .unwrap()
        .expect("the live entry is claimed");
    assert_eq!(state.status, DeliveryStatus::Pending);
    assert_eq!(state.next_attempt_at_ms, Some(5_000));
    let stale = data
        .record_attempt(&entry, &id, &attempt(2, 1_100), &Next::Delivered, 1_100)
        .unwrap();
    assert!(stale.is_none(), "a stale entry records nothing");
    let (live, _) = only_entry(&data);
    assert_ne!(live, entry);
    let done = data
        .record_attempt(&live, &id, &attempt(2, 5_000), &Next::Delivered, 5_000)
        .unwrap()
        .unwrap();
    assert_eq!(done.status, DeliveryStatus::Delivered);
    assert_eq!(done.attempts, 2);
    let attempts = data.attempts(&id).unwrap();
    assert_eq!(
        attempts.iter().map(|a| a.attempt).collect::<Vec<_>>(),
        [1, 2]
    );
    assert!(data.queue(None, 10).unwrap().is_empty());
    let delivered = data
        .deliveries(Some(DeliveryStatus::Delivered), None, 10)
        .unwrap();
    assert_eq!(delivered.len(), 1);
}

/// A cancel dead-letters pending deliveries (new, and waiting for a retry)
/// with reason `cancelled`, without an attempt being sent; what is not
/// pending is left; a cancelled one redelivers.
async fn a_cancel_dead_letters_pending_deliveries(engine: Engine) {
    let data = tenant(&engine, "acme");
    let fresh = accepted(&data, "evt_1", 1_000).await;
    let retrying = accepted(&data, "evt_2", 1_001).await;
    let entry = data
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .find(|(_, id)| *id == retrying)
        .unwrap()
        .0;
    let retry = Next::Retry { due_ms: 9_000 };
    data.record_attempt(&entry, &retrying, &attempt(1, 1_500), &retry, 1_500)
        .unwrap()
        .unwrap();
    let unknown = DeliveryId::due_at(5);
    let ids = [fresh.clone(), retrying.clone(), unknown];
    assert_eq!(data.cancel(&ids, 2_000).unwrap(), 2);
    for (id, attempts) in [(&fresh, 1), (&retrying, 2)] {
        let state = data.state(id).unwrap().unwrap();
        assert_eq!(state.status, DeliveryStatus::Dead);
        assert_eq!(state.attempts, attempts);
        let last = data.attempts(id).unwrap().pop().unwrap();
        assert_eq!(last.status_code, None);
        assert!(last.error.unwrap().starts_with("cancelled"));
    }
    assert!(data.queue(None, 10).unwrap().is_empty());
    let letters = data.dead_letters(None, 10, &|_| true).unwrap();
    assert_eq!(letters.len(), 2);
    assert!(letters
        .iter()
        .all(|(_, l)| l.reason == crate::api::CANCELLED));
    assert_eq!(data.counts().unwrap().dead, 2);
    assert_eq!(
        data.cancel(&ids, 2_100).unwrap(),
        0,
        "nothing pending is left"
    );
    let again = data.redeliver(&fresh, 3_000, Resend::Once).unwrap();
    let state = data.state(&again).unwrap().unwrap();
    assert_eq!(state.status, DeliveryStatus::Pending);
}

async fn redeliver_exactly_once_under_concurrency(engine: Engine) {
    let data = tenant(&engine, "acme");
    accepted(&data, "evt_1", 1_000).await;
    let dead = kill(&data, 2_000);
    assert_eq!(data.counts().unwrap().dead, 1);
    let results: Vec<_> = std::thread::scope(|s| {
        let calls: Vec<_> = (0..8)
            .map(|_| s.spawn(|| data.redeliver(&dead, 3_000, Resend::Any)))
            .collect();
        calls.into_iter().map(|c| c.join().unwrap()).collect()
    });
    let made: Vec<&DeliveryId> = results.iter().filter_map(|r| r.as_ref().ok()).collect();
    assert_eq!(made.len(), 1, "exactly one redelivery: {results:?}");
    for refused in results.iter().filter_map(|r| r.as_ref().err()) {
        assert!(matches!(refused, Error::Precondition(_)), "{refused}");
    }
    let old = data.state(&dead).unwrap().unwrap();
    assert_eq!(old.status, DeliveryStatus::Redelivered);
    assert_eq!(old.redelivered_as.as_ref(), Some(made[0]));
    let counts = data.counts().unwrap();
    assert_eq!((counts.depth, counts.dead), (1, 0));
    assert_eq!(only_entry(&data).1, *made[0]);
}

async fn dead_letters_page_newest_first(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut dead = Vec::new();
    for n in 0..5 {
        accepted(&data, &format!("evt_{n}"), 1_000).await;
        dead.push(kill(&data, 10_000 + n));
    }
    let all = |_: &_| true;
    let page = data.dead_letters(None, 2, &all).unwrap();
    let ids: Vec<&DeliveryId> = page.iter().map(|(_, l)| &l.delivery_id).collect();
    assert_eq!(ids, [&dead[4], &dead[3]]);
    let next = data.dead_letters(Some(&page[1].0), 2, &all).unwrap();
    let ids: Vec<&DeliveryId> = next.iter().map(|(_, l)| &l.delivery_id).collect();
    assert_eq!(ids, [&dead[2], &dead[1]]);
    let even = |l: &super::records::DeadLetter| l.dead_at_ms % 2 == 0;
    let filtered = data.dead_letters(None, 10, &even).unwrap();
    assert_eq!(filtered.len(), 3);
    let (key, letter) = &page[0];
    assert!(data.purge_dead_letter(key, letter).unwrap());
    assert!(!data.purge_dead_letter(key, letter).unwrap(), "purged once");
    assert!(data.event(&dead[4]).unwrap().is_none());
    assert_eq!(data.counts().unwrap().dead, 4);
}

async fn sweep_forgets_old_work(engine: Engine) {
    let data = tenant(&engine, "acme");
    let old = accepted(&data, "evt_old", 1_000).await;
    let (entry, _) = only_entry(&data);
    data.record_attempt(&entry, &old, &attempt(1, 1_000), &Next::Delivered, 1_000)
        .unwrap()
        .unwrap();
    let new = accepted(&data, "evt_new", 9_000).await;
    let request = SweepRequest {
        delivered_before_ms: 5_000,
        idem_before_ms: 5_000,
        dead_before_ms: 0,
        batch: 100,
        idem_scan: 100,
    };
    let mut cursor = Vec::new();
    let swept = data.sweep(&request, &mut cursor).unwrap();
    assert_eq!((swept.delivered, swept.idempotency), (1, 1));
    assert!(data.event(&old).unwrap().is_none());
    assert!(data.state(&old).unwrap().is_none());
    assert!(data.event(&new).unwrap().is_some());
    accepted(&data, "evt_old", 10_000).await;
    let again = data.commit(new_delivery("evt_new", 10_000, None)).await;
    assert_eq!(again.unwrap(), CommitOutcome::Duplicate(new));
}

async fn catalog_rows_are_atomic(engine: Engine) {
    let rows = engine.store.catalog_rows().unwrap();
    let before = engine.store.catalog_version().unwrap();
    rows.apply(&[
        RowChange::Put(Table::Tenants, "acme".into(), b"record".to_vec()),
        RowChange::Put(Table::Secrets, "acme".into(), b"sealed".to_vec()),
        RowChange::Put(Table::Tokens, "tok/acme/1".into(), b"t1".to_vec()),
        RowChange::Put(Table::Tokens, "tok/other/1".into(), b"t2".to_vec()),
    ])
    .unwrap();
    assert_eq!(
        rows.get(Table::Tenants, "acme").unwrap().unwrap(),
        b"record"
    );
    assert_eq!(
        rows.get(Table::Secrets, "acme").unwrap().unwrap(),
        b"sealed"
    );
    assert!(rows.get(Table::Tenants, "zeta").unwrap().is_none());
    let scanned = rows.scan(Table::Tokens, "tok/acme/").unwrap();
    assert_eq!(scanned, [("tok/acme/1".to_string(), b"t1".to_vec())]);
    rows.apply(&[
        RowChange::Remove(Table::Tenants, "acme".into()),
        RowChange::Remove(Table::Secrets, "acme".into()),
        RowChange::Put(Table::Drops, "acme".into(), Vec::new()),
    ])
    .unwrap();
    assert!(rows.get(Table::Tenants, "acme").unwrap().is_none());
    assert_eq!(rows.scan(Table::Drops, "").unwrap().len(), 1);
    if engine.shared {
        assert!(
            engine.store.catalog_version().unwrap() >= before + 2,
            "every change is seen by other processes"
        );
    }
}

async fn a_catalog_row_is_created_once(engine: Engine) {
    let rows = engine.store.catalog_rows().unwrap();
    let create = |value: &[u8]| {
        vec![
            RowChange::Put(Table::Secrets, "acme".into(), value.to_vec()),
            RowChange::Create(Table::Tenants, "acme".into(), value.to_vec()),
        ]
    };
    let won: Vec<bool> = std::thread::scope(|s| {
        let racers: Vec<_> = [b"one", b"two"]
            .into_iter()
            .map(|value| {
                let (rows, changes) = (rows.clone(), create(value));
                s.spawn(move || match rows.apply(&changes) {
                    Ok(()) => true,
                    Err(Error::AlreadyExists(key)) => {
                        assert_eq!(key, "acme");
                        false
                    }
                    Err(e) => panic!("{e}"),
                })
            })
            .collect();
        racers.into_iter().map(|r| r.join().unwrap()).collect()
    });
    assert_eq!(won.iter().filter(|w| **w).count(), 1, "{won:?}");
    let winner: &[u8] = if won[0] { b"one" } else { b"two" };
    // The loser changed nothing, not even the row it put before.
    assert_eq!(
        rows.get(Table::Tenants, "acme").unwrap().as_deref(),
        Some(winner)
    );
    assert_eq!(
        rows.get(Table::Secrets, "acme").unwrap().as_deref(),
        Some(winner)
    );
}

async fn drop_tenant_removes_only_its_data(engine: Engine) {
    let (gone, kept) = (tenant(&engine, "gone"), tenant(&engine, "kept"));
    let dropped = accepted(&gone, "evt_1", 1_000).await;
    let kept_id = accepted(&kept, "evt_1", 1_000).await;
    engine.store.drop_tenant_trees(gone.tenant()).await.unwrap();
    assert!(gone.event(&dropped).unwrap().is_none());
    let again = tenant(&engine, "gone");
    assert_eq!(again.counts().unwrap().depth, 0);
    let late = gone.commit(new_delivery("evt_2", 2_000, None)).await;
    assert!(matches!(late, Err(Error::TenantDeleted(_))), "{late:?}");
    assert!(kept.event(&kept_id).unwrap().is_some());
    assert_eq!(kept.counts().unwrap().depth, 1);
    accepted(&again, "evt_1", 3_000).await;
}

async fn forwarding_leases(engine: Engine) {
    let store = &engine.store;
    let acme = TenantId::try_from("acme").unwrap();
    let first = store.claim_forwarding(&acme, "a", 15_000).unwrap().unwrap();
    let renewed = store.claim_forwarding(&acme, "a", 15_000).unwrap();
    assert_eq!(renewed.as_ref(), Some(&first), "renewed, same epoch");
    if !engine.shared {
        assert!(store
            .claim_forwarding(&acme, "b", 15_000)
            .unwrap()
            .is_some());
        return;
    }
    assert!(
        store
            .claim_forwarding(&acme, "b", 15_000)
            .unwrap()
            .is_none(),
        "held by a"
    );
    store.release_forwarding(&acme, "a").unwrap();
    let taken = store.claim_forwarding(&acme, "b", -1).unwrap().unwrap();
    assert!(taken.epoch > first.epoch, "a takeover moves the epoch on");
    // b's lease ran out (it was given none): the next claimant gets it.
    let back = store.claim_forwarding(&acme, "a", 15_000).unwrap().unwrap();
    assert!(back.epoch > taken.epoch, "a's old epoch stays fenced out");
    assert!(store
        .claim_forwarding(&acme, "b", 15_000)
        .unwrap()
        .is_none());
}

/// A refusal of `tenant` at `at_ms`: content refused after a valid
/// signature when `content`, else a bad signature.
fn refusal(tenant: &str, at_ms: i64, content: bool) -> Rejection {
    Rejection {
        tenant_id: tenant.into(),
        at_ms,
        request_id: format!("req_{at_ms}"),
        code: if content {
            "INVALID_JSON"
        } else {
            "BAD_SIGNATURE"
        }
        .into(),
        reason: "refused".into(),
        signature_valid: content,
        body_bytes: 2,
        body: b"{}".to_vec(),
    }
}

/// Every page of `tenant`'s rejections passing `filter`, `size` at a time,
/// as request ids.
fn pages(
    log: &dyn RejectionLog,
    tenant: &str,
    filter: &RejectionFilter,
    size: usize,
) -> Vec<Vec<String>> {
    let mut pages = Vec::new();
    let mut token = None;
    loop {
        let (page, next) = log.list(tenant, filter, size, token.as_deref()).unwrap();
        pages.push(page.into_iter().map(|r| r.request_id).collect());
        match next {
            Some(next) => token = Some(next),
            None => return pages,
        }
    }
}

async fn rejection_pages_filtered_by_signature_are_full(engine: Engine) {
    let log = engine.store.rejections().unwrap();
    // Content refusals at 1000, 1003, 1006, 1009; bad signatures between.
    for n in 0..12 {
        log.record(refusal("acme", 1_000 + n, n % 3 == 0)).unwrap();
        log.record(refusal("other", 1_000 + n, true)).unwrap();
    }
    let content = RejectionFilter {
        signature_valid: Some(true),
        ..Default::default()
    };
    assert_eq!(
        pages(&*log, "acme", &content, 2),
        [["req_1009", "req_1006"], ["req_1003", "req_1000"]]
    );
    let forged = RejectionFilter {
        signature_valid: Some(false),
        ..Default::default()
    };
    assert_eq!(
        pages(&*log, "acme", &forged, 3),
        [
            vec!["req_1011", "req_1010", "req_1008"],
            vec!["req_1007", "req_1005", "req_1004"],
            vec!["req_1002", "req_1001"],
        ]
    );
    let one = RejectionFilter {
        request_id: Some("req_1004".into()),
        signature_valid: Some(false),
    };
    assert_eq!(pages(&*log, "acme", &one, 5), [["req_1004"]]);
    assert_eq!(
        pages(&*log, "acme", &RejectionFilter::default(), 12)[0].len(),
        12
    );
}
