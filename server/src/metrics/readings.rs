//! Everything a scrape reads of tenant and storage state, in one place
//! ([`read_storage`]): the running tenants' queue and dead-letter gauges
//! (kept by storage as entries come and go), the first key of each queue
//! for the age of the most overdue entry, and the group committer's
//! counts. Its cost does not grow with backlog.

use std::collections::BTreeMap;

use crate::{store::records::queue_key_due_ms, tenant::Registry};

/// The storage gauges of one `tenant` label, summed over its tenants.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct QueueGauges {
    /// Deliveries queued, or pulled and not yet acknowledged.
    pub depth: u64,
    /// How long the most overdue queued delivery has been due, in seconds.
    pub oldest_due_secs: f64,
    /// Dead letters.
    pub dead: u64,
}

/// What storage says at one scrape.
#[derive(Debug, Default, Clone)]
pub struct StorageReadings {
    /// `tenant` label -> its queue gauges.
    pub queues: BTreeMap<String, QueueGauges>,
    /// Durable batches of the group committer.
    pub commit_batches: u64,
    /// Writes those batches carried.
    pub commit_writes: u64,
}

/// Reads the queue gauges of every running tenant and the committer's
/// counts; the age of the oldest due entry is measured on the registry's
/// clock.
pub fn read_storage(registry: &Registry) -> StorageReadings {
    let now_ms = registry.clock().now_ms();
    let mut queues: BTreeMap<String, QueueGauges> = BTreeMap::new();
    for handle in registry.handles() {
        let g = queues.entry(handle.metrics.label().to_owned()).or_default();
        let trees = &handle.trees;
        g.depth += trees.gauges.queue_depth();
        g.dead += trees.gauges.dead_letters();
        if let Ok(Some((key, _))) = trees.queue.first() {
            let due = queue_key_due_ms(&key).unwrap_or(now_ms);
            g.oldest_due_secs = g.oldest_due_secs.max((now_ms - due).max(0) as f64 / 1000.0);
        }
    }
    let commits = registry.store().committer().stats();
    StorageReadings {
        queues,
        commit_batches: commits.batches(),
        commit_writes: commits.writes(),
    }
}
