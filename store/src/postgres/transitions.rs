//! Changes of one delivery on PostgreSQL, as compare-and-set transactions.

use std::time::Duration;

use tokio_postgres::GenericClient;

use super::{
    delivery_rows::{delete_queue, insert_queue, load_event, lock_state, put_state},
    pg, retrying, Db,
};
use crate::{
    api::Fence,
    error::{Error, Result},
    ids::DeliveryId,
    lifecycle::{
        holds_entry, redeliverable, redelivery, settled, Next, Outcome, Redelivery, Resend,
    },
    records::{encode, AttemptRecord, DeliveryState, StoredEvent},
};

/// The queue entry `entry` locked, with the delivery it names: while the
/// tenant's forwarding lease is still `fence` (its row share-locked, so no
/// takeover commits before this transaction), when one is given.
const FENCED_ENTRY: &str = "SELECT q.delivery_id FROM hookd_queue q \
     JOIN hookd_forward_leases l ON l.tenant = q.tenant \
     WHERE q.tenant = $1 AND q.qkey = $2 \
     AND l.owner = $3 AND l.epoch = $4 AND l.expires_at > now() \
     FOR UPDATE OF q FOR SHARE OF l";

/// The compare half of every queue compare-and-set: the delivery's state
/// (locked) if `entry` names it and it is pending with `entry` as its live
/// entry (and, with a `fence`, the tenant's lease is still that). An entry
/// its delivery no longer points at is removed.
///
/// Changes of one delivery on PostgreSQL, as compare-and-set transactions:
/// each locks the delivery's state row (`FOR UPDATE`) and then its queue
/// entry, the same order everywhere, so concurrent writers in any process
/// serialise on the delivery instead of deadlocking. An attempt is claimed
/// before it is sent and recorded only while the tenant's forwarding lease
/// is still the sender's ([`Fence`]).
pub(super) async fn claim(
    tx: &impl GenericClient,
    tenant: &str,
    entry: &[u8],
    id: &str,
    fence: Option<&Fence>,
) -> Result<Option<DeliveryState>> {
    let state = lock_state(tx, tenant, id).await?;
    let named = match fence {
        Some(fence) => {
            let owner: &str = &fence.owner;
            tx.query_opt(FENCED_ENTRY, &[&tenant, &entry, &owner, &fence.epoch])
                .await
        }
        None => {
            tx.query_opt(
                "SELECT delivery_id FROM hookd_queue WHERE tenant = $1 AND qkey = $2 FOR UPDATE",
                &[&tenant, &entry],
            )
            .await
        }
    }
    .map_err(pg)?;
    match named {
        Some(row) if row.get::<_, &str>(0) == id => {}
        _ => return Ok(None),
    }
    match state {
        Some(state) if holds_entry(&state, entry) => Ok(Some(state)),
        _ => {
            delete_queue(tx, tenant, entry).await?;
            Ok(None)
        }
    }
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
        insert_queue(tx, tenant, (&key, id), true).await?;
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

/// Whether the attempt at `entry` may be sent: `entry` is still queued for
/// `id` and the tenant's lease is still `fence`, unexpired, in one
/// statement on the database's clock; if so, how long the lease has left
/// (whole milliseconds, rounded down).
pub(super) async fn may_attempt(
    db: &Db,
    tenant: &str,
    entry: &[u8],
    id: &str,
    fence: &Fence,
) -> Result<Option<Duration>> {
    let owner: &str = &fence.owner;
    let live = db
        .client()
        .await?
        .query_opt(
            "SELECT floor(extract(epoch FROM l.expires_at - now()) * 1000)::bigint \
             FROM hookd_queue q JOIN hookd_forward_leases l ON l.tenant = q.tenant \
             WHERE q.tenant = $1 AND q.qkey = $2 AND q.delivery_id = $3 \
             AND l.owner = $4 AND l.epoch = $5 AND l.expires_at > now()",
            &[&tenant, &entry, &id, &owner, &fence.epoch],
        )
        .await
        .map_err(pg)?;
    Ok(live.map(|row| Duration::from_millis(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0))))
}

/// An attempt to record, as the dispatcher finished it.
pub(super) struct Finished {
    pub(super) entry: Vec<u8>,
    pub(super) id: DeliveryId,
    pub(super) attempt: AttemptRecord,
    pub(super) next: Next,
    pub(super) now_ms: i64,
    /// The lease it was sent under; `None`: not fenced.
    pub(super) fence: Option<Fence>,
}

/// Records an attempt and its consequence in one transaction, while its
/// entry is live (and its fence current); `None` when not. A lost race is
/// tried again.
pub(super) async fn record(
    db: &Db,
    tenant: &str,
    finished: &Finished,
) -> Result<Option<DeliveryState>> {
    let retry_seq = db.sequence().await?;
    retrying(|| async {
        let mut client = db.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let Finished {
            entry, id, fence, ..
        } = finished;
        let claimed = claim(&*tx, tenant, entry, id.as_str(), fence.as_ref()).await?;
        let Some(state) = claimed else {
            tx.commit().await.map_err(pg)?;
            return Ok(None);
        };
        let outcome = Outcome {
            attempt: &finished.attempt,
            next: &finished.next,
            retry_seq,
            now_ms: finished.now_ms,
        };
        let state = settle(&*tx, tenant, state, entry, id, &outcome).await?;
        tx.commit().await.map_err(pg)?;
        Ok(Some(state))
    })
    .await
}

/// Queues a dead (or delivered) delivery again as a new delivery, inside
/// `tx`; the old state's row lock makes one of concurrent calls win.
pub(super) async fn redeliver(
    tx: &impl GenericClient,
    tenant: &str,
    delivery_id: &DeliveryId,
    (new_key, now_ms): (&[u8; 16], i64),
    resend: Resend,
) -> Result<DeliveryId> {
    let id = delivery_id.as_str();
    let Some(old) = lock_state(tx, tenant, id).await? else {
        return Err(Error::NotFound(format!("delivery {delivery_id}")));
    };
    let was_dead = redeliverable(&old, delivery_id, resend)?;
    let Some(event) = load_event(tx, tenant, id).await? else {
        return Err(Error::NotFound(format!("event of {delivery_id}")));
    };
    let new_id = DeliveryId::made_at(now_ms);
    let Redelivery {
        meta,
        state: new_state,
        original: old,
        dead_key,
    } = redelivery(
        old,
        delivery_id,
        was_dead,
        event.meta,
        (&new_id, new_key),
        now_ms,
    );
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
    insert_queue(tx, tenant, (new_key, new_id.as_str()), false).await?;
    tx.execute(
        "DELETE FROM hookd_dead WHERE tenant = $1 AND dkey = $2",
        &[&tenant, &dead_key],
    )
    .await
    .map_err(pg)?;
    Ok(new_id)
}
