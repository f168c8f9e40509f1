//! How the committer turns a batch into one write-ahead log record and
//! applies it to sled: [`decide`] finds each write's outcome (new, or a
//! duplicate of a record in sled or in a batch not yet applied) and
//! records the inserts of the new ones; once the record is durable,
//! [`apply_record`] makes them in sled, with the record's number last, and
//! the replay after a crash does the same. A tenant dropped meanwhile fails
//! only its own writes.

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
};

use super::{
    api::{CommitOutcome, NewDelivery},
    gauges::LiveCounts,
    records::{
        decode, encode, queue_key, DeliveryState, EventMeta, IdempotencyRecord, StoredEvent,
    },
    tree,
    wal::record::{self, Batch},
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

/// Idempotency records of batches decided but not yet applied to sled, by
/// stored key: the committer looks here before sled, and the applier takes
/// a batch's records out only once sled has them, so no duplicate slips
/// between the two.
pub(super) type Pending = Arc<Mutex<HashMap<Vec<u8>, Vec<u8>>>>;

/// What [`decide`] made of a batch of writes.
pub(super) struct Decided {
    /// Each write's outcome (the writes of a dropped tenant fail with
    /// [`Error::TenantDeleted`]).
    pub(super) outcomes: Vec<Result<CommitOutcome>>,
    /// The inserts of the new ones.
    pub(super) batch: Batch,
    /// The counts of each queue entry the batch adds, one per entry.
    pub(super) queued: Vec<Arc<LiveCounts>>,
    /// The keys this batch put in [`Pending`].
    pub(super) pending: Vec<Vec<u8>>,
}

/// Decides `items` in order: a write whose event id (or content key) is
/// known, in sled, in [`Pending`] or earlier in the batch, is a duplicate
/// of the first; the others' inserts are recorded in the batch, the
/// idempotency record of each after its event, state and queue entry (so a
/// reader of sled never finds the record before what it points at).
pub(super) fn decide(items: &[&Write], pending: &Pending) -> Result<Decided> {
    #[cfg(any(test, feature = "fault-injection"))]
    if items
        .iter()
        .any(|item| super::inject::take_write_failure(item.trees.tenant().as_str()))
    {
        return Err(Error::Io(std::io::Error::other("injected write failure")));
    }
    let mut decided = Decided {
        outcomes: Vec::with_capacity(items.len()),
        batch: Batch::default(),
        queued: Vec::new(),
        pending: Vec::new(),
    };
    for item in items {
        if item.trees.is_dropped() || item.copies.iter().any(TenantTrees::is_dropped) {
            decided
                .outcomes
                .push(Err(Error::TenantDeleted(item.trees.tenant().to_string())));
            continue;
        }
        let outcome = Encoded::new(item)?.decide(pending, &mut decided)?;
        decided.outcomes.push(Ok(outcome));
    }
    Ok(decided)
}

/// Applies record `lsn`'s inserts to the shared trees, then records `lsn`
/// as the last one sled holds.
pub(super) fn apply_record(
    trees: &[sled::Tree],
    marker: &sled::Tree,
    lsn: u64,
    ops: &[u8],
) -> Result<()> {
    for op in record::ops(ops) {
        let (index, key, value) = op?;
        let tree = trees.get(usize::from(index)).ok_or_else(|| {
            Error::storage(
                format!("a write-ahead log record names tree {index}, which hookd does not know"),
                None,
            )
        })?;
        tree.insert(key, value)?;
    }
    marker.insert(APPLIED_KEY, &lsn.to_be_bytes())?;
    Ok(())
}

/// The key, in [`WAL_TREE`], of the last record applied.
const APPLIED_KEY: &str = "applied";

/// The tree that records how far sled has applied the log.
pub(super) const WAL_TREE: &str = "hookd/wal";

/// The number of the last record sled holds (0: none).
pub(super) fn applied_lsn(marker: &sled::Tree) -> Result<u64> {
    Ok(marker
        .get(APPLIED_KEY)?
        .and_then(|v| <[u8; 8]>::try_from(v.as_ref()).ok())
        .map_or(0, u64::from_be_bytes))
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

impl Encoded<'_> {
    /// Accepted (its inserts recorded in `decided`), or a duplicate.
    fn decide(&self, pending: &Pending, decided: &mut Decided) -> Result<CommitOutcome> {
        let idem = &self.trees.idem;
        let id_key = idem.key(self.event_id);
        if let Some(first) = known(idem, pending, &id_key)? {
            return outcome(&first);
        }
        let content_key = self.content.as_ref().map(|(key, _)| idem.key(key));
        if let Some(key) = &content_key {
            if let Some(first) = known(idem, pending, key)? {
                return outcome(&first);
            }
        }
        let batch = &mut decided.batch;
        for d in &self.deliveries {
            let t = d.trees;
            batch.insert(tree::EVENTS, &t.events.key(d.delivery_id), &d.event);
            batch.insert(tree::STATE, &t.state.key(d.delivery_id), &d.state);
            if let Some(key) = d.queue_key {
                batch.insert(tree::QUEUE, &t.queue.key(key), d.delivery_id.as_bytes());
                decided.queued.push(t.gauges.clone());
            }
            if let Some(key) = &d.done_key {
                batch.insert(tree::DONE, &t.done.key(key), &[]);
            }
        }
        let mut pending = pending.lock().expect("pending records lock");
        if let (Some(key), Some((_, record))) = (content_key, &self.content) {
            batch.insert(tree::IDEM, &key, record);
            pending.insert(key.clone(), record.clone());
            decided.pending.push(key);
        }
        batch.insert(tree::IDEM, &id_key, &self.idem);
        pending.insert(id_key.clone(), self.idem.clone());
        decided.pending.push(id_key);
        Ok(CommitOutcome::Accepted)
    }
}

/// The first record under `key` (stored form): in a batch not yet applied,
/// else in sled. In that order: the applier takes a record out of
/// [`Pending`] only after sled has it.
fn known(idem: &super::Keyspace, pending: &Pending, key: &[u8]) -> Result<Option<Vec<u8>>> {
    if let Some(first) = pending.lock().expect("pending records lock").get(key) {
        return Ok(Some(first.clone()));
    }
    Ok(idem.tree().get(key)?.map(|v| v.to_vec()))
}

/// A duplicate of the first record's delivery.
fn outcome(first: &[u8]) -> Result<CommitOutcome> {
    let first = decode::<IdempotencyRecord>(first)?;
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
