//! The write-ahead log that makes ingest durable: each batch of accepted
//! deliveries is appended as one checksummed record ([`record`]) to the
//! active segment under `data_dir/wal/` and fdatasynced once, on the
//! committing side, before any of it is applied to sled or answered. sled
//! then holds only what the log already has, and is made durable lazily by
//! checkpoints (flush + fdatasync of its files), after which the segments
//! sled has are deleted. After a crash, [`recover`] hands every record past
//! the last one sled holds (its number is recorded in sled with each batch)
//! to be applied again; a record the crash tore at the log's end was never
//! acknowledged and is left out.
//!
//! Segments are named by the number of their first record
//! (`{lsn:020}.wal`), start with an 8-byte magic and a version, and are
//! replaced by a new one once longer than [`SEGMENT_BYTES`]; a new
//! segment's name is made durable (directory fsync) before a record in it
//! is acknowledged.

pub mod record;

use std::{
    fs::{File, OpenOptions},
    io::{self, Read as _, Write as _},
    path::{Path, PathBuf},
    sync::{Arc, Mutex},
};

use self::record::{read, Read, Sealed};
use super::sync::SharedSync;
use crate::error::{Error, Result};

/// A segment is closed once longer than this; closed segments are deleted
/// once a checkpoint made sled hold all their records.
pub const SEGMENT_BYTES: u64 = 64 * 1024 * 1024;

/// The first bytes of every segment: magic and format version 1.
const MAGIC: &[u8; 12] = b"HOOKDWAL\x01\0\0\0";

/// The log's directory in a data dir.
pub fn wal_path(data_dir: &Path) -> PathBuf {
    data_dir.join("wal")
}

fn segment_name(first_lsn: u64) -> String {
    format!("{first_lsn:020}.wal")
}

/// The segment files in `dir`, oldest first, with their first numbers.
fn segments(dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir)? {
        let path = entry?.path();
        let first = path
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(|n| n.strip_suffix(".wal"))
            .and_then(|n| n.parse::<u64>().ok());
        if let Some(first) = first {
            found.push((first, path));
        }
    }
    found.sort();
    Ok(found)
}

/// Reads every segment in `dir` and calls `replay` with each record
/// numbered above `applied`, in order; returns the highest number seen (at
/// least `applied`). A torn record ends the last segment; one anywhere
/// else, a gap in the numbers or a segment without the magic is damage the
/// log cannot recover from, and is refused with an error naming the file.
pub fn recover(
    dir: &Path,
    applied: u64,
    mut replay: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let found = segments(dir)?;
    let mut last = applied;
    for (n, (_, path)) in found.iter().enumerate() {
        let mut bytes = Vec::new();
        File::open(path)?.read_to_end(&mut bytes)?;
        let damaged = |what: &str| {
            Error::storage(
                format!(
                    "write-ahead log segment {} {what}: acknowledged deliveries may be in it, \
                     so hookd does not start; restore the data dir from a backup",
                    path.display()
                ),
                None,
            )
        };
        if bytes.len() < MAGIC.len() {
            if n + 1 == found.len() {
                break;
            }
            return Err(damaged("is cut short"));
        }
        if &bytes[..MAGIC.len()] != MAGIC {
            return Err(damaged("is not a hookd log of a known format"));
        }
        let mut at = MAGIC.len();
        loop {
            match read(&bytes[at..]) {
                Read::Record { lsn, ops, len } => {
                    if lsn > applied {
                        if lsn != last + 1 {
                            return Err(damaged(&format!("jumps from record {last} to {lsn}")));
                        }
                        replay(lsn, ops)?;
                        last = lsn;
                    }
                    at += len;
                }
                Read::End => break,
                Read::Torn if n + 1 == found.len() => break,
                Read::Torn => return Err(damaged(&format!("is damaged at byte {at}"))),
            }
        }
    }
    Ok(last)
}

/// A segment being appended to.
struct Segment {
    path: PathBuf,
    file: File,
    len: u64,
    last_lsn: u64,
}

/// Closed segments and the highest record number in each.
type Closed = Arc<Mutex<Vec<(PathBuf, u64)>>>;

/// The appending end of the log: one thread writes and syncs through it.
pub struct Log {
    dir: PathBuf,
    dir_handle: File,
    sync: Option<SharedSync>,
    active: Segment,
    closed: Closed,
    /// [`SEGMENT_BYTES`], smaller in tests.
    segment_bytes: u64,
}

impl Log {
    /// Starts a fresh log in `dir` whose first record will be `next_lsn`,
    /// deleting the segments there: call it only once sled durably holds
    /// every record in them (after [`recover`] and a checkpoint).
    pub fn create(dir: &Path, sync: Option<SharedSync>, next_lsn: u64) -> Result<Log> {
        std::fs::create_dir_all(dir)?;
        for (_, path) in segments(dir)? {
            std::fs::remove_file(path)?;
        }
        let dir_handle = File::open(dir)?;
        if let (Some(ops), Some(parent)) = (&sync, dir.parent()) {
            ops.sync_dir(parent, &File::open(parent)?)?;
        }
        let active = Segment::create(dir, next_lsn)?;
        let mut log = Log {
            dir: dir.to_owned(),
            dir_handle,
            sync,
            active,
            closed: Closed::default(),
            segment_bytes: SEGMENT_BYTES,
        };
        log.sync_new_segment()?;
        Ok(log)
    }

    /// Appends `record` and makes it durable (unless syncs are off): when
    /// this returns Ok, a crash or power loss keeps it.
    pub fn append(&mut self, record: &Sealed) -> io::Result<()> {
        let rolled = self.active.len > self.segment_bytes;
        if rolled {
            let next = Segment::create(&self.dir, record.lsn())?;
            let old = std::mem::replace(&mut self.active, next);
            self.closed
                .lock()
                .expect("closed segments lock")
                .push((old.path, old.last_lsn));
        }
        self.active.file.write_all(record.bytes())?;
        self.active.len += record.bytes().len() as u64;
        self.active.last_lsn = record.lsn();
        if let Some(ops) = &self.sync {
            ops.sync_file(&self.active.path, &self.active.file)?;
        }
        if rolled {
            self.sync_new_segment()?;
        }
        Ok(())
    }

    /// A handle that deletes the closed segments a checkpoint covers.
    pub fn truncator(&self) -> Truncator {
        Truncator {
            closed: self.closed.clone(),
        }
    }

    /// Makes the active segment's name durable: its file and its directory.
    fn sync_new_segment(&mut self) -> io::Result<()> {
        let Some(ops) = &self.sync else {
            return Ok(());
        };
        ops.sync_file(&self.active.path, &self.active.file)?;
        ops.sync_dir(&self.dir, &self.dir_handle)
    }
}

impl Segment {
    fn create(dir: &Path, first_lsn: u64) -> io::Result<Segment> {
        let path = dir.join(segment_name(first_lsn));
        let mut file = OpenOptions::new()
            .create_new(true)
            .append(true)
            .open(&path)?;
        file.write_all(MAGIC)?;
        Ok(Segment {
            path,
            file,
            len: MAGIC.len() as u64,
            last_lsn: first_lsn.saturating_sub(1),
        })
    }
}

/// Deletes closed segments once sled holds their records durably.
#[derive(Clone)]
pub struct Truncator {
    closed: Closed,
}

impl Truncator {
    /// Deletes every closed segment whose records are all numbered at most
    /// `durable` (the last record a checkpoint made sled hold durably).
    /// Deleting is not synced: a segment that comes back after a power loss
    /// holds only records sled has, which recovery skips.
    pub fn truncate_through(&self, durable: u64) -> io::Result<usize> {
        let mut closed = self.closed.lock().expect("closed segments lock");
        let mut removed = 0;
        while closed.first().is_some_and(|(_, last)| *last <= durable) {
            let (path, _) = closed.remove(0);
            std::fs::remove_file(path)?;
            removed += 1;
        }
        Ok(removed)
    }
}

#[cfg(test)]
mod tests;
