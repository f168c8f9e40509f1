//! Live counts of one tenant's queue and dead-letter index, kept by the storage
//! functions that add and remove entries.

use std::{
    cell::{Cell, RefCell},
    collections::BTreeSet,
    sync::{
        atomic::{AtomicI64, Ordering},
        Mutex,
    },
};

use super::{entry, Keyspace};
use crate::error::Result;

/// Queue depth, dead letters and the deliveries in the queue of one tenant.
///
/// Live counts of one tenant's queue and dead-letter index, kept by the
/// storage functions that add and remove entries, so a metrics scrape reads
/// two atomics instead of scanning trees. The oldest delivery still in the
/// queue is the older of the queue's first entry (a new delivery's entry is
/// due when it was accepted) and the first of an ordered set of the ids
/// whose entries later changes wrote (ULIDs: ordered by when each was
/// accepted or redelivered), so the ingest path adds nothing to the set.
/// Counted once, by one scan, when a
/// tenant's trees are first opened in a process; every transaction that
/// changes the queue or the index counts what it really changed in a
/// [`Tally`], applied only once the transaction committed.
#[derive(Debug, Default)]
pub struct LiveCounts {
    queued: AtomicI64,
    dead: AtomicI64,
    pending: Mutex<BTreeSet<Box<str>>>,
}

/// How many ids [`LiveCounts::oldest_pending`] checks at most in one call.
const OLDEST_CHECKS: usize = 16;

impl LiveCounts {
    /// Counts what the trees hold now (the one scan, at boot).
    pub(super) fn count(queue: &Keyspace, dead: &Keyspace) -> Result<LiveCounts> {
        let count = |space: &Keyspace, each: fn(&[u8]) -> i64| -> Result<i64> {
            let mut n = 0;
            for entry in space.iter() {
                n += each(&entry?.1);
            }
            Ok(n)
        };
        let mut pending = BTreeSet::new();
        let mut queued = 0;
        for entry in queue.iter() {
            let value = entry?.1;
            for id in ids(&value) {
                queued += 1;
                pending.insert(id.into());
            }
        }
        Ok(LiveCounts {
            queued: AtomicI64::new(queued),
            dead: AtomicI64::new(count(dead, |_| 1)?),
            pending: Mutex::new(pending),
        })
    }

    /// Records what a committed change added and removed.
    pub fn apply(&self, delta: Delta) {
        if delta.queued != 0 {
            self.queued.fetch_add(delta.queued, Ordering::Relaxed);
        }
        if delta.dead != 0 {
            self.dead.fetch_add(delta.dead, Ordering::Relaxed);
        }
        if !delta.pending.is_empty() {
            let mut pending = self.pending.lock().expect("pending ids lock");
            for (added, id) in delta.pending {
                match added {
                    true => pending.insert(id),
                    false => pending.remove(&id),
                };
            }
        }
    }

    /// Records a committed new delivery in the queue. Its entry is due
    /// when it was accepted, so the queue's first entry stands for it and
    /// the set of moved ids is left alone: nothing more on the ingest path.
    pub fn queued_one(&self) {
        self.queued.fetch_add(1, Ordering::Relaxed);
    }

    /// The id of the oldest delivery whose entry a later change wrote (a
    /// retry, a pull, a nack, a redelivery) for which `still` holds (it is
    /// still pending, read from its state): an id for which it does not is
    /// dropped from the set, at most [`OLDEST_CHECKS`] in one call, so a
    /// change the set missed cannot hold its reading for ever.
    pub fn oldest_moved(&self, still: impl Fn(&str) -> Result<bool>) -> Result<Option<Box<str>>> {
        for _ in 0..OLDEST_CHECKS {
            let first = self
                .pending
                .lock()
                .expect("pending ids lock")
                .first()
                .cloned();
            let Some(first) = first else {
                return Ok(None);
            };
            if still(&first)? {
                return Ok(Some(first));
            }
            self.pending
                .lock()
                .expect("pending ids lock")
                .remove(&first);
        }
        Ok(None)
    }

    /// Deliveries in the queue: waiting, scheduled for a retry or pulled
    /// and not yet acknowledged.
    pub fn queue_depth(&self) -> u64 {
        self.queued.load(Ordering::Relaxed).max(0) as u64
    }

    /// Dead letters waiting for redelivery or purge.
    pub fn dead_letters(&self) -> u64 {
        self.dead.load(Ordering::Relaxed).max(0) as u64
    }
}

/// Queued deliveries and dead letters added (positive) or removed
/// (negative), and the ids of the deliveries that entered (`true`) or left
/// (`false`) the queue, in order.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Delta {
    /// Queued deliveries (one queue entry may hold several, [`super::entry`]).
    pub queued: i64,
    /// Dead letters.
    pub dead: i64,
    /// Ids that entered or left the queue.
    pub pending: Vec<(bool, Box<str>)>,
}

/// The delivery ids a queue entry names.
fn ids(value: &[u8]) -> impl Iterator<Item = &str> {
    entry::records(value).filter_map(|record| std::str::from_utf8(entry::parts(record).0).ok())
}

/// What one change made to a tenant's queue and dead-letter index, counted
/// from what each insert replaced and each remove found: an entry that was
/// already there (or already gone) counts nothing. Inside a sled
/// transaction it is made afresh in the closure, so a closure that sled
/// runs again after a conflict counts from zero, and its [`Delta`] is
/// applied only once the transaction committed.
#[derive(Debug, Default)]
pub struct Tally {
    queued: Cell<i64>,
    dead: Cell<i64>,
    pending: RefCell<Vec<(bool, Box<str>)>>,
}

impl Tally {
    /// A queue insert of one delivery, `id`, that replaced `old`.
    pub fn queue_inserted(&self, old: Option<sled::IVec>, id: &str) {
        bump(&self.queued, i64::from(old.is_none()));
        self.left(old.as_deref());
        self.pending.borrow_mut().push((true, id.into()));
    }

    /// A queue remove that found `old`.
    pub fn queue_removed(&self, old: Option<sled::IVec>) {
        bump(&self.queued, -i64::from(old.is_some()));
        self.left(old.as_deref());
    }

    /// Delivery `id`'s record taken out of a queue entry shared by several
    /// (`taken`: it was there).
    pub fn queue_taken(&self, id: &str, taken: bool) {
        bump(&self.queued, -i64::from(taken));
        if taken {
            self.pending.borrow_mut().push((false, id.into()));
        }
    }

    /// The deliveries of entry `old`, if any, left the queue.
    fn left(&self, old: Option<&[u8]>) {
        let mut pending = self.pending.borrow_mut();
        pending.extend(old.into_iter().flat_map(ids).map(|id| (false, id.into())));
    }

    /// A dead-letter insert that replaced `old`.
    pub fn dead_inserted(&self, old: Option<sled::IVec>) {
        bump(&self.dead, i64::from(old.is_none()));
    }

    /// A dead-letter remove that found `old`.
    pub fn dead_removed(&self, old: Option<sled::IVec>) {
        bump(&self.dead, -i64::from(old.is_some()));
    }

    /// Everything counted.
    pub fn delta(&self) -> Delta {
        Delta {
            queued: self.queued.get(),
            dead: self.dead.get(),
            pending: self.pending.take(),
        }
    }
}

fn bump(cell: &Cell<i64>, by: i64) {
    cell.set(cell.get() + by);
}

#[cfg(test)]
mod tests {
    use super::super::{deliveries, SledStore, TenantTrees};
    use crate::{
        api::{PullRequest, TenantData},
        ids::{DeliveryId, EventId, RequestId, TenantId},
        lifecycle::Next,
        records::{AttemptRecord, EventMeta},
        NewDelivery,
    };

    async fn accept(trees: &TenantTrees, event: &str) -> DeliveryId {
        let delivery_id = DeliveryId::generate();
        TenantData::commit(
            trees,
            NewDelivery {
                event_id: EventId::new(event),
                meta: EventMeta {
                    delivery_id: delivery_id.clone(),
                    ..EventMeta::bare(event, 1_000)
                },
                body: bytes::Bytes::from_static(b"{}"),
                due_ms: 1_000,
                content_key: None,
                copies: Vec::new(),
                receipt: crate::api::Receipt::Queued,
                routes: Vec::new(),
                event_type: None,
            },
        )
        .await
        .unwrap();
        delivery_id
    }

    /// Records one attempt of `id` at its current queue entry.
    fn attempt(trees: &TenantTrees, id: &DeliveryId, next: Next) {
        let state = deliveries::load_state(trees, id).unwrap().unwrap();
        let key = hex::decode(state.queue_key.unwrap()).unwrap();
        let record = AttemptRecord {
            attempt: state.attempts + 1,
            started_at_ms: 2_000,
            duration_ms: 1,
            status_code: Some(500),
            error: None,
            response_body: vec![],
            next_retry_at_ms: None,
            request_id: RequestId::generate(),
            transform_version: None,
        };
        let settled = deliveries::record_attempt(trees, &key, id, &record, &next, 2_000);
        assert!(settled.unwrap().is_some(), "{id} held its queue entry");
    }

    fn counts(trees: &TenantTrees) -> (u64, u64) {
        (trees.gauges.queue_depth(), trees.gauges.dead_letters())
    }

    /// Since when the oldest queued delivery waits.
    fn oldest(trees: &TenantTrees) -> Option<i64> {
        TenantData::counts(trees).unwrap().oldest_pending_ms
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_follow_every_change_and_are_counted_again_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::try_from("t").unwrap();
        let (store, committer) = SledStore::open(dir.path(), 16, false).unwrap();
        let trees = store.tenant_trees(&tenant).unwrap();
        let a = accept(&trees, "evt_a").await;
        let b = accept(&trees, "evt_b").await;
        let c = accept(&trees, "evt_c").await;
        accept(&trees, "evt_a").await;
        assert_eq!(counts(&trees), (3, 0), "a duplicate queues nothing");

        attempt(&trees, &a, Next::Delivered);
        assert_eq!(counts(&trees), (2, 0));
        attempt(&trees, &b, Next::Retry { due_ms: 5_000 });
        assert_eq!(counts(&trees), (2, 0), "a retry moves its entry");
        let dead = Next::Dead {
            reason: "gone".into(),
        };
        attempt(&trees, &b, dead.clone());
        assert_eq!(counts(&trees), (1, 1));

        let again =
            deliveries::redeliver(&trees, &b, 3_000, crate::lifecycle::Resend::Any).unwrap();
        assert_eq!(counts(&trees), (2, 0));
        attempt(&trees, &again, dead);
        assert_eq!(counts(&trees), (1, 1));
        let (key, letter) = trees.dead_letters(None, 1, &|_| true).unwrap().remove(0);
        assert!(deliveries::purge_dead_letter(&trees, &key, &letter).unwrap());
        assert!(!deliveries::purge_dead_letter(&trees, &key, &letter).unwrap());
        assert_eq!(counts(&trees), (1, 0), "purging twice counts once");

        let pulled = deliveries::pull(
            &trees,
            &PullRequest {
                max: 10,
                max_bytes: usize::MAX,
                visibility_ms: 60_000,
                window_ms: 86_400_000,
                now_ms: 4_000,
            },
        )
        .unwrap();
        assert_eq!(pulled.len(), 1);
        assert_eq!(
            counts(&trees),
            (1, 0),
            "a pulled delivery stays queued until acked"
        );
        deliveries::make_due(&trees, std::slice::from_ref(&c), 4_000).unwrap();
        assert_eq!(counts(&trees), (1, 0));
        assert_eq!(deliveries::ack(&trees, &[c], 5_000).unwrap(), 1);
        assert_eq!(counts(&trees), (0, 0));
        assert_eq!(oldest(&trees), None, "every delivery left the queue");

        let d = accept(&trees, "evt_d").await;
        attempt(&trees, &d, Next::Retry { due_ms: 9_000 });
        accept(&trees, "evt_e").await;
        let f = accept(&trees, "evt_f").await;
        attempt(
            &trees,
            &f,
            Next::Dead {
                reason: "gone".into(),
            },
        );
        assert_eq!(counts(&trees), (2, 1));
        assert_eq!(
            oldest(&trees),
            Some(1_000),
            "the first entry, due when accepted"
        );
        assert_eq!(
            counts(&store.tenant_trees(&tenant).unwrap()),
            (2, 1),
            "every handle shares one count"
        );

        drop((trees, store));
        committer.join().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
        let trees = store.tenant_trees(&tenant).unwrap();
        assert_eq!(counts(&trees), (2, 1));
        assert_eq!(oldest(&trees), Some(1_000), "counted again from the queue");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn dropping_a_tenants_trees_forgets_its_counts() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::try_from("t").unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
        let trees = store.tenant_trees(&tenant).unwrap();
        let a = accept(&trees, "evt_a").await;
        accept(&trees, "evt_b").await;
        attempt(
            &trees,
            &a,
            Next::Dead {
                reason: "gone".into(),
            },
        );
        assert_eq!(counts(&trees), (1, 1));
        store.drop_tenant_trees(&tenant).await.unwrap();
        let again = store.tenant_trees(&tenant).unwrap();
        assert_eq!(
            counts(&again),
            (0, 0),
            "a tenant created again under a deleted one's id starts from its own trees"
        );
        accept(&again, "evt_a").await;
        assert_eq!(counts(&again), (1, 0));
    }
}
