//! An event fanned out to several routes is stored once: a route's copy names
//! the holder's stored event and reads it through the copy's own id.

use sled::Transactional;

use super::{abort, flatten, load_state, receipt, tx_state, TenantTrees};
use crate::{
    error::{Error, Result},
    ids::DeliveryId,
    records::{encode, DeliveryState, EventMeta, StoredEvent},
};

/// What a copy's state names: the holder's key in the events tree. Keys
/// are ASCII (a ULID's time, a tenant id, a delivery id), so `None` only
/// for a key that is not, and such a copy is stored whole instead.
pub(in crate::sled) fn naming(holder_key: Vec<u8>) -> Option<String> {
    String::from_utf8(holder_key).ok()
}

/// The holder's event as the copy `delivery_id` sees it: its own delivery id.
pub(super) fn as_copy(holder: &[u8], delivery_id: &DeliveryId) -> Result<StoredEvent> {
    let mut event = StoredEvent::decode(holder)?;
    event.meta.delivery_id = delivery_id.clone();
    Ok(event)
}

/// A copy whose holder is gone and that was not given the event: only a
/// tenant half dropped (its own data before its routes') leaves one.
pub(super) fn gone(delivery_id: &DeliveryId) -> Error {
    Error::Corrupt(format!(
        "the stored event of {delivery_id} is another delivery's, which is gone"
    ))
}

/// The stored event of `delivery_id` in `trees`: its own, or, for a copy
/// that has none, its holder's.
///
/// An event fanned out to several routes is stored once. A route's copy,
/// written in the same commit as the default route's delivery (the
/// holder), writes no stored event of its own: its state names the
/// holder's ([`DeliveryState::event_in`], the events tree's key), and
/// reading the copy's event reads the holder's under the copy's own
/// delivery id. Before a holder's event is removed (retention, a purged
/// dead letter, an original swept with its redelivery), it is written
/// whole for every copy that still names it, so a copy never outlives the
/// body it forwards. PostgreSQL keeps a whole event per copy.
pub(super) fn load(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Option<StoredEvent>> {
    if let Some(stored) = trees.events.get(delivery_id.as_str())? {
        return StoredEvent::decode(&stored).map(Some);
    }
    let Some(holder_key) = load_state(trees, delivery_id)?.and_then(|s| s.event_in) else {
        return Ok(None);
    };
    if let Some(holder) = trees.events.get_stored(holder_key.as_bytes())? {
        return as_copy(&holder, delivery_id).map(Some);
    }
    // The holder went after writing the event for the copy: read it there.
    match trees.events.get(delivery_id.as_str())? {
        Some(stored) => StoredEvent::decode(&stored).map(Some),
        None if load_state(trees, delivery_id)?.is_none() => Ok(None),
        None => Err(gone(delivery_id)),
    }
}

/// Before the event of `holder_id` (in `trees`) is removed: writes it whole
/// for every route copy that still names it. Each is one transaction over
/// the copy's state and event, so a copy removed meanwhile stays removed;
/// none is written into a route being dropped (marked before its first
/// key goes, so an event written just before is removed with its state).
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
    let holder = StoredEvent::decode(&stored)?;
    let named = naming(trees.events.key(holder_id.as_str()));
    for (route, id) in copies {
        let copy = trees.route_trees(&trees.tenant().route_scope(route))?;
        let meta = EventMeta {
            delivery_id: id.clone(),
            ..holder.meta.clone()
        };
        let whole = StoredEvent::encode(&meta, &holder.body);
        (copy.state.tree(), copy.events.tree(), copy.queue.tree())
            .transaction(|(states, events, queue)| {
                let (states, events, queue) = (
                    copy.state.tx(states),
                    copy.events.tx(events),
                    copy.queue.tx(queue),
                );
                let names = |s: &DeliveryState| s.event_in.is_some() && s.event_in == named;
                if copy.is_dropped() || events.get(id.as_str())?.is_some() {
                    return Ok(());
                }
                // A copy still filed as a receipt gets its state record too,
                // so its event goes wherever its state goes.
                let (state, recorded) = match tx_state(states, id)? {
                    Some(state) => (state, true),
                    None => match receipt::tx_load(queue, id)? {
                        Some(state) => (state, false),
                        None => return Ok(()),
                    },
                };
                if names(&state) {
                    events.insert(id.as_str(), whole.as_slice())?;
                    if !recorded {
                        states.insert(id.as_str(), encode(&state))?;
                    }
                }
                Ok(())
            })
            .map_err(flatten)?;
    }
    Ok(())
}

/// The event of copy `delivery_id` in state `state`, inside a transaction
/// whose events view is `events`, when it stores none of its own.
pub(super) fn tx_load(
    events: super::TxKeyspace<'_>,
    state: &DeliveryState,
    delivery_id: &DeliveryId,
) -> super::TxResult<StoredEvent> {
    let Some(holder_key) = &state.event_in else {
        return abort(Error::NotFound(format!("event of {delivery_id}")));
    };
    match events.get_stored(holder_key.as_bytes())? {
        Some(holder) => as_copy(&holder, delivery_id).or_else(abort),
        None => abort(gone(delivery_id)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        api::{CommitOutcome, Storage},
        ids::TenantId,
        sled::durability_tests::fanned_out,
        SledStore,
    };

    /// A fanned-out event's body is written once: each route's copy stores
    /// no event of its own, its state names the default route's, and it
    /// reads as the whole event under its own delivery id.
    #[tokio::test]
    async fn a_copy_names_the_default_deliverys_event_and_reads_whole() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let body = vec![b'x'; 4096];
        let item = fanned_out("evt_big", body.clone().into(), &acme, &["audit"]);
        let (holder, copy) = (item.meta.delivery_id.clone(), item.copies[0].clone());
        let data = store.tenant(&acme).unwrap();
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        let audit = store.tenant_trees(&copy.scope).unwrap();
        assert_eq!(audit.events.get(copy.delivery_id.as_str()).unwrap(), None);
        let state = load_state(&audit, &copy.delivery_id).unwrap().unwrap();
        let own = store.tenant_trees(&acme).unwrap();
        assert_eq!(state.event_in, naming(own.events.key(holder.as_str())));
        let read = load(&audit, &copy.delivery_id).unwrap().unwrap();
        assert_eq!((read.meta.delivery_id, read.body), (copy.delivery_id, body));
    }

    /// A hand-over writes the event for each copy that names the holder,
    /// except into a route being dropped (marked, its keys not yet gone):
    /// what it left there, nothing would remove.
    #[tokio::test]
    async fn a_hand_over_gives_every_copy_the_event_but_a_route_being_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let item = fanned_out("evt_1", "{}".into(), &acme, &["kept", "going"]);
        let (holder, copies) = (item.meta.delivery_id.clone(), item.copies.clone());
        let data = store.tenant(&acme).unwrap();
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
        let [kept, going] = [&copies[0], &copies[1]].map(|c| {
            let trees = store.tenant_trees(&c.scope).unwrap();
            (trees, c.delivery_id.clone())
        });
        going.0.mark_dropped();
        hand_over(&store.tenant_trees(&acme).unwrap(), &holder).unwrap();
        let stored = kept.0.events.get(kept.1.as_str()).unwrap().unwrap();
        let event = StoredEvent::decode(&stored).unwrap();
        assert_eq!(
            (event.meta.delivery_id, &event.body[..]),
            (kept.1.clone(), &b"{}"[..])
        );
        // A copy filed as a receipt gets its state record with the event.
        assert!(kept.0.state.get(kept.1.as_str()).unwrap().is_some());
        assert_eq!(going.0.events.get(going.1.as_str()).unwrap(), None);
        assert_eq!(going.0.state.get(going.1.as_str()).unwrap(), None);
    }
}
