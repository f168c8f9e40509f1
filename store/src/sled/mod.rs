//! The embedded storage engine: every tenant's deliveries in one sled `Db`,
//! made durable by a group committer's write-ahead log ([`wal`]).

mod apply;
mod committer;
pub mod deliveries;
#[cfg(test)]
mod durability_tests;
mod engine;
mod entry;
mod gauges;
#[cfg(any(test, feature = "fault-injection"))]
pub mod inject;
mod keyspace;
#[cfg(test)]
mod layout_tests;
mod migrate;
mod pipeline;
#[cfg(test)]
mod recovery_tests;
pub mod redirects;
pub mod rejections;
pub mod sync;
pub mod wal;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    thread::JoinHandle,
};

pub use committer::Committer;
pub use gauges::LiveCounts;
pub use sync::{OsSync, SharedSync, SyncOps};

use super::{api, lifecycle, records, CommitOutcome, NewDelivery};
use keyspace::{Keyspace, Layout, TxKeyspace};
use sled::transaction::TransactionalTree;

use crate::{error::Result, ids::TenantId};

/// sled segment size: page images (a leaf of up to 16 entries, so several
/// bodies of a few hundred KiB) larger than a quarter of it go to blob files
/// under `blobs/`, smaller ones inline in the log; the committer syncs both.
const SEGMENT_SIZE: usize = 8 * 1024 * 1024;

/// Page cache of a store opened without a setting (`[storage]
/// cache_capacity_bytes` has the same default).
pub const DEFAULT_CACHE_BYTES: u64 = 128 * 1024 * 1024;

/// One of the trees every tenant shares.
struct SharedTree {
    /// What it holds; also the `{kind}` of the per-tenant trees
    /// (`t/{tenant}/{kind}`) an older data dir kept it in.
    kind: &'static str,
    /// Its sled name.
    name: &'static str,
    layout: Layout,
}

const fn shared(kind: &'static str, name: &'static str, layout: Layout) -> SharedTree {
    SharedTree { kind, name, layout }
}

/// The trees every tenant shares, each key prefixed by the tenant
/// ([`keyspace`]); the stored events ordered by time first.
const SHARED_TREES: [SharedTree; 7] = [
    shared("idem", "data/idem", Layout::TenantFirst),
    shared("events", "data/events_by_time", Layout::TimeFirst),
    shared("queue", "data/queue", Layout::TenantFirst),
    shared("state", "data/state", Layout::TenantFirst),
    shared("attempts", "data/attempts", Layout::TenantFirst),
    shared("dead", "data/dead", Layout::TenantFirst),
    shared("done", "data/done", Layout::TenantFirst),
];

/// The index in [`SHARED_TREES`] of each tree the ingest writes, as the
/// write-ahead log names them.
mod tree {
    pub(super) const IDEM: u8 = 0;
    pub(super) const EVENTS: u8 = 1;
    pub(super) const QUEUE: u8 = 2;
    pub(super) const STATE: u8 = 3;
    pub(super) const ATTEMPTS: u8 = 4;
    pub(super) const DEAD: u8 = 5;
    pub(super) const DONE: u8 = 6;
}

/// Where an older hookd kept the stored events, tenant first.
const TENANT_FIRST_EVENTS: &str = "data/events";

type AttemptTrees<'a> = (
    &'a sled::Tree,
    &'a sled::Tree,
    &'a sled::Tree,
    &'a sled::Tree,
    &'a sled::Tree,
);
type AttemptViews = (
    TransactionalTree,
    TransactionalTree,
    TransactionalTree,
    TransactionalTree,
    TransactionalTree,
);
type AttemptSpaces<'a> = (
    TxKeyspace<'a>,
    TxKeyspace<'a>,
    TxKeyspace<'a>,
    TxKeyspace<'a>,
    TxKeyspace<'a>,
);

/// The shared data trees, opened once.
#[derive(Clone)]
struct SharedTrees([sled::Tree; 7]);

impl SharedTrees {
    fn open(db: &sled::Db) -> Result<SharedTrees> {
        let open = |i: usize| db.open_tree(SHARED_TREES[i].name);
        Ok(SharedTrees([
            open(0)?,
            open(1)?,
            open(2)?,
            open(3)?,
            open(4)?,
            open(5)?,
            open(6)?,
        ]))
    }
}

/// What a process knows of one tenant's data: its live counts, and whether
/// it was dropped (then every handle made before refuses new writes).
#[derive(Default)]
struct TenantMark {
    gauges: Arc<LiveCounts>,
    dropped: Arc<AtomicBool>,
}

/// One tenant's keyspaces in the shared trees: a handle as cheap to clone
/// as an `Arc`, which the acknowledging commit takes of the tenant and of
/// each of its routes for every event.
#[derive(Clone)]
pub struct TenantTrees(Arc<Keyspaces>);

impl std::ops::Deref for TenantTrees {
    type Target = Keyspaces;

    fn deref(&self) -> &Keyspaces {
        &self.0
    }
}

/// What a [`TenantTrees`] handle holds.
pub struct Keyspaces {
    tenant: TenantId,
    db: sled::Db,
    committer: Committer,
    /// event_id (or content key) -> [`records::IdempotencyRecord`].
    idem: Keyspace,
    /// delivery_id -> [`records::StoredEvent`], laid out time first.
    events: Keyspace,
    /// [`records::queue_key`] -> delivery_id: what is due to be forwarded.
    queue: Keyspace,
    /// delivery_id -> [`records::DeliveryState`].
    state: Keyspace,
    /// delivery_id + attempt number -> [`records::AttemptRecord`].
    attempts: Keyspace,
    /// dead-at time + delivery_id -> [`records::DeadLetter`]: the dead-letter index.
    dead: Keyspace,
    /// finished time + delivery_id -> (): delivered events, for retention.
    done: Keyspace,
    /// Live counts of `queue` and `dead`, shared by every handle of the
    /// tenant in this process.
    gauges: Arc<LiveCounts>,
    dropped: Arc<AtomicBool>,
    /// The engine, for the trees of this tenant's other routes.
    store: SledStore,
    /// The trees of this tenant's route scopes this handle was asked for,
    /// kept until their scope is dropped.
    routes: Mutex<HashMap<TenantId, TenantTrees>>,
}

impl TenantTrees {
    fn new(store: &SledStore, tenant: &TenantId, mark: &TenantMark) -> Self {
        let (db, shared) = (&store.db, &store.shared);
        let prefix = keyspace::tenant_prefix(tenant);
        let space =
            |i: usize| Keyspace::new(shared.0[i].clone(), prefix.clone(), SHARED_TREES[i].layout);
        TenantTrees(Arc::new(Keyspaces {
            tenant: tenant.clone(),
            db: db.clone(),
            committer: store.committer.clone(),
            idem: space(0),
            events: space(1),
            queue: space(2),
            state: space(3),
            attempts: space(4),
            dead: space(5),
            done: space(6),
            gauges: mark.gauges.clone(),
            dropped: mark.dropped.clone(),
            store: store.clone(),
            routes: Mutex::default(),
        }))
    }

    /// The trees of route scope `scope` (of this tenant), in the same
    /// shared trees, so one transaction writes both: kept from an earlier
    /// call unless the scope was dropped since, then asked of the engine.
    pub(super) fn route_trees(&self, scope: &TenantId) -> Result<TenantTrees> {
        let mut routes = self.routes.lock().expect("route trees lock");
        if let Some(trees) = routes.get(scope).filter(|trees| !trees.is_dropped()) {
            return Ok(trees.clone());
        }
        let trees = self.store.tenant_trees(scope)?;
        routes.insert(scope.clone(), trees.clone());
        Ok(trees)
    }

    /// The tenant these trees belong to.
    pub fn tenant(&self) -> &TenantId {
        &self.tenant
    }

    /// Live queue depth and dead-letter count.
    pub fn gauges(&self) -> &LiveCounts {
        &self.gauges
    }

    /// True once the tenant's data was dropped: writes through this handle
    /// fail with [`crate::error::Error::TenantDeleted`].
    fn is_dropped(&self) -> bool {
        self.dropped.load(Ordering::SeqCst)
    }

    /// A fresh number, increasing over the database's life.
    fn sequence(&self) -> Result<u64> {
        Ok(self.db.generate_id()?)
    }

    /// The trees an attempt's outcome touches, for one transaction:
    /// queue, state, attempts, dead, done (see [`TenantTrees::attempt_views`]).
    fn attempt_trees(&self) -> AttemptTrees<'_> {
        (
            self.queue.tree(),
            self.state.tree(),
            self.attempts.tree(),
            self.dead.tree(),
            self.done.tree(),
        )
    }

    /// This tenant's keyspaces in a transaction over [`TenantTrees::attempt_trees`].
    fn attempt_views<'a>(&'a self, views: &'a AttemptViews) -> AttemptSpaces<'a> {
        (
            self.queue.tx(&views.0),
            self.state.tx(&views.1),
            self.attempts.tx(&views.2),
            self.dead.tx(&views.3),
            self.done.tx(&views.4),
        )
    }

    /// The keyspaces that are one range per tenant: all but the events.
    fn ranges(&self) -> [&Keyspace; 6] {
        [
            &self.idem,
            &self.queue,
            &self.state,
            &self.attempts,
            &self.dead,
            &self.done,
        ]
    }

    /// Marks the tenant dropped: writes decided from now on are refused.
    fn mark_dropped(&self) {
        self.dropped.store(true, Ordering::SeqCst);
    }

    /// Marks the tenant dropped and removes all its keys.
    fn clear(&self) -> Result<()> {
        self.mark_dropped();
        // A delivery filed in the queue has no state record: the queue
        // names its event, so it is read before it goes.
        let filed: Vec<sled::IVec> = self
            .queue
            .iter()
            .map(|entry| {
                entry.map(|(_, value)| deliveries::receipt::filed_ids(&value).collect::<Vec<_>>())
            })
            .collect::<sled::Result<Vec<_>>>()?
            .into_iter()
            .flatten()
            .collect();
        // The queue first: an attempt that commits after it finds no entry
        // to claim and writes nothing.
        for space in [&self.queue, &self.dead] {
            space.clear()?;
        }
        // The events are not one range: every one is named by a state key
        // or by a filed delivery's queue entry.
        let states = self.state.iter().map(|entry| entry.map(|(id, _)| id));
        self.events
            .remove_each(states.chain(filed.into_iter().map(Ok)))?;
        for space in self.ranges() {
            space.clear()?;
        }
        Ok(())
    }
}

/// The process's storage: the sled database and its committer. Seven
/// trees are shared by every tenant (`data/idem`, `events_by_time`,
/// `queue`, `state`, `attempts`, `dead`, `done`), each key prefixed by its
/// tenant, the stored events' by time and tenant (see `TenantTrees` and
/// `keyspace`); the committer makes writes durable in a write-ahead log
/// (`wal`) before it applies them to sled.
#[derive(Clone)]
pub struct SledStore {
    db: sled::Db,
    shared: SharedTrees,
    committer: Committer,
    poisoned: Arc<AtomicBool>,
    marks: Arc<Mutex<HashMap<TenantId, TenantMark>>>,
}

impl SledStore {
    /// Opens (or creates) the database under `data_dir/store` and starts the
    /// committer thread. The returned handle ends when every `SledStore` and
    /// `Committer` clone is dropped, after a final flush.
    pub fn open(
        data_dir: &Path,
        batch_max: usize,
        fsync: bool,
    ) -> Result<(SledStore, JoinHandle<()>)> {
        let sync: Option<SharedSync> = fsync.then(|| Arc::new(OsSync) as SharedSync);
        SledStore::open_with(data_dir, batch_max, sync, DEFAULT_CACHE_BYTES)
    }

    /// [`SledStore::open`] with the syncs going through `sync` (`None`: no
    /// fdatasync at all, which survives a process crash but not a power loss).
    pub fn open_with(
        data_dir: &Path,
        batch_max: usize,
        sync: Option<SharedSync>,
        cache_bytes: u64,
    ) -> Result<(SledStore, JoinHandle<()>)> {
        migrate::move_legacy_dir(data_dir, sync.as_ref(), cache_bytes)?;
        let path = sled_path(data_dir);
        std::fs::create_dir_all(&path)?;
        let opened = (|| {
            let db = open_db(&path, cache_bytes)?;
            let shared = SharedTrees::open(&db)?;
            let mut syncer = sync::Syncer::open(&path, sync.clone())?;
            migrate::upgrade(&db, &path, &shared.0, &SHARED_TREES, &mut syncer)?;
            migrate::fence_legacy_dir(data_dir, sync.as_ref())?;
            let stage = recover(data_dir, &db, &shared, sync, syncer)?;
            Ok((db, shared, stage))
        })();
        let (db, shared, stage) = opened.map_err(|e| damage_named(&path, e))?;
        let poisoned = Arc::new(AtomicBool::new(false));
        let (committer, handle) = Committer::start(stage, batch_max, poisoned.clone())?;
        Ok((
            SledStore {
                db,
                shared,
                committer,
                poisoned,
                marks: Arc::default(),
            },
            handle,
        ))
    }

    /// A handle on one tenant's data (cheap after the first call, which
    /// counts its queue and dead letters once).
    pub fn tenant_trees(&self, tenant: &TenantId) -> Result<TenantTrees> {
        let mut marks = self.marks.lock().expect("marks lock");
        if let Some(mark) = marks.get(tenant) {
            return Ok(TenantTrees::new(self, tenant, mark));
        }
        let counting = TenantTrees::new(self, tenant, &TenantMark::default());
        let mark = TenantMark {
            gauges: Arc::new(LiveCounts::count(&counting.queue, &counting.dead)?),
            dropped: counting.dropped.clone(),
        };
        let trees = TenantTrees::new(self, tenant, &mark);
        marks.insert(tenant.clone(), mark);
        Ok(trees)
    }

    /// The group committer all durable writes go through.
    pub fn committer(&self) -> &Committer {
        &self.committer
    }

    /// False once a write or sync failed (the store is poisoned): nothing
    /// more is acknowledged until hookd is restarted.
    pub fn is_healthy(&self) -> bool {
        !self.poisoned.load(Ordering::SeqCst)
    }

    /// Returns once everything written to the db before the call is flushed
    /// and fdatasynced, sharing the committer's fsyncs; fails when the store
    /// is poisoned. Control-plane writes answer only after it.
    pub async fn durable_barrier(&self) -> Result<()> {
        self.committer.barrier().await
    }

    /// Removes every key of `tenant` on the committer thread, between
    /// batches (so a batch holding writes for it fails only those), and
    /// returns once that is durable. Handles made before refuse new writes;
    /// the tenant's counts are forgotten with its data (even when the drop
    /// failed, which poisons the store), so a tenant created later under the
    /// same id is counted from its own data.
    pub async fn drop_tenant_trees(&self, tenant: &TenantId) -> Result<()> {
        let trees = self.tenant_trees(tenant)?;
        let dropped = self.committer.drop_tenant(trees).await;
        self.marks.lock().expect("marks lock").remove(tenant);
        dropped
    }

    /// Removes every key of `tenant` now, on the calling thread: for data a
    /// tenant left that no actor or dispatcher holds (a deleted tenant's
    /// leftovers after a crash, or one dropped from the config file).
    pub fn clear_tenant(&self, tenant: &TenantId) -> Result<()> {
        self.tenant_trees(tenant)?.clear()?;
        self.marks.lock().expect("marks lock").remove(tenant);
        Ok(())
    }

    /// The sled database, for components that keep their own trees.
    pub fn db(&self) -> &sled::Db {
        &self.db
    }

    /// Flushes everything to disk now.
    pub fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }
}

impl From<sled::Error> for crate::error::Error {
    fn from(e: sled::Error) -> Self {
        crate::error::Error::storage(format!("storage: {e}"), Some(Box::new(e)))
    }
}

/// Where sled lives inside the data dir: `store/` (hookd releases before
/// storage layout 3 used `sled/`, which is now a file they cannot open).
pub fn sled_path(data_dir: &Path) -> PathBuf {
    data_dir.join("store")
}

/// Applies the write-ahead log's records that sled does not hold yet (a
/// crash came between their append and their apply, or before the
/// checkpoint that made them durable in sled), makes sled durable, and
/// starts a fresh log: what the committer's stages start from.
fn recover(
    data_dir: &Path,
    db: &sled::Db,
    shared: &SharedTrees,
    sync: Option<SharedSync>,
    mut syncer: sync::Syncer,
) -> Result<pipeline::Stage> {
    let marker = db.open_tree(apply::WAL_TREE)?;
    let applied = apply::applied_lsn(&marker)?;
    let dir = wal::wal_path(data_dir);
    std::fs::create_dir_all(&dir)?;
    let last = wal::recover(&dir, applied, |lsn, ops| {
        apply::apply_record(&shared.0, &marker, lsn, ops)
    })?;
    if last > applied {
        tracing::info!(
            records = last - applied,
            "write-ahead log records applied to the store after a crash"
        );
    }
    db.flush()?;
    syncer.sync()?;
    Ok(pipeline::Stage {
        db: db.clone(),
        marker,
        log: wal::Log::create(&dir, sync, last + 1)?,
        syncer,
        applied: last,
    })
}

/// `e`, or, when it is sled finding its own files at `path` damaged, an
/// error that names them and says what to do. The write-ahead log holds
/// only what was written since sled's last checkpoints, so hookd cannot
/// rebuild the damaged records from it.
fn damage_named(path: &Path, e: crate::error::Error) -> crate::error::Error {
    let at = match &e {
        crate::error::Error::Storage {
            source: Some(source),
            ..
        } => match source.downcast_ref::<sled::Error>() {
            Some(sled::Error::Corruption { at, .. }) => *at,
            _ => return e,
        },
        _ => return e,
    };
    let file = match at {
        Some(sled::DiskPtr::Inline(offset)) => {
            format!("{} at byte offset {offset}", path.join("db").display())
        }
        Some(sled::DiskPtr::Blob(_, blob)) => path
            .join("blobs")
            .join(blob.to_string())
            .display()
            .to_string(),
        None => format!(
            "{} (its log `db`, a `snap.*` snapshot or a file in `blobs/`)",
            path.display()
        ),
    };
    crate::error::Error::storage(
        format!(
            "the database is damaged: sled read corrupted data in {file}, and the write-ahead \
             log holds only the writes since sled's last checkpoint, so hookd cannot rebuild \
             it; hookd does not start and changed nothing. Keep a copy of the data dir ({}) as evidence, then restore the \
             data dir from a backup: see \"A damaged database\" in docs/durability.md",
            path.parent().unwrap_or(path).display()
        ),
        Some(Box::new(e)),
    )
}

/// Opens the sled database at `path` with hookd's settings.
fn open_db(path: &Path, cache_bytes: u64) -> Result<sled::Db> {
    let config = sled::Config::new()
        .path(path)
        .segment_size(SEGMENT_SIZE)
        .cache_capacity(cache_bytes);
    Ok(open_when_unlocked(&config)?)
}

/// How long opening a database waits for its file lock: sled's threads of
/// a database just closed in this process (the one under `data_dir/sled`,
/// upgraded before it is moved) let go of the file a moment after its last
/// handle is dropped. A lock another process holds is refused after it.
const LOCK_WAIT: std::time::Duration = std::time::Duration::from_secs(2);

/// Opens the database of `config`, waiting up to [`LOCK_WAIT`] while its
/// file is locked.
fn open_when_unlocked(config: &sled::Config) -> sled::Result<sled::Db> {
    let deadline = std::time::Instant::now() + LOCK_WAIT;
    loop {
        match config.open() {
            Err(e) if is_locked(&e) && std::time::Instant::now() < deadline => {
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
            opened => return opened,
        }
    }
}

/// Whether sled refused to open a database because its file is locked
/// (sled says so only in the error's text).
fn is_locked(e: &sled::Error) -> bool {
    matches!(e, sled::Error::Io(io) if io.to_string().starts_with("could not acquire lock"))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A tenant's handle keeps the trees of its routes, which the
    /// acknowledging commit takes for every event, until the route is
    /// dropped: then it asks the engine again, and the fresh handle takes
    /// writes.
    #[tokio::test]
    async fn a_route_scope_is_kept_until_it_is_dropped() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
        let acme = TenantId::try_from("acme").unwrap();
        let scope = acme.route_scope("audit");
        let trees = store.tenant_trees(&acme).unwrap();
        let first = trees.route_trees(&scope).unwrap();
        assert!(Arc::ptr_eq(&first.0, &trees.route_trees(&scope).unwrap().0));

        store.drop_tenant_trees(&scope).await.unwrap();
        assert!(first.is_dropped());
        let fresh = trees.route_trees(&scope).unwrap();
        assert!(!fresh.is_dropped());
        assert!(!Arc::ptr_eq(&first.0, &fresh.0));
        assert!(Arc::ptr_eq(&fresh.0, &trees.route_trees(&scope).unwrap().0));
    }
}
