//! One tenant's deliveries on PostgreSQL. Every change of one delivery is
//! a transaction that first locks the delivery's state row (`FOR UPDATE`)
//! and then its queue entry, the same order everywhere, so concurrent
//! writers in any process serialise on the delivery (compare-and-set)
//! instead of deadlocking.

use std::{
    future::Future,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
};

use futures_util::{future::BoxFuture, FutureExt};
use tokio_postgres::GenericClient;

use super::{block_on, committer, pg, Db};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId, RequestId, TenantId},
    store::{
        api::{DeadKey, PullRequest, QueueCounts, QueueKey, SweepRequest, TenantData},
        deliveries::{redeliverable, settled, Next, Swept},
        records::{
            decode, encode, queue_key, queue_key_due_ms, time_key, AttemptRecord, DeadLetter,
            DeliveryState, DeliveryStatus, EventMeta, IdempotencyRecord, StoredEvent,
        },
        redirects::RedirectRecord,
        CommitOutcome, NewDelivery,
    },
};

/// Dead letters read per round trip while a filter skips some.
const DEAD_PAGE: i64 = 256;

/// A tenant's handle on the shared database.
pub(crate) struct PgTenant {
    tenant: TenantId,
    db: Db,
    runtime: tokio::runtime::Handle,
    committer: committer::Handle,
    healthy: Arc<AtomicBool>,
    dropped: Arc<AtomicBool>,
}

impl PgTenant {
    pub(super) fn new(
        tenant: TenantId,
        db: Db,
        runtime: tokio::runtime::Handle,
        committer: committer::Handle,
        healthy: Arc<AtomicBool>,
        dropped: Arc<AtomicBool>,
    ) -> PgTenant {
        PgTenant {
            tenant,
            db,
            runtime,
            committer,
            healthy,
            dropped,
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

/// The delivery's state, its row locked until the transaction ends.
pub(super) async fn lock_state(
    tx: &impl GenericClient,
    tenant: &str,
    id: &str,
) -> Result<Option<DeliveryState>> {
    decoded_row(
        tx,
        "SELECT state FROM hookd_states WHERE tenant = $1 AND delivery_id = $2 FOR UPDATE",
        tenant,
        id,
        decode,
    )
    .await
}

/// The record in the one column `sql` selects for a tenant's delivery,
/// decoded.
async fn decoded_row<T>(
    client: &impl GenericClient,
    sql: &str,
    tenant: &str,
    id: &str,
    decode: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    let row = client.query_opt(sql, &[&tenant, &id]).await.map_err(pg)?;
    row.map(|r| decode(r.get::<_, &[u8]>(0))).transpose()
}

/// Writes a delivery's state.
pub(super) async fn put_state(
    tx: &impl GenericClient,
    tenant: &str,
    id: &str,
    state: &DeliveryState,
) -> Result<()> {
    tx.execute(
        "INSERT INTO hookd_states (tenant, delivery_id, status, state) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (tenant, delivery_id) DO UPDATE SET status = EXCLUDED.status, state = EXCLUDED.state",
        &[&tenant, &id, &state.status.as_str(), &encode(state)],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

pub(super) async fn delete_queue(tx: &impl GenericClient, tenant: &str, key: &[u8]) -> Result<()> {
    tx.execute(
        "DELETE FROM hookd_queue WHERE tenant = $1 AND qkey = $2",
        &[&tenant, &key],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

pub(super) async fn insert_queue(
    tx: &impl GenericClient,
    tenant: &str,
    key: &[u8],
    id: &str,
) -> Result<()> {
    tx.execute(
        "INSERT INTO hookd_queue (tenant, qkey, delivery_id) VALUES ($1, $2, $3)",
        &[&tenant, &key, &id],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

/// The compare half of every queue compare-and-set: the delivery's state
/// (locked) if `entry` names it and it is pending with `entry` as its live
/// entry. An entry its delivery no longer points at is removed.
pub(super) async fn claim(
    tx: &impl GenericClient,
    tenant: &str,
    entry: &[u8],
    id: &str,
) -> Result<Option<DeliveryState>> {
    let state = lock_state(tx, tenant, id).await?;
    let named = tx
        .query_opt(
            "SELECT delivery_id FROM hookd_queue WHERE tenant = $1 AND qkey = $2 FOR UPDATE",
            &[&tenant, &entry],
        )
        .await
        .map_err(pg)?;
    match named {
        Some(row) if row.get::<_, &str>(0) == id => {}
        _ => return Ok(None),
    }
    let live = hex::encode(entry);
    match state {
        Some(state)
            if state.status == DeliveryStatus::Pending
                && state.queue_key.as_deref().is_none_or(|k| k == live) =>
        {
            Ok(Some(state))
        }
        _ => {
            delete_queue(tx, tenant, entry).await?;
            Ok(None)
        }
    }
}

/// What an attempt leads to, as [`settle`] applies it.
pub(super) struct Outcome<'a> {
    pub(super) attempt: &'a AttemptRecord,
    pub(super) next: &'a Next,
    pub(super) retry_seq: u64,
    pub(super) now_ms: i64,
}

/// Writes an attempt and what follows from it for a delivery that
/// [`claim`] just confirmed holds `entry`.
pub(super) async fn settle(
    tx: &impl GenericClient,
    tenant: &str,
    state: DeliveryState,
    entry: &[u8],
    delivery_id: &DeliveryId,
    outcome: &Outcome<'_>,
) -> Result<DeliveryState> {
    let Outcome {
        attempt,
        next,
        retry_seq,
        now_ms,
    } = *outcome;
    let id = delivery_id.as_str();
    let done = settled(state, delivery_id, attempt, next, retry_seq, now_ms);
    delete_queue(tx, tenant, entry).await?;
    if let Some(key) = done.requeue {
        insert_queue(tx, tenant, &key, id).await?;
    }
    if let Some((key, letter)) = &done.dead {
        tx.execute(
            "INSERT INTO hookd_dead (tenant, dkey, letter) VALUES ($1, $2, $3) \
             ON CONFLICT (tenant, dkey) DO UPDATE SET letter = EXCLUDED.letter",
            &[&tenant, key, &encode(letter)],
        )
        .await
        .map_err(pg)?;
    }
    if let Some(key) = &done.done {
        tx.execute(
            "INSERT INTO hookd_done (tenant, dkey) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&tenant, key],
        )
        .await
        .map_err(pg)?;
    }
    let state = done.state;
    put_state(tx, tenant, id, &state).await?;
    tx.execute(
        "INSERT INTO hookd_attempts (tenant, delivery_id, attempt, record) VALUES ($1, $2, $3, $4) \
         ON CONFLICT (tenant, delivery_id, attempt) DO UPDATE SET record = EXCLUDED.record",
        &[&tenant, &id, &i64::from(attempt.attempt), &encode(attempt)],
    )
    .await
    .map_err(pg)?;
    Ok(state)
}

/// The stored event of a delivery.
pub(super) async fn load_event(
    client: &impl GenericClient,
    tenant: &str,
    id: &str,
) -> Result<Option<StoredEvent>> {
    decoded_row(
        client,
        "SELECT event FROM hookd_events WHERE tenant = $1 AND delivery_id = $2",
        tenant,
        id,
        StoredEvent::decode,
    )
    .await
}

impl TenantData for PgTenant {
    fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::SeqCst)
    }

    fn commit(&self, item: NewDelivery) -> BoxFuture<'static, Result<CommitOutcome>> {
        let (committer, tenant, dropped) = (
            self.committer.clone(),
            self.tenant.clone(),
            self.dropped.clone(),
        );
        async move { committer.commit(tenant, dropped, item).await }.boxed()
    }

    fn counts(&self) -> Result<QueueCounts> {
        self.run(|db, tenant| async move {
            let row = db
                .client()
                .await?
                .query_one(
                    "SELECT (SELECT count(*) FROM hookd_queue WHERE tenant = $1), \
                            (SELECT count(*) FROM hookd_dead WHERE tenant = $1), \
                            (SELECT qkey FROM hookd_queue WHERE tenant = $1 ORDER BY qkey LIMIT 1)",
                    &[&tenant],
                )
                .await
                .map_err(pg)?;
            Ok(QueueCounts {
                depth: row.get::<_, i64>(0) as u64,
                dead: row.get::<_, i64>(1) as u64,
                oldest_due_ms: row.get::<_, Option<&[u8]>>(2).and_then(queue_key_due_ms),
            })
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

    fn deliveries(
        &self,
        status: Option<DeliveryStatus>,
        before: Option<&DeliveryId>,
        limit: usize,
    ) -> Result<Vec<(DeliveryId, DeliveryState)>> {
        let before = before.map(|b| b.to_string());
        let status = status.map(|s| s.as_str());
        let limit = limit as i64;
        self.run(|db, tenant| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT delivery_id, state FROM hookd_states WHERE tenant = $1 \
                     AND ($2::text IS NULL OR delivery_id < $2) \
                     AND ($3::text IS NULL OR status = $3) \
                     ORDER BY delivery_id DESC LIMIT $4",
                    &[&tenant, &before, &status, &limit],
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

    fn queue(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<(QueueKey, DeliveryId)>> {
        let after = after.map(<[u8]>::to_vec);
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
                .map(|r| (r.get(0), DeliveryId::new(r.get::<_, String>(1))))
                .collect())
        })
    }

    fn record_attempt(
        &self,
        entry: &[u8],
        id: &DeliveryId,
        attempt: &AttemptRecord,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>> {
        let (entry, id, attempt, next) =
            (entry.to_vec(), id.clone(), attempt.clone(), next.clone());
        self.run(|db, tenant| async move {
            let retry_seq = db.sequence().await?;
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let Some(state) = claim(&*tx, &tenant, &entry, id.as_str()).await? else {
                tx.commit().await.map_err(pg)?;
                return Ok(None);
            };
            let outcome = Outcome {
                attempt: &attempt,
                next: &next,
                retry_seq,
                now_ms,
            };
            let state = settle(&*tx, &tenant, state, &entry, &id, &outcome).await?;
            tx.commit().await.map_err(pg)?;
            Ok(Some(state))
        })
    }

    fn drop_queue_entry(&self, entry: &[u8]) -> Result<()> {
        let entry = entry.to_vec();
        self.run(
            |db, tenant| async move { delete_queue(&**db.client().await?, &tenant, &entry).await },
        )
    }

    fn redeliver(&self, id: &DeliveryId, now_ms: i64) -> Result<DeliveryId> {
        let id = id.clone();
        self.run(|db, tenant| async move {
            let new_key = queue_key(now_ms, db.sequence().await?);
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let new_id = redeliver(&*tx, &tenant, &id, &new_key, now_ms).await?;
            tx.commit().await.map_err(pg)?;
            Ok(new_id)
        })
    }

    fn purge_dead_letter(&self, key: &[u8], letter: &DeadLetter) -> Result<bool> {
        let (key, id) = (key.to_vec(), letter.delivery_id.to_string());
        self.run(|db, tenant| async move {
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            let dead = tx
                .query_opt(
                    "SELECT 1 FROM hookd_dead WHERE tenant = $1 AND dkey = $2 FOR UPDATE",
                    &[&tenant, &key],
                )
                .await
                .map_err(pg)?;
            let state = lock_state(&*tx, &tenant, &id).await?;
            let purge = dead.is_some() && state.is_some_and(|s| s.status == DeliveryStatus::Dead);
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

    fn nack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        let ids = ids.to_vec();
        self.run(|db, tenant| async move { super::pull::nack(&db, &tenant, &ids, now_ms).await })
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

/// Queues a dead (or delivered) delivery again as a new delivery, inside
/// `tx`; the old state's row lock makes one of concurrent calls win.
async fn redeliver(
    tx: &impl GenericClient,
    tenant: &str,
    delivery_id: &DeliveryId,
    new_key: &[u8; 16],
    now_ms: i64,
) -> Result<DeliveryId> {
    let id = delivery_id.as_str();
    let Some(mut old) = lock_state(tx, tenant, id).await? else {
        return Err(Error::NotFound(format!("delivery {delivery_id}")));
    };
    let was_dead = redeliverable(&old, delivery_id)?;
    let Some(event) = load_event(tx, tenant, id).await? else {
        return Err(Error::NotFound(format!("event of {delivery_id}")));
    };
    let new_id = DeliveryId::generate();
    let meta = EventMeta {
        delivery_id: new_id.clone(),
        received_at_ms: now_ms,
        request_id: RequestId::generate(),
        ..event.meta
    };
    let dead_key = time_key(old.finished_at_ms.unwrap_or_default(), delivery_id);
    if was_dead {
        old.status = DeliveryStatus::Redelivered;
    }
    old.redelivered_as = Some(new_id.clone());
    let mut new_state = DeliveryState::pending(meta.event_id.clone(), now_ms);
    new_state.redelivery_of = Some(delivery_id.clone());
    new_state.queue_key = Some(hex::encode(new_key));
    tx.execute(
        "INSERT INTO hookd_events (tenant, delivery_id, event) VALUES ($1, $2, $3)",
        &[
            &tenant,
            &new_id.as_str(),
            &StoredEvent::encode(&meta, &event.body),
        ],
    )
    .await
    .map_err(pg)?;
    put_state(tx, tenant, new_id.as_str(), &new_state).await?;
    put_state(tx, tenant, id, &old).await?;
    insert_queue(tx, tenant, new_key, new_id.as_str()).await?;
    tx.execute(
        "DELETE FROM hookd_dead WHERE tenant = $1 AND dkey = $2",
        &[&tenant, &dead_key],
    )
    .await
    .map_err(pg)?;
    Ok(new_id)
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
