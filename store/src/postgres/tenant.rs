//! One tenant's deliveries on PostgreSQL: its `TenantData` and the reads.

use std::{
    collections::HashSet,
    future::Future,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex, PoisonError,
    },
    time::{Duration, Instant},
};

use futures_util::{future::BoxFuture, FutureExt};
use tokio_postgres::GenericClient;

use super::{
    block_on, committer,
    delivery_rows::{decoded_row, delete_queue, load_event, lock_state},
    pg, round,
    transitions::{self, redeliver},
    Db,
};
use crate::{
    api::{
        DeadKey, Due, Fence, FencedAttempt, FinishedAttempt, Listing, PullRequest, QueueCounts,
        QueueKey, SweepRequest, TenantData,
    },
    error::{Error, Result},
    ids::{DeliveryId, EventId, TenantId},
    lifecycle::{Next, Resend, Swept},
    records::RedirectRecord,
    records::{
        decode, queue_key, AttemptRecord, DeadLetter, DeliveryState, IdempotencyRecord, StoredEvent,
    },
    CommitOutcome, NewDelivery,
};

/// Dead letters read per round trip while a filter skips some.
const DEAD_PAGE: i64 = 256;

/// A tenant's handle on the shared database.
///
/// One tenant's deliveries on PostgreSQL: its `TenantData` and the reads
/// (the row helpers are [`super::delivery_rows`]). Every change of one delivery is a transaction that first
/// locks the delivery's state row (`FOR UPDATE`) and then its queue entry
/// and the rest, the same order everywhere (see [`super::transitions`]),
/// so concurrent writers in any process serialise on the delivery
/// (compare-and-set) instead of deadlocking.
pub(crate) struct PgTenant {
    tenant: TenantId,
    db: Db,
    runtime: tokio::runtime::Handle,
    committer: committer::Handle,
    healthy: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
    /// Stored in the catalog when the handle was made: new deliveries are
    /// committed only while it still is (see [`committer`]).
    stored: bool,
    /// Where the forwarding passes start reading the queue.
    head: QueueHead,
}

/// Where a forwarding pass starts reading the tenant's queue: at the
/// lowest entry the last pass found or had in flight, not at the index's
/// start, whose entries delivered since are dead until a vacuum and cost
/// every read a walk over them (milliseconds a pass under load). Another
/// process can write an entry below it (its clock behind this one's), so
/// at least once a second a pass reads from the start.
#[derive(Default)]
struct QueueHead(Mutex<Option<(Vec<u8>, Instant)>>);

/// How long a pass may start from the last head before one reads the
/// whole queue again.
const HEAD_FOR: Duration = Duration::from_secs(1);

impl QueueHead {
    /// The key a pass starting `now` reads from (empty: the start, at
    /// least once every [`HEAD_FOR`]).
    fn from(&self, now: Instant) -> Vec<u8> {
        let head = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        match &*head {
            Some((key, since)) if now.duration_since(*since) < HEAD_FOR => key.clone(),
            _ => Vec::new(),
        }
    }

    /// A pass that read from `from`, starting `now`, found `key` first.
    fn seen(&self, (from, now): (&[u8], Instant), key: &[u8]) {
        let mut head = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let since = match &*head {
            Some((_, since)) if !from.is_empty() => *since,
            _ => now,
        };
        *head = Some((key.to_vec(), since));
    }
}

/// What a [`PgTenant`] shares with its engine.
pub(super) struct EngineParts {
    pub(super) db: Db,
    pub(super) runtime: tokio::runtime::Handle,
    pub(super) committer: committer::Handle,
    pub(super) healthy: Arc<AtomicBool>,
}

impl PgTenant {
    pub(super) fn new(
        tenant: TenantId,
        shared: EngineParts,
        dropped: Arc<AtomicBool>,
        stored: bool,
    ) -> PgTenant {
        let EngineParts {
            db,
            runtime,
            committer,
            healthy,
        } = shared;
        PgTenant {
            tenant,
            db,
            runtime,
            committer,
            healthy,
            dropped,
            stored,
            head: QueueHead::default(),
        }
    }

    /// Runs `work` with the tenant's id on the engine's runtime, waiting here.
    fn run<T, F, Fut>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Db, String) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        block_on(
            &self.runtime,
            work(self.db.clone(), self.tenant.to_string()),
        )
    }
}

impl TenantData for PgTenant {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::SeqCst)
    }

    fn commit(&self, item: NewDelivery) -> BoxFuture<'static, Result<CommitOutcome>> {
        let committer = self.committer.clone();
        let of = (self.tenant.clone(), self.dropped.clone(), self.stored);
        async move { committer.commit(of, item).await }.boxed()
    }

    fn counts(&self) -> Result<QueueCounts> {
        self.run(|db, tenant| async move {
            let mut counts = super::counts::counts_of(&db, &[tenant]).await?;
            Ok(counts.pop().unwrap_or_default())
        })
    }

    fn event(&self, id: &DeliveryId) -> Result<Option<StoredEvent>> {
        let id = id.to_string();
        self.run(|db, tenant| async move { load_event(&**db.client().await?, &tenant, &id).await })
    }

    fn state(&self, id: &DeliveryId) -> Result<Option<DeliveryState>> {
        let id = id.to_string();
        self.run(|db, tenant| async move {
            let client = db.client().await?;
            decoded_row(
                &**client,
                "SELECT state FROM hookd_states WHERE tenant = $1 AND delivery_id = $2",
                &tenant,
                &id,
                decode,
            )
            .await
        })
    }

    fn record_redirect(&self, id: &DeliveryId, redirect: &RedirectRecord) -> Result<()> {
        let (id, redirect) = (id.to_string(), redirect.clone());
        self.run(|db, tenant| async move {
            let client = db.client().await?;
            super::redirects::record(&**client, &tenant, &id, &redirect).await
        })
    }

    fn redirects(&self, id: &DeliveryId) -> Result<Vec<RedirectRecord>> {
        let id = id.to_string();
        self.run(|db, tenant| async move {
            let client = db.client().await?;
            super::redirects::load(&**client, &tenant, &id).await
        })
    }

    fn idempotency(&self, key: &[u8]) -> Result<Option<IdempotencyRecord>> {
        let key = key.to_vec();
        self.run(|db, tenant| async move {
            let row = db
                .client()
                .await?
                .query_opt(
                    "SELECT delivery_id, received_at_ms, event_id FROM hookd_idem \
                     WHERE tenant = $1 AND key = $2",
                    &[&tenant, &key],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| IdempotencyRecord {
                delivery_id: DeliveryId::new(r.get::<_, String>(0)),
                received_at_ms: r.get(1),
                event_id: r.get::<_, Option<String>>(2).map(EventId::new),
            }))
        })
    }

    fn attempts(&self, id: &DeliveryId) -> Result<Vec<AttemptRecord>> {
        let id = id.to_string();
        self.run(|db, tenant| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT record FROM hookd_attempts WHERE tenant = $1 AND delivery_id = $2 \
                     ORDER BY attempt",
                    &[&tenant, &id],
                )
                .await
                .map_err(pg)?;
            rows.iter().map(|r| decode(r.get::<_, &[u8]>(0))).collect()
        })
    }

    fn deliveries_in(
        &self,
        filter: &Listing,
        (before, since): (Option<&DeliveryId>, Option<&DeliveryId>),
        limit: usize,
    ) -> Result<Vec<(DeliveryId, DeliveryState)>> {
        let before = before.map(|b| b.to_string());
        let since = since.map(|s| s.to_string());
        let status = filter.status.map(|s| s.as_str());
        let event_type = filter.event_type.clone();
        let limit = limit as i64;
        self.run(|db, tenant| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT delivery_id, state FROM hookd_states WHERE tenant = $1 \
                     AND ($2::text IS NULL OR delivery_id < $2) \
                     AND ($3::text IS NULL OR status = $3) \
                     AND ($5::text IS NULL OR delivery_id >= $5) \
                     AND ($6::text IS NULL OR event_type = $6) \
                     ORDER BY delivery_id DESC LIMIT $4",
                    &[&tenant, &before, &status, &limit, &since, &event_type],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|r| {
                    Ok((
                        DeliveryId::new(r.get::<_, String>(0)),
                        decode(r.get::<_, &[u8]>(1))?,
                    ))
                })
                .collect()
        })
    }

    fn dead_letters(
        &self,
        before: Option<&[u8]>,
        limit: usize,
        keep: &dyn Fn(&DeadLetter) -> bool,
    ) -> Result<Vec<(DeadKey, DeadLetter)>> {
        let mut out = Vec::new();
        let mut below = before.map(<[u8]>::to_vec);
        while out.len() < limit {
            let cursor = below.clone();
            let page: Vec<(Vec<u8>, Vec<u8>)> = self.run(|db, tenant| async move {
                let rows = db
                    .client()
                    .await?
                    .query(
                        "SELECT dkey, letter FROM hookd_dead WHERE tenant = $1 \
                         AND ($2::bytea IS NULL OR dkey < $2) ORDER BY dkey DESC LIMIT $3",
                        &[&tenant, &cursor, &DEAD_PAGE],
                    )
                    .await
                    .map_err(pg)?;
                Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
            })?;
            let full = page.len() as i64 == DEAD_PAGE;
            for (key, value) in page {
                below = Some(key.clone());
                let letter: DeadLetter = decode(&value)?;
                if keep(&letter) {
                    out.push((key, letter));
                    if out.len() >= limit {
                        break;
                    }
                }
            }
            if !full {
                break;
            }
        }
        Ok(out)
    }

    fn queue(&self, after: Option<&QueueKey>, limit: usize) -> Result<Vec<(QueueKey, DeliveryId)>> {
        let after = after.map(|key| key.as_bytes().to_vec());
        let limit = limit as i64;
        self.run(|db, tenant| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT qkey, delivery_id FROM hookd_queue WHERE tenant = $1 \
                     AND ($2::bytea IS NULL OR qkey > $2) ORDER BY qkey LIMIT $3",
                    &[&tenant, &after, &limit],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| {
                    let key = QueueKey::from_bytes(r.get(0));
                    (key, DeliveryId::new(r.get::<_, String>(1)))
                })
                .collect())
        })
    }

    fn record_attempt(
        &self,
        entry: &QueueKey,
        id: &DeliveryId,
        attempt: &AttemptRecord,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>> {
        self.record(entry.as_bytes(), id, attempt, next, now_ms, None)
    }

    fn claim_attempt(
        &self,
        entry: &QueueKey,
        id: &DeliveryId,
        fence: &Fence,
    ) -> Result<Option<Duration>> {
        let entry = entry.as_bytes().to_vec();
        let (id, fence) = (id.to_string(), fence.clone());
        self.run(|db, tenant| async move {
            transitions::may_attempt(&db, &tenant, &entry, &id, &fence).await
        })
    }

    fn due(
        &self,
        now_ms: i64,
        (limit, busy): (usize, &HashSet<QueueKey>),
        fence: &Fence,
    ) -> Result<Due> {
        let lowest_busy = busy.iter().min();
        let (busy_keys, fence) = (busy.clone(), fence.clone());
        let started = Instant::now();
        let from = self.head.from(started);
        let reading = from.clone();
        let due = self.run(|db, tenant| async move {
            round::due(
                &db,
                (&tenant, &reading),
                (now_ms, limit, &busy_keys),
                &fence,
            )
            .await
        })?;
        let first = due.entries.first().map(|e| &e.key);
        if let Some(lowest) = first.into_iter().chain(lowest_busy).min() {
            self.head.seen((&from, started), lowest.as_bytes());
        }
        Ok(due)
    }

    fn record_attempts(
        self: Arc<Self>,
        round: Vec<FinishedAttempt>,
        now_ms: i64,
    ) -> BoxFuture<'static, Result<Vec<Result<Option<DeliveryState>>>>> {
        let (db, tenant) = (self.db.clone(), self.tenant.to_string());
        let written = self
            .runtime
            .spawn(async move { round::record(&db, &tenant, &round, now_ms).await });
        async move {
            let recorded = written
                .await
                .map_err(|_| Error::stopped("forward round writer"))??;
            Ok(recorded.into_iter().map(Ok).collect())
        }
        .boxed()
    }

    fn record_fenced_attempt(
        &self,
        attempt: FencedAttempt<'_>,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>> {
        let FencedAttempt {
            entry,
            id,
            record,
            fence,
        } = attempt;
        self.record(entry.as_bytes(), id, record, next, now_ms, Some(fence))
    }

    fn drop_queue_entry(&self, entry: &QueueKey) -> Result<()> {
        let entry = entry.as_bytes().to_vec();
        self.run(
            |db, tenant| async move { delete_queue(&**db.client().await?, &tenant, &entry).await },
        )
    }

    fn redeliver(&self, id: &DeliveryId, now_ms: i64, resend: Resend) -> Result<DeliveryId> {
        let id = id.clone();
        self.run(|db, tenant| async move {
            let new_key = queue_key(now_ms, db.sequence().await?);
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let new_id = redeliver(&*tx, &tenant, &id, (&new_key, now_ms), resend).await?;
            tx.commit().await.map_err(pg)?;
            Ok(new_id)
        })
    }

    fn purge_dead_letter(&self, key: &[u8], letter: &DeadLetter) -> Result<bool> {
        let (key, id) = (key.to_vec(), letter.delivery_id.to_string());
        self.run(|db, tenant| async move {
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            // The state row first, as everywhere.
            let state = lock_state(&*tx, &tenant, &id).await?;
            let dead = tx
                .query_opt(
                    "SELECT 1 FROM hookd_dead WHERE tenant = $1 AND dkey = $2 FOR UPDATE",
                    &[&tenant, &key],
                )
                .await
                .map_err(pg)?;
            let purge = dead.is_some() && state.is_some_and(|s| s.status.is_dead_letter());
            if purge {
                tx.execute(
                    "DELETE FROM hookd_dead WHERE tenant = $1 AND dkey = $2",
                    &[&tenant, &key],
                )
                .await
                .map_err(pg)?;
                delete_delivery(&*tx, &tenant, &id).await?;
            }
            tx.commit().await.map_err(pg)?;
            Ok(purge)
        })
    }

    fn pull(&self, request: PullRequest) -> Result<Vec<(StoredEvent, u32)>> {
        self.run(|db, tenant| async move { super::pull::pull(&db, &tenant, request).await })
    }

    fn ack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        let ids = ids.to_vec();
        self.run(|db, tenant| async move { super::pull::ack(&db, &tenant, &ids, now_ms).await })
    }

    fn nack(&self, ids: &[DeliveryId], _now_ms: i64) -> Result<u32> {
        // On the database's clock: see [`super::pull::make_due`].
        let ids = ids.to_vec();
        self.run(|db, tenant| async move { super::pull::make_due(&db, &tenant, &ids, None).await })
    }

    fn retry_now(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        // On the dispatchers' clock, which decides what is due.
        let ids = ids.to_vec();
        self.run(|db, tenant| async move {
            super::pull::make_due(&db, &tenant, &ids, Some(now_ms)).await
        })
    }

    fn sweep(&self, request: &SweepRequest, cursor: &mut Vec<u8>) -> Result<Swept> {
        let (request, from) = (*request, cursor.clone());
        let (swept, next) = self.run(|db, tenant| async move {
            super::retention::sweep(&db, &tenant, &request, from).await
        })?;
        *cursor = next;
        Ok(swept)
    }
}

impl PgTenant {
    /// Records an attempt (fenced with the lease when `fence` is given).
    fn record(
        &self,
        entry: &[u8],
        id: &DeliveryId,
        attempt: &AttemptRecord,
        next: &Next,
        now_ms: i64,
        fence: Option<&Fence>,
    ) -> Result<Option<DeliveryState>> {
        let finished = transitions::Finished {
            entry: entry.to_vec(),
            id: id.clone(),
            attempt: attempt.clone(),
            next: next.clone(),
            now_ms,
            fence: fence.cloned(),
        };
        self.run(|db, tenant| async move { transitions::record(&db, &tenant, &finished).await })
    }
}

/// Deletes a delivery's event, state and attempts.
async fn delete_delivery(tx: &impl GenericClient, tenant: &str, id: &str) -> Result<()> {
    for table in ["hookd_events", "hookd_states", "hookd_attempts"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE tenant = $1 AND delivery_id = $2"),
            &[&tenant, &id],
        )
        .await
        .map_err(pg)?;
    }
    Ok(())
}

#[cfg(test)]
mod head_tests {
    use super::*;

    #[test]
    fn a_pass_reads_from_the_last_head_and_from_the_start_once_a_second() {
        let head = QueueHead::default();
        let t0 = Instant::now();
        assert!(head.from(t0).is_empty(), "the first pass reads it all");
        head.seen((&[], t0), b"k1");
        let later = t0 + Duration::from_millis(400);
        assert_eq!(head.from(later), b"k1");
        head.seen((b"k1", later), b"k2");
        assert_eq!(head.from(t0 + Duration::from_millis(900)), b"k2");
        let second = t0 + HEAD_FOR;
        assert!(
            head.from(second).is_empty(),
            "a second after the last full read, however often the head moved"
        );
        head.seen((&[], second), b"k0");
        assert_eq!(head.from(second + Duration::from_millis(10)), b"k0");
    }
}
