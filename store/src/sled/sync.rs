//! What the committer makes power-loss durable after each `flush()`, through
//! [`SyncOps`] ([`OsSync`] in production).

use std::{
    collections::{HashMap, HashSet},
    ffi::OsString,
    fs::File,
    io::{self, BufRead, Read},
    path::{Path, PathBuf},
    sync::Arc,
    time::{Duration, SystemTime},
};

/// The file-system syncs the committer performs.
///
/// The syscalls go through here, so tests can record them or make them fail;
/// production uses [`OsSync`].
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
/// power loss): `fdatasync` of every file under the sled dir's `blobs/` dir
/// and the sled dir that is new or changed since it was last synced, and of
/// each directory whose entries changed, and only then of the log, so a
/// power loss between two syncs never leaves a durable log record pointing
/// at a blob that is not. sled writes a blob file whole
/// before the log record that points at it, and never changes it after, so
/// a file synced at its present length and named in a synced directory is
/// durable; a file caught while being written is synced again once it is
/// longer. A blob whose checksum shows it whole is settled and not looked
/// at again, so a batch costs a listing of `blobs/`, not a stat per blob.
pub(super) struct Syncer {
    ops: Option<SharedSync>,
    log: File,
    log_path: PathBuf,
    /// `blobs/` first, then the sled dir: synced in this order, before the log.
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
                WatchedDir::new(sled_dir.join("blobs"), true),
                WatchedDir::new(sled_dir.to_owned(), false),
            ],
        })
    }

    /// Syncs what changed since the last call, the blobs and their names
    /// before the log that points at them; an error means some of it may
    /// not be on disk.
    pub(super) fn sync(&mut self) -> io::Result<()> {
        let Some(ops) = &self.ops else {
            return Ok(());
        };
        for dir in &mut self.dirs {
            dir.sync(ops.as_ref())?;
        }
        ops.sync_file(&self.log_path, &self.log)
    }
}

/// sled's log, synced on every call through its long-lived handle (so a
/// writeback error on it is reported to us).
const LOG_FILE: &str = "db";

/// What is known of one file in a watched directory.
#[derive(Debug, PartialEq, Eq)]
enum FileState {
    /// Synced when it had this length and mtime.
    Synced(u64, Option<SystemTime>),
    /// A complete blob, synced whole: sled never changes it again, so it is
    /// not even looked at any more.
    Settled,
}

/// How much older than the listing a directory's mtime must be before an
/// unchanged mtime proves that no entry was added or removed since: more
/// than the coarsest timestamp granularity of a Linux file system (FAT: 2 s).
const QUIET_MARGIN: Duration = Duration::from_secs(3);

/// One directory's files and what was synced of each.
struct WatchedDir {
    path: PathBuf,
    /// True for `blobs/`, whose files can be checked for completeness.
    blobs: bool,
    files: HashMap<OsString, FileState>,
    /// The directory's mtime before the last listing, when that was at least
    /// [`QUIET_MARGIN`] old: while it stays the same and every file is
    /// settled, there is nothing to list.
    quiet_since: Option<SystemTime>,
}

impl WatchedDir {
    fn new(path: PathBuf, blobs: bool) -> WatchedDir {
        WatchedDir {
            path,
            blobs,
            files: HashMap::new(),
            quiet_since: None,
        }
    }

    /// Syncs every file that is new or changed, then the directory if its
    /// entries changed. Costs one directory listing plus a stat of each file
    /// not yet settled; settled blobs cost nothing, and a quiet directory of
    /// settled blobs costs one stat.
    fn sync(&mut self, ops: &dyn SyncOps) -> io::Result<()> {
        let listed_at = SystemTime::now();
        let dir_mtime = std::fs::metadata(&self.path)?.modified().ok();
        let all_settled = self.files.values().all(|f| *f == FileState::Settled);
        if all_settled && dir_mtime.is_some() && dir_mtime == self.quiet_since {
            return Ok(());
        }
        self.quiet_since = dir_mtime.filter(|m| {
            listed_at
                .duration_since(*m)
                .is_ok_and(|age| age >= QUIET_MARGIN)
        });
        let mut names_changed = false;
        let mut seen = HashSet::with_capacity(self.files.len());
        for entry in std::fs::read_dir(&self.path)? {
            let entry = entry?;
            let name = entry.file_name();
            if name == LOG_FILE {
                continue;
            }
            if self.files.get(&name) == Some(&FileState::Settled) {
                seen.insert(name);
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
            seen.insert(name.clone());
            let stamp = FileState::Synced(meta.len(), meta.modified().ok());
            if self.files.get(&name) == Some(&stamp) {
                continue;
            }
            let path = entry.path();
            let file = match File::open(&path) {
                Ok(file) => file,
                // Removed by sled since: nothing of it is needed.
                Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
                Err(e) => return Err(e),
            };
            let complete = self.blobs && blob_is_complete(&file, meta.len())?;
            ops.sync_file(&path, &file)?;
            let state = if complete { FileState::Settled } else { stamp };
            names_changed |= self.files.insert(name, state).is_none();
        }
        let before = self.files.len();
        self.files.retain(|name, _| seen.contains(name));
        names_changed |= self.files.len() != before;
        if names_changed {
            ops.sync_dir(&self.path, &File::open(&self.path)?)?;
        }
        Ok(())
    }
}

/// True when `file` is a whole sled blob of exactly `len` bytes: its CRC-32
/// (little-endian, first 4 bytes) matches the kind byte and data after it.
/// sled writes a blob once, with `create_new`, and never changes it after.
pub(super) fn blob_is_complete(file: &File, len: u64) -> io::Result<bool> {
    let mut reader = io::BufReader::with_capacity(256 * 1024, file);
    let mut expected = [0u8; 4];
    if len < 5 || reader.read_exact(&mut expected).is_err() {
        return Ok(false);
    }
    let mut hasher = crc32fast::Hasher::new();
    let mut read = 4u64;
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        hasher.update(chunk);
        read += chunk.len() as u64;
        let n = chunk.len();
        reader.consume(n);
    }
    Ok(read == len && hasher.finalize() == u32::from_le_bytes(expected))
}

#[cfg(test)]
mod tests {
    use std::{ffi::OsStr, io::Write};

    use super::*;
    use crate::inject::{FaultSync, Synced};

    /// A blob as sled writes it: CRC-32 of kind byte and data, then both.
    fn blob(data: &[u8]) -> Vec<u8> {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&[7]);
        hasher.update(data);
        let mut out = hasher.finalize().to_le_bytes().to_vec();
        out.push(7);
        out.extend_from_slice(data);
        out
    }

    fn syncs_of(sync: &FaultSync, path: &Path) -> Vec<u64> {
        sync.synced()
            .into_iter()
            .filter_map(|s| match s {
                Synced::File { path: p, len } if p == path => Some(len),
                _ => None,
            })
            .collect()
    }

    /// A blob caught half written is synced, then synced again once whole,
    /// then never looked at again; the directory is synced when it appears.
    #[test]
    fn a_blob_is_synced_until_it_is_whole_then_settled() {
        let dir = tempfile::tempdir().unwrap();
        let sled_dir = dir.path().join("sled");
        std::fs::create_dir_all(sled_dir.join("blobs")).unwrap();
        std::fs::write(sled_dir.join(LOG_FILE), b"log").unwrap();
        let sync = FaultSync::new();
        let mut syncer = Syncer::open(&sled_dir, Some(sync.clone() as SharedSync)).unwrap();

        let path = sled_dir.join("blobs").join("4096");
        let whole = blob(&vec![42u8; 300_000]);
        let mut file = File::create(&path).unwrap();
        file.write_all(&whole[..100_000]).unwrap();
        syncer.sync().unwrap();
        assert_eq!(syncs_of(&sync, &path), [100_000]);
        assert!(sync.synced().contains(&Synced::Dir(sled_dir.join("blobs"))));

        file.write_all(&whole[100_000..]).unwrap();
        drop(file);
        syncer.sync().unwrap();
        assert_eq!(syncs_of(&sync, &path), [100_000, whole.len() as u64]);
        assert_eq!(
            syncer.dirs[0].files.get(OsStr::new("4096")),
            Some(&FileState::Settled)
        );

        syncer.sync().unwrap();
        assert_eq!(
            syncs_of(&sync, &path).len(),
            2,
            "a settled blob is not synced again"
        );
    }

    /// A directory of settled blobs whose mtime has not moved since a
    /// listing well after it is not listed again; a new file moves the mtime
    /// and is found.
    #[test]
    fn a_quiet_blob_dir_is_not_listed_until_its_mtime_moves() {
        let dir = tempfile::tempdir().unwrap();
        let sled_dir = dir.path().join("sled");
        let blobs = sled_dir.join("blobs");
        std::fs::create_dir_all(&blobs).unwrap();
        std::fs::write(sled_dir.join(LOG_FILE), b"log").unwrap();
        let sync = FaultSync::new();
        let mut syncer = Syncer::open(&sled_dir, Some(sync.clone() as SharedSync)).unwrap();
        let set_dir_mtime = |t: SystemTime| File::open(&blobs).unwrap().set_modified(t).unwrap();

        std::fs::write(blobs.join("1"), blob(b"one")).unwrap();
        let quiet = SystemTime::now() - Duration::from_secs(60);
        set_dir_mtime(quiet);
        syncer.sync().unwrap();
        assert_eq!(syncs_of(&sync, &blobs.join("1")).len(), 1);

        // An entry that did not move the mtime (impossible for a real
        // create) is not seen: the listing was skipped.
        std::fs::write(blobs.join("2"), blob(b"two")).unwrap();
        set_dir_mtime(quiet);
        syncer.sync().unwrap();
        assert!(syncs_of(&sync, &blobs.join("2")).is_empty());

        std::fs::write(blobs.join("3"), blob(b"three")).unwrap();
        syncer.sync().unwrap();
        assert_eq!(syncs_of(&sync, &blobs.join("2")).len(), 1);
        assert_eq!(syncs_of(&sync, &blobs.join("3")).len(), 1);
    }
}
