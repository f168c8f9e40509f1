//! Everything a scrape reads of tenant and storage state, in one place
//! ([`read_storage`]).

use std::{collections::BTreeMap, sync::Arc};

use super::RouteMetrics;
use crate::store::api::{Storage, TenantStore};

/// The storage gauges of one (`tenant`, `route`) label pair, summed over
/// the routes counted under it.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct QueueGauges {
    /// Deliveries queued, or pulled and not yet acknowledged.
    pub depth: u64,
    /// How long the oldest queued delivery has waited since it was
    /// accepted or redelivered (one scheduled for a retry included), in
    /// seconds.
    pub oldest_pending_secs: f64,
    /// Dead letters.
    pub dead: u64,
}

/// What storage says at one scrape.
#[derive(Debug, Default, Clone)]
pub struct StorageReadings {
    /// (`tenant`, `route`) labels -> their queue gauges.
    pub queues: BTreeMap<(String, String), QueueGauges>,
    /// Durable batches of the group committer.
    pub commit_batches: u64,
    /// Writes those batches carried.
    pub commit_writes: u64,
}

/// What a scrape reads of one route of a running tenant: its labels and
/// its data.
pub struct TenantSource {
    /// The handles of its `tenant` and `route` labels.
    pub metrics: Arc<RouteMetrics>,
    /// Its queue and dead letters.
    pub data: TenantStore,
}

/// Reads the queue gauges of every route of the running tenants and the committer's
/// counts; the age of the oldest due entry is measured against `now_ms`.
///
/// Everything a scrape reads of tenant and storage state, in one place
/// ([`read_storage`]): the running tenants' routes' queue and dead-letter gauges
/// (kept by storage as entries come and go), the most overdue queue entry,
/// and the group committer's counts. On sled its cost does not grow with
/// backlog; on PostgreSQL every route's counts are read in one statement
/// per thousand routes.
pub fn read_storage(tenants: &[TenantSource], store: &dyn Storage, now_ms: i64) -> StorageReadings {
    let mut queues: BTreeMap<(String, String), QueueGauges> = BTreeMap::new();
    let data: Vec<TenantStore> = tenants.iter().map(|t| t.data.clone()).collect();
    let counts = store.counts_of(&data).unwrap_or_else(|e| {
        tracing::warn!(routes = data.len(), error = %e, "queue counts cannot be read");
        Vec::new()
    });
    for (i, tenant) in tenants.iter().enumerate() {
        let labels = (
            tenant.metrics.tenant_label().to_owned(),
            tenant.metrics.route_label().to_owned(),
        );
        let g = queues.entry(labels).or_default();
        let Some(counts) = counts.get(i) else {
            continue;
        };
        g.depth += counts.depth;
        g.dead += counts.dead;
        if let Some(since) = counts.oldest_pending_ms {
            let waited = (now_ms - since).max(0) as f64 / 1000.0;
            g.oldest_pending_secs = g.oldest_pending_secs.max(waited);
        }
    }
    let commits = store.commit_figures();
    StorageReadings {
        queues,
        commit_batches: commits.batches,
        commit_writes: commits.writes,
    }
}
