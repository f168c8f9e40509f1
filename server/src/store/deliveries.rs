//! What happens to a delivery after it is accepted: attempts and outcomes,
//! dead letters, redelivery and retention, each as one sled transaction.

use sled::{transaction::TransactionError, Transactional};

use super::{
    records::{
        attempt_key, decode, encode, queue_key, time_key, AttemptRecord, DeadLetter, DeliveryState,
        DeliveryStatus, EventMeta, IdempotencyRecord, StoredEvent,
    },
    TenantTrees,
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, RequestId},
};

/// What an attempt leads to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The destination took it.
    Delivered,
    /// Try again at `due_ms`.
    Retry {
        /// When.
        due_ms: i64,
    },
    /// Give up, for this reason.
    Dead {
        /// In plain words.
        reason: String,
    },
}

/// The stored event of a delivery.
pub fn load_event(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<StoredEvent>> {
    trees
        .events
        .get(delivery_id.as_str())?
        .map(|v| StoredEvent::decode(&v))
        .transpose()
}

/// The state of a delivery.
pub fn load_state(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    trees
        .state
        .get(delivery_id.as_str())?
        .map(|v| decode(&v))
        .transpose()
}

/// Every attempt of a delivery, in order.
pub fn load_attempts(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Vec<AttemptRecord>> {
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    trees
        .attempts
        .scan_prefix(prefix)
        .map(|kv| decode(&kv?.1))
        .collect()
}

/// Records one attempt and its consequence atomically: the queue entry
/// `queue_key` is replaced by a retry, or removed for a delivered or dead one.
pub fn record_attempt(
    trees: &TenantTrees,
    queue_entry: &[u8],
    delivery_id: &DeliveryId,
    attempt: &AttemptRecord,
    next: &Next,
    retry_seq: u64,
    now_ms: i64,
) -> Result<DeliveryState> {
    let mut state = load_state(trees, delivery_id)?
        .ok_or_else(|| Error::Corrupt(format!("no state for {delivery_id}")))?;
    state.attempts = state.attempts.max(attempt.attempt);
    state.last_status = attempt.status_code;
    state.last_error = attempt.error.clone();
    state.next_attempt_at_ms = None;
    state.queue_key = None;
    let mut dead = None;
    match next {
        Next::Delivered => {
            state.status = DeliveryStatus::Delivered;
            state.finished_at_ms = Some(now_ms);
        }
        Next::Retry { due_ms } => {
            state.status = DeliveryStatus::Pending;
            state.next_attempt_at_ms = Some(*due_ms);
            state.queue_key = Some(hex::encode(queue_key(*due_ms, retry_seq)));
        }
        Next::Dead { reason } => {
            state.status = DeliveryStatus::Dead;
            state.finished_at_ms = Some(now_ms);
            state.last_error = Some(reason.clone());
            dead = Some(DeadLetter {
                delivery_id: delivery_id.clone(),
                event_id: state.event_id.clone(),
                reason: reason.clone(),
                dead_at_ms: now_ms,
                attempts: state.attempts,
                last_status: attempt.status_code,
            });
        }
    }
    let state_value = encode(&state);
    let attempt_value = encode(attempt);
    let id = delivery_id.as_str();
    let result = (
        &trees.queue,
        &trees.state,
        &trees.attempts,
        &trees.dead,
        &trees.done,
    )
        .transaction(|(queue, states, attempts, dead_index, done)| {
            let mut counts = (-i64::from(queue.remove(queue_entry)?.is_some()), 0);
            states.insert(id, state_value.as_slice())?;
            attempts.insert(
                attempt_key(delivery_id, attempt.attempt),
                attempt_value.as_slice(),
            )?;
            match next {
                Next::Delivered => {
                    done.insert(time_key(now_ms, delivery_id), &[])?;
                }
                Next::Retry { due_ms } => {
                    let old = queue.insert(&queue_key(*due_ms, retry_seq)[..], id)?;
                    counts.0 += i64::from(old.is_none());
                }
                Next::Dead { .. } => {
                    let letter = dead.as_ref().expect("dead letter built above");
                    let old = dead_index.insert(time_key(now_ms, delivery_id), encode(letter))?;
                    counts.1 += i64::from(old.is_none());
                }
            }
            Ok(counts)
        });
    let (queued, dead) = result.map_err(flatten)?;
    trees.gauges.add_queued(queued);
    trees.gauges.add_dead(dead);
    Ok(state)
}

/// Drops a queue entry whose event is gone (purged or swept).
pub fn drop_queue_entry(trees: &TenantTrees, queue_entry: &[u8]) -> Result<()> {
    if trees.queue.remove(queue_entry)?.is_some() {
        trees.gauges.add_queued(-1);
    }
    Ok(())
}

/// Queues a dead (or delivered) delivery again as a new delivery of the same
/// event: a new delivery id, attempts from 1, due now. The old one points at
/// the new one; a dead letter leaves the dead-letter index.
pub fn redeliver(
    trees: &TenantTrees,
    delivery_id: &DeliveryId,
    seq: u64,
    now_ms: i64,
) -> Result<DeliveryId> {
    let mut old = load_state(trees, delivery_id)?
        .ok_or_else(|| Error::NotFound(format!("delivery {delivery_id}")))?;
    let was_dead = match old.status {
        DeliveryStatus::Dead => true,
        DeliveryStatus::Delivered => false,
        other => {
            return Err(Error::Precondition(format!(
                "delivery {delivery_id} is {}; only dead or delivered ones can be redelivered",
                other.as_str()
            )))
        }
    };
    let event = load_event(trees, delivery_id)?
        .ok_or_else(|| Error::NotFound(format!("event of {delivery_id}")))?;
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
    new_state.queue_key = Some(hex::encode(queue_key(now_ms, seq)));
    let event_value = StoredEvent::encode(&meta, &event.body);
    let (old_value, new_value) = (encode(&old), encode(&new_state));
    let result = (&trees.events, &trees.state, &trees.queue, &trees.dead).transaction(
        |(events, states, queue, dead)| {
            events.insert(new_id.as_str(), event_value.as_slice())?;
            states.insert(new_id.as_str(), new_value.as_slice())?;
            states.insert(delivery_id.as_str(), old_value.as_slice())?;
            let queued = queue.insert(&queue_key(now_ms, seq)[..], new_id.as_str())?;
            let unlisted = dead.remove(dead_key.as_slice())?;
            Ok((i64::from(queued.is_none()), -i64::from(unlisted.is_some())))
        },
    );
    let (queued, dead) = result.map_err(flatten)?;
    trees.gauges.add_queued(queued);
    trees.gauges.add_dead(dead);
    Ok(new_id)
}

/// The dead-letter index, oldest first (`.rev()` for newest first).
pub fn dead_letters(
    trees: &TenantTrees,
) -> impl DoubleEndedIterator<Item = Result<(Vec<u8>, DeadLetter)>> {
    trees.dead.iter().map(|kv| {
        let (k, v) = kv?;
        Ok((k.to_vec(), decode(&v)?))
    })
}

/// Removes dead letters (their event, state and attempts too).
pub fn purge_dead_letter(trees: &TenantTrees, dead_key: &[u8], letter: &DeadLetter) -> Result<()> {
    if trees.dead.remove(dead_key)?.is_some() {
        trees.gauges.add_dead(-1);
    }
    delete_delivery(trees, &letter.delivery_id)
}

fn delete_delivery(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<()> {
    trees.events.remove(delivery_id.as_str())?;
    trees.state.remove(delivery_id.as_str())?;
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    for key in trees.attempts.scan_prefix(prefix).keys() {
        trees.attempts.remove(key?)?;
    }
    Ok(())
}

/// What one sweep removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Delivered events deleted.
    pub delivered: usize,
    /// Idempotency records forgotten.
    pub idempotency: usize,
}

/// Deletes, in bounded batches, delivered events older than
/// `delivered_before_ms` and idempotency records older than
/// `idem_before_ms`. `idem_cursor` carries the scan position between sweeps.
pub fn sweep(
    trees: &TenantTrees,
    delivered_before_ms: i64,
    idem_before_ms: i64,
    batch: usize,
    idem_cursor: &mut Vec<u8>,
) -> Result<Swept> {
    let mut swept = Swept::default();
    let cutoff = (delivered_before_ms.max(0) as u64).to_be_bytes();
    for kv in trees.done.range(..cutoff.as_slice()).take(batch) {
        let (key, _) = kv?;
        let id = DeliveryId::new(String::from_utf8_lossy(&key[8..]).into_owned());
        delete_delivery(trees, &id)?;
        trees.done.remove(key)?;
        swept.delivered += 1;
    }
    let mut scanned = 0;
    let mut last = None;
    for kv in trees.idem.range(idem_cursor.as_slice()..) {
        let (key, value) = kv?;
        scanned += 1;
        let record: IdempotencyRecord = decode(&value)?;
        if record.received_at_ms < idem_before_ms {
            trees.idem.remove(&key)?;
            swept.idempotency += 1;
        }
        last = Some(key);
        if scanned >= batch {
            break;
        }
    }
    *idem_cursor = match last {
        Some(key) if scanned >= batch => {
            let mut next = key.to_vec();
            next.push(0);
            next
        }
        _ => Vec::new(),
    };
    Ok(swept)
}

/// Hands out up to `max` due deliveries of a pull-mode tenant and hides each
/// for `visibility_ms`: unacknowledged, it comes back. Each pull counts as an
/// attempt; one older than the retry window is dead-lettered instead.
pub fn pull(
    trees: &TenantTrees,
    db: &sled::Db,
    max: usize,
    visibility_ms: i64,
    window_ms: i64,
    now_ms: i64,
) -> Result<Vec<(StoredEvent, u32)>> {
    let due: Vec<(sled::IVec, DeliveryId)> = trees
        .queue
        .range(..queue_key(now_ms + 1, 0).as_slice())
        .take(max)
        .map(|kv| kv.map(|(k, v)| (k, DeliveryId::new(String::from_utf8_lossy(&v).into_owned()))))
        .collect::<std::result::Result<_, _>>()?;
    let mut out = Vec::with_capacity(due.len());
    for (key, delivery_id) in due {
        let (Some(mut state), Some(event)) = (
            load_state(trees, &delivery_id)?,
            load_event(trees, &delivery_id)?,
        ) else {
            drop_queue_entry(trees, &key)?;
            continue;
        };
        if now_ms - state.received_at_ms > window_ms {
            let attempt = AttemptRecord {
                attempt: state.attempts,
                started_at_ms: now_ms,
                duration_ms: 0,
                status_code: None,
                error: Some("not acknowledged by a consumer".into()),
                response_body: Vec::new(),
                next_retry_at_ms: None,
                request_id: RequestId::generate(),
            };
            let reason = format!(
                "not acknowledged within the retry window after {} pulls",
                state.attempts
            );
            record_attempt(
                trees,
                &key,
                &delivery_id,
                &attempt,
                &Next::Dead { reason },
                0,
                now_ms,
            )?;
            continue;
        }
        let hidden_until = queue_key(now_ms + visibility_ms, db.generate_id()?);
        state.attempts += 1;
        state.next_attempt_at_ms = Some(now_ms + visibility_ms);
        state.queue_key = Some(hex::encode(hidden_until));
        let state_value = encode(&state);
        let queued = (&trees.queue, &trees.state)
            .transaction(|(queue, states)| {
                let removed = queue.remove(&key)?.is_some();
                let added = queue
                    .insert(&hidden_until[..], delivery_id.as_str())?
                    .is_none();
                states.insert(delivery_id.as_str(), state_value.as_slice())?;
                Ok(i64::from(added) - i64::from(removed))
            })
            .map_err(flatten)?;
        trees.gauges.add_queued(queued);
        out.push((event, state.attempts));
    }
    Ok(out)
}

/// Marks pulled deliveries delivered; returns how many were pending.
pub fn ack(trees: &TenantTrees, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
    let mut acked = 0;
    for id in ids {
        let Some(mut state) = load_state(trees, id)? else {
            continue;
        };
        if state.status != DeliveryStatus::Pending {
            continue;
        }
        let key = state
            .queue_key
            .take()
            .and_then(|k| hex::decode(k).ok())
            .unwrap_or_default();
        state.status = DeliveryStatus::Delivered;
        state.finished_at_ms = Some(now_ms);
        state.next_attempt_at_ms = None;
        let state_value = encode(&state);
        let removed = (&trees.queue, &trees.state, &trees.done)
            .transaction(|(queue, states, done)| {
                let removed = queue.remove(key.as_slice())?.is_some();
                states.insert(id.as_str(), state_value.as_slice())?;
                done.insert(time_key(now_ms, id), &[])?;
                Ok(removed)
            })
            .map_err(flatten)?;
        trees.gauges.add_queued(-i64::from(removed));
        acked += 1;
    }
    Ok(acked)
}

/// Makes pulled deliveries visible again at once; returns how many.
pub fn nack(trees: &TenantTrees, db: &sled::Db, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
    let mut returned = 0;
    for id in ids {
        let Some(mut state) = load_state(trees, id)? else {
            continue;
        };
        let Some(old) = state.queue_key.as_ref().and_then(|k| hex::decode(k).ok()) else {
            continue;
        };
        if state.status != DeliveryStatus::Pending {
            continue;
        }
        let new = queue_key(now_ms, db.generate_id()?);
        state.queue_key = Some(hex::encode(new));
        state.next_attempt_at_ms = Some(now_ms);
        let state_value = encode(&state);
        let queued = (&trees.queue, &trees.state)
            .transaction(|(queue, states)| {
                let removed = queue.remove(old.as_slice())?.is_some();
                let added = queue.insert(&new[..], id.as_str())?.is_none();
                states.insert(id.as_str(), state_value.as_slice())?;
                Ok(i64::from(added) - i64::from(removed))
            })
            .map_err(flatten)?;
        trees.gauges.add_queued(queued);
        returned += 1;
    }
    Ok(returned)
}

fn flatten(e: TransactionError<()>) -> Error {
    match e {
        TransactionError::Storage(e) => e.into(),
        TransactionError::Abort(()) => Error::Corrupt("transaction aborted".into()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::{EventId, TenantId},
        store::Store,
    };

    fn delivered(trees: &TenantTrees, n: u32, at_ms: i64) -> DeliveryId {
        let id = DeliveryId::new(format!("dlv_{n}"));
        let event_id = EventId::new(format!("evt_{n}"));
        let meta = EventMeta {
            event_id: event_id.clone(),
            delivery_id: id.clone(),
            request_id: RequestId::new("req_1"),
            received_at_ms: at_ms,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        };
        trees
            .events
            .insert(id.as_str(), StoredEvent::encode(&meta, b"{}"))
            .unwrap();
        trees
            .state
            .insert(
                id.as_str(),
                encode(&DeliveryState::pending(event_id.clone(), at_ms)),
            )
            .unwrap();
        let idem = IdempotencyRecord {
            delivery_id: id.clone(),
            received_at_ms: at_ms,
        };
        trees.idem.insert(event_id.as_str(), encode(&idem)).unwrap();
        let key = queue_key(at_ms, u64::from(n));
        trees.queue.insert(key, id.as_str()).unwrap();
        let attempt = AttemptRecord {
            attempt: 1,
            started_at_ms: at_ms,
            duration_ms: 1,
            status_code: Some(200),
            error: None,
            response_body: vec![],
            next_retry_at_ms: None,
            request_id: RequestId::new("req_2"),
        };
        record_attempt(trees, &key, &id, &attempt, &Next::Delivered, 0, at_ms).unwrap();
        id
    }

    #[test]
    fn sweep_removes_only_expired_records_in_bounded_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = Store::open(dir.path(), 16, false).unwrap();
        let trees = store.tenant_trees(&TenantId::new("t")).unwrap();
        let old: Vec<_> = (0..5).map(|n| delivered(&trees, n, 1_000)).collect();
        let fresh = delivered(&trees, 9, 50_000);
        assert_eq!(load_attempts(&trees, &old[0]).unwrap().len(), 1);

        let mut cursor = Vec::new();
        let first = sweep(&trees, 10_000, 10_000, 3, &mut cursor).unwrap();
        assert_eq!(first.delivered, 3, "bounded by the batch size");
        let mut total = first;
        for _ in 0..3 {
            let s = sweep(&trees, 10_000, 10_000, 3, &mut cursor).unwrap();
            total.delivered += s.delivered;
            total.idempotency += s.idempotency;
        }
        assert_eq!(
            total,
            Swept {
                delivered: 5,
                idempotency: 5
            }
        );
        for id in &old {
            assert!(load_event(&trees, id).unwrap().is_none());
            assert!(load_attempts(&trees, id).unwrap().is_empty());
        }
        assert!(load_event(&trees, &fresh).unwrap().is_some());
        assert!(trees.idem.get("evt_9").unwrap().is_some());
        assert_eq!(trees.idem.len(), 1);
    }
}
