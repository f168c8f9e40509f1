//! How the committer applies a batch to sled: one transaction over the
//! shared trees for every tenant in it; a tenant dropped meanwhile fails
//! only its own writes.

use sled::{transaction::TransactionError, Transactional};

use super::{
    api::{CommitOutcome, NewDelivery},
    gauges::Tally,
    records::{
        decode, encode, queue_key, DeliveryState, EventMeta, IdempotencyRecord, StoredEvent,
    },
    TenantTrees,
};
use crate::{
    error::{Error, Result},
    ids::DeliveryId,
};

/// A delivery on its way to the committer, with the tenant it is for and
/// the trees of each of its route copies (in the order of
/// [`NewDelivery::copies`]).
pub(super) struct Write {
    pub(super) trees: TenantTrees,
    pub(super) copies: Vec<TenantTrees>,
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
    let dropped: Vec<bool> = items
        .iter()
        .map(|item| item.trees.is_dropped() || item.copies.iter().any(TenantTrees::is_dropped))
        .collect();
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
    idem: Vec<u8>,
    /// Content key and its record, naming the event id.
    content: Option<(&'a [u8], Vec<u8>)>,
    /// The delivery of each route: the default one first.
    deliveries: Vec<EncodedDelivery<'a>>,
}

/// One route's delivery of a write: its stored event, state and either
/// its queue entry or (final at receipt) its key in the delivered index,
/// in its route's scope.
struct EncodedDelivery<'a> {
    trees: &'a TenantTrees,
    delivery_id: &'a str,
    queue_key: Option<[u8; 16]>,
    done_key: Option<Vec<u8>>,
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
        shared.done.tree(),
    );
    let result = trees.transaction(|(idem, events, states, queue, done)| {
        let tallies: Vec<Vec<Tally>> = encoded
            .iter()
            .map(|e| e.deliveries.iter().map(|_| Tally::default()).collect())
            .collect();
        let mut existing = Vec::with_capacity(encoded.len());
        for (e, tally) in encoded.iter().zip(&tallies) {
            let idem = e.trees.idem.tx(idem);
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
            for (d, tally) in e.deliveries.iter().zip(tally) {
                let t = d.trees;
                let (events, states, queue) =
                    (t.events.tx(events), t.state.tx(states), t.queue.tx(queue));
                events.insert(d.delivery_id, d.event.as_slice())?;
                states.insert(d.delivery_id, d.state.as_slice())?;
                if let Some(key) = d.queue_key {
                    tally.queue_inserted(queue.insert(key, d.delivery_id)?);
                }
                if let Some(key) = &d.done_key {
                    t.done.tx(done).insert(key.as_slice(), &[])?;
                }
            }
            existing.push(None);
        }
        Ok((
            existing,
            tallies
                .iter()
                .map(|t| t.iter().map(Tally::delta).collect::<Vec<_>>())
                .collect::<Vec<_>>(),
        ))
    });
    let existing = match result {
        Ok((existing, deltas)) => {
            for (e, deltas) in encoded.iter().zip(deltas) {
                for (d, delta) in e.deliveries.iter().zip(deltas) {
                    d.trees.gauges.apply(delta);
                }
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
        let record = |event_id| IdempotencyRecord {
            delivery_id: meta.delivery_id.clone(),
            received_at_ms: meta.received_at_ms,
            event_id,
        };
        let key = queue_key(delivery.due_ms, item.trees.sequence()?);
        let (state, done_key) = delivery.received(&key);
        let mut deliveries = vec![EncodedDelivery {
            trees: &item.trees,
            delivery_id: meta.delivery_id.as_str(),
            queue_key: done_key.is_none().then_some(key),
            done_key,
            event: StoredEvent::encode(meta, &delivery.body),
            state: encode(&state),
        }];
        for (trees, copy) in item.copies.iter().zip(&delivery.copies) {
            let meta = EventMeta {
                delivery_id: copy.delivery_id.clone(),
                ..meta.clone()
            };
            deliveries.push(EncodedDelivery::new(
                trees,
                delivery,
                &meta,
                &copy.delivery_id,
            )?);
        }
        Ok(Encoded {
            trees: &item.trees,
            event_id: delivery.event_id.as_str(),
            idem: encode(&record(None)),
            content: delivery
                .content_key
                .as_deref()
                .map(|key| (key, encode(&record(Some(delivery.event_id.clone()))))),
            deliveries,
        })
    }
}

impl<'a> EncodedDelivery<'a> {
    /// Route copy `id` (the one `meta` names) of `delivery`'s event, in
    /// `trees`: queued.
    fn new(
        trees: &'a TenantTrees,
        delivery: &NewDelivery,
        meta: &EventMeta,
        id: &'a DeliveryId,
    ) -> Result<EncodedDelivery<'a>> {
        let queue_key = queue_key(delivery.due_ms, trees.sequence()?);
        let mut state = DeliveryState::pending(delivery.event_id.clone(), meta.received_at_ms);
        state.queue_key = Some(hex::encode(queue_key));
        Ok(EncodedDelivery {
            trees,
            delivery_id: id.as_str(),
            queue_key: Some(queue_key),
            done_key: None,
            event: StoredEvent::encode(meta, &delivery.body),
            state: encode(&state),
        })
    }
}
