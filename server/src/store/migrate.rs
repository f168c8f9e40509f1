//! Upgrades a data dir written by a hookd that kept seven trees per tenant
//! (`t/{tenant}/{kind}`) to the shared trees keyed by tenant. Each old
//! tree is copied under the tenant's prefix and flushed before it is
//! dropped, so a crash in between only repeats the copy (the same keys and
//! values) at the next start.

use super::keyspace::tenant_prefix;
use crate::{error::Result, ids::TenantId};

/// Moves every `t/{tenant}/{kind}` tree into `shared` (in the order of
/// `kinds`) and drops it; returns how many trees were moved.
pub(super) fn per_tenant_trees(
    db: &sled::Db,
    shared: &[sled::Tree],
    kinds: &[&str],
) -> Result<usize> {
    let mut moved = Vec::new();
    for name in db.tree_names() {
        let Some((tenant, kind)) = legacy_name(&name) else {
            continue;
        };
        let Some(target) = kinds.iter().position(|k| *k == kind) else {
            continue;
        };
        let Ok(tenant) = TenantId::try_from(tenant) else {
            tracing::error!(tree = %String::from_utf8_lossy(&name), "tree of an invalid tenant id left as it is");
            continue;
        };
        let prefix = tenant_prefix(&tenant);
        let old = db.open_tree(&name)?;
        let mut batch = sled::Batch::default();
        let mut pending = 0;
        for entry in old.iter() {
            let (key, value) = entry?;
            batch.insert([&prefix[..], &key].concat(), value);
            pending += 1;
            if pending == 1024 {
                shared[target].apply_batch(std::mem::take(&mut batch))?;
                pending = 0;
            }
        }
        shared[target].apply_batch(batch)?;
        moved.push(name);
    }
    if moved.is_empty() {
        return Ok(0);
    }
    db.flush()?;
    for name in &moved {
        db.drop_tree(name)?;
    }
    db.flush()?;
    tracing::info!(
        trees = moved.len(),
        "per-tenant trees moved into the shared trees"
    );
    Ok(moved.len())
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
    use crate::store::{deliveries, Store};

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
        let other = store
            .tenant_trees(&TenantId::try_from("other").unwrap())
            .unwrap();
        assert_eq!(other.gauges().queue_depth(), 1);
    }
}
