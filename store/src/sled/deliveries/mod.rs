//! What happens to a delivery on sled after it is accepted, each change one
//! transaction: attempts and outcomes, dead letters, redelivery, [`retention`].

mod consumer;
pub(super) mod receipt;
mod retention;
mod round;
pub(super) mod shared;

use sled::{
    transaction::{ConflictableTransactionError, ConflictableTransactionResult, TransactionError},
    Transactional,
};

pub use consumer::{ack, make_due, pull};
pub use retention::{sweep, sweep_due};
pub(super) use round::{record_round, RoundAttempt};

use super::{
    gauges::{Delta, Tally},
    keyspace::TxKeyspace,
    lifecycle::{
        holds_entry, redeliverable, redelivery, settled, Next, Outcome, Redelivery, Resend,
    },
    records::{
        attempt_key, decode, encode, queue_key, AttemptRecord, DeadLetter, DeliveryState,
        DeliveryStatus, StoredEvent,
    },
    TenantTrees,
};

use crate::{
    error::{Error, Result},
    ids::DeliveryId,
};

/// What a transaction's closure returns.
type TxResult<T> = ConflictableTransactionResult<T, Error>;

/// Runs a transaction's body with a fresh [`Tally`] (one per run of the
/// closure, so a run sled repeats after a conflict counts from zero) and
/// returns its value with what it changed in the queue and dead letters.
fn tallied<T>(body: impl FnOnce(&Tally) -> TxResult<T>) -> TxResult<(T, Delta)> {
    let tally = Tally::default();
    let value = body(&tally)?;
    Ok((value, tally.delta()))
}

/// Counts a committed transaction's changes in the tenant's gauges.
fn counted<T>(trees: &TenantTrees, (value, delta): (T, Delta)) -> T {
    trees.gauges.apply(delta);
    value
}

/// The stored event of a delivery (a route's copy reads it through the
/// default route's delivery, [`shared`]).
pub fn load_event(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<StoredEvent>> {
    shared::load(trees, delivery_id)
}

/// The state of a delivery.
pub fn load_state(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    let record = || -> Result<Option<DeliveryState>> {
        trees
            .state
            .get(delivery_id.as_str())?
            .map(|value| decode(&value))
            .transpose()
    };
    if let Some(state) = record()? {
        return Ok(Some(state));
    }
    if let Some(state) = receipt::load(&trees.queue, delivery_id)? {
        return Ok(Some(state));
    }
    // Changed between the two reads: the transaction that took its receipt
    // away wrote its state record (each read sees a transaction whole).
    record()
}

/// Whether a key under a delivery's prefix in the attempts tree (its id and
/// `/`) is an attempt's, a 4-byte attempt number after the prefix, rather
/// than a redirect's ([`super::redirects`]).
fn is_attempt_key(delivery_id: &DeliveryId, key: &[u8]) -> bool {
    key.len() == delivery_id.as_str().len() + 1 + 4
}

/// Every attempt of a delivery, in order.
pub fn load_attempts(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Vec<AttemptRecord>> {
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    let mut attempts = Vec::new();
    for kv in trees.attempts.scan_prefix(prefix) {
        let (key, value) = kv?;
        if is_attempt_key(delivery_id, &key) {
            attempts.push(decode(&value)?);
        }
    }
    Ok(attempts)
}

/// Records one attempt and its consequence in one transaction, as a
/// compare-and-set: only while `queue_entry` is still the delivery's live
/// queue entry (it is pending and its state points at that entry). Then the
/// entry is replaced by a retry, or removed for a delivered or dead one.
/// `None`: the delivery moved on meanwhile (acked, redelivered, purged);
/// nothing was recorded and a stale entry was dropped.
pub fn record_attempt(
    trees: &TenantTrees,
    queue_entry: &[u8],
    delivery_id: &DeliveryId,
    attempt: &AttemptRecord,
    next: &Next,
    now_ms: i64,
) -> Result<Option<DeliveryState>> {
    let retry_seq = trees.sequence()?;
    let result = trees
        .attempt_trees()
        .transaction(|views| {
            let (queue, states, attempts, dead, done) = trees.attempt_views(views);
            tallied(|tally| {
                let Some(state) = claim(queue, states, queue_entry, delivery_id, tally)? else {
                    return Ok(None);
                };
                let outcome = Outcome {
                    attempt,
                    next,
                    retry_seq,
                    now_ms,
                };
                let trees = Settle {
                    queue,
                    states,
                    attempts,
                    dead,
                    done,
                    tally,
                };
                settle(&trees, state, queue_entry, delivery_id, &outcome).map(Some)
            })
        })
        .map_err(flatten)?;
    Ok(counted(trees, result))
}

/// The trees an attempt's outcome touches, inside a transaction, and the
/// tally of its queue and dead-letter changes.
struct Settle<'a> {
    queue: TxKeyspace<'a>,
    states: TxKeyspace<'a>,
    attempts: TxKeyspace<'a>,
    dead: TxKeyspace<'a>,
    done: TxKeyspace<'a>,
    tally: &'a Tally,
}

/// Writes an attempt and what follows from it for a delivery that
/// [`claim`] just confirmed holds `queue_entry`.
fn settle(
    trees: &Settle<'_>,
    state: DeliveryState,
    queue_entry: &[u8],
    delivery_id: &DeliveryId,
    outcome: &Outcome<'_>,
) -> TxResult<DeliveryState> {
    let Outcome {
        attempt,
        next,
        retry_seq,
        now_ms,
    } = *outcome;
    let id = delivery_id.as_str();
    let done = settled(state, delivery_id, attempt, next, retry_seq, now_ms);
    receipt::take(trees.queue, queue_entry, delivery_id, trees.tally)?;
    if let Some(key) = done.requeue {
        trees
            .tally
            .queue_inserted(trees.queue.insert(&key[..], id)?, id);
    }
    if let Some((key, letter)) = &done.dead {
        trees
            .tally
            .dead_inserted(trees.dead.insert(key, encode(letter))?);
    }
    if let Some(key) = &done.done {
        trees.done.insert(key, &[])?;
    }
    trees.states.insert(id, encode(&done.state))?;
    trees
        .attempts
        .insert(attempt_key(delivery_id, attempt.attempt), encode(attempt))?;
    Ok(done.state)
}

/// The compare half of every queue compare-and-set, inside the
/// transaction: the delivery's state if `queue_entry` names it and it is
/// pending with that entry as its live one. An entry its delivery no
/// longer points at is an orphan and is removed (counted in `tally`).
fn claim(
    queue: TxKeyspace<'_>,
    states: TxKeyspace<'_>,
    queue_entry: &[u8],
    delivery_id: &DeliveryId,
    tally: &Tally,
) -> TxResult<Option<DeliveryState>> {
    let key = receipt::place(queue_entry);
    match queue.get(key)? {
        Some(named) if receipt::names(&named, delivery_id) => {}
        _ => return Ok(None),
    }
    match tx_current(queue, states, delivery_id)? {
        Some(state) if holds_entry(&state, key) => Ok(Some(state)),
        _ => {
            receipt::take(queue, key, delivery_id, tally)?;
            Ok(None)
        }
    }
}

/// The state record of a delivery as a transaction sees it.
fn tx_state(states: TxKeyspace<'_>, delivery_id: &DeliveryId) -> TxResult<Option<DeliveryState>> {
    match states.get(delivery_id.as_str())? {
        None => Ok(None),
        Some(value) => decode(&value).map(Some).or_else(abort),
    }
}

/// The state of a delivery as a transaction sees it: its state record, else
/// the receipt its id names ([`receipt`]).
pub(super) fn tx_current(
    queue: TxKeyspace<'_>,
    states: TxKeyspace<'_>,
    delivery_id: &DeliveryId,
) -> TxResult<Option<DeliveryState>> {
    match tx_state(states, delivery_id)? {
        Some(state) => Ok(Some(state)),
        None => receipt::tx_load(queue, delivery_id),
    }
}

/// Ends a transaction with `e`, changing nothing.
fn abort<T>(e: Error) -> TxResult<T> {
    Err(ConflictableTransactionError::Abort(e))
}

/// Drops a queue entry whose event is gone (purged or swept): for an
/// entry handed out as one receipt of several ([`receipt::listed`]), that
/// receipt alone.
pub fn drop_queue_entry(trees: &TenantTrees, queue_entry: &[u8]) -> Result<()> {
    let key = receipt::place(queue_entry);
    let id = DeliveryId::new(String::from_utf8_lossy(&queue_entry[key.len()..]));
    let result = trees
        .queue
        .tree()
        .transaction(|view| {
            let queue = trees.queue.tx(view);
            tallied(|tally| receipt::take(queue, key, &id, tally))
        })
        .map_err(flatten)?;
    counted(trees, result);
    Ok(())
}

/// Queues a dead (or delivered) delivery again as a new delivery of the same
/// event: a new delivery id, attempts from 1, due now. The old one points at
/// the new one; a dead letter leaves the dead-letter index. One transaction
/// re-reads the old state, so of concurrent calls for one dead letter
/// exactly one succeeds; the others get [`Error::Precondition`] naming the
/// delivery it made.
pub fn redeliver(
    trees: &TenantTrees,
    delivery_id: &DeliveryId,
    now_ms: i64,
    resend: Resend,
) -> Result<DeliveryId> {
    let new_id = DeliveryId::made_at(now_ms);
    let new_key = queue_key(now_ms, trees.sequence()?);
    let id = delivery_id.as_str();
    let result = (
        trees.events.tree(),
        trees.state.tree(),
        trees.queue.tree(),
        trees.dead.tree(),
    )
        .transaction(|(events, states, queue, dead)| {
            let (events, states, queue, dead) = (
                trees.events.tx(events),
                trees.state.tx(states),
                trees.queue.tx(queue),
                trees.dead.tx(dead),
            );
            let tally = Tally::default();
            let Some(old) = tx_current(queue, states, delivery_id)? else {
                return abort(Error::NotFound(format!("delivery {delivery_id}")));
            };
            let was_dead = redeliverable(&old, delivery_id, resend).or_else(abort)?;
            let event = match events.get(id)? {
                Some(stored) => StoredEvent::decode(&stored).or_else(abort)?,
                None => shared::tx_load(events, &old, delivery_id)?,
            };
            let Redelivery {
                meta,
                state,
                original,
                dead_key,
            } = redelivery(
                old,
                delivery_id,
                was_dead,
                event.meta,
                (&new_id, &new_key),
                now_ms,
            );
            events.insert(new_id.as_str(), StoredEvent::encode(&meta, &event.body))?;
            states.insert(new_id.as_str(), encode(&state))?;
            states.insert(id, encode(&original))?;
            tally.queue_inserted(
                queue.insert(&new_key[..], new_id.as_str())?,
                new_id.as_str(),
            );
            tally.dead_removed(dead.remove(dead_key)?);
            Ok(tally.delta())
        })
        .map_err(flatten)?;
    trees.gauges.apply(result);
    Ok(new_id)
}

/// Removes a dead letter (its event, state and attempts too) in one
/// transaction, only if it is still a dead letter; returns whether it was.
pub fn purge_dead_letter(
    trees: &TenantTrees,
    dead_key: &[u8],
    letter: &DeadLetter,
) -> Result<bool> {
    let id = &letter.delivery_id;
    shared::hand_over(trees, id)?;
    let mut prefix = id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    // A dead delivery gets no new attempts, so these keys cannot change
    // (a redirect recorded meanwhile is removed after).
    let attempt_keys: Vec<sled::IVec> = trees
        .attempts
        .scan_prefix(&prefix)
        .map(|entry| entry.map(|(key, _)| key))
        .collect::<std::result::Result<_, _>>()?;
    let result = (
        trees.dead.tree(),
        trees.events.tree(),
        trees.state.tree(),
        trees.attempts.tree(),
    )
        .transaction(|(dead, events, states, attempts)| {
            let (dead, events, states, attempts) = (
                trees.dead.tx(dead),
                trees.events.tx(events),
                trees.state.tx(states),
                trees.attempts.tx(attempts),
            );
            tallied(|tally| {
                if dead.get(dead_key)?.is_none() {
                    return Ok(false);
                }
                match tx_state(states, id)? {
                    Some(state) if state.status.is_dead_letter() => {}
                    _ => return Ok(false),
                }
                tally.dead_removed(dead.remove(dead_key)?);
                events.remove(id.as_str())?;
                states.remove(id.as_str())?;
                for key in &attempt_keys {
                    attempts.remove(key)?;
                }
                Ok(true)
            })
        })
        .map_err(flatten)?;
    let purged = counted(trees, result);
    if purged {
        for entry in trees.attempts.scan_prefix(&prefix) {
            trees.attempts.remove(entry?.0)?;
        }
    }
    Ok(purged)
}

fn delete_delivery(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<()> {
    shared::hand_over(trees, delivery_id)?;
    trees.events.remove(delivery_id.as_str())?;
    trees.state.remove(delivery_id.as_str())?;
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    for entry in trees.attempts.scan_prefix(prefix) {
        trees.attempts.remove(entry?.0)?;
    }
    Ok(())
}

/// A transaction's error as hookd's: an abort carries its own.
fn flatten(e: TransactionError<Error>) -> Error {
    match e {
        TransactionError::Storage(e) => e.into(),
        TransactionError::Abort(e) => e,
    }
}

#[cfg(test)]
mod race_tests;
#[cfg(test)]
mod tests;
