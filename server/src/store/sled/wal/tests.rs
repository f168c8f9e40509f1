//! The log on disk: what [`recover`] gives back after appends, torn tails,
//! damage and truncation, and what is synced before a record counts.

use std::path::Path;

use super::{record::Batch, recover, Log};
use crate::{
    faults::{FaultSync, Synced},
    store::SharedSync,
};

fn record(lsn: u64, value: &[u8]) -> super::record::Sealed {
    let mut batch = Batch::default();
    batch.insert(3, format!("acme/dlv_{lsn}").as_bytes(), value);
    batch.seal(lsn)
}

/// Records read back: (number, first value).
type Seen = Vec<(u64, Vec<u8>)>;

/// The last number, and every record above `applied`.
fn recovered(dir: &Path, applied: u64) -> crate::error::Result<(u64, Seen)> {
    let mut seen = Vec::new();
    let last = recover(dir, applied, |lsn, ops| {
        let super::record::Op::Insert(_, _, value) =
            super::record::ops(ops).next().expect("one op")?
        else {
            panic!("an insert");
        };
        seen.push((lsn, value.to_vec()));
        Ok(())
    })?;
    Ok((last, seen))
}

fn small_segments(log: Log) -> Log {
    Log {
        segment_bytes: 64,
        ..log
    }
}

#[test]
fn appended_records_come_back_past_the_applied_one() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    for lsn in 1..=5 {
        log.append(&record(lsn, &[lsn as u8])).unwrap();
    }
    let (last, seen) = recovered(dir.path(), 2).unwrap();
    assert_eq!(last, 5);
    assert_eq!(
        seen,
        vec![(3, vec![3]), (4, vec![4]), (5, vec![5])],
        "records 1 and 2 are in sled already"
    );
    assert_eq!(recovered(dir.path(), 5).unwrap(), (5, vec![]));
}

#[test]
fn a_torn_last_record_is_left_out_and_the_acknowledged_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    log.append(&record(1, b"kept")).unwrap();
    log.append(&record(2, b"torn")).unwrap();
    let path = log.active.path.clone();
    drop(log);
    let len = std::fs::metadata(&path).unwrap().len();
    let file = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
    file.set_len(len - 3).unwrap();
    assert_eq!(
        recovered(dir.path(), 0).unwrap(),
        (1, vec![(1, b"kept".to_vec())])
    );
}

#[test]
fn damage_before_the_end_of_the_log_is_refused_naming_the_segment_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = small_segments(Log::create(dir.path(), None, 1).unwrap());
    for lsn in 1..=4 {
        log.append(&record(lsn, &[0; 40])).unwrap();
    }
    let first = dir.path().join(super::segment_name(1));
    let mut bytes = std::fs::read(&first).unwrap();
    let at = bytes.len() - 2;
    bytes[at] ^= 0xff;
    std::fs::write(&first, bytes).unwrap();
    let refused = recovered(dir.path(), 0).unwrap_err().to_string();
    let second = dir.path().join(super::segment_name(2));
    assert!(
        refused.contains(&second.display().to_string())
            && refused.contains("starts at record 2 but the log before it ends at 0"),
        "{refused}"
    );
}

#[test]
fn a_missing_segment_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = small_segments(Log::create(dir.path(), None, 1).unwrap());
    log.append(&record(1, &[0; 40])).unwrap();
    log.append(&record(3, &[0; 40])).unwrap();
    let refused = recovered(dir.path(), 0).unwrap_err().to_string();
    assert!(refused.contains("damaged or missing"), "{refused}");
}

fn segment_files(dir: &Path) -> usize {
    std::fs::read_dir(dir)
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .path()
                .extension()
                .is_some_and(|x| x == "wal")
        })
        .count()
}

#[test]
fn closed_segments_go_once_a_checkpoint_covers_them_and_recovery_reads_across_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = small_segments(Log::create(dir.path(), None, 1).unwrap());
    for lsn in 1..=6 {
        log.append(&record(lsn, &[lsn as u8; 40])).unwrap();
    }
    assert_eq!(
        segment_files(dir.path()),
        6,
        "each record overflows a 64-byte segment"
    );
    let truncator = log.truncator();
    assert_eq!(truncator.truncate_through(3).unwrap(), 3);
    assert_eq!(segment_files(dir.path()), 3);
    assert!(
        dir.path().join(super::SPARE).exists(),
        "a whole segment is kept as the spare"
    );
    assert_eq!(
        truncator.truncate_through(9).unwrap(),
        2,
        "the active segment stays"
    );
    let (last, seen) = recovered(dir.path(), 5).unwrap();
    assert_eq!((last, seen.len()), (6, 1));
}

/// A recycled segment still holds its old records after the new ones: they
/// end the segment, and are never replayed.
#[test]
fn a_recycled_segments_old_records_are_not_read_as_new() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = small_segments(Log::create(dir.path(), None, 1).unwrap());
    for lsn in 1..=3 {
        log.append(&record(lsn, &[7; 200])).unwrap();
    }
    log.truncator().truncate_through(2).unwrap();
    log.append(&record(4, b"new")).unwrap();
    let fourth = dir.path().join(super::segment_name(4));
    assert!(
        std::fs::metadata(&fourth).unwrap().len() > 200,
        "segment 4 is the recycled segment 1, old record behind the new one"
    );
    assert_eq!(
        recovered(dir.path(), 2).unwrap(),
        (4, vec![(3, vec![7; 200]), (4, b"new".to_vec())])
    );
}

#[test]
fn a_record_counts_only_after_its_segment_and_a_new_segments_name_are_synced() {
    let dir = tempfile::tempdir().unwrap();
    let sync = FaultSync::new();
    let mut log =
        small_segments(Log::create(dir.path(), Some(sync.clone() as SharedSync), 1).unwrap());
    let before = sync.synced().len();
    log.append(&record(1, &[0; 40])).unwrap();
    log.append(&record(2, &[0; 40])).unwrap();
    let synced = sync.synced().split_off(before);
    let second = dir.path().join(super::segment_name(2));
    let file_at = synced
        .iter()
        .rposition(|s| matches!(s, Synced::File { path, len } if *path == second && *len > 12));
    let dir_at = synced
        .iter()
        .rposition(|s| matches!(s, Synced::Dir(d) if d == dir.path()));
    assert!(
        file_at.is_some() && dir_at > file_at,
        "the new segment's data, then its name: {synced:?}"
    );
    sync.fail_once();
    assert!(
        log.append(&record(3, b"x")).is_err(),
        "a failed sync fails the append"
    );
}
