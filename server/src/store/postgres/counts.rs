//! Queue counts on PostgreSQL: queue depth, dead letters and the oldest
//! due entry of many tenants (or route scopes) in one statement per
//! [`CHUNK`], so a scrape over 10,000 tenants is a few round trips instead
//! of one per tenant. Each count is one index range of its tenant.

use super::{pg, Db};
use crate::{error::Result, store::api::QueueCounts, store::records::queue_key_due_ms};

/// Tenants counted by one statement, at most.
pub(super) const CHUNK: usize = 1_000;

/// One row per tenant of the array, in its order.
const COUNTS: &str = "SELECT \
       (SELECT count(*) FROM hookd_queue q WHERE q.tenant = t.tenant), \
       (SELECT count(*) FROM hookd_dead d WHERE d.tenant = t.tenant), \
       (SELECT qkey FROM hookd_queue q WHERE q.tenant = t.tenant ORDER BY qkey LIMIT 1) \
     FROM unnest($1::text[]) WITH ORDINALITY AS t(tenant, n) ORDER BY t.n";

/// The counts of each of `tenants`, in order.
pub(super) async fn counts_of(db: &Db, tenants: &[String]) -> Result<Vec<QueueCounts>> {
    let client = db.side_client().await?;
    let mut counts = Vec::with_capacity(tenants.len());
    for chunk in tenants.chunks(CHUNK) {
        let rows = client.query(COUNTS, &[&chunk]).await.map_err(pg)?;
        counts.extend(rows.iter().map(|row| QueueCounts {
            depth: row.get::<_, i64>(0) as u64,
            dead: row.get::<_, i64>(1) as u64,
            oldest_due_ms: row.get::<_, Option<&[u8]>>(2).and_then(queue_key_due_ms),
        }));
    }
    Ok(counts)
}
