//! Group commit on PostgreSQL: one task writes the pending new deliveries in
//! batches of one transaction each and answers their waiters.

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use tokio::sync::{mpsc, oneshot, Semaphore};

use super::{batch, pg, retrying, Db, Figures};
use crate::{
    error::{Error, Result},
    ids::TenantId,
    {CommitOutcome, NewDelivery},
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
///
/// Group commit on PostgreSQL: one task takes the pending new deliveries
/// (up to the batch size) and writes them in ONE transaction, with up to
/// [`IN_FLIGHT`] such batches committing at once; each waiter is answered
/// only after its batch's `COMMIT` returned. A unique `(tenant, key)` on the
/// idempotency table makes the event id (and the content key) decide
/// duplicates across every process: one multi-row `INSERT .. ON CONFLICT DO
/// NOTHING RETURNING` per batch ([`batch`]), then the first deliveries of
/// the known keys are read. A tenant's data is dropped by the same task,
/// between batches.
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

/// Batches committing at once, each on a connection of its own: while one
/// waits for its `COMMIT` (the WAL flush), the next is gathered and sent,
/// and PostgreSQL flushes the commits that meet together.
const IN_FLIGHT: u32 = 4;

async fn run(db: Db, mut rx: mpsc::Receiver<Request>, batch_max: usize, figures: Arc<Figures>) {
    let slots = Arc::new(Semaphore::new(IN_FLIGHT as usize));
    loop {
        let Ok(slot) = slots.clone().acquire_owned().await else {
            return;
        };
        let Some(first) = rx.recv().await else {
            return;
        };
        let mut writes = Vec::new();
        let mut next = Some(first);
        while let Some(request) = next.take() {
            match request {
                Request::Write(write) => writes.push(*write),
                Request::Drop(id, dropped, reply) => {
                    // Writes before the drop are committed first: the
                    // batches in flight, then those gathered.
                    let others = slots.acquire_many(IN_FLIGHT - 1).await;
                    commit_batch(&db, std::mem::take(&mut writes), &figures).await;
                    let cleared = clear_unless_stored(&db, id.as_str(), &dropped).await;
                    let _ = reply.send(cleared.map(drop));
                    drop(others);
                }
            }
            if writes.len() < batch_max {
                next = rx.try_recv().ok();
            }
        }
        let (db, figures) = (db.clone(), figures.clone());
        tokio::spawn(async move {
            commit_batch(&db, writes, &figures).await;
            drop(slot);
        });
    }
}

/// Commits `writes` (those of dropped tenants are refused) and answers each.
/// Writes sharing an idempotency key with an earlier one of the batch wait
/// for a transaction after the earlier one's, so each duplicate is answered
/// with the first delivery in arrival order.
async fn commit_batch(db: &Db, writes: Vec<Write>, figures: &Figures) {
    let (live, gone): (Vec<Write>, Vec<Write>) = writes
        .into_iter()
        .partition(|w| !w.dropped.load(Ordering::SeqCst));
    for write in gone {
        let _ = write
            .reply
            .send(Err(Error::TenantDeleted(write.tenant.to_string())));
    }
    let mut pending = live;
    while !pending.is_empty() {
        let (round, later) = first_of_each_key(pending);
        commit_round(db, round, figures).await;
        pending = later;
    }
}

/// Splits `writes` (in arrival order) into those sharing no idempotency key
/// with an earlier one, and the rest.
fn first_of_each_key(writes: Vec<Write>) -> (Vec<Write>, Vec<Write>) {
    let mut seen: HashSet<(String, Vec<u8>)> = HashSet::new();
    let (mut round, mut later) = (Vec::with_capacity(writes.len()), Vec::new());
    for write in writes {
        let keys: Vec<(String, Vec<u8>)> = item(&write)
            .keys()
            .map(|key| (write.tenant.to_string(), key.to_vec()))
            .collect();
        if keys.iter().any(|key| seen.contains(key)) {
            later.push(write);
        } else {
            seen.extend(keys);
            round.push(write);
        }
    }
    (round, later)
}

fn item(write: &Write) -> batch::Item<'_> {
    batch::Item {
        tenant: write.tenant.as_str(),
        stored: write.stored,
        delivery: &write.delivery,
    }
}

/// One transaction for `live` (no two share a key), then the answers.
async fn commit_round(db: &Db, live: Vec<Write>, figures: &Figures) {
    let items: Vec<batch::Item<'_>> = live.iter().map(item).collect();
    let committed = retrying(|| batch::commit(db, &items)).await;
    drop(items);
    match committed {
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        conformance::new_delivery,
        ids::{DeliveryId, EventId},
        postgres::{testing::test_database, PgOptions, PgStore},
    };

    type Answer = oneshot::Receiver<Result<CommitOutcome>>;

    /// A write of tenant `acme` (not a catalog tenant) and its answer.
    fn write(event: &str, content: Option<&[u8]>) -> (Write, Answer, String) {
        let delivery = new_delivery(event, 1_000, content);
        let id = delivery.meta.delivery_id.to_string();
        let (reply, answer) = oneshot::channel();
        let write = Write {
            tenant: TenantId::try_from("acme").unwrap(),
            dropped: Arc::default(),
            stored: false,
            delivery,
            reply,
        };
        (write, answer, id)
    }

    async fn outcome(answer: Answer) -> CommitOutcome {
        answer.await.unwrap().unwrap()
    }

    async fn count(db: &Db, table: &str) -> i64 {
        let client = db.client().await.unwrap();
        let sql = format!("SELECT count(*) FROM {table}");
        client.query_one(sql.as_str(), &[]).await.unwrap().get(0)
    }

    /// Duplicates that meet in one batch, by event id or by content key,
    /// are answered with the delivery that arrived first, whatever their
    /// ids' order; a duplicate claims nothing (its event id stays free).
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn duplicates_within_one_batch_answer_the_first_delivery_to_arrive() {
        let Some(database) = test_database("hookd_pg_batch_first") else {
            return;
        };
        let store = PgStore::open(PgOptions {
            url: database.url.clone().into(),
            max_connections: 2,
            statement_timeout_ms: 30_000,
            batch_max: 64,
        })
        .unwrap();
        let (db, figures) = (store.inner.db.clone(), Figures::default());
        let (known, answer, known_id) = write("evt_d", None);
        commit_batch(&db, vec![known], &figures).await;
        assert_eq!(outcome(answer).await, CommitOutcome::Accepted);

        let (w1, a1, id1) = write("evt_b", Some(b"signed content"));
        let (w2, a2, _) = write("evt_a", Some(b"signed content"));
        let (w3, a3, id3) = write("evt_c", None);
        let (w4, a4, _) = write("evt_c", None);
        let (w5, a5, _) = write("evt_d", None);
        commit_batch(&db, vec![w1, w2, w3, w4, w5], &figures).await;
        assert_eq!(outcome(a1).await, CommitOutcome::Accepted);
        assert_eq!(
            outcome(a2).await,
            CommitOutcome::DuplicateOf(DeliveryId::new(id1), EventId::new("evt_b"))
        );
        assert_eq!(outcome(a3).await, CommitOutcome::Accepted);
        assert_eq!(
            outcome(a4).await,
            CommitOutcome::Duplicate(DeliveryId::new(id3))
        );
        assert_eq!(
            outcome(a5).await,
            CommitOutcome::Duplicate(DeliveryId::new(known_id))
        );

        let (again, answer, _) = write("evt_a", None);
        commit_batch(&db, vec![again], &figures).await;
        assert_eq!(outcome(answer).await, CommitOutcome::Accepted);
        // evt_d, evt_b, evt_c, evt_a: a row each; the content key once.
        assert_eq!(count(&db, "hookd_queue").await, 4);
        assert_eq!(count(&db, "hookd_events").await, 4);
        assert_eq!(count(&db, "hookd_states").await, 4);
        assert_eq!(count(&db, "hookd_idem").await, 5);
    }
}
