//! Upgrades a data dir written by an older hookd to the present storage
//! layout, and refuses one of a newer layout.

use std::{fs::File, io::Write, path::Path};

use super::{
    keyspace::{stored_key, tenant_prefix, Layout},
    sync::{SharedSync, Syncer},
    SharedTree, SharedTrees, SHARED_TREES, TENANT_FIRST_EVENTS,
};
use crate::{
    error::{Error, Result},
    ids::TenantId,
};

/// The storage layout this hookd writes and reads: 1 kept seven trees per
/// tenant, 2 the shared trees with events tenant first, 3 events time
/// first, 4 the same trees behind a write-ahead log (`wal/`, whose records
/// a hookd of layout 3 would not apply, so it must refuse the data dir), 5
/// the log's records removing keys too (a round of forwarding attempts),
/// which a hookd of layout 4 would not read, 6 a route's copy of an event
/// storing no event of its own, its state naming the default route's
/// delivery's (`deliveries/shared.rs`), which a hookd of layout 5 would
/// not find, 7 a route's copy pending since receipt filed as one queue
/// entry holding its state, with no state record (`deliveries/receipt.rs`),
/// which a hookd of layout 6 would take for an unknown delivery, 8 such an
/// entry holding only what its state holds beyond that of every delivery
/// pending since receipt, which a hookd of layout 7 could not read (a
/// layout-7 entry reads the same under layout 8, so nothing is moved), 9
/// one queue entry holding the receipts of several deliveries and the
/// log's records adding and taking such receipts one by one
/// (`entry.rs`), which a hookd of layout 8 would misread (a layout-8 entry
/// is an entry of one receipt under layout 9, so nothing is moved), 10
/// the log's records carrying the last record synced before them (format
/// 2, `wal/record.rs`), which a hookd of layout 9 would take for a log of
/// an unknown format (this one still reads a layout-9 log, so nothing is
/// moved). Recorded in the data dir once it is reached.
pub(super) const LAYOUT: u32 = 10;
/// The tree and key that record the layout of a data dir.
const LAYOUT_TREE: &str = "hookd/layout";
const LAYOUT_KEY: &str = "version";

/// Brings the data dir at `path` to [`LAYOUT`]: refuses a newer one, moves
/// older trees into `trees` (the shared trees of `kinds`, events at
/// `events`), then records the layout, durably through `syncer`.
///
/// Upgrades a data dir written by an older hookd: one that kept seven
/// trees per tenant (`t/{tenant}/{kind}`), and one that kept the stored
/// events tenant first (`data/events`). Each old tree is copied under the
/// new keys and the copy made power-loss durable before the old tree is
/// dropped, so a crash in between only repeats the copy (the same keys and
/// values) at the next start. An entry that cannot be re-keyed stays in its
/// old tree, never dropped. The layout reached is recorded, and a data dir
/// of a newer layout than this hookd knows is refused untouched. The
/// database of a layout-3 data dir lives in `store/`; `sled/`, where older
/// releases kept it, is then a file saying so, which they cannot open as a
/// database, so an older hookd refuses to start instead of running on a
/// layout it does not know.
pub(super) fn upgrade(
    db: &sled::Db,
    path: &Path,
    trees: &[sled::Tree],
    kinds: &[SharedTree],
    syncer: &mut Syncer,
) -> Result<()> {
    let marker = db.open_tree(LAYOUT_TREE)?;
    let found = marker
        .get(LAYOUT_KEY)?
        .and_then(|v| <[u8; 4]>::try_from(v.as_ref()).ok())
        .map(u32::from_be_bytes);
    if let Some(found) = found.filter(|f| *f > LAYOUT) {
        return Err(Error::config(
            "storage.data_dir",
            format!(
                "{} holds storage layout {found}, written by a newer hookd; \
             this hookd reads layouts up to {LAYOUT}: run the newer hookd (a move to a newer \
             layout is one way)",
                path.display()
            ),
        ));
    }
    if found == Some(LAYOUT) {
        return Ok(());
    }
    per_tenant_trees(db, trees, kinds, syncer)?;
    events_time_first(db, &trees[1], syncer)?;
    marker.insert(LAYOUT_KEY, &LAYOUT.to_be_bytes())?;
    durable(db, syncer)
}

/// Where releases before layout 3 kept the database, inside the data dir.
pub(super) const LEGACY_DIR: &str = "sled";

/// What `sled` holds once the database moved to `store/`.
const FENCE_TEXT: &str = "This hookd data dir holds storage layout 3 or newer, in store/.\n\
    A hookd release that keeps its database in sled/ cannot read it: run a newer hookd.\n";

/// Upgrades a database still in `data_dir/sled` in place, then moves it to
/// [`super::sled_path`]; a crash before the move repeats the (idempotent)
/// upgrade, one after it finds the database moved.
pub(super) fn move_legacy_dir(
    data_dir: &Path,
    sync: Option<&SharedSync>,
    cache_bytes: u64,
) -> Result<()> {
    let (legacy, path) = (data_dir.join(LEGACY_DIR), super::sled_path(data_dir));
    if !legacy.is_dir() {
        return Ok(());
    }
    if path.exists() {
        return Err(Error::config("storage.data_dir", format!("{} holds both {LEGACY_DIR}/ and store/: a hookd older than \
             storage layout 3 ran on it after the move; store/ is the database, move {LEGACY_DIR}/ away",
            data_dir.display()
        )));
    }
    {
        let db = super::open_db(&legacy, cache_bytes)?;
        let shared = SharedTrees::open(&db)?;
        let mut syncer = Syncer::open(&legacy, sync.cloned())?;
        upgrade(&db, &legacy, &shared.0, &SHARED_TREES, &mut syncer)?;
    }
    std::fs::rename(&legacy, &path)?;
    if let Some(ops) = sync {
        ops.sync_dir(data_dir, &File::open(data_dir)?)?;
    }
    tracing::info!(from = %legacy.display(), to = %path.display(), "database moved");
    Ok(())
}

/// Puts the file that older releases cannot open where they look for the
/// database, durably, if it is not there yet.
pub(super) fn fence_legacy_dir(data_dir: &Path, sync: Option<&SharedSync>) -> Result<()> {
    let legacy = data_dir.join(LEGACY_DIR);
    if legacy.exists() {
        return Ok(());
    }
    let mut file = File::create(&legacy)?;
    file.write_all(FENCE_TEXT.as_bytes())?;
    if let Some(ops) = sync {
        ops.sync_file(&legacy, &file)?;
        ops.sync_dir(data_dir, &File::open(data_dir)?)?;
    }
    Ok(())
}

/// Flushes `db` and makes what it wrote power-loss durable.
fn durable(db: &sled::Db, syncer: &mut Syncer) -> Result<()> {
    db.flush()?;
    syncer.sync()?;
    Ok(())
}

/// Entries copied per batch.
const CHUNK: usize = 1024;

/// Moves every `t/{tenant}/{kind}` tree into the shared tree `trees[i]`
/// described by `kinds[i]` and drops it; returns how many trees were moved.
fn per_tenant_trees(
    db: &sled::Db,
    trees: &[sled::Tree],
    kinds: &[SharedTree],
    syncer: &mut Syncer,
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
        let old = db.open_tree(&name)?;
        copy(&old, &trees[target], |key| {
            Some(stored_key(layout, &prefix, key))
        })?;
        moved.push(name);
    }
    if moved.is_empty() {
        return Ok(0);
    }
    drop_copied(db, &moved, syncer)?;
    tracing::info!(
        trees = moved.len(),
        "per-tenant trees moved into the shared trees"
    );
    Ok(moved.len())
}

/// Moves the stored events of `data/events` (`{tenant}/{delivery id}`)
/// into `events`, laid out time first, and drops it; returns how many
/// events were moved.
fn events_time_first(db: &sled::Db, events: &sled::Tree, syncer: &mut Syncer) -> Result<usize> {
    if !db
        .tree_names()
        .iter()
        .any(|n| n == TENANT_FIRST_EVENTS.as_bytes())
    {
        return Ok(0);
    }
    let old = db.open_tree(TENANT_FIRST_EVENTS)?;
    let rekey = |key: &[u8]| {
        let slash = key.iter().position(|b| *b == b'/')?;
        let (prefix, id) = key.split_at(slash + 1);
        Some(stored_key(Layout::TimeFirst, prefix, id))
    };
    let moved = copy(&old, events, rekey)?;
    if moved.left > 0 {
        durable(db, syncer)?;
        for entry in old.iter() {
            let (key, _) = entry?;
            if rekey(&key).is_some() {
                old.remove(key)?;
            }
        }
        durable(db, syncer)?;
        tracing::error!(
            tree = TENANT_FIRST_EVENTS,
            entries = moved.left,
            "entries that could not be moved are kept in their old tree"
        );
    } else {
        drop(old);
        drop_copied(db, &[TENANT_FIRST_EVENTS.into()], syncer)?;
    }
    let moved = moved.copied;
    tracing::info!(
        events = moved,
        "stored events moved to the time-first layout"
    );
    Ok(moved)
}

/// What [`copy`] did.
struct Copied {
    /// Entries copied.
    copied: usize,
    /// Entries left behind: `rekey` named no key for them.
    left: usize,
}

/// Copies every entry of `from` into `to` under `rekey(key)`, in batches;
/// an entry `rekey` names no key for is left behind (and counted).
fn copy(
    from: &sled::Tree,
    to: &sled::Tree,
    rekey: impl Fn(&[u8]) -> Option<Vec<u8>>,
) -> Result<Copied> {
    let (mut batch, mut pending, mut copied, mut left) = (sled::Batch::default(), 0, 0, 0);
    for entry in from.iter() {
        let (key, value) = entry?;
        let Some(new_key) = rekey(&key) else {
            left += 1;
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
    Ok(Copied { copied, left })
}

/// Makes the copies power-loss durable, then drops the trees they came
/// from, durably too.
fn drop_copied(db: &sled::Db, names: &[sled::IVec], syncer: &mut Syncer) -> Result<()> {
    durable(db, syncer)?;
    for name in names {
        db.drop_tree(name)?;
    }
    durable(db, syncer)
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
    use super::{
        super::{deliveries, SledStore},
        *,
    };
    use crate::{
        ids::{DeliveryId, EventId, RequestId},
        records::{EventMeta, StoredEvent},
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
            let db = old_db(dir.path());
            let old = db.open_tree(TENANT_FIRST_EVENTS).unwrap();
            for (tenant, id) in [("acme", &ids[0]), ("beta", &ids[1])] {
                old.insert(format!("{tenant}/{id}"), event(id)).unwrap();
            }
            db.flush().unwrap();
        }
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
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
            let db = old_db(dir.path());
            let state =
                crate::records::DeliveryState::pending(crate::ids::EventId::new("evt_1"), 5);
            db.open_tree("t/acme/state")
                .unwrap()
                .insert("dlv_1", crate::records::encode(&state))
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
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
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

    /// The old layout's database, without a flusher thread (the tests
    /// flush), opened once sled's threads of its last opening let go.
    fn old_db(dir: &std::path::Path) -> sled::Db {
        let config = sled::Config::new()
            .path(dir.join(LEGACY_DIR))
            .segment_size(crate::sled::SEGMENT_SIZE)
            .flush_every_ms(None);
        crate::sled::open_when_unlocked(&config).unwrap()
    }

    /// Writes one queue entry of tenant `acme` in the per-tenant layout.
    fn old_queue_entry(dir: &std::path::Path) {
        let db = old_db(dir);
        db.open_tree("t/acme/queue")
            .unwrap()
            .insert([0u8; 16], "dlv_1")
            .unwrap();
        db.flush().unwrap();
    }

    /// The depth of `acme`'s queue in the store at `dir`, opened and closed.
    fn acme_queue_depth(dir: &std::path::Path) -> u64 {
        let (store, committer) = SledStore::open(dir, 16, false).unwrap();
        let acme = store
            .tenant_trees(&TenantId::try_from("acme").unwrap())
            .unwrap();
        let depth = acme.gauges().queue_depth();
        drop((acme, store));
        committer.join().unwrap();
        depth
    }

    /// An entry the move cannot re-key is kept where it was, never dropped
    /// with its tree; what could be moved is moved once.
    #[test]
    fn an_entry_that_cannot_be_moved_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let id = format!("dlv_{}", ulid::Ulid::from_parts(2_000, 1));
        {
            let db = old_db(dir.path());
            let old = db.open_tree(TENANT_FIRST_EVENTS).unwrap();
            old.insert(format!("acme/{id}"), event(&id)).unwrap();
            old.insert("no-tenant-separator", b"kept".to_vec()).unwrap();
            db.flush().unwrap();
        }
        for _ in 0..2 {
            let (store, committer) = SledStore::open(dir.path(), 16, false).unwrap();
            let old = store.db().open_tree(TENANT_FIRST_EVENTS).unwrap();
            assert_eq!(
                old.get("no-tenant-separator").unwrap().as_deref(),
                Some(&b"kept"[..]),
                "the entry that could not be moved is still there"
            );
            assert_eq!(old.len(), 1, "what was moved is not left behind");
            let acme = store
                .tenant_trees(&TenantId::try_from("acme").unwrap())
                .unwrap();
            let stored = deliveries::load_event(&acme, &DeliveryId::new(id.as_str())).unwrap();
            assert!(stored.is_some());
            drop((old, acme, store));
            committer.join().unwrap();
        }
    }

    /// The copies are made power-loss durable before the old trees are
    /// dropped: when the syncs fail, the open fails and the old tree is
    /// still there for the next start.
    #[test]
    fn old_trees_are_dropped_only_after_their_copies_are_synced() {
        let dir = tempfile::tempdir().unwrap();
        old_queue_entry(dir.path());
        let sync = crate::inject::FaultSync::new();
        sync.fail_from_now();
        let opened = SledStore::open_with(
            dir.path(),
            16,
            Some(sync as crate::SharedSync),
            crate::sled::DEFAULT_CACHE_BYTES,
        );
        assert!(opened.is_err(), "a failed sync fails the open");
        drop(opened);
        let db = old_db(dir.path());
        assert!(
            db.tree_names().iter().any(|n| n == b"t/acme/queue"),
            "the old tree is kept until its copy is durable"
        );
    }

    /// A data dir written with a newer storage layout than this hookd knows
    /// is refused, naming both layouts, and is left as it was.
    #[test]
    fn a_newer_layout_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let (store, committer) = SledStore::open(dir.path(), 16, false).unwrap();
        drop(store);
        committer.join().unwrap();
        {
            let db = crate::sled::open_db(
                &crate::sled::sled_path(dir.path()),
                crate::sled::DEFAULT_CACHE_BYTES,
            )
            .unwrap();
            db.open_tree(LAYOUT_TREE)
                .unwrap()
                .insert(LAYOUT_KEY, &(LAYOUT + 1).to_be_bytes())
                .unwrap();
            db.flush().unwrap();
        }
        let error = SledStore::open(dir.path(), 16, false)
            .err()
            .expect("refused");
        let text = error.to_string();
        assert!(
            text.contains(&format!("layout {}", LAYOUT + 1)) && text.contains("newer hookd"),
            "{text}"
        );
    }

    /// What a hookd release before layout 3 does first at start: create
    /// `data/sled` and open sled there. On a moved (or new) data dir both
    /// fail, so such a release refuses to start instead of running on a
    /// layout it does not know.
    #[test]
    fn an_older_hookd_cannot_open_a_moved_data_dir() {
        let dir = tempfile::tempdir().unwrap();
        old_queue_entry(dir.path());
        assert_eq!(acme_queue_depth(dir.path()), 1, "moved with its queue");
        let legacy = dir.path().join(LEGACY_DIR);
        assert!(std::fs::create_dir_all(&legacy).is_err());
        assert!(sled::Config::new().path(&legacy).open().is_err());
        let text = std::fs::read_to_string(&legacy).unwrap();
        assert!(text.contains("run a newer hookd"), "{text}");

        assert_eq!(acme_queue_depth(dir.path()), 1, "and opens again");
    }
}
