//! What the committer makes power-loss durable after each `flush()`: the
//! syscalls go through [`SyncOps`], so tests can record them or make them
//! fail; production uses [`OsSync`].

use std::{
    fs::File,
    io,
    path::{Path, PathBuf},
    sync::Arc,
    time::SystemTime,
};

/// The file-system syncs the committer performs.
pub trait SyncOps: Send + Sync + 'static {
    /// Makes the data (and the size) of `file`, open at `path`, durable.
    fn sync_file(&self, path: &Path, file: &File) -> io::Result<()>;
    /// Makes the entries of the directory `dir`, open at `path`, durable:
    /// files created, renamed or removed in it.
    fn sync_dir(&self, path: &Path, dir: &File) -> io::Result<()>;
}

/// A shared [`SyncOps`].
pub type SharedSync = Arc<dyn SyncOps>;

/// The real thing: `fdatasync` for files, `fsync` for directories.
#[derive(Debug, Default, Clone, Copy)]
pub struct OsSync;

impl SyncOps for OsSync {
    fn sync_file(&self, _path: &Path, file: &File) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_dir(&self, _path: &Path, dir: &File) -> io::Result<()> {
        dir.sync_all()
    }
}

/// fdatasync of sled's log (and fresh blob files): `flush()` alone uses
/// `sync_file_range`, which survives a process crash but not a power loss.
pub(super) struct Syncer {
    ops: Option<SharedSync>,
    log: File,
    log_path: PathBuf,
    blobs: PathBuf,
}

impl Syncer {
    /// A syncer for the sled dir; `ops: None` syncs nothing (`storage.fsync = false`).
    pub(super) fn open(sled_dir: &Path, ops: Option<SharedSync>) -> io::Result<Syncer> {
        let log_path = sled_dir.join("db");
        Ok(Syncer {
            ops,
            log: File::open(&log_path)?,
            log_path,
            blobs: sled_dir.join("blobs"),
        })
    }

    pub(super) fn sync(&self, blobs_since: Option<SystemTime>) -> io::Result<()> {
        let Some(ops) = &self.ops else {
            return Ok(());
        };
        ops.sync_file(&self.log_path, &self.log)?;
        if let Some(since) = blobs_since {
            for entry in std::fs::read_dir(&self.blobs)? {
                let entry = entry?;
                let fresh = entry
                    .metadata()?
                    .modified()
                    .map(|m| m >= since)
                    .unwrap_or(true);
                if fresh {
                    let path = entry.path();
                    ops.sync_file(&path, &File::open(&path)?)?;
                }
            }
            ops.sync_dir(&self.blobs, &File::open(&self.blobs)?)?;
        }
        Ok(())
    }
}
