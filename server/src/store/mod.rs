//! Durable storage on one sled `Db`: per-tenant trees (`t/{tenant}/idem`,
//! `events`, `queue`) and the group committer that makes writes durable.

mod committer;
pub mod deliveries;
mod gauges;
pub mod records;

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

use crate::{error::Result, ids::TenantId};

/// sled segment size: values up to a quarter of it are written inline in the
/// log (which the committer fdatasyncs); larger ones go to blob files.
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
    healthy: Arc<AtomicBool>,
    gauges: Arc<Mutex<HashMap<TenantId, Arc<QueueGauges>>>>,
}

impl Store {
    /// Opens (or creates) the database under `data_dir/sled` and starts the
    /// committer thread. The returned handle ends when every `Store` and
    /// `Committer` clone is dropped, after a final flush.
    pub fn open(data_dir: &Path, batch_max: usize, fsync: bool) -> Result<(Store, JoinHandle<()>)> {
        let path = sled_path(data_dir);
        std::fs::create_dir_all(&path)?;
        let db = sled::Config::new()
            .path(&path)
            .segment_size(SEGMENT_SIZE)
            .open()?;
        let healthy = Arc::new(AtomicBool::new(true));
        let (committer, handle) =
            Committer::start(db.clone(), &path, batch_max, fsync, healthy.clone())?;
        Ok((
            Store {
                db,
                committer,
                healthy,
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

    /// Forgets the counts of a tenant whose trees were dropped, so a tenant
    /// created later under the same id starts from its own (empty) trees.
    pub fn forget_tenant(&self, tenant: &str) {
        self.gauges.lock().expect("gauges lock").remove(tenant);
    }

    /// The group committer all durable writes go through.
    pub fn committer(&self) -> &Committer {
        &self.committer
    }

    /// False after a commit failed to reach the disk, until one succeeds.
    pub fn is_healthy(&self) -> bool {
        self.healthy.load(Ordering::Relaxed)
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

/// Where sled lives inside the data dir.
pub fn sled_path(data_dir: &Path) -> PathBuf {
    data_dir.join("sled")
}
