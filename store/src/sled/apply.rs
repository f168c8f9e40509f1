//! How the committer applies a batch to sled and records it in the write-ahead
//! log, and how a logged record is applied again after a crash.

use std::{collections::HashMap, sync::Arc};

use sled::{
    transaction::{TransactionError, TransactionalTree},
    IVec, Transactional,
};

use super::{
    api::{CommitOutcome, NewDelivery, RouteCopy},
    deliveries::{receipt, shared},
    entry,
    gauges::LiveCounts,
    records::{
        decode, encode, queue_key, queue_key_due_ms, DeliveryState, EventMeta, IdempotencyRecord,
        StoredEvent,
    },
    tree,
    wal::record::{self, Batch, Op},
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

/// What [`decide`] made of a batch of writes.
pub(super) struct Decided {
    /// Each write's outcome (the writes of a dropped tenant fail with
    /// [`Error::TenantDeleted`]).
    pub(super) outcomes: Vec<Result<CommitOutcome>>,
    /// The inserts of the new ones, as the log records them: empty when
    /// there were none (and then the batch took no number).
    pub(super) batch: Batch,
}

/// The transaction's view of the shared trees a batch writes.
struct Views<'a> {
    idem: &'a TransactionalTree,
    events: &'a TransactionalTree,
    state: &'a TransactionalTree,
    queue: &'a TransactionalTree,
    done: &'a TransactionalTree,
}

type TxResult<T> = sled::transaction::ConflictableTransactionResult<T, Error>;

/// Applies a whole batch as ONE sled transaction over the shared trees:
/// for each item, its stored event, state, queue entry and idempotency
/// record are inserted unless the event id is already known (in storage or
/// earlier in the same batch), which makes it a duplicate; and, when
/// anything was inserted, `lsn` as the last log record sled holds. The
/// same inserts are recorded, in order, as the batch's log record. The
/// queue entries it made are counted in their tenants' gauges once it
/// committed.
///
/// How the committer applies a batch: [`decide`] finds each write's
/// outcome (new, or a duplicate of a record in sled or earlier in the
/// batch) and inserts the new ones in ONE sled transaction over the shared
/// trees, with the batch's number in the write-ahead log, while recording
/// the same inserts as that log record. After a crash [`apply_record`]
/// makes a logged record's inserts again. A tenant dropped meanwhile fails
/// only its own writes.
pub(super) fn decide(items: &[&Write], marker: &sled::Tree, lsn: u64) -> Result<Decided> {
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
    let live = items
        .iter()
        .zip(&dropped)
        .filter(|(_, &dropped)| !dropped)
        .map(|(item, _)| Encoded::new(item))
        .collect::<Result<Vec<_>>>()?;
    let (firsts, batch, queued) = match live.first() {
        Some(first) => transaction(&live, &first.trees.idem, marker, lsn)?,
        None => (Vec::new(), Batch::default(), Vec::new()),
    };
    for counts in queued {
        counts.queued_one();
    }
    let mut firsts = firsts.into_iter();
    let outcomes = items
        .iter()
        .zip(dropped)
        .map(|(item, dropped)| match dropped {
            true => Err(Error::TenantDeleted(item.trees.tenant().to_string())),
            false => outcome(firsts.next().expect("one outcome per live item")),
        })
        .collect();
    Ok(Decided { outcomes, batch })
}

/// What the transaction gives back: each write's first record (`None`:
/// new), the log record, and the counts of each queue entry added.
type Applied = (Vec<Option<IVec>>, Batch, Vec<Arc<LiveCounts>>);

fn transaction(
    live: &[Encoded<'_>],
    shared: &super::Keyspace,
    marker: &sled::Tree,
    lsn: u64,
) -> Result<Applied> {
    let first = live[0].trees;
    let trees = (
        shared.tree(),
        first.events.tree(),
        first.state.tree(),
        first.queue.tree(),
        first.done.tree(),
        marker,
    );
    let result = trees.transaction(|(idem, events, state, queue, done, marker)| {
        let views = Views {
            idem,
            events,
            state,
            queue,
            done,
        };
        let (mut batch, mut queued) = (Batch::default(), Vec::new());
        let mut filed = Filed::default();
        let firsts = live
            .iter()
            .map(|e| e.apply(&views, &mut batch, &mut queued, &mut filed))
            .collect::<TxResult<Vec<_>>>()?;
        filed.write(views.queue, &mut batch, &mut queued)?;
        if !batch.is_empty() {
            mark_applied(marker, lsn)?;
        }
        Ok((firsts, batch, queued))
    });
    match result {
        Ok(applied) => Ok(applied),
        Err(TransactionError::Storage(e)) => Err(e.into()),
        Err(TransactionError::Abort(e)) => Err(e),
    }
}

/// Applies record `lsn`'s inserts and removes to the shared trees, then records `lsn`
/// as the last one sled holds.
pub(super) fn apply_record(
    trees: &[sled::Tree],
    marker: &sled::Tree,
    lsn: u64,
    ops: &[u8],
) -> Result<()> {
    let tree = |index: u8| {
        trees.get(usize::from(index)).ok_or_else(|| {
            Error::storage(
                format!("a write-ahead log record names tree {index}, which hookd does not know"),
                None,
            )
        })
    };
    for op in record::ops(ops) {
        match op? {
            Op::Insert(index, key, value) => drop(tree(index)?.insert(key, value)?),
            Op::Remove(index, key) => drop(tree(index)?.remove(key)?),
            Op::AddRecords(index, key, records) => {
                let tree = tree(index)?;
                let held = tree.get(key)?;
                tree.insert(key, entry::joined(held.as_deref(), records))?;
            }
            Op::TakeRecord(index, key, id) => {
                let tree = tree(index)?;
                let rest = tree.get(key)?.and_then(|held| entry::without(&held, id));
                match rest {
                    Some(Some(rest)) => drop(tree.insert(key, rest)?),
                    Some(None) => drop(tree.remove(key)?),
                    None => {}
                }
            }
        }
    }
    marker.insert(APPLIED_KEY, &lsn.to_be_bytes())?;
    Ok(())
}

/// Records, in a transaction, `lsn` as the last log record sled holds.
pub(super) fn mark_applied(marker: &TransactionalTree, lsn: u64) -> TxResult<()> {
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

/// One route's delivery of a write, in its route's scope: its stored event
/// (none for a route's copy whose state names the default route's,
/// [`shared`]), its state record (none for a copy filed as a receipt,
/// [`receipt`]), and either its queue entry or (final at receipt) its key
/// in the delivered index.
struct EncodedDelivery<'a> {
    trees: &'a TenantTrees,
    delivery_id: &'a str,
    queue: Option<([u8; 16], Vec<u8>)>,
    done_key: Option<Vec<u8>>,
    event: Option<Vec<u8>>,
    state: Option<Vec<u8>>,
}

impl Encoded<'_> {
    /// Inserts this write (recording each insert in `batch`) unless its
    /// event id or content key is known: then its first record.
    fn apply(
        &self,
        views: &Views<'_>,
        batch: &mut Batch,
        queued: &mut Vec<Arc<LiveCounts>>,
        filed: &mut Filed,
    ) -> TxResult<Option<IVec>> {
        let idem = &self.trees.idem;
        let id_key = idem.key(self.event_id);
        if let Some(first) = views.idem.get(&id_key)? {
            return Ok(Some(first));
        }
        let content = match &self.content {
            Some((key, record)) => {
                let key = idem.key(key);
                if let Some(first) = views.idem.get(&key)? {
                    return Ok(Some(first));
                }
                Some((key, record))
            }
            None => None,
        };
        let mut insert = |view: &TransactionalTree, index: u8, key: &[u8], value: &[u8]| {
            batch.insert(index, key, value);
            view.insert(key, value).map(drop)
        };
        for d in &self.deliveries {
            let t = d.trees;
            if let Some(event) = &d.event {
                let key = t.events.key(d.delivery_id);
                insert(views.events, tree::EVENTS, &key, event)?;
            }
            if let Some(state) = &d.state {
                let key = t.state.key(d.delivery_id);
                insert(views.state, tree::STATE, &key, state)?;
            }
            match &d.queue {
                Some((key, receipt)) if d.state.is_none() => {
                    filed.add(t.queue.key(key), receipt, &t.gauges);
                }
                Some((key, value)) => {
                    insert(views.queue, tree::QUEUE, &t.queue.key(key), value)?;
                    queued.push(t.gauges.clone());
                }
                None => {}
            }
            if let Some(key) = &d.done_key {
                insert(views.done, tree::DONE, &t.done.key(key), &[])?;
            }
        }
        if let Some((key, record)) = content {
            insert(views.idem, tree::IDEM, &key, record)?;
        }
        insert(views.idem, tree::IDEM, &id_key, &self.idem)?;
        Ok(None)
    }
}

/// The receipts of a batch's new deliveries, one group for each queue
/// entry: deliveries whose ids share a place ([`DeliveryId::sharing`])
/// are written as one entry, added to the one an earlier batch made there.
#[derive(Default)]
struct Filed {
    at: HashMap<Vec<u8>, usize>,
    groups: Vec<Group>,
}

/// One entry's new receipts: its key, the records, the gauges of its
/// tenant and how many there are.
type Group = (Vec<u8>, Vec<u8>, Arc<LiveCounts>, i64);

impl Filed {
    fn add(&mut self, key: Vec<u8>, receipt: &[u8], gauges: &Arc<LiveCounts>) {
        match self.at.get(&key) {
            Some(&i) => {
                let (_, records, _, count) = &mut self.groups[i];
                records.push(entry::SEPARATOR);
                records.extend_from_slice(receipt);
                *count += 1;
            }
            None => {
                self.at.insert(key.clone(), self.groups.len());
                self.groups.push((key, receipt.to_vec(), gauges.clone(), 1));
            }
        }
    }

    /// Writes each group into its entry, the log recording the records
    /// added, and counts them in their tenants' gauges.
    fn write(
        self,
        queue: &TransactionalTree,
        batch: &mut Batch,
        queued: &mut Vec<Arc<LiveCounts>>,
    ) -> TxResult<()> {
        for (key, records, gauges, count) in self.groups {
            let held = queue.get(&key)?;
            queue.insert(key.as_slice(), entry::joined(held.as_deref(), &records))?;
            batch.add_records(tree::QUEUE, &key, &records);
            queued.extend((0..count).map(|_| gauges.clone()));
        }
        Ok(())
    }
}

/// A write's outcome: accepted, or a duplicate of the first record's delivery.
fn outcome(first: Option<IVec>) -> Result<CommitOutcome> {
    let Some(first) = first else {
        return Ok(CommitOutcome::Accepted);
    };
    let first = decode::<IdempotencyRecord>(&first)?;
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
        let (key, own) = place(&item.trees, &meta.delivery_id, delivery.due_ms, true)?;
        let (state, done_key) = delivery.received(&key);
        let (state, queue) = match done_key {
            None => {
                let (state, entry) = filed(&meta.delivery_id, &state, &key, own);
                (state, Some((key, entry)))
            }
            Some(_) => (Some(encode(&state)), None),
        };
        let mut deliveries = vec![EncodedDelivery {
            trees: &item.trees,
            delivery_id: meta.delivery_id.as_str(),
            queue,
            done_key,
            event: Some(StoredEvent::encode(meta, &delivery.body)),
            state,
        }];
        let holder = match delivery.copies.is_empty() {
            true => None,
            false => shared::naming(item.trees.events.key(meta.delivery_id.as_str())),
        };
        for (trees, copy) in item.copies.iter().zip(&delivery.copies) {
            let listed = copy.listed_in(&delivery.routes, item.trees.tenant());
            let event_in = holder.clone().filter(|_| listed);
            let event = match event_in {
                Some(_) => None,
                None => {
                    let meta = EventMeta {
                        delivery_id: copy.delivery_id.clone(),
                        ..meta.clone()
                    };
                    Some(StoredEvent::encode(&meta, &delivery.body))
                }
            };
            deliveries.push(EncodedDelivery::new(
                trees,
                delivery,
                (event, event_in),
                copy,
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
    /// Route copy `id` of `delivery`'s event, in `trees`, queued: with its
    /// own stored event, or none and the default route's named in its
    /// state. A copy naming the default route's event whose id names its
    /// queue entry ([`receipt`]) is filed as a receipt, with no state
    /// record.
    fn new(
        trees: &'a TenantTrees,
        delivery: &NewDelivery,
        (event, event_in): (Option<Vec<u8>>, Option<String>),
        copy: &'a RouteCopy,
    ) -> Result<EncodedDelivery<'a>> {
        let id = &copy.delivery_id;
        let (queue_key, own) = place(trees, id, copy.due_ms, event_in.is_some())?;
        let received_at_ms = delivery.meta.received_at_ms;
        let mut state = DeliveryState::pending(delivery.event_id.clone(), received_at_ms);
        state.next_attempt_at_ms = Some(copy.due_ms.max(received_at_ms));
        state.queue_key = Some(hex::encode(queue_key));
        state.event_in = event_in;
        state.event_type = delivery.event_type.clone();
        let (state, entry) = filed(id, &state, &queue_key, own);
        Ok(EncodedDelivery {
            trees,
            delivery_id: id.as_str(),
            queue: Some((queue_key, entry)),
            done_key: None,
            event,
            state,
        })
    }
}

/// Where new delivery `id`, due at `due_ms`, is queued, and whether that
/// is its own place: the queue key its id names ([`receipt`]) when it may
/// be filed there (`fileable`) and names one due no later (ids that share
/// a place are due when the first was made), else the next key of
/// `trees`' counter.
fn place(
    trees: &TenantTrees,
    id: &DeliveryId,
    due_ms: i64,
    fileable: bool,
) -> Result<([u8; 16], bool)> {
    let due = |key: &[u8; 16]| queue_key_due_ms(key).is_some_and(|at| at <= due_ms.max(0));
    let own = receipt::key_of(id).filter(|key| fileable && due(key));
    match own {
        Some(key) => Ok((key, true)),
        None => Ok((queue_key(due_ms, trees.sequence()?), false)),
    }
}

/// A queued delivery's state record and queue entry: filed as a receipt
/// (no state record, the entry holding the state) under `key` when that is
/// its own place and a receipt holds all of its state, or the state record
/// and an entry naming it.
fn filed(
    id: &DeliveryId,
    state: &DeliveryState,
    key: &[u8; 16],
    own: bool,
) -> (Option<Vec<u8>>, Vec<u8>) {
    match own && receipt::holds(state, key) {
        true => (None, receipt::encode(id, state)),
        false => (Some(encode(state)), id.as_str().as_bytes().to_vec()),
    }
}
