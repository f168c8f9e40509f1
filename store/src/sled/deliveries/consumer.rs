//! Pull mode on sled: handing out, acknowledging and returning deliveries.

use std::collections::HashSet;

use sled::Transactional;

use super::{
    abort, claim, counted, flatten, load_event, receipt, settle, tallied, tx_current, DeliveryId,
    DeliveryStatus, Error, Outcome, Result, Settle, StoredEvent, TenantTrees,
};
use crate::{
    api::PullRequest,
    lifecycle::unacknowledged,
    records::{encode, queue_key, queue_key_due_ms, time_key, DeliveryState},
};

/// Hands out up to `max` due deliveries of a pull-mode tenant and hides each
/// for `visibility_ms`: unacknowledged, it comes back. Each pull counts as an
/// attempt; one older than the retry window is dead-lettered instead. Stops
/// before a delivery that would take the bodies and headers handed out past
/// `max_bytes` (that one stays due); the first is handed out whatever its size.
///
/// Pull mode: handing out, acknowledging and returning deliveries. Each
/// change of one delivery is a compare-and-set in one sled transaction
/// (sled runs transactions one at a time), so concurrent consumers never
/// get one delivery within its visibility timeout and never leave a queue
/// entry behind that no state points at.
pub fn pull(trees: &TenantTrees, request: &PullRequest) -> Result<Vec<(StoredEvent, u32)>> {
    let PullRequest {
        max,
        max_bytes,
        visibility_ms,
        now_ms,
        ..
    } = *request;
    let mut out = Vec::with_capacity(max.min(100));
    let mut handed = HashSet::new();
    let mut bytes = 0;
    for kv in trees.queue.range(None, Some(&queue_key(now_ms + 1, 0))) {
        let (key, value) = kv?;
        for (entry, delivery_id) in receipt::listed(&key, &value) {
            if out.len() >= max {
                return Ok(out);
            }
            if handed.contains(&delivery_id) {
                continue;
            }
            let Some(event) = load_event(trees, &delivery_id)? else {
                super::drop_queue_entry(trees, &entry)?;
                continue;
            };
            let size = event.size();
            if !out.is_empty() && bytes + size > max_bytes {
                return Ok(out);
            }
            let hidden_until = queue_key(now_ms + visibility_ms, trees.sequence()?);
            let taken = hand_out(trees, &key, &delivery_id, &hidden_until, request)?;
            if let Some(attempt) = taken {
                bytes += size;
                handed.insert(delivery_id);
                out.push((event, attempt));
            }
        }
    }
    Ok(out)
}

/// Hides one due delivery until `hidden_until` and counts the pull as an
/// attempt, in one transaction; one past the retry window is dead-lettered
/// instead. The attempt number handed out, or `None` when the delivery moved
/// on or was dead-lettered.
fn hand_out(
    trees: &TenantTrees,
    key: &[u8],
    delivery_id: &DeliveryId,
    hidden_until: &[u8; 16],
    request: &PullRequest,
) -> Result<Option<u32>> {
    let now_ms = request.now_ms;
    let taken = trees
        .attempt_trees()
        .transaction(|views| {
            let (queue, states, attempts, dead, done) = trees.attempt_views(views);
            tallied(|tally| {
                let Some(mut state) = claim(queue, states, key, delivery_id, tally)? else {
                    return Ok(None);
                };
                if now_ms - state.received_at_ms > request.window_ms {
                    let settle_in = Settle {
                        queue,
                        states,
                        attempts,
                        dead,
                        done,
                        tally,
                    };
                    expire(&settle_in, state, key, delivery_id, now_ms)?;
                    return Ok(None);
                }
                state.attempts += 1;
                state.next_attempt_at_ms = Some(now_ms + request.visibility_ms);
                state.queue_key = Some(hex::encode(hidden_until));
                receipt::take(queue, key, delivery_id, tally)?;
                tally.queue_inserted(
                    queue.insert(&hidden_until[..], delivery_id.as_str())?,
                    delivery_id.as_str(),
                );
                states.insert(delivery_id.as_str(), encode(&state))?;
                Ok(Some(state.attempts))
            })
        })
        .map_err(flatten)?;
    Ok(counted(trees, taken))
}

/// Dead-letters a pulled delivery that was never acknowledged within the
/// retry window.
fn expire(
    trees: &Settle<'_>,
    state: DeliveryState,
    key: &[u8],
    delivery_id: &DeliveryId,
    now_ms: i64,
) -> super::TxResult<()> {
    let (attempt, next) = unacknowledged(&state, now_ms);
    let outcome = Outcome {
        attempt: &attempt,
        next: &next,
        retry_seq: 0,
        now_ms,
    };
    settle(trees, state, key, delivery_id, &outcome).map(drop)
}

/// Marks pending deliveries delivered; returns how many were pending. An
/// ack after the visibility timeout still counts (the consumer did process
/// it); one for a delivery already acked, dead or unknown is skipped.
pub fn ack(trees: &TenantTrees, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
    let mut acked = 0;
    for id in ids {
        let done_key = time_key(now_ms, id);
        let result = (trees.queue.tree(), trees.state.tree(), trees.done.tree())
            .transaction(|(queue, states, done)| {
                let (queue, states, done) = (
                    trees.queue.tx(queue),
                    trees.state.tx(states),
                    trees.done.tx(done),
                );
                tallied(|tally| {
                    let Some(mut state) = tx_current(queue, states, id)? else {
                        return Ok(false);
                    };
                    if state.status != DeliveryStatus::Pending {
                        return Ok(false);
                    }
                    if let Some(key) = state.queue_key.take() {
                        let key = hex::decode(&key).or_else(|e| {
                            abort(Error::Corrupt(format!("queue key of {id}: {e}")))
                        })?;
                        receipt::take(queue, &key, id, tally)?;
                    }
                    state.status = DeliveryStatus::Delivered;
                    state.finished_at_ms = Some(now_ms);
                    state.next_attempt_at_ms = None;
                    states.insert(id.as_str(), encode(&state))?;
                    done.insert(done_key.as_slice(), &[])?;
                    Ok(true)
                })
            })
            .map_err(flatten)?;
        acked += u32::from(counted(trees, result));
    }
    Ok(acked)
}

/// Makes deliveries whose entry is due later (pulled ones still hidden, or
/// ones waiting for their retry) due at `now_ms`, their attempt counts
/// unchanged; returns how many. One due already (a pull whose visibility
/// timeout passed) is left as it is.
pub fn make_due(trees: &TenantTrees, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
    let mut returned = 0;
    for id in ids {
        let new = queue_key(now_ms, trees.sequence()?);
        let moved = (trees.queue.tree(), trees.state.tree())
            .transaction(|(queue, states)| {
                let (queue, states) = (trees.queue.tx(queue), trees.state.tx(states));
                tallied(|tally| {
                    let Some(mut state) = tx_current(queue, states, id)? else {
                        return Ok(false);
                    };
                    let Some(old) = state.queue_key.as_ref().and_then(|k| hex::decode(k).ok())
                    else {
                        return Ok(false);
                    };
                    let hidden = queue_key_due_ms(&old).is_some_and(|due| due > now_ms);
                    if state.status != DeliveryStatus::Pending || state.attempts == 0 || !hidden {
                        return Ok(false);
                    }
                    if claim(queue, states, &old, id, tally)?.is_none() {
                        return Ok(false);
                    }
                    state.queue_key = Some(hex::encode(new));
                    state.next_attempt_at_ms = Some(now_ms);
                    receipt::take(queue, &old, id, tally)?;
                    tally.queue_inserted(queue.insert(&new[..], id.as_str())?, id.as_str());
                    states.insert(id.as_str(), encode(&state))?;
                    Ok(true)
                })
            })
            .map_err(flatten)?;
        returned += u32::from(counted(trees, moved));
    }
    Ok(returned)
}
