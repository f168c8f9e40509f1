//! Live counts of one tenant's queue and dead-letter index, kept by the
//! storage functions that add and remove entries, so a metrics scrape reads
//! two atomics instead of scanning trees. Counted once, by one scan, when a
//! tenant's trees are first opened in a process.

use std::sync::atomic::{AtomicI64, Ordering};

use crate::error::Result;

/// Queue depth and dead letters of one tenant.
#[derive(Debug, Default)]
pub struct QueueGauges {
    queued: AtomicI64,
    dead: AtomicI64,
}

impl QueueGauges {
    /// Counts what the trees hold now (the one scan, at boot).
    pub(super) fn count(queue: &sled::Tree, dead: &sled::Tree) -> Result<QueueGauges> {
        let count = |tree: &sled::Tree| -> Result<i64> {
            let mut n = 0;
            for key in tree.iter().keys() {
                key?;
                n += 1;
            }
            Ok(n)
        };
        Ok(QueueGauges {
            queued: AtomicI64::new(count(queue)?),
            dead: AtomicI64::new(count(dead)?),
        })
    }

    /// Records queue entries added (positive) or removed (negative).
    pub fn add_queued(&self, delta: i64) {
        if delta != 0 {
            self.queued.fetch_add(delta, Ordering::Relaxed);
        }
    }

    /// Records dead letters added (positive) or removed (negative).
    pub fn add_dead(&self, delta: i64) {
        if delta != 0 {
            self.dead.fetch_add(delta, Ordering::Relaxed);
        }
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

#[cfg(test)]
mod tests {
    use crate::{
        ids::{DeliveryId, EventId, RequestId, TenantId},
        store::{
            deliveries::{self, Next},
            records::{AttemptRecord, EventMeta},
            NewDelivery, Store, TenantTrees,
        },
    };

    async fn accept(store: &Store, trees: &TenantTrees, event: &str) -> DeliveryId {
        let delivery_id = DeliveryId::generate();
        store
            .committer()
            .commit(NewDelivery {
                trees: trees.clone(),
                event_id: EventId::new(event),
                meta: EventMeta {
                    event_id: EventId::new(event),
                    delivery_id: delivery_id.clone(),
                    request_id: RequestId::generate(),
                    received_at_ms: 1_000,
                    headers: vec![],
                    trace_id: String::new(),
                    span_id: String::new(),
                    sampled: true,
                },
                body: actix_web::web::Bytes::from_static(b"{}"),
                due_ms: 1_000,
            })
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
        };
        deliveries::record_attempt(trees, &key, id, &record, &next, 77, 2_000).unwrap();
    }

    fn counts(trees: &TenantTrees) -> (u64, u64) {
        (trees.gauges.queue_depth(), trees.gauges.dead_letters())
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn counts_follow_every_change_and_are_counted_again_on_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::new("t");
        let (store, committer) = Store::open(dir.path(), 16, false).unwrap();
        let trees = store.tenant_trees(&tenant).unwrap();
        let a = accept(&store, &trees, "evt_a").await;
        let b = accept(&store, &trees, "evt_b").await;
        let c = accept(&store, &trees, "evt_c").await;
        accept(&store, &trees, "evt_a").await;
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

        let again = deliveries::redeliver(&trees, &b, 78, 3_000).unwrap();
        assert_eq!(counts(&trees), (2, 0));
        attempt(&trees, &again, dead);
        assert_eq!(counts(&trees), (1, 1));
        let (key, letter) = deliveries::dead_letters(&trees).next().unwrap().unwrap();
        deliveries::purge_dead_letter(&trees, &key, &letter).unwrap();
        deliveries::purge_dead_letter(&trees, &key, &letter).unwrap();
        assert_eq!(counts(&trees), (1, 0), "purging twice counts once");

        let pulled = deliveries::pull(&trees, store.db(), 10, 60_000, 86_400_000, 4_000).unwrap();
        assert_eq!(pulled.len(), 1);
        assert_eq!(
            counts(&trees),
            (1, 0),
            "a pulled delivery stays queued until acked"
        );
        deliveries::nack(&trees, store.db(), std::slice::from_ref(&c), 4_000).unwrap();
        assert_eq!(counts(&trees), (1, 0));
        assert_eq!(deliveries::ack(&trees, &[c], 5_000).unwrap(), 1);
        assert_eq!(counts(&trees), (0, 0));

        let d = accept(&store, &trees, "evt_d").await;
        attempt(&trees, &d, Next::Retry { due_ms: 9_000 });
        accept(&store, &trees, "evt_e").await;
        let f = accept(&store, &trees, "evt_f").await;
        attempt(
            &trees,
            &f,
            Next::Dead {
                reason: "gone".into(),
            },
        );
        assert_eq!(counts(&trees), (2, 1));
        assert_eq!(
            counts(&store.tenant_trees(&tenant).unwrap()),
            (2, 1),
            "every handle shares one count"
        );

        drop((trees, store));
        committer.join().unwrap();
        let (store, _committer) = Store::open(dir.path(), 16, false).unwrap();
        assert_eq!(counts(&store.tenant_trees(&tenant).unwrap()), (2, 1));
        store.tenant_trees(&tenant).unwrap().queue.clear().unwrap();
        store.forget_tenant("t");
        assert_eq!(
            counts(&store.tenant_trees(&tenant).unwrap()),
            (0, 1),
            "a forgotten tenant is counted again from its trees"
        );
    }
}
