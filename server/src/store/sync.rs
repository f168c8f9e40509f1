//! What the committer makes power-loss durable after each `flush()`: the
//! syscalls go through [`SyncOps`], so tests can record them or make them
//! fail; production uses [`OsSync`].

use std::{
    collections::{HashMap, HashSet},
    ffi::OsString,
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

/// Makes everything sled wrote power-loss durable after a `flush()`, which
/// alone only uses `sync_file_range` (it survives a process crash, not a
/// power loss): `fdatasync` of the log, of every file under the sled dir and
/// its `blobs/` dir that is new or changed since it was last synced, and of
/// each directory whose entries changed. sled writes a blob file whole
/// before the log record that points at it, and never changes it after, so
/// a file synced at its present length and named in a synced directory is
/// durable; a file caught while being written is synced again once it is
/// longer.
pub(super) struct Syncer {
    ops: Option<SharedSync>,
    log: File,
    log_path: PathBuf,
    dirs: [WatchedDir; 2],
}

impl Syncer {
    /// A syncer for `sled_dir`; `ops: None` syncs nothing (`storage.fsync =
    /// false`). Makes the sled dir's own name durable in its parent.
    pub(super) fn open(sled_dir: &Path, ops: Option<SharedSync>) -> io::Result<Syncer> {
        let log_path = sled_dir.join(LOG_FILE);
        if let (Some(ops), Some(parent)) = (&ops, sled_dir.parent()) {
            ops.sync_dir(parent, &File::open(parent)?)?;
        }
        Ok(Syncer {
            ops,
            log: File::open(&log_path)?,
            log_path,
            dirs: [
                WatchedDir::new(sled_dir.to_owned()),
                WatchedDir::new(sled_dir.join("blobs")),
            ],
        })
    }

    /// Syncs what changed since the last call; an error means some of it may
    /// not be on disk.
    pub(super) fn sync(&mut self) -> io::Result<()> {
        let Some(ops) = &self.ops else {
            return Ok(());
        };
        ops.sync_file(&self.log_path, &self.log)?;
        for dir in &mut self.dirs {
            dir.sync(ops.as_ref())?;
        }
        Ok(())
    }
}

/// sled's log, synced on every call through its long-lived handle (so a
/// writeback error on it is reported to us).
const LOG_FILE: &str = "db";

/// One directory's files and the length and mtime each had when synced.
struct WatchedDir {
    path: PathBuf,
    synced: HashMap<OsString, (u64, Option<SystemTime>)>,
}

impl WatchedDir {
    fn new(path: PathBuf) -> WatchedDir {
        WatchedDir {
            path,
            synced: HashMap::new(),
        }
    }

    fn sync(&mut self, ops: &dyn SyncOps) -> io::Result<()> {
        let mut names_changed = false;
        let mut seen = HashSet::with_capacity(self.synced.len());
        for entry in std::fs::read_dir(&self.path)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == LOG_FILE {
                continue;
            }
            // Stat before syncing: a file still growing is seen shorter than
            // what gets synced, and synced again next time.
            let meta = match entry.metadata() {
                Ok(meta) => meta,
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            if !meta.is_file() {
                continue;
            }
            let stamp = (meta.len(), meta.modified().ok());
            seen.insert(name.clone());
            if self.synced.get(&name) == Some(&stamp) {
                continue;
            }
            let path = entry.path();
            let file = match File::open(&path) {
                Ok(file) => file,
                // Removed by sled since: nothing of it is needed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            ops.sync_file(&path, &file)?;
            names_changed |= self.synced.insert(name, stamp).is_none();
        }
        let before = self.synced.len();
        self.synced.retain(|name, _| seen.contains(name));
        names_changed |= self.synced.len() != before;
        if names_changed {
            ops.sync_dir(&self.path, &File::open(&self.path)?)?;
        }
        Ok(())
    }
}
