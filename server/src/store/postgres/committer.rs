//! Group commit on PostgreSQL: one task takes the pending new deliveries
//! (up to the batch size) and writes them in ONE transaction; each waiter is
//! answered only after `COMMIT` returned. A unique `(tenant, key)` on the
//! idempotency table makes the event id (and the content key) decide
//! duplicates across every process: `INSERT .. ON CONFLICT DO NOTHING`, then
//! the first delivery is read. A tenant's data is dropped by the same task,
//! between batches.

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use tokio::sync::{mpsc, oneshot};
use tokio_postgres::types::ToSql;

use super::{pg, retrying, Db, Figures};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId, TenantId},
    store::{
        records::{encode, queue_key, DeliveryState, EventMeta, StoredEvent},
        CommitOutcome, NewDelivery,
    },
};

/// Writes waiting for the committer; a full queue makes senders wait.
const QUEUE_CAPACITY: usize = 8192;

/// A new delivery for one tenant, with the flag its tenant's drop sets.
struct Write {
    tenant: TenantId,
    dropped: Arc<AtomicBool>,
    /// A tenant of the catalog (not of a config file): written only while
    /// its catalog row is there.
    stored: bool,
    delivery: NewDelivery,
    reply: oneshot::Sender<Result<CommitOutcome>>,
}

enum Request {
    Write(Box<Write>),
    Drop(TenantId, Arc<AtomicBool>, oneshot::Sender<Result<()>>),
}

/// Handle on the committer task.
#[derive(Clone)]
pub(crate) struct Handle {
    tx: mpsc::Sender<Request>,
}

impl Handle {
    /// Records `delivery` unless its event id (or content key) is known;
    /// answers once committed.
    pub(crate) async fn commit(
        &self,
        (tenant, dropped, stored): (TenantId, Arc<AtomicBool>, bool),
        delivery: NewDelivery,
    ) -> Result<CommitOutcome> {
        let (reply, answer) = oneshot::channel();
        let write = Write {
            tenant,
            dropped,
            stored,
            delivery,
            reply,
        };
        self.tx
            .send(Request::Write(Box::new(write)))
            .await
            .map_err(|_| Error::stopped("durable writer"))?;
        answer.await.map_err(|_| Error::stopped("durable writer"))?
    }

    /// Marks the tenant dropped and deletes its rows between batches.
    pub(crate) async fn drop_tenant(&self, id: TenantId, dropped: Arc<AtomicBool>) -> Result<()> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Request::Drop(id, dropped, reply))
            .await
            .map_err(|_| Error::stopped("durable writer"))?;
        answer.await.map_err(|_| Error::stopped("durable writer"))?
    }
}

/// Starts the task on the current runtime.
pub(super) fn start(db: Db, batch_max: usize, figures: Arc<Figures>) -> Handle {
    let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
    tokio::spawn(run(db, rx, batch_max.max(1), figures));
    Handle { tx }
}

async fn run(db: Db, mut rx: mpsc::Receiver<Request>, batch_max: usize, figures: Arc<Figures>) {
    while let Some(first) = rx.recv().await {
        let mut writes = Vec::new();
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Request::Write(write) => writes.push(*write),
                Request::Drop(id, dropped, reply) => {
                    // Writes before the drop are committed first.
                    commit_batch(&db, std::mem::take(&mut writes), &figures).await;
                    let cleared = clear_unless_stored(&db, id.as_str(), &dropped).await;
                    let _ = reply.send(cleared.map(drop));
                }
            }
            if writes.len() < batch_max {
                next = rx.try_recv().ok();
            }
        }
        commit_batch(&db, writes, &figures).await;
    }
}

/// Commits `writes` (those of dropped tenants are refused) and answers each.
async fn commit_batch(db: &Db, writes: Vec<Write>, figures: &Figures) {
    let (live, gone): (Vec<Write>, Vec<Write>) = writes
        .into_iter()
        .partition(|w| !w.dropped.load(Ordering::SeqCst));
    for write in gone {
        let _ = write
            .reply
            .send(Err(Error::TenantDeleted(write.tenant.to_string())));
    }
    if live.is_empty() {
        return;
    }
    let mut order: Vec<usize> = (0..live.len()).collect();
    // One lock order for every process: concurrent batches with the same
    // keys wait for each other instead of deadlocking.
    order.sort_by(|&a, &b| {
        let key = |w: &Write| (w.tenant.to_string(), w.delivery.event_id.to_string());
        key(&live[a]).cmp(&key(&live[b]))
    });
    match retrying(|| try_batch(db, &live, &order)).await {
        Ok(outcomes) => {
            figures.batches.fetch_add(1, Ordering::Relaxed);
            figures
                .writes
                .fetch_add(live.len() as u64, Ordering::Relaxed);
            for (write, outcome) in live.into_iter().zip(outcomes) {
                let tenant = write.tenant.to_string();
                let _ = write
                    .reply
                    .send(outcome.ok_or(Error::TenantDeleted(tenant)));
            }
        }
        Err(e) => {
            tracing::error!(error = %e, writes = live.len(), "a batch of writes could not be committed");
            let cause = Arc::new(e);
            for write in live {
                let _ = write.reply.send(Err(Error::batch_failed(&cause)));
            }
        }
    }
}

/// One transaction for the batch; the outcomes in the writes' order, `None`
/// for a write of a stored tenant no longer stored (deleted by any
/// process): nothing of it is written.
async fn try_batch(db: &Db, live: &[Write], order: &[usize]) -> Result<Vec<Option<CommitOutcome>>> {
    let mut sequences = Vec::with_capacity(live.len());
    for _ in live {
        sequences.push(db.sequence().await?);
    }
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    let stored = still_stored(&tx, live).await?;
    let statements = Statements::prepare(&tx).await?;
    let mut outcomes: Vec<Option<CommitOutcome>> = vec![None; live.len()];
    for &i in order {
        if live[i].stored && !stored.contains(live[i].tenant.as_str()) {
            continue;
        }
        let outcome = write_one(&tx, &statements, &live[i], sequences[i]).await?;
        outcomes[i] = Some(outcome);
    }
    tx.commit().await.map_err(pg)?;
    Ok(outcomes)
}

/// Which of the batch's stored tenants are still stored, their catalog
/// rows locked `FOR KEY SHARE` (in id order) until the batch commits: a
/// delete of one waits for the batch, and its drop then finds the batch's
/// rows; a batch after the delete finds no row and writes nothing for it.
async fn still_stored(
    tx: &deadpool_postgres::Transaction<'_>,
    live: &[Write],
) -> Result<HashSet<String>> {
    let mut ids: Vec<&str> = live
        .iter()
        .filter(|w| w.stored)
        .map(|w| w.tenant.as_str())
        .collect();
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    ids.sort_unstable();
    ids.dedup();
    let rows = tx
        .query(
            "SELECT key FROM hookd_catalog WHERE tbl = 'tenants' AND key = ANY($1) \
             ORDER BY key FOR KEY SHARE",
            &[&ids],
        )
        .await
        .map_err(pg)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// The statements a batch runs, prepared once per connection.
struct Statements {
    claim: tokio_postgres::Statement,
    first: tokio_postgres::Statement,
    unclaim: tokio_postgres::Statement,
    event: tokio_postgres::Statement,
    state: tokio_postgres::Statement,
    queue: tokio_postgres::Statement,
    done: tokio_postgres::Statement,
}

impl Statements {
    async fn prepare(tx: &deadpool_postgres::Transaction<'_>) -> Result<Statements> {
        let prepare = |sql: &'static str| async move { tx.prepare_cached(sql).await.map_err(pg) };
        Ok(Statements {
            claim: prepare(
                "INSERT INTO hookd_idem (tenant, key, delivery_id, received_at_ms, event_id) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING",
            )
            .await?,
            first: prepare(
                "SELECT delivery_id, event_id FROM hookd_idem WHERE tenant = $1 AND key = $2",
            )
            .await?,
            unclaim: prepare("DELETE FROM hookd_idem WHERE tenant = $1 AND key = $2").await?,
            event: prepare(
                "INSERT INTO hookd_events (tenant, delivery_id, event) VALUES ($1, $2, $3)",
            )
            .await?,
            state: prepare(
                "INSERT INTO hookd_states (tenant, delivery_id, status, state) \
                 VALUES ($1, $2, $3, $4)",
            )
            .await?,
            queue: prepare(
                "INSERT INTO hookd_queue (tenant, qkey, delivery_id) VALUES ($1, $2, $3)",
            )
            .await?,
            done: prepare("INSERT INTO hookd_done (tenant, dkey) VALUES ($1, $2)").await?,
        })
    }
}

/// Claims `write`'s event id (and content key) in the transaction and, when
/// both are new, records the delivery and queues it under `sequence`.
async fn write_one(
    tx: &deadpool_postgres::Transaction<'_>,
    st: &Statements,
    write: &Write,
    sequence: u64,
) -> Result<CommitOutcome> {
    let d = &write.delivery;
    let tenant = write.tenant.as_str();
    let delivery_id = d.meta.delivery_id.as_str();
    let received = d.meta.received_at_ms;
    let event_key = d.event_id.as_str().as_bytes();
    let none: Option<&str> = None;
    let params: [&(dyn ToSql + Sync); 5] = [&tenant, &event_key, &delivery_id, &received, &none];
    if tx.execute(&st.claim, &params).await.map_err(pg)? == 0 {
        return first_of(tx, &st.first, tenant, event_key).await;
    }
    if let Some(content) = d.content_key.as_deref() {
        let event_id = Some(d.event_id.as_str());
        let params: [&(dyn ToSql + Sync); 5] =
            [&tenant, &content, &delivery_id, &received, &event_id];
        if tx.execute(&st.claim, &params).await.map_err(pg)? == 0 {
            tx.execute(&st.unclaim, &[&tenant, &event_key])
                .await
                .map_err(pg)?;
            return first_of(tx, &st.first, tenant, content).await;
        }
    }
    let key = queue_key(d.due_ms, sequence);
    let (state, done) = d.received(&key);
    let place = match &done {
        Some(done) => Place::Done(done.as_slice()),
        None => Place::Queue(&key),
    };
    insert_delivery(tx, st, (tenant, &d.meta), d, &state, place).await?;
    for copy in &d.copies {
        let mut meta = d.meta.clone();
        meta.delivery_id = copy.delivery_id.clone();
        let mut pending = DeliveryState::pending(d.event_id.clone(), meta.received_at_ms);
        pending.queue_key = Some(hex::encode(key));
        let scope = copy.scope.as_str();
        insert_delivery(tx, st, (scope, &meta), d, &pending, Place::Queue(&key)).await?;
    }
    Ok(CommitOutcome::Accepted)
}

/// Where a new delivery is indexed: queued under its key (unique within its
/// scope), or, final at receipt, in the delivered index.
enum Place<'a> {
    Queue(&'a [u8; 16]),
    Done(&'a [u8]),
}

/// The stored event, `state` and queue entry (or delivered-index key) of
/// the delivery `meta` names, in `scope` (the tenant's, or one of its
/// routes').
async fn insert_delivery(
    tx: &deadpool_postgres::Transaction<'_>,
    st: &Statements,
    (scope, meta): (&str, &EventMeta),
    d: &NewDelivery,
    state: &DeliveryState,
    place: Place<'_>,
) -> Result<()> {
    let delivery_id = meta.delivery_id.as_str();
    let stored = StoredEvent::encode(meta, &d.body);
    tx.execute(&st.event, &[&scope, &delivery_id, &stored])
        .await
        .map_err(pg)?;
    let status = state.status.as_str();
    tx.execute(&st.state, &[&scope, &delivery_id, &status, &encode(state)])
        .await
        .map_err(pg)?;
    match place {
        Place::Queue(key) => {
            let key = &key[..];
            tx.execute(&st.queue, &[&scope, &key, &delivery_id]).await
        }
        Place::Done(key) => tx.execute(&st.done, &[&scope, &key]).await,
    }
    .map_err(pg)?;
    Ok(())
}

/// The first delivery recorded under `key`.
async fn first_of(
    tx: &deadpool_postgres::Transaction<'_>,
    statement: &tokio_postgres::Statement,
    tenant: &str,
    key: &[u8],
) -> Result<CommitOutcome> {
    let row = tx
        .query_opt(statement, &[&tenant, &key])
        .await
        .map_err(pg)?
        .ok_or_else(|| Error::storage("storage: postgres: an idempotency record vanished", None))?;
    let delivery_id = DeliveryId::new(row.get::<_, String>(0));
    Ok(match row.get::<_, Option<String>>(1) {
        Some(event_id) => CommitOutcome::DuplicateOf(delivery_id, EventId::new(event_id)),
        None => CommitOutcome::Duplicate(delivery_id),
    })
}

/// Deletes every row of `tenant` in one transaction, unless a tenant of its
/// id is stored in the catalog (created again, maybe by another process,
/// since this one was deleted): true when it deleted. It holds the catalog
/// version's row lock, which every catalog change takes first, so no
/// create of the id commits in between; `dropped` is set (this process's
/// writes for the tenant fail from then on) before anything is deleted.
/// The delivery rows are locked as every other transaction locks them:
/// states first, in delivery id order, then the rest; a lost race (with a
/// retention sweep, say) is tried again.
pub(super) async fn clear_unless_stored(
    db: &Db,
    tenant: &str,
    dropped: &AtomicBool,
) -> Result<bool> {
    retrying(|| clear_once(db, tenant, dropped)).await
}

async fn clear_once(db: &Db, tenant: &str, dropped: &AtomicBool) -> Result<bool> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    tx.execute(
        "SELECT version FROM hookd_catalog_version WHERE id = 1 FOR UPDATE",
        &[],
    )
    .await
    .map_err(pg)?;
    let stored = tx
        .query_opt(
            "SELECT 1 FROM hookd_catalog WHERE tbl = 'tenants' AND key = $1",
            &[&tenant],
        )
        .await
        .map_err(pg)?;
    if stored.is_some() {
        tracing::info!(tenant = %tenant, "a tenant of this id is stored again: its data is kept");
        return Ok(false);
    }
    dropped.store(true, Ordering::SeqCst);
    tx.execute(
        "SELECT 1 FROM hookd_states WHERE tenant = $1 ORDER BY delivery_id FOR UPDATE",
        &[&tenant],
    )
    .await
    .map_err(pg)?;
    for table in [
        "hookd_states",
        "hookd_queue",
        "hookd_dead",
        "hookd_events",
        "hookd_attempts",
        "hookd_done",
        "hookd_idem",
        "hookd_forward_leases",
    ] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE tenant = $1"),
            &[&tenant],
        )
        .await
        .map_err(pg)?;
    }
    tx.commit().await.map_err(pg)?;
    Ok(true)
}
