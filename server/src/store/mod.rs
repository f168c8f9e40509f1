//! Durable storage on one sled `Db`: seven trees per tenant
//! (`t/{tenant}/idem`, `events`, `queue`, `state`, `attempts`, `dead`,
//! `done`; see [`TenantTrees`]) and the group committer that makes writes
//! durable.

mod apply;
mod committer;
pub mod deliveries;
#[cfg(test)]
mod durability_tests;
mod gauges;
pub mod records;
pub mod rejections;
pub mod sync;

use std::{
    collections::HashMap,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
    thread::JoinHandle,
};

pub use committer::{CommitOutcome, CommitStats, Committer, NewDelivery};
pub use gauges::QueueGauges;
pub use sync::{OsSync, SharedSync, SyncOps};

use crate::{error::Result, ids::TenantId};

/// sled segment size: page images (a leaf of up to 16 entries, so several
/// bodies of a few hundred KiB) larger than a quarter of it go to blob files
/// under `blobs/`, smaller ones inline in the log; the committer syncs both.
const SEGMENT_SIZE: usize = 8 * 1024 * 1024;

/// The trees holding one tenant's data.
#[derive(Clone)]
pub struct TenantTrees {
    /// event_id -> [`records::IdempotencyRecord`].
    pub idem: sled::Tree,
    /// delivery_id -> [`records::StoredEvent`].
    pub events: sled::Tree,
    /// [`records::queue_key`] -> delivery_id: what is due to be forwarded.
    pub queue: sled::Tree,
    /// delivery_id -> [`records::DeliveryState`].
    pub state: sled::Tree,
    /// delivery_id + attempt number -> [`records::AttemptRecord`].
    pub attempts: sled::Tree,
    /// dead-at time + delivery_id -> [`records::DeadLetter`]: the dead-letter index.
    pub dead: sled::Tree,
    /// finished time + delivery_id -> (): delivered events, for retention.
    pub done: sled::Tree,
    /// Live counts of `queue` and `dead`, shared by every handle of the
    /// tenant's trees in this process.
    pub gauges: Arc<QueueGauges>,
}

/// The process's storage: the sled database and its committer.
#[derive(Clone)]
pub struct Store {
    db: sled::Db,
    committer: Committer,
    poisoned: Arc<AtomicBool>,
    gauges: Arc<Mutex<HashMap<TenantId, Arc<QueueGauges>>>>,
}

impl Store {
    /// Opens (or creates) the database under `data_dir/sled` and starts the
    /// committer thread. The returned handle ends when every `Store` and
    /// `Committer` clone is dropped, after a final flush.
    pub fn open(data_dir: &Path, batch_max: usize, fsync: bool) -> Result<(Store, JoinHandle<()>)> {
        let sync: Option<SharedSync> = fsync.then(|| Arc::new(OsSync) as SharedSync);
        Store::open_with(data_dir, batch_max, sync)
    }

    /// [`Store::open`] with the syncs going through `sync` (`None`: no
    /// fdatasync at all, which survives a process crash but not a power loss).
    pub fn open_with(
        data_dir: &Path,
        batch_max: usize,
        sync: Option<SharedSync>,
    ) -> Result<(Store, JoinHandle<()>)> {
        let path = sled_path(data_dir);
        std::fs::create_dir_all(&path)?;
        let db = sled::Config::new()
            .path(&path)
            .segment_size(SEGMENT_SIZE)
            .open()?;
        let poisoned = Arc::new(AtomicBool::new(false));
        let (committer, handle) =
            Committer::start(db.clone(), &path, batch_max, sync, poisoned.clone())?;
        Ok((
            Store {
                db,
                committer,
                poisoned,
                gauges: Arc::default(),
            },
            handle,
        ))
    }

    /// Opens the trees of one tenant (cheap after the first call; the first
    /// counts its queue and dead letters once).
    pub fn tenant_trees(&self, tenant: &TenantId) -> Result<TenantTrees> {
        let name = |kind: &str| format!("t/{tenant}/{kind}");
        let (queue, dead) = (
            self.db.open_tree(name("queue"))?,
            self.db.open_tree(name("dead"))?,
        );
        let gauges = {
            let mut known = self.gauges.lock().expect("gauges lock");
            match known.get(tenant) {
                Some(gauges) => gauges.clone(),
                None => {
                    let gauges = Arc::new(QueueGauges::count(&queue, &dead)?);
                    known.insert(tenant.clone(), gauges.clone());
                    gauges
                }
            }
        };
        Ok(TenantTrees {
            idem: self.db.open_tree(name("idem"))?,
            events: self.db.open_tree(name("events"))?,
            queue,
            state: self.db.open_tree(name("state"))?,
            attempts: self.db.open_tree(name("attempts"))?,
            dead,
            done: self.db.open_tree(name("done"))?,
            gauges,
        })
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

    /// Drops every tree of `tenant` on the committer thread, between batches
    /// (so a batch holding writes for it fails only those), and returns once
    /// that is durable. The tenant's queue and dead-letter counts are
    /// forgotten with its trees (even when the drop failed, which poisons
    /// the store), so a tenant created later under the same id is counted
    /// from its own trees.
    pub async fn drop_tenant_trees(&self, tenant: &TenantId) -> Result<()> {
        let dropped = self.committer.drop_trees(format!("t/{tenant}/")).await;
        self.gauges.lock().expect("gauges lock").remove(tenant);
        dropped
    }

    /// The sled database, for components that keep their own trees.
    pub fn db(&self) -> &sled::Db {
        &self.db
    }

    /// The refused requests of every tenant ([`rejections::Rejections`]).
    pub fn rejections(&self) -> Result<rejections::Rejections> {
        Ok(rejections::Rejections::new(
            self.db.open_tree(rejections::TREE)?,
        ))
    }

    /// Flushes everything to disk now.
    pub fn flush(&self) -> Result<()> {
        self.db.flush()?;
        Ok(())
    }
}

/// Where sled lives inside the data dir.
pub fn sled_path(data_dir: &Path) -> PathBuf {
    data_dir.join("sled")
}
