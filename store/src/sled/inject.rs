//! The storage half of fault injection, compiled only into unit tests and
//! builds with the `fault-injection` feature.

use std::{
    collections::HashSet,
    fs::File,
    io,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc, Mutex,
    },
};

use super::{OsSync, SyncOps};

/// A fault armed per tenant that fires once: keyed by tenant so tests in
/// one process stay apart.
///
/// The storage half of fault injection: a [`SyncOps`] that records every
/// sync and can be made to fail ([`FaultSync`]), a switch that makes the
/// next batch of writes holding a tenant's delivery fail as a storage
/// error, and one that makes the next read of a tenant's delivery state
/// fail so. Compiled only into unit tests and builds with the
/// `fault-injection` feature.
#[derive(Debug)]
pub struct TenantSwitch(Mutex<Option<HashSet<String>>>);

impl TenantSwitch {
    /// A switch armed for no tenant.
    pub const fn new() -> TenantSwitch {
        TenantSwitch(Mutex::new(None))
    }

    /// Arms the switch for `tenant`.
    pub fn arm(&self, tenant: &str) {
        self.0
            .lock()
            .expect("fault switch")
            .get_or_insert_with(HashSet::new)
            .insert(tenant.to_owned());
    }

    /// Whether the switch was armed for `tenant`; disarms it.
    pub fn take(&self, tenant: &str) -> bool {
        self.0
            .lock()
            .expect("fault switch")
            .as_mut()
            .is_some_and(|set| set.remove(tenant))
    }
}

impl Default for TenantSwitch {
    fn default() -> Self {
        TenantSwitch::new()
    }
}

static FAIL_NEXT_WRITE: TenantSwitch = TenantSwitch::new();

/// The next batch of writes holding a delivery of `tenant` fails as a
/// storage error would.
pub fn fail_next_write(tenant: &str) {
    FAIL_NEXT_WRITE.arm(tenant);
}

/// Whether [`fail_next_write`] was called for `tenant` (answered once).
pub(crate) fn take_write_failure(tenant: &str) -> bool {
    FAIL_NEXT_WRITE.take(tenant)
}

static FAIL_NEXT_READ: TenantSwitch = TenantSwitch::new();

/// The next read of a delivery state of `tenant` (on the embedded engine)
/// fails as a storage error would, e.g. the one a forward attempt starts
/// with.
pub fn fail_next_read(tenant: &str) {
    FAIL_NEXT_READ.arm(tenant);
}

/// Whether [`fail_next_read`] was called for `tenant` (answered once).
pub(crate) fn take_read_failure(tenant: &str) -> bool {
    FAIL_NEXT_READ.take(tenant)
}

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
