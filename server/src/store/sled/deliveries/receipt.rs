//! A delivery pending since its event was received (the default route's,
//! or a route's copy) is one queue entry and no state record: its id names
//! the entry ([`DeliveryId::queue_slot`]), and the entry holds the id, a
//! newline and the delivery's state. The acknowledging commit then writes
//! one insert per route instead of two. Whatever changes the delivery (its
//! first attempt, a pull, an ack, a copy's holder handing it the event)
//! writes its state record, and the state record is its state from then
//! on; every queue entry made after that holds only the id. Reading a
//! delivery's state reads its state record, else the receipt its id names.

use sled::IVec;

use super::{abort, TenantTrees, TxKeyspace, TxResult};
use crate::{
    error::Result,
    ids::DeliveryId,
    store::{
        records::{decode, queue_key, DeliveryState},
        sled::Keyspace,
    },
};

/// The queue key a delivery filed as a receipt is under.
pub(in crate::store::sled) fn key_of(delivery_id: &DeliveryId) -> Option<[u8; 16]> {
    let (due_ms, seq) = delivery_id.queue_slot()?;
    Some(queue_key(due_ms, seq))
}

/// The queue entry of `delivery_id` filed as a receipt with `state`.
pub(in crate::store::sled) fn encode(delivery_id: &DeliveryId, state: &[u8]) -> Vec<u8> {
    [delivery_id.as_str().as_bytes(), b"\n", state].concat()
}

/// A queue entry's two parts: the delivery id it names, and the state a
/// receipt holds (`None` for an entry holding the id alone).
fn parts(value: &[u8]) -> (&[u8], Option<&[u8]>) {
    match value.iter().position(|b| *b == b'\n') {
        Some(end) => (&value[..end], Some(&value[end + 1..])),
        None => (value, None),
    }
}

/// The delivery id a queue entry names.
pub(in crate::store::sled) fn entry_id(value: &[u8]) -> DeliveryId {
    DeliveryId::new(String::from_utf8_lossy(parts(value).0).into_owned())
}

/// The delivery id of a queue entry that is a receipt; `None` for an entry
/// naming a delivery whose state record holds its state.
pub(in crate::store::sled) fn filed_id(value: &[u8]) -> Option<IVec> {
    let (id, state) = parts(value);
    state.map(|_| IVec::from(id))
}

/// Whether a queue entry names `delivery_id`.
pub(super) fn names(value: &[u8], delivery_id: &DeliveryId) -> bool {
    parts(value).0 == delivery_id.as_str().as_bytes()
}

/// The state a receipt of `delivery_id` holds, if `value` is one.
fn state_in(value: &[u8], delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    match parts(value) {
        (id, Some(state)) if id == delivery_id.as_str().as_bytes() => decode(state).map(Some),
        _ => Ok(None),
    }
}

/// The state of `delivery_id` filed as a receipt in `queue`, if it is.
pub(super) fn load(queue: &Keyspace, delivery_id: &DeliveryId) -> Result<Option<DeliveryState>> {
    let Some(key) = key_of(delivery_id) else {
        return Ok(None);
    };
    match queue.get(key)? {
        Some(value) => state_in(&value, delivery_id),
        None => Ok(None),
    }
}

/// [`load`] inside a transaction.
pub(super) fn tx_load(
    queue: TxKeyspace<'_>,
    delivery_id: &DeliveryId,
) -> TxResult<Option<DeliveryState>> {
    let Some(key) = key_of(delivery_id) else {
        return Ok(None);
    };
    match queue.get(key)? {
        Some(value) => state_in(&value, delivery_id).or_else(abort),
        None => Ok(None),
    }
}

/// The deliveries of `trees` filed as receipts with no state record, newest
/// first, with ids below `before`. Receipts are keyed by their ids' time
/// and random part, so the queue holds them in id order; the other entries
/// (retries, pulls hidden for a while) are passed over.
pub(in crate::store::sled) fn newest_first<'a>(
    trees: &'a TenantTrees,
    before: Option<&'a DeliveryId>,
) -> impl Iterator<Item = Result<(DeliveryId, DeliveryState)>> + 'a {
    let below = before
        .and_then(DeliveryId::time_ms)
        .map(|ms| queue_key(ms + 1, 0));
    trees
        .queue
        .range(None, below.as_ref().map(|k| &k[..]))
        .rev()
        .filter_map(move |entry| receipt_of(trees, entry, before).transpose())
}

/// A queue entry as an unwritten receipt below `before`, else `None`.
fn receipt_of(
    trees: &TenantTrees,
    entry: sled::Result<(IVec, IVec)>,
    before: Option<&DeliveryId>,
) -> Result<Option<(DeliveryId, DeliveryState)>> {
    let (key, value) = entry?;
    let id = entry_id(&value);
    if before.is_some_and(|b| id >= *b) || key_of(&id).as_ref().map(|k| &k[..]) != Some(&key[..]) {
        return Ok(None);
    }
    if trees.state.get(id.as_str())?.is_some() {
        return Ok(None);
    }
    Ok(state_in(&value, &id)?.map(|state| (id, state)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::TenantId,
        store::{
            api::{CommitOutcome, Storage},
            records::DeliveryStatus,
            sled::durability_tests::fanned_out,
            SledStore,
        },
    };

    /// The acknowledging commit files a listed copy as one insert: no state
    /// record, and a queue entry under the key its id names holding its id
    /// and pending state. What changes the copy writes its state record.
    #[tokio::test]
    async fn a_copy_is_one_queue_entry_until_it_changes() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let item = fanned_out("evt_1", "{}".into(), &acme, &["audit"]);
        let (holder, copy) = (item.meta.delivery_id.clone(), item.copies[0].clone());
        let data = store.tenant(&acme).unwrap();
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        assert!(data.state(&holder).unwrap().is_some());
        let audit = store.tenant_trees(&copy.scope).unwrap();
        let id = &copy.delivery_id;
        assert_eq!(audit.state.get(id.as_str()).unwrap(), None);
        let key = key_of(id).unwrap();
        let value = audit.queue.get(key).unwrap().unwrap();
        assert!(names(&value, id));
        assert_eq!(&entry_id(&value), id);
        let state = load(&audit.queue, id).unwrap().unwrap();
        assert_eq!(state.status, DeliveryStatus::Pending);
        assert_eq!(state.queue_key, Some(hex::encode(key)));

        let route = store.tenant(&copy.scope).unwrap();
        assert_eq!(route.ack(std::slice::from_ref(id), 5_000).unwrap(), 1);
        let recorded = audit.state.get(id.as_str()).unwrap().unwrap();
        let recorded: DeliveryState = decode(&recorded).unwrap();
        assert_eq!(recorded.status, DeliveryStatus::Delivered);
        assert_eq!(audit.queue.get(key).unwrap(), None);
    }

    #[test]
    fn an_entry_names_its_own_id_only() {
        let id = DeliveryId::new("dlv_1");
        assert!(names(b"dlv_1", &id));
        assert!(names(b"dlv_1\n{\"status\":\"pending\"}", &id));
        assert!(!names(b"dlv_12", &id));
        assert!(!names(b"dlv_12\n{}", &id));
        assert_eq!(entry_id(b"dlv_1\n{}"), id);
        assert_eq!(entry_id(b"dlv_1"), id);
        assert_eq!(filed_id(b"dlv_1\n{}").as_deref(), Some(&b"dlv_1"[..]));
        assert_eq!(filed_id(b"dlv_1"), None);
        assert_eq!(state_in(b"dlv_1", &id).unwrap(), None);
        assert_eq!(state_in(b"dlv_12\n{}", &id).unwrap(), None);
    }
}
