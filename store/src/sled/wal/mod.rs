//! The write-ahead log that makes ingest durable: its segments under
//! `data_dir/wal/`, the log thread's appending end, and recovery.

pub mod record;

use std::{
    fs::{File, OpenOptions},
    io::{self, Read as _, Write as _},
    os::unix::fs::FileExt,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use self::record::{number_at, read, Format, Read, Sealed};
use super::sync::SharedSync;
use crate::error::{Error, Result};

/// A segment is closed once this much is written to it; closed segments
/// are recycled (or deleted) once a checkpoint made sled hold all their
/// records.
pub const SEGMENT_BYTES: u64 = 32 * 1024 * 1024;

/// The first bytes of every segment: magic and the record format, 2
/// ([`Format::V2`]).
const MAGIC: &[u8; 12] = b"HOOKDWAL\x02\0\0\0";

/// The first bytes of a segment of [`Format::V1`] records, which a hookd
/// before storage layout 10 wrote and recovery still reads.
const MAGIC_V1: &[u8; 12] = b"HOOKDWAL\x01\0\0\0";

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
/// least `applied`).
///
/// A segment's records end at the first that is not whole and numbered on
/// from its name, unless whole records numbered on follow it: then it is
/// damage ([`replay_segment`]). A gap between segments (one damaged before
/// its end, or missing), a segment of an unknown format or one cut short
/// before the newest may hide acknowledged records and is refused, with an
/// error naming the file and what to do. The newest segment's header may
/// be zeros (a power loss before its first sync, with nothing in it
/// acknowledged, as its header is synced with its first record, or before
/// it when it was prepared as the spare): its records are read as this
/// hookd writes them. Nothing is changed on disk.
pub fn recover(
    dir: &Path,
    applied: u64,
    mut replay: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<u64> {
    let found = segments(dir)?;
    let mut last = applied;
    // The segment before and the offset where its records ended.
    let mut before: Option<(&Path, usize)> = None;
    for (n, (first, path)) in found.iter().enumerate() {
        let newest = n + 1 == found.len();
        let damaged = |what: String| Error::storage(refusal(path, &what, dir), None);
        if *first > last + 1 {
            let ended = match before {
                Some((prev, at)) => format!(
                    "the log before it ends at record {last} ({} at byte offset {at}): that \
                     segment is damaged before its end, or one between them is missing",
                    prev.display()
                ),
                None => format!(
                    "sled holds the log up to record {last}: a segment before it is missing"
                ),
            };
            return Err(damaged(format!("begins at record {first} but {ended}")));
        }
        let mut bytes = Vec::new();
        File::open(path)?.read_to_end(&mut bytes)?;
        if bytes.len() < MAGIC.len() {
            if newest {
                break;
            }
            return Err(damaged("is cut short".into()));
        }
        let format = match &bytes[..MAGIC.len()] {
            header if header == MAGIC => Format::V2,
            header if header == MAGIC_V1 => Format::V1,
            header if newest && header.iter().all(|b| *b == 0) => Format::V2,
            _ => return Err(damaged("is not a hookd log of a known format".into())),
        };
        let segment = OnDisk {
            path,
            bytes: &bytes,
            first: *first,
            format,
            newest,
        };
        let end = replay_segment(&segment, applied, &mut last, &mut replay, &damaged)?;
        before = Some((path, end));
    }
    Ok(last)
}

/// One segment as recovery reads it.
struct OnDisk<'a> {
    path: &'a Path,
    bytes: &'a [u8],
    /// The number its name gives its first record.
    first: u64,
    format: Format,
    /// No segment comes after it.
    newest: bool,
}

/// Replays the records of `segment` numbered above `applied` (after
/// `last`, which it moves on), and returns the offset where they end.
///
/// Reading stops at the first record that is not whole and numbered on.
/// Where a whole record numbered on follows, the stop is damage, not the
/// end: harmless when sled holds every record it skips (reading goes on
/// from the whole one, with a warning), else refused, with an error naming
/// the offset, unless this is the newest segment and every whole record
/// after it was sealed before the damaged one was synced. Those are the
/// last writes, which a power loss kept in part: none of them, nor the
/// damaged one, was acknowledged, and they are the end. Every record
/// before the newest segment was synced before the next segment was begun.
fn replay_segment(
    segment: &OnDisk<'_>,
    applied: u64,
    last: &mut u64,
    replay: &mut impl FnMut(u64, &[u8]) -> Result<()>,
    damaged: &dyn Fn(String) -> Error,
) -> Result<usize> {
    let (mut at, mut expected) = (MAGIC.len(), segment.first);
    loop {
        while let Read::Record { lsn, ops, len, .. } = read(&segment.bytes[at..], segment.format) {
            if lsn != expected {
                break;
            }
            if lsn > applied {
                if lsn != *last + 1 {
                    return Err(damaged(format!(
                        "holds record {lsn} but the log before it ends at {last}"
                    )));
                }
                replay(lsn, ops)?;
                *last = lsn;
            }
            (at, expected) = (at + len, expected + 1);
        }
        let mut after = whole_after(segment.bytes, at, expected, segment.format);
        let Some(next) = after.next() else {
            return Ok(at);
        };
        if next.lsn <= applied + 1 {
            tracing::warn!(
                segment = %segment.path.display(),
                offset = at,
                record = expected,
                "a write-ahead log record is damaged, one sled already holds, so nothing is \
                 lost; check the disk"
            );
            (at, expected) = (next.at, next.lsn);
            continue;
        }
        let proof = match segment.newest {
            false => Some(next),
            true => std::iter::once(next)
                .chain(after)
                .find(|r| r.synced.is_none_or(|synced| synced >= expected)),
        };
        let Some(whole) = proof else {
            return Ok(at);
        };
        return Err(damaged(format!(
            "the record at byte offset {at} (record {expected}) is damaged, but record {} at \
             byte offset {} after it is whole{}",
            whole.lsn,
            whole.at,
            match whole.synced {
                Some(_) => " and was written after the damaged one was synced",
                None => "",
            }
        )));
    }
}

/// What hookd answers a damaged log with: the file, what is wrong and what
/// to do.
fn refusal(path: &Path, what: &str, dir: &Path) -> String {
    format!(
        "write-ahead log segment {}: {what}. Acknowledged deliveries may be lost, so hookd \
         does not start and changes nothing. Keep a copy of {} as evidence, then restore the \
         data dir from a backup, or accept losing the records from the damage on: see \
         \"A damaged write-ahead log\" in docs/durability.md",
        path.display(),
        dir.display()
    )
}

/// A whole record found where a segment's records had ended.
struct Whole {
    at: usize,
    lsn: u64,
    synced: Option<u64>,
}

/// The whole records of `format` in `bytes` from offset `from` on that
/// are numbered `expected` or more: the records of a recycled segment
/// there are numbered below its name, and zeros are no record. Only a
/// record's number is read at each offset, and its checksum only where the
/// number fits.
fn whole_after(
    bytes: &[u8],
    from: usize,
    expected: u64,
    format: Format,
) -> impl Iterator<Item = Whole> + '_ {
    let most = expected.saturating_add(((bytes.len() - from) / format.header()) as u64);
    let mut at = from;
    std::iter::from_fn(move || {
        while at + format.header() <= bytes.len() {
            let here = at;
            at += 1;
            if !number_at(&bytes[here..]).is_some_and(|n| (expected..=most).contains(&n)) {
                continue;
            }
            if let Read::Record {
                lsn, synced, len, ..
            } = read(&bytes[here..], format)
            {
                at = here + len;
                return Some(Whole {
                    at: here,
                    lsn,
                    synced,
                });
            }
        }
        None
    })
}

/// A segment being written.
struct Segment {
    path: PathBuf,
    file: File,
    /// Bytes written (the offset of the next record).
    len: u64,
    /// True when its blocks were allocated and written before (a spare):
    /// records overwrite them, and the file's length stays.
    prepared: bool,
    last_lsn: u64,
}

/// Closed segments and the highest record number in each.
type Closed = Arc<Mutex<Vec<(PathBuf, u64)>>>;

/// The appending end of the log: one thread writes and syncs through it.
///
/// Each batch of accepted deliveries, applied to sled in one transaction,
/// is also one checksummed record ([`record`]); the log thread writes every record applied since
/// its last sync to the active segment under `data_dir/wal/` and
/// fdatasyncs once before any of their writers is answered. sled is made
/// durable lazily by checkpoints (flush + fdatasync of its files), after
/// which the segments sled holds are recycled. After a crash, [`recover`]
/// hands every record past the last one sled holds (its number is written
/// in each batch's transaction) to be applied again; a record the crash
/// tore at the log's end was never acknowledged and is left out.
///
/// Segments are named by the number of their first record
/// (`{lsn:020}.wal`), start with an 8-byte magic and a version, and are
/// replaced by a new one once [`SEGMENT_BYTES`] are written; a new
/// segment's name is made durable (directory fsync) before a record in it
/// is acknowledged. An fdatasync that makes a file longer must also commit
/// the file system's journal (the new length and blocks), about a third of
/// its cost on the disks measured, so segments are written over blocks
/// already allocated and written: a spare prepared ahead (a header and
/// zeros, synced once before it is renamed into place) or an old segment
/// recycled. Records in a segment are numbered on from its name; the first
/// that is not (zeros, an old segment's records, a torn write) ends it,
/// unless whole records numbered on follow it: then it is damage, which
/// [`recover`] refuses rather than drop what follows.
pub struct Log {
    dir: PathBuf,
    dir_handle: File,
    sync: Option<SharedSync>,
    active: Segment,
    closed: Closed,
    spare: Spare,
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
        let _ = std::fs::remove_file(dir.join(SPARE_FILLING));
        Spare::drop_if_older(dir)?;
        let dir_handle = File::open(dir)?;
        if let (Some(ops), Some(parent)) = (&sync, dir.parent()) {
            ops.sync_dir(parent, &File::open(parent)?)?;
        }
        let spare = Spare {
            dir: dir.to_owned(),
            sync: sync.clone(),
            written: Arc::default(),
        };
        let active = spare.take(next_lsn)?;
        let log = Log {
            dir: dir.to_owned(),
            dir_handle,
            sync,
            active,
            closed: Closed::default(),
            spare,
            segment_bytes: SEGMENT_BYTES,
        };
        log.sync_new_segment()?;
        Ok(log)
    }

    /// Appends `record` and makes it durable (unless syncs are off): when
    /// this returns Ok, a crash or power loss keeps it.
    #[cfg(test)]
    pub fn append(&mut self, record: &Sealed) -> io::Result<()> {
        self.append_all(std::slice::from_ref(record))
    }

    /// Appends `records` in order and makes them durable with one
    /// fdatasync (two when a segment fills among them): when this returns
    /// Ok, a crash or power loss keeps every one.
    pub fn append_all(&mut self, records: &[Sealed]) -> io::Result<()> {
        let mut rolled = false;
        for record in records {
            let full = self.active.len + record.bytes().len() as u64 > self.segment_bytes;
            if self.active.len > MAGIC.len() as u64
                && (full || (!self.active.prepared && self.spare.is_ready()))
            {
                self.sync_active()?;
                let next = self.spare.take(record.lsn())?;
                let old = std::mem::replace(&mut self.active, next);
                self.closed
                    .lock()
                    .expect("closed segments lock")
                    .push((old.path, old.last_lsn));
                rolled = true;
            }
            self.active
                .file
                .write_all_at(record.bytes(), self.active.len)?;
            self.active.len += record.bytes().len() as u64;
            self.active.last_lsn = record.lsn();
            self.spare
                .written
                .fetch_add(record.bytes().len() as u64, Ordering::Relaxed);
        }
        match rolled {
            true => self.sync_new_segment(),
            false => self.sync_active(),
        }
    }

    fn sync_active(&self) -> io::Result<()> {
        match &self.sync {
            Some(ops) => ops.sync_file(&self.active.path, &self.active.file),
            None => Ok(()),
        }
    }

    /// A handle that recycles or deletes the closed segments a checkpoint
    /// covers, and prepares the spare.
    pub fn truncator(&self) -> Truncator {
        Truncator {
            closed: self.closed.clone(),
            spare: self.spare.clone(),
            segment_bytes: self.segment_bytes,
        }
    }

    /// Makes the active segment's name durable: its file and its directory.
    fn sync_new_segment(&self) -> io::Result<()> {
        let Some(ops) = &self.sync else {
            return Ok(());
        };
        ops.sync_file(&self.active.path, &self.active.file)?;
        ops.sync_dir(&self.dir, &self.dir_handle)
    }
}

/// The spare segment's name while it waits, whole.
const SPARE: &str = "spare";
/// Its name while it is being filled.
const SPARE_FILLING: &str = "spare.filling";

/// Bytes the log must have written before a spare is prepared: a store
/// that takes little ingest (or a test) never writes a segment of zeros.
const SPARE_AFTER_BYTES: u64 = 1024 * 1024;

/// Where the next segment comes from: the spare when one is ready (whose
/// blocks are written), else a new, empty file.
#[derive(Clone)]
struct Spare {
    dir: PathBuf,
    sync: Option<SharedSync>,
    /// Bytes the log wrote since it started.
    written: Arc<AtomicU64>,
}

impl Spare {
    fn path(&self) -> PathBuf {
        self.dir.join(SPARE)
    }

    fn is_ready(&self) -> bool {
        self.path().exists()
    }

    /// Deletes a spare in `dir` whose header is not this format's (one an
    /// older hookd left): records written over it must never be read in the
    /// older format, were its header to stay so through a power loss.
    fn drop_if_older(dir: &Path) -> io::Result<()> {
        let path = dir.join(SPARE);
        let mut header = [0u8; MAGIC.len()];
        let current = match File::open(&path) {
            Ok(mut file) => file.read_exact(&mut header).is_ok() && &header == MAGIC,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
            Err(e) => return Err(e),
        };
        match current {
            true => Ok(()),
            false => std::fs::remove_file(path),
        }
    }

    /// The segment whose first record is `first_lsn`: the spare renamed
    /// (its header written and synced when it was prepared), or a new file
    /// with its header written; the new name is not synced yet.
    fn take(&self, first_lsn: u64) -> io::Result<Segment> {
        let path = self.dir.join(segment_name(first_lsn));
        let prepared = std::fs::rename(self.path(), &path).is_ok();
        let file = OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)?;
        if !prepared {
            file.write_all_at(MAGIC, 0)?;
        }
        Ok(Segment {
            path,
            file,
            len: MAGIC.len() as u64,
            prepared,
            last_lsn: first_lsn.saturating_sub(1),
        })
    }

    /// Makes `old` (a closed segment sled holds) the spare, if none is
    /// ready and it is a whole segment; else deletes it.
    fn recycle(&self, old: &Path, segment_bytes: u64) -> io::Result<()> {
        let whole = std::fs::metadata(old)?.len() >= segment_bytes;
        if whole && !self.is_ready() {
            return std::fs::rename(old, self.path());
        }
        std::fs::remove_file(old)
    }

    /// Writes a spare (synced once) when none is ready and the log is in
    /// real use: a segment's header and zeros, so that once it is renamed
    /// into place a power loss before its first sync leaves a segment that
    /// reads as empty, never one of an unknown format.
    fn prepare(&self, segment_bytes: u64) -> io::Result<()> {
        if self.is_ready() || self.written.load(Ordering::Relaxed) < SPARE_AFTER_BYTES {
            return Ok(());
        }
        let filling = self.dir.join(SPARE_FILLING);
        let mut file = File::create(&filling)?;
        file.write_all(MAGIC)?;
        let zeros = vec![0u8; 1024 * 1024];
        let mut left = segment_bytes - MAGIC.len() as u64;
        while left > 0 {
            let n = left.min(zeros.len() as u64) as usize;
            file.write_all(&zeros[..n])?;
            left -= n as u64;
        }
        if let Some(ops) = &self.sync {
            ops.sync_file(&filling, &file)?;
        }
        std::fs::rename(filling, self.path())
    }
}

/// Recycles (or deletes) closed segments once sled holds their records
/// durably, and prepares the spare.
#[derive(Clone)]
pub struct Truncator {
    closed: Closed,
    spare: Spare,
    segment_bytes: u64,
}

impl Truncator {
    /// Recycles or deletes every closed segment whose records are all
    /// numbered at most `durable` (the last record a checkpoint made sled
    /// hold durably), then prepares a spare if none is ready. Neither is
    /// synced: a segment that comes back after a power loss holds only
    /// records sled has, which recovery skips, and a spare that comes back
    /// half written is rewritten.
    pub fn truncate_through(&self, durable: u64) -> io::Result<usize> {
        let mut removed = 0;
        loop {
            let old = {
                let mut closed = self.closed.lock().expect("closed segments lock");
                match closed.first() {
                    Some((_, last)) if *last <= durable => closed.remove(0).0,
                    _ => break,
                }
            };
            self.spare.recycle(&old, self.segment_bytes)?;
            removed += 1;
        }
        self.spare.prepare(self.segment_bytes)?;
        Ok(removed)
    }
}

#[cfg(test)]
mod tests;
