//! Upgrades a data dir written by an older hookd: one that kept seven
//! trees per tenant (`t/{tenant}/{kind}`), and one that kept the stored
//! events tenant first (`data/events`). Each old tree is copied under the
//! new keys and flushed before it is dropped, so a crash in between only
//! repeats the copy (the same keys and values) at the next start.

use super::{
    keyspace::{stored_key, tenant_prefix, Layout},
    SharedTree, TENANT_FIRST_EVENTS,
};
use crate::{error::Result, ids::TenantId};

/// Entries copied per batch.
const CHUNK: usize = 1024;

/// Moves every `t/{tenant}/{kind}` tree into the shared tree `trees[i]`
/// described by `kinds[i]` and drops it; returns how many trees were moved.
pub(super) fn per_tenant_trees(
    db: &sled::Db,
    trees: &[sled::Tree],
    kinds: &[SharedTree],
) -> Result<usize> {
    let mut moved = Vec::new();
    for name in db.tree_names() {
        let Some((tenant, kind)) = legacy_name(&name) else {
            continue;
        };
        let Some(target) = kinds.iter().position(|k| k.kind == kind) else {
            continue;
        };
        let Ok(tenant) = TenantId::try_from(tenant) else {
            tracing::error!(tree = %String::from_utf8_lossy(&name), "tree of an invalid tenant id left as it is");
            continue;
        };
        let (prefix, layout) = (tenant_prefix(&tenant), kinds[target].layout);
        copy(&db.open_tree(&name)?, &trees[target], |key| {
            Some(stored_key(layout, &prefix, key))
        })?;
        moved.push(name);
    }
    if moved.is_empty() {
        return Ok(0);
    }
    drop_copied(db, &moved)?;
    tracing::info!(
        trees = moved.len(),
        "per-tenant trees moved into the shared trees"
    );
    Ok(moved.len())
}

/// Moves the stored events of `data/events` (`{tenant}/{delivery id}`)
/// into `events`, laid out time first, and drops it; returns how many
/// events were moved.
pub(super) fn events_time_first(db: &sled::Db, events: &sled::Tree) -> Result<usize> {
    if !db
        .tree_names()
        .iter()
        .any(|n| n == TENANT_FIRST_EVENTS.as_bytes())
    {
        return Ok(0);
    }
    let old = db.open_tree(TENANT_FIRST_EVENTS)?;
    let moved = copy(&old, events, |key| {
        let slash = key.iter().position(|b| *b == b'/')?;
        let (prefix, id) = key.split_at(slash + 1);
        Some(stored_key(Layout::TimeFirst, prefix, id))
    })?;
    drop(old);
    drop_copied(db, &[TENANT_FIRST_EVENTS.into()])?;
    tracing::info!(
        events = moved,
        "stored events moved to the time-first layout"
    );
    Ok(moved)
}

/// Copies every entry of `from` into `to` under `rekey(key)`, in batches;
/// an entry `rekey` names no key for is left behind (and logged).
fn copy(
    from: &sled::Tree,
    to: &sled::Tree,
    rekey: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<usize> {
    let (mut batch, mut pending, mut copied) = (sled::Batch::default(), 0, 0);
    for entry in from.iter() {
        let (key, value) = entry?;
        let Some(new_key) = rekey(&key) else {
            tracing::error!(key = %String::from_utf8_lossy(&key), "entry of an unknown key left as it is");
            continue;
        };
        batch.insert(new_key, value);
        (pending, copied) = (pending + 1, copied + 1);
        if pending == CHUNK {
            to.apply_batch(std::mem::take(&mut batch))?;
            pending = 0;
        }
    }
    to.apply_batch(batch)?;
    Ok(copied)
}

/// Makes the copies durable, then drops the trees they came from.
fn drop_copied(db: &sled::Db, names: &[sled::IVec]) -> Result<()> {
    db.flush()?;
    for name in names {
        db.drop_tree(name)?;
    }
    db.flush()?;
    Ok(())
}

/// `(tenant, kind)` of a tree named `t/{tenant}/{kind}`.
fn legacy_name(name: &[u8]) -> Option<(&str, &str)> {
    std::str::from_utf8(name)
        .ok()?
        .strip_prefix("t/")?
        .split_once('/')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::{DeliveryId, EventId, RequestId},
        store::{
            deliveries,
            records::{EventMeta, StoredEvent},
            Store,
        },
    };

    fn event(delivery_id: &str) -> Vec<u8> {
        let meta = EventMeta {
            event_id: EventId::new("evt_1"),
            delivery_id: DeliveryId::new(delivery_id),
            request_id: RequestId::generate(),
            received_at_ms: 5,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        };
        StoredEvent::encode(&meta, b"{}")
    }

    /// A data dir whose events are stored tenant first opens with every
    /// event readable by its tenant, and the old tree gone.
    #[test]
    fn tenant_first_events_are_moved_to_the_time_first_tree() {
        let dir = tempfile::tempdir().unwrap();
        let ids = [
            format!("dlv_{}", ulid::Ulid::from_parts(2_000, 1)),
            format!("dlv_{}", ulid::Ulid::from_parts(1_000, 2)),
        ];
        {
            let db = sled::Config::new()
                .path(crate::store::sled_path(dir.path()))
                .segment_size(crate::store::SEGMENT_SIZE)
                .open()
                .unwrap();
            let old = db.open_tree(TENANT_FIRST_EVENTS).unwrap();
            for (tenant, id) in [("acme", &ids[0]), ("beta", &ids[1])] {
                old.insert(format!("{tenant}/{id}"), event(id)).unwrap();
            }
            db.flush().unwrap();
        }
        let (store, _committer) = Store::open(dir.path(), 16, false).unwrap();
        let names = store.db().tree_names();
        assert!(!names.iter().any(|n| n == TENANT_FIRST_EVENTS.as_bytes()));
        for (tenant, id, other) in [("acme", &ids[0], "beta"), ("beta", &ids[1], "acme")] {
            let trees = |t| store.tenant_trees(&TenantId::try_from(t).unwrap()).unwrap();
            let id = DeliveryId::new(id.as_str());
            let stored = deliveries::load_event(&trees(tenant), &id).unwrap();
            assert_eq!(stored.unwrap().meta.delivery_id, id);
            assert!(deliveries::load_event(&trees(other), &id)
                .unwrap()
                .is_none());
        }
        let first = store.shared.0[1].iter().keys().next().unwrap().unwrap();
        assert!(first.ends_with(ids[1].as_bytes()), "the earlier id first");
    }

    /// A data dir of the per-tenant layout opens with every record in place
    /// and the old trees gone.
    #[test]
    fn old_per_tenant_trees_are_moved_into_the_shared_ones() {
        let dir = tempfile::tempdir().unwrap();
        {
            let db = sled::Config::new()
                .path(crate::store::sled_path(dir.path()))
                .segment_size(crate::store::SEGMENT_SIZE)
                .open()
                .unwrap();
            let state =
                crate::store::records::DeliveryState::pending(crate::ids::EventId::new("evt_1"), 5);
            db.open_tree("t/acme/state")
                .unwrap()
                .insert("dlv_1", crate::store::records::encode(&state))
                .unwrap();
            db.open_tree("t/acme/queue")
                .unwrap()
                .insert([0u8; 16], "dlv_1")
                .unwrap();
            db.open_tree("t/other/queue")
                .unwrap()
                .insert([1u8; 16], "dlv_2")
                .unwrap();
            db.open_tree("t/acme/events")
                .unwrap()
                .insert("dlv_1", event("dlv_1"))
                .unwrap();
            db.flush().unwrap();
        }
        let (store, _committer) = Store::open(dir.path(), 16, false).unwrap();
        assert!(!store.db().tree_names().iter().any(|n| n.starts_with(b"t/")));
        let acme = store
            .tenant_trees(&TenantId::try_from("acme").unwrap())
            .unwrap();
        let state = deliveries::load_state(&acme, &crate::ids::DeliveryId::new("dlv_1"))
            .unwrap()
            .unwrap();
        assert_eq!(state.event_id.as_str(), "evt_1");
        assert_eq!(acme.gauges().queue_depth(), 1);
        let stored = deliveries::load_event(&acme, &DeliveryId::new("dlv_1")).unwrap();
        assert_eq!(stored.unwrap().body, b"{}");
        let other = store
            .tenant_trees(&TenantId::try_from("other").unwrap())
            .unwrap();
        assert_eq!(other.gauges().queue_depth(), 1);
    }
}
