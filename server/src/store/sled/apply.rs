//! How the committer applies a batch to sled: one transaction over the
//! shared trees for every tenant in it; a tenant dropped meanwhile fails
//! only its own writes.

use sled::{transaction::TransactionError, Transactional};

use super::{
    api::{CommitOutcome, NewDelivery},
    gauges::Tally,
    records::{decode, encode, queue_key, DeliveryState, IdempotencyRecord, StoredEvent},
    TenantTrees,
};
use crate::error::{Error, Result};

/// A delivery on its way to the committer, with the tenant it is for.
pub(super) struct Write {
    pub(super) trees: TenantTrees,
    pub(super) delivery: NewDelivery,
}

/// Applies `items`; the inner results are per item (the writes of a
/// tenant whose data was dropped fail with [`Error::TenantDeleted`]), the
/// outer error is a storage failure of the whole batch. Drops run on the
/// committer thread between batches, so a tenant is either dropped before
/// the batch (its writes are refused here) or after it (the drop removes
/// what the batch wrote).
pub(super) fn apply_isolated(items: &[&Write]) -> Result<Vec<Result<CommitOutcome>>> {
    #[cfg(any(test, feature = "fault-injection"))]
    if items
        .iter()
        .any(|item| super::inject::take_write_failure(item.trees.tenant().as_str()))
    {
        return Err(Error::Io(std::io::Error::other("injected write failure")));
    }
    let dropped: Vec<bool> = items.iter().map(|item| item.trees.is_dropped()).collect();
    let live: Vec<&Write> = items
        .iter()
        .zip(&dropped)
        .filter(|(_, &dropped)| !dropped)
        .map(|(item, _)| *item)
        .collect();
    let mut applied = apply_batch(&live)?.into_iter();
    Ok(items
        .iter()
        .zip(dropped)
        .map(|(item, dropped)| match dropped {
            true => Err(Error::TenantDeleted(item.trees.tenant().to_string())),
            false => Ok(applied.next().expect("one outcome per live item")),
        })
        .collect())
}

/// One write, encoded ahead of its transaction.
struct Encoded<'a> {
    trees: &'a TenantTrees,
    event_id: &'a str,
    delivery_id: &'a str,
    queue_key: [u8; 16],
    idem: Vec<u8>,
    /// Content key and its record, naming the event id.
    content: Option<(&'a [u8], Vec<u8>)>,
    event: Vec<u8>,
    state: Vec<u8>,
}

/// Applies a whole batch as ONE sled transaction over the shared trees:
/// for each item, its idempotency record, stored event, state and queue
/// entry are inserted unless the event id is already known (in storage or
/// earlier in the same batch), which makes it a duplicate. One transaction
/// per batch instead of one per write: sled's transaction overhead is paid
/// once. The queue entries it made are counted in their tenants' gauges
/// once it committed.
fn apply_batch(items: &[&Write]) -> Result<Vec<CommitOutcome>> {
    let Some(first) = items.first() else {
        return Ok(Vec::new());
    };
    let encoded = items
        .iter()
        .map(|item| Encoded::new(item))
        .collect::<Result<Vec<_>>>()?;
    let shared = &first.trees;
    let trees = (
        shared.idem.tree(),
        shared.events.tree(),
        shared.state.tree(),
        shared.queue.tree(),
    );
    let result = trees.transaction(|(idem, events, states, queue)| {
        let tallies: Vec<Tally> = encoded.iter().map(|_| Tally::default()).collect();
        let mut existing = Vec::with_capacity(encoded.len());
        for (e, tally) in encoded.iter().zip(&tallies) {
            let t = e.trees;
            let (idem, events, states, queue) = (
                t.idem.tx(idem),
                t.events.tx(events),
                t.state.tx(states),
                t.queue.tx(queue),
            );
            if let Some(first) = idem.get(e.event_id)? {
                existing.push(Some(first));
                continue;
            }
            if let Some((key, record)) = &e.content {
                if let Some(first) = idem.get(key)? {
                    existing.push(Some(first));
                    continue;
                }
                idem.insert(*key, record.as_slice())?;
            }
            idem.insert(e.event_id, e.idem.as_slice())?;
            events.insert(e.delivery_id, e.event.as_slice())?;
            states.insert(e.delivery_id, e.state.as_slice())?;
            tally.queue_inserted(queue.insert(e.queue_key, e.delivery_id)?);
            existing.push(None);
        }
        Ok((
            existing,
            tallies.iter().map(Tally::delta).collect::<Vec<_>>(),
        ))
    });
    let existing = match result {
        Ok((existing, deltas)) => {
            for (e, delta) in encoded.iter().zip(deltas) {
                e.trees.gauges.apply(delta);
            }
            existing
        }
        Err(TransactionError::Storage(e)) => return Err(e.into()),
        Err(TransactionError::Abort(e)) => return Err(e),
    };
    existing.into_iter().map(outcome).collect()
}

/// A write's outcome: accepted, or a duplicate of the first record's delivery.
fn outcome(first: Option<sled::IVec>) -> Result<CommitOutcome> {
    let Some(record) = first else {
        return Ok(CommitOutcome::Accepted);
    };
    let first = decode::<IdempotencyRecord>(&record)?;
    Ok(match first.event_id {
        Some(event_id) => CommitOutcome::DuplicateOf(first.delivery_id, event_id),
        None => CommitOutcome::Duplicate(first.delivery_id),
    })
}

impl<'a> Encoded<'a> {
    fn new(item: &'a Write) -> Result<Encoded<'a>> {
        let delivery = &item.delivery;
        let meta = &delivery.meta;
        let queue_key = queue_key(delivery.due_ms, item.trees.sequence()?);
        let mut state = DeliveryState::pending(delivery.event_id.clone(), meta.received_at_ms);
        state.queue_key = Some(hex::encode(queue_key));
        let record = |event_id| IdempotencyRecord {
            delivery_id: meta.delivery_id.clone(),
            received_at_ms: meta.received_at_ms,
            event_id,
        };
        Ok(Encoded {
            trees: &item.trees,
            event_id: delivery.event_id.as_str(),
            delivery_id: meta.delivery_id.as_str(),
            queue_key,
            idem: encode(&record(None)),
            content: delivery
                .content_key
                .as_deref()
                .map(|key| (key, encode(&record(Some(delivery.event_id.clone()))))),
            event: StoredEvent::encode(meta, &delivery.body),
            state: encode(&state),
        })
    }
}
