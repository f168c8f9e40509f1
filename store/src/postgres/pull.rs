//! Pull mode on PostgreSQL: pulls, acks and nacks.

use std::collections::HashSet;

use super::{
    db_now_ms,
    delivery_rows::{delete_queue, insert_queue, load_event, lock_state, put_state},
    pg,
    transitions::{claim, settle},
    Db,
};
use crate::{
    api::PullRequest,
    error::{Error, Result},
    ids::DeliveryId,
    lifecycle::{unacknowledged, Outcome},
    records::{queue_key, queue_key_due_ms, time_key, DeliveryStatus, StoredEvent},
};

/// Hands out up to `max` due deliveries and hides each for the visibility
/// timeout, in one transaction; one older than the retry window is
/// dead-lettered instead. Stops before a delivery that would take the
/// bytes handed out past `max_bytes` (the first goes out whatever its size).
///
/// Pull mode on PostgreSQL. A pull claims due queue entries with their
/// states `FOR UPDATE SKIP LOCKED`: consumers on any replica pulling at
/// once each get other deliveries, and none waits for another. Acks and
/// nacks lock the state row first, like every other change of a delivery.
/// Visibility runs on the database's clock, so a replica whose own clock
/// is ahead never hands out what another just hid.
pub(super) async fn pull(
    db: &Db,
    tenant: &str,
    request: PullRequest,
) -> Result<Vec<(StoredEvent, u32)>> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    let shared_now_ms = db_now_ms(&*tx).await?;
    let due = queue_key(shared_now_ms + 1, 0).to_vec();
    let mut batch = Batch {
        request,
        shared_now_ms,
        out: Vec::with_capacity(request.max.min(100)),
        handed: HashSet::new(),
        bytes: 0,
    };
    let mut after: Vec<u8> = Vec::new();
    'pages: while batch.out.len() < request.max {
        let page = tx
            .query(
                "SELECT q.qkey, q.delivery_id FROM hookd_queue q \
                 JOIN hookd_states s ON s.tenant = q.tenant AND s.delivery_id = q.delivery_id \
                 WHERE q.tenant = $1 AND q.qkey < $2 AND q.qkey > $3 \
                 ORDER BY q.qkey LIMIT $4 FOR UPDATE OF q, s SKIP LOCKED",
                &[
                    &tenant,
                    &due,
                    &after,
                    &((request.max - batch.out.len()) as i64 + 8),
                ],
            )
            .await
            .map_err(pg)?;
        if page.is_empty() {
            break;
        }
        for row in &page {
            if batch.out.len() >= request.max {
                break 'pages;
            }
            let key: Vec<u8> = row.get(0);
            let id = DeliveryId::new(row.get::<_, String>(1));
            after = key.clone();
            if !take(db, &tx, tenant, &mut batch, key, id).await? {
                break 'pages;
            }
        }
    }
    tx.commit().await.map_err(pg)?;
    Ok(batch.out)
}

/// What one pull has handed out so far.
struct Batch {
    request: PullRequest,
    /// The database's clock: when what is pulled is hidden until.
    shared_now_ms: i64,
    out: Vec<(StoredEvent, u32)>,
    handed: HashSet<DeliveryId>,
    bytes: usize,
}

/// Hands out the delivery at queue entry `key` (locked by the pull), or
/// dead-letters it when it is older than the retry window; false when it
/// would take the bytes past `max_bytes` (the pull stops there). The
/// window is measured on the replica's clock, the one its receipt time
/// was taken on; the visibility timeout on the database's.
async fn take(
    db: &Db,
    tx: &deadpool_postgres::Transaction<'_>,
    tenant: &str,
    batch: &mut Batch,
    key: Vec<u8>,
    id: DeliveryId,
) -> Result<bool> {
    let PullRequest {
        max_bytes,
        visibility_ms,
        window_ms,
        now_ms,
        ..
    } = batch.request;
    if batch.handed.contains(&id) {
        return Ok(true);
    }
    let Some(event) = load_event(&**tx, tenant, id.as_str()).await? else {
        delete_queue(&**tx, tenant, &key).await?;
        return Ok(true);
    };
    let size = event.size();
    if !batch.out.is_empty() && batch.bytes + size > max_bytes {
        return Ok(false);
    }
    let Some(mut state) = claim(&**tx, tenant, &key, id.as_str(), None).await? else {
        return Ok(true);
    };
    if now_ms - state.received_at_ms > window_ms {
        let (attempt, next) = unacknowledged(&state, now_ms);
        let outcome = Outcome {
            attempt: &attempt,
            next: &next,
            retry_seq: 0,
            now_ms,
        };
        settle(&**tx, tenant, state, &key, &id, &outcome).await?;
        return Ok(true);
    }
    let visible_at = batch.shared_now_ms + visibility_ms;
    let hidden_until = queue_key(visible_at, db.sequence_in(&**tx).await?);
    state.attempts += 1;
    state.next_attempt_at_ms = Some(visible_at);
    state.queue_key = Some(hex::encode(hidden_until));
    delete_queue(&**tx, tenant, &key).await?;
    insert_queue(&**tx, tenant, (&hidden_until, id.as_str()), true).await?;
    put_state(&**tx, tenant, id.as_str(), &state).await?;
    batch.bytes += size;
    batch.handed.insert(id);
    batch.out.push((event, state.attempts));
    Ok(true)
}

/// Marks pending deliveries delivered; returns how many were pending.
pub(super) async fn ack(db: &Db, tenant: &str, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    let mut acked = 0;
    for id in sorted(ids) {
        let Some(mut state) = lock_state(&*tx, tenant, id.as_str()).await? else {
            continue;
        };
        if state.status != DeliveryStatus::Pending {
            continue;
        }
        if let Some(key) = state.queue_key.take() {
            let key =
                hex::decode(&key).map_err(|e| Error::Corrupt(format!("queue key of {id}: {e}")))?;
            delete_queue(&*tx, tenant, &key).await?;
        }
        state.status = DeliveryStatus::Delivered;
        state.finished_at_ms = Some(now_ms);
        state.next_attempt_at_ms = None;
        put_state(&*tx, tenant, id.as_str(), &state).await?;
        tx.execute(
            "INSERT INTO hookd_done (tenant, dkey) VALUES ($1, $2) ON CONFLICT DO NOTHING",
            &[&tenant, &time_key(now_ms, id)],
        )
        .await
        .map_err(pg)?;
        acked += 1;
    }
    tx.commit().await.map_err(pg)?;
    Ok(acked)
}

/// Makes deliveries whose entry is due later (pulled ones still hidden,
/// or ones waiting for their retry) due at `now` (`None`: now on the
/// database's clock, as a pull's visibility was set); returns how many.
pub(super) async fn make_due(
    db: &Db,
    tenant: &str,
    ids: &[DeliveryId],
    now: Option<i64>,
) -> Result<u32> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    let now_ms = match now {
        Some(now_ms) => now_ms,
        None => db_now_ms(&*tx).await?,
    };
    let mut returned = 0;
    for id in sorted(ids) {
        let Some(state) = lock_state(&*tx, tenant, id.as_str()).await? else {
            continue;
        };
        let Some(old) = state.queue_key.as_ref().and_then(|k| hex::decode(k).ok()) else {
            continue;
        };
        let hidden = queue_key_due_ms(&old).is_some_and(|due| due > now_ms);
        if state.status != DeliveryStatus::Pending || state.attempts == 0 || !hidden {
            continue;
        }
        let Some(mut state) = claim(&*tx, tenant, &old, id.as_str(), None).await? else {
            continue;
        };
        let new = queue_key(now_ms, db.sequence_in(&*tx).await?);
        state.queue_key = Some(hex::encode(new));
        state.next_attempt_at_ms = Some(now_ms);
        delete_queue(&*tx, tenant, &old).await?;
        insert_queue(&*tx, tenant, (&new, id.as_str()), true).await?;
        put_state(&*tx, tenant, id.as_str(), &state).await?;
        returned += 1;
    }
    tx.commit().await.map_err(pg)?;
    Ok(returned)
}

/// Ids once each, in one order for every process (no deadlock between
/// two acks of overlapping sets).
fn sorted(ids: &[DeliveryId]) -> Vec<&DeliveryId> {
    let mut ids: Vec<&DeliveryId> = ids.iter().collect();
    ids.sort_by(|a, b| a.as_str().cmp(b.as_str()));
    ids.dedup_by(|a, b| a.as_str() == b.as_str());
    ids
}
