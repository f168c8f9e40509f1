//! Fault injection for tests: a [`SyncOps`] that records every sync and can
//! be made to fail, a switch that makes the next batch of writes holding a
//! tenant's delivery fail as a storage error (and one for the next read of
//! a delivery's state), and one that makes a tenant
//! actor panic on its next delivery. Compiled only into unit tests and builds with the
//! `fault-injection` feature (the integration tests); a production build of
//! hookd cannot reach any of it.

use std::{
    fs::File,
    io,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use crate::store::{OsSync, SyncOps};

/// One sync the committer asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Synced {
    /// `fdatasync` of a file that was `len` bytes long just before.
    File {
        /// The file.
        path: PathBuf,
        /// Its length when it was synced.
        len: u64,
    },
    /// `fsync` of a directory.
    Dir(PathBuf),
}

/// Real syncs, recorded in order; after [`FaultSync::fail_from_now`] every
/// sync fails instead, as a dead disk would, and [`FaultSync::fail_once`]
/// fails only the next one, as Linux reports a writeback error only once.
#[derive(Debug, Default)]
pub struct FaultSync {
    log: Mutex<Vec<Synced>>,
    failing: AtomicBool,
    fail_next: AtomicBool,
}

impl FaultSync {
    /// A recorder that does not fail yet.
    pub fn new() -> Arc<FaultSync> {
        Arc::default()
    }

    /// Every later sync returns an I/O error.
    pub fn fail_from_now(&self) {
        self.failing.store(true, Ordering::SeqCst);
    }

    /// The next sync fails; the ones after it succeed again.
    pub fn fail_once(&self) {
        self.fail_next.store(true, Ordering::SeqCst);
    }

    /// The syncs done so far, in order.
    pub fn synced(&self) -> Vec<Synced> {
        self.log.lock().expect("sync log").clone()
    }

    fn check(&self) -> io::Result<()> {
        if self.failing.load(Ordering::SeqCst) || self.fail_next.swap(false, Ordering::SeqCst) {
            return Err(io::Error::other("injected fsync failure"));
        }
        Ok(())
    }
}

impl SyncOps for FaultSync {
    fn sync_file(&self, path: &Path, file: &File) -> io::Result<()> {
        self.check()?;
        let len = file.metadata()?.len();
        OsSync.sync_file(path, file)?;
        self.log.lock().expect("sync log").push(Synced::File {
            path: path.to_owned(),
            len,
        });
        Ok(())
    }

    fn sync_dir(&self, path: &Path, dir: &File) -> io::Result<()> {
        self.check()?;
        OsSync.sync_dir(path, dir)?;
        self.log
            .lock()
            .expect("sync log")
            .push(Synced::Dir(path.to_owned()));
        Ok(())
    }
}

static PANIC_NEXT: TenantSwitch = TenantSwitch::new();

/// The actor of `tenant` panics while handling its next delivery.
pub fn panic_next_ingest(tenant: &str) {
    PANIC_NEXT.arm(tenant);
}

/// Panics if [`panic_next_ingest`] was called for `tenant` (once).
pub(crate) fn maybe_panic(tenant: &str) {
    if PANIC_NEXT.take(tenant) {
        panic!("injected panic in the actor of tenant {tenant}");
    }
}

use crate::store::inject::TenantSwitch;
pub use crate::store::inject::{fail_next_read, fail_next_write};
