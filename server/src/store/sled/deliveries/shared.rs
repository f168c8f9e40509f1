//! An event fanned out to several routes is stored once. A route's copy,
//! written in the same commit as the default route's delivery (the
//! holder), records in the events tree only the stored key of the holder's
//! event; reading the copy reads the holder's, under the copy's own
//! delivery id. Before a holder's event is removed (retention, a purged
//! dead letter, an original swept with its redelivery), it is handed over
//! whole to every copy that still names it, so a copy never outlives the
//! body it forwards. PostgreSQL keeps a whole event per copy.

use sled::IVec;

use super::{load_state, TenantTrees};
use crate::{
    error::{Error, Result},
    ids::DeliveryId,
    store::records::{EventMeta, StoredEvent},
};

/// The first bytes of a copy's reference. A whole stored event starts with
/// its metadata's length (u32, big-endian), and no metadata is near 4 GiB,
/// so a stored event never starts with `0xFF`.
const REFERENCE: [u8; 2] = [0xFF, b'>'];

/// The record of a route's copy whose event is the one stored under
/// `holder_key` (the default route's delivery's stored key).
pub(in crate::store::sled) fn reference(holder_key: &[u8]) -> Vec<u8> {
    [&REFERENCE[..], holder_key].concat()
}

/// The holder's stored key, if `stored` is a copy's reference.
pub(super) fn holder_of(stored: &[u8]) -> Option<&[u8]> {
    stored.strip_prefix(&REFERENCE[..])
}

/// The holder's event as the copy `delivery_id` sees it: its own delivery id.
pub(super) fn as_copy(holder: &[u8], delivery_id: &DeliveryId) -> Result<StoredEvent> {
    let mut event = StoredEvent::decode(holder)?;
    event.meta.delivery_id = delivery_id.clone();
    Ok(event)
}

/// A copy whose holder is gone and that was not handed the event: only a
/// tenant half dropped (its own data before its routes') leaves one.
pub(super) fn gone(delivery_id: &DeliveryId) -> Error {
    Error::Corrupt(format!(
        "the stored event of {delivery_id} names another delivery's event, which is gone"
    ))
}

/// The stored event of `delivery_id` in `trees`, whole or through its holder.
pub(super) fn load(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<StoredEvent>> {
    let Some(stored) = trees.events.get(delivery_id.as_str())? else {
        return Ok(None);
    };
    let Some(holder_key) = holder_of(&stored) else {
        return StoredEvent::decode(&stored).map(Some);
    };
    if let Some(holder) = trees.events.get_stored(holder_key)? {
        return as_copy(&holder, delivery_id).map(Some);
    }
    // The holder went after handing the event over: the copy holds it now.
    match trees.events.get(delivery_id.as_str())? {
        None => Ok(None),
        Some(again) if holder_of(&again).is_none() => StoredEvent::decode(&again).map(Some),
        Some(_) => Err(gone(delivery_id)),
    }
}

/// Before the event of `holder_id` (in `trees`) is removed: writes it whole
/// into every route copy that still names it. Each is a compare-and-swap
/// from the reference, so a copy removed meanwhile stays removed.
pub(super) fn hand_over(trees: &TenantTrees, holder_id: &DeliveryId) -> Result<()> {
    let Some(state) = load_state(trees, holder_id)? else {
        return Ok(());
    };
    let mut copies = state
        .routes
        .iter()
        .filter_map(|r| Some((&r.route, r.delivery_id.as_ref()?)))
        .filter(|(_, id)| *id != holder_id)
        .peekable();
    if copies.peek().is_none() {
        return Ok(());
    }
    let Some(stored) = trees.events.get(holder_id.as_str())? else {
        return Ok(());
    };
    if holder_of(&stored).is_some() {
        return Ok(());
    }
    let holder = StoredEvent::decode(&stored)?;
    let named = IVec::from(reference(&trees.events.key(holder_id.as_str())));
    for (route, id) in copies {
        let copy = trees.route_trees(&trees.tenant().route_scope(route))?;
        let meta = EventMeta {
            delivery_id: id.clone(),
            ..holder.meta.clone()
        };
        let whole = StoredEvent::encode(&meta, &holder.body);
        copy.events
            .compare_and_swap(id.as_str(), Some(&named), Some(whole))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::TenantId,
        store::{
            api::{CommitOutcome, Storage},
            sled::durability_tests::fanned_out,
            SledStore,
        },
    };

    /// A fanned-out event's body is written once: each route's copy stores
    /// a reference of a few dozen bytes in place of a 4 KiB body, and reads
    /// as the whole event under its own delivery id.
    #[tokio::test]
    async fn a_copy_stores_a_reference_and_reads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let body = vec![b'x'; 4096];
        let item = fanned_out("evt_big", body.clone().into(), &acme, &["audit"]);
        let copy = item.copies[0].clone();
        let data = store.tenant(&acme).unwrap();
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        let audit = store.tenant_trees(&copy.scope).unwrap();
        let stored = audit
            .events
            .get(copy.delivery_id.as_str())
            .unwrap()
            .unwrap();
        assert!(holder_of(&stored).is_some(), "a reference");
        assert!(
            stored.len() < 100,
            "{} bytes stored for the copy",
            stored.len()
        );
        let read = load(&audit, &copy.delivery_id).unwrap().unwrap();
        assert_eq!((read.meta.delivery_id, read.body), (copy.delivery_id, body));
    }

    /// A reference never reads as a whole event, and a whole event never
    /// as a reference, whatever its metadata.
    #[test]
    fn a_reference_and_a_whole_event_are_told_apart() {
        let meta = EventMeta {
            headers: vec![("content-type".into(), "application/json".into())],
            ..EventMeta::bare("evt_1", 1)
        };
        let whole = StoredEvent::encode(&meta, &[0xFF; 64]);
        assert_eq!(holder_of(&whole), None);
        let named = reference(b"0123456789acme/dlv_x");
        assert_eq!(holder_of(&named), Some(&b"0123456789acme/dlv_x"[..]));
        assert!(StoredEvent::decode(&named).is_err());
        let copy = DeliveryId::generate();
        let read = as_copy(&whole, &copy).unwrap();
        assert_eq!((read.meta.delivery_id, read.body), (copy, vec![0xFF; 64]));
    }
}
