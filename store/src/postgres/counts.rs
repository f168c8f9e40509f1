//! Readings of many tenants (or route scopes) at once on PostgreSQL: queue
//! depth, dead letters, the oldest due entry and the oldest delivery.

use tokio_postgres::{types::ToSql, Row};

use super::{pg, Db};
use crate::{api::QueueCounts, error::Result, ids::DeliveryId, records::queue_key_due_ms};

/// Tenants read by one statement, at most.
const CHUNK: usize = 1_000;

/// One value per tenant of `tenants`, in order: `sql` run once per
/// [`CHUNK`] on the side pool, the chunk as `$1` (a `text[]` it reads
/// `WITH ORDINALITY`, one row per tenant in order) and `rest` after it,
/// each row read by `value`.
///
/// Readings of many tenants (or route scopes) at once on PostgreSQL, one
/// statement per [`CHUNK`] of them ([`per_tenant`]): queue depth, dead
/// letters and the oldest due entry, so a scrape over 10,000 tenants is a
/// few round trips instead of one per tenant. Each reading is one index
/// range of its tenant.
pub(super) async fn per_tenant<T>(
    db: &Db,
    sql: &str,
    tenants: &[String],
    rest: &[&(dyn ToSql + Sync)],
    value: impl Fn(&Row) -> T,
) -> Result<Vec<T>> {
    let client = db.side_client().await?;
    let mut values = Vec::with_capacity(tenants.len());
    for chunk in tenants.chunks(CHUNK) {
        let params: Vec<&(dyn ToSql + Sync)> = std::iter::once(&chunk as &(dyn ToSql + Sync))
            .chain(rest.iter().copied())
            .collect();
        let rows = client.query(sql, &params).await.map_err(pg)?;
        values.extend(rows.iter().map(&value));
    }
    Ok(values)
}

/// One row per tenant of the array, in its order.
const COUNTS: &str = "SELECT \
       (SELECT count(*) FROM hookd_queue q WHERE q.tenant = t.tenant), \
       (SELECT count(*) FROM hookd_dead d WHERE d.tenant = t.tenant), \
       (SELECT qkey FROM hookd_queue q WHERE q.tenant = t.tenant ORDER BY qkey LIMIT 1), \
       (SELECT delivery_id FROM hookd_queue q WHERE q.tenant = t.tenant AND q.waiting \
          ORDER BY delivery_id LIMIT 1) \
     FROM unnest($1::text[]) WITH ORDINALITY AS t(tenant, n) ORDER BY t.n";

/// The counts of each of `tenants`, in order.
pub(super) async fn counts_of(db: &Db, tenants: &[String]) -> Result<Vec<QueueCounts>> {
    per_tenant(db, COUNTS, tenants, &[], |row| {
        let oldest_due_ms = row.get::<_, Option<&[u8]>>(2).and_then(queue_key_due_ms);
        let waiting = row
            .get::<_, Option<&str>>(3)
            .and_then(DeliveryId::made_at_ms);
        QueueCounts {
            depth: row.get::<_, i64>(0) as u64,
            dead: row.get::<_, i64>(1) as u64,
            oldest_due_ms,
            oldest_pending_ms: QueueCounts::oldest_pending(oldest_due_ms, waiting),
        }
    })
    .await
}
