//! Everything a scrape reads of tenant and storage state, in one place
//! ([`read_storage`]): the running tenants' queue and dead-letter gauges
//! (kept by storage as entries come and go), the most overdue queue entry,
//! and the group committer's counts. Its cost does not grow with backlog.

use std::{collections::BTreeMap, sync::Arc};

use super::TenantMetrics;
use crate::store::api::{Storage, TenantStore};

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

/// What a scrape reads of one running tenant: its counters and its data.
pub struct TenantSource {
    /// The counters of its `tenant` label.
    pub metrics: Arc<TenantMetrics>,
    /// Its queue and dead letters.
    pub data: TenantStore,
}

/// Reads the queue gauges of every running tenant and the committer's
/// counts; the age of the oldest due entry is measured against `now_ms`.
pub fn read_storage(tenants: &[TenantSource], store: &dyn Storage, now_ms: i64) -> StorageReadings {
    let mut queues: BTreeMap<String, QueueGauges> = BTreeMap::new();
    for tenant in tenants {
        let g = queues.entry(tenant.metrics.label().to_owned()).or_default();
        let counts = match tenant.data.counts() {
            Ok(counts) => counts,
            Err(e) => {
                tracing::warn!(tenant = %tenant.data.tenant(), error = %e, "queue counts cannot be read");
                continue;
            }
        };
        g.depth += counts.depth;
        g.dead += counts.dead;
        if let Some(due) = counts.oldest_due_ms {
            g.oldest_due_secs = g.oldest_due_secs.max((now_ms - due).max(0) as f64 / 1000.0);
        }
    }
    let commits = store.commit_figures();
    StorageReadings {
        queues,
        commit_batches: commits.batches,
        commit_writes: commits.writes,
    }
}
