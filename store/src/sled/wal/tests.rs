//! The log on disk: what [`recover`] gives back after appends, torn tails,
//! damage and truncation, and what is synced before a record counts.

use std::path::Path;

use super::{record::Batch, recover, Log};
use crate::{
    inject::{FaultSync, Synced},
    SharedSync,
};

fn record(lsn: u64, value: &[u8]) -> super::record::Sealed {
    let mut batch = Batch::default();
    batch.insert(3, format!("acme/dlv_{lsn}").as_bytes(), value);
    batch.seal(lsn, lsn - 1)
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
fn damage_before_the_end_of_a_closed_segment_is_refused_naming_both_segments() {
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
            && refused.contains(&format!(
                "begins at record 2 but the log before it ends at record 0 ({} at byte offset 12)",
                first.display()
            ))
            && refused.contains("restore the data dir from a backup"),
        "{refused}"
    );
}

/// The bytes of the active segment, and the offset of each record in it.
fn active_segment(log: &Log) -> (Vec<u8>, Vec<usize>) {
    let bytes = std::fs::read(&log.active.path).unwrap();
    let mut offsets = vec![super::MAGIC.len()];
    while let super::record::Read::Record { len, .. } = super::record::read(
        &bytes[*offsets.last().unwrap()..],
        super::record::Format::V2,
    ) {
        offsets.push(offsets.last().unwrap() + len);
    }
    offsets.pop();
    (bytes, offsets)
}

/// One flipped byte in the 20th record from the end of the newest
/// segment, with 19 whole records after it that were written after it was
/// synced: acknowledged, so the start is refused, naming the file and the
/// offset, and nothing on disk is changed.
#[test]
fn a_damaged_record_before_whole_ones_is_refused_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    for lsn in 1..=30 {
        log.append(&record(lsn, &[lsn as u8; 100])).unwrap();
    }
    let (mut bytes, offsets) = active_segment(&log);
    assert_eq!(offsets.len(), 30);
    let at = offsets[10];
    bytes[at + 40] ^= 0x01;
    std::fs::write(&log.active.path, &bytes).unwrap();
    let path = log.active.path.clone();
    drop(log);

    let refused = recovered(dir.path(), 0).unwrap_err().to_string();
    assert!(
        refused.contains(&path.display().to_string())
            && refused.contains(&format!(
                "record at byte offset {at} (record 11) is damaged"
            ))
            && refused.contains(&format!(
                "record 12 at byte offset {} after it is whole",
                offsets[11]
            ))
            && refused.contains("does not start and changes nothing")
            && refused.contains("docs/durability.md"),
        "{refused}"
    );
    assert_eq!(std::fs::read(&path).unwrap(), bytes, "the evidence is kept");
    assert_eq!(segment_files(dir.path()), 1);
}

/// Damage in a record sled already holds loses nothing: reading goes on
/// from the whole record after it, and the records sled does not hold yet
/// are applied.
#[test]
fn damage_in_a_record_sled_holds_is_read_past() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    for lsn in 1..=30 {
        log.append(&record(lsn, &[lsn as u8; 100])).unwrap();
    }
    let (mut bytes, offsets) = active_segment(&log);
    bytes[offsets[10] + 40] ^= 0x01;
    std::fs::write(&log.active.path, &bytes).unwrap();
    let (last, seen) = recovered(dir.path(), 20).unwrap();
    assert_eq!(last, 30);
    assert_eq!(
        seen.iter().map(|(lsn, _)| *lsn).collect::<Vec<_>>(),
        (21..=30).collect::<Vec<_>>()
    );
}

/// A power loss before a group's sync may keep some of its records and
/// not others: a torn record followed by whole ones all sealed before it
/// was synced was never acknowledged, nor were they, and is the log's end.
#[test]
fn whole_records_after_a_torn_one_of_the_same_unsynced_writes_are_the_end() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    log.append(&record(1, b"kept")).unwrap();
    let group: Vec<_> = (2..=4)
        .map(|lsn| {
            let mut batch = Batch::default();
            batch.insert(3, b"acme/dlv", b"never acknowledged");
            batch.seal(lsn, 1)
        })
        .collect();
    log.append_all(&group).unwrap();
    let (mut bytes, offsets) = active_segment(&log);
    bytes[offsets[1] + 20] ^= 0x01;
    std::fs::write(&log.active.path, &bytes).unwrap();
    assert_eq!(
        recovered(dir.path(), 0).unwrap(),
        (1, vec![(1, b"kept".to_vec())])
    );
}

/// Segments written by a hookd before storage layout 10 (records without
/// `synced`) are still read, and damage before a whole record in one is
/// refused: nothing tells it from an acknowledged record.
#[test]
fn a_segment_of_format_1_is_read_and_its_damage_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut bytes = super::MAGIC_V1.to_vec();
    for lsn in 1..=3u64 {
        let mut body = lsn.to_le_bytes().to_vec();
        body.extend_from_slice(&[3, 1, 0, 0, 0, 1, 0, 0, 0, b'k', lsn as u8]);
        bytes.extend_from_slice(&(body.len() as u32).to_le_bytes());
        bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
        bytes.extend_from_slice(&body);
    }
    let path = dir.path().join(super::segment_name(1));
    std::fs::write(&path, &bytes).unwrap();
    assert_eq!(
        recovered(dir.path(), 1).unwrap(),
        (3, vec![(2, vec![2]), (3, vec![3])])
    );
    let record = 8 + 8 + 11;
    bytes[super::MAGIC.len() + record + 20] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();
    let refused = recovered(dir.path(), 1).unwrap_err().to_string();
    assert!(
        refused.contains("(record 2) is damaged, but record 3"),
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
    assert!(
        refused.contains("or one between them is missing"),
        "{refused}"
    );
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

/// The spare is prepared with a segment's header, synced before it is
/// renamed into place: a power loss after the rename and before the
/// segment's first sync leaves a newest segment with nothing in it, which
/// recovery reads as the log's end.
#[test]
fn a_spare_renamed_into_place_before_its_first_sync_reads_as_empty() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = small_segments(Log::create(dir.path(), None, 1).unwrap());
    log.append(&record(1, b"kept")).unwrap();
    log.spare.written.store(
        super::SPARE_AFTER_BYTES,
        std::sync::atomic::Ordering::Relaxed,
    );
    log.truncator().truncate_through(0).unwrap();
    let spare = dir.path().join(super::SPARE);
    assert!(std::fs::read(&spare).unwrap().starts_with(super::MAGIC));
    std::fs::rename(&spare, dir.path().join(super::segment_name(2))).unwrap();
    drop(log);
    assert_eq!(
        recovered(dir.path(), 0).unwrap(),
        (1, vec![(1, b"kept".to_vec())])
    );
}

/// A newest segment whose header is zeros (a spare an older hookd renamed
/// into place before writing its header, and a power loss) never had a
/// record acknowledged: recovery skips it. The same zeros before another
/// segment are damage.
#[test]
fn a_newest_segment_of_zeros_is_harmless_and_an_older_one_refused() {
    let dir = tempfile::tempdir().unwrap();
    let mut log = Log::create(dir.path(), None, 1).unwrap();
    log.append(&record(1, b"kept")).unwrap();
    drop(log);
    let zeros = dir.path().join(super::segment_name(2));
    std::fs::write(&zeros, vec![0; 4096]).unwrap();
    assert_eq!(
        recovered(dir.path(), 0).unwrap(),
        (1, vec![(1, b"kept".to_vec())])
    );

    let mut after = super::MAGIC.to_vec();
    after.extend_from_slice(record(3, b"x").bytes());
    std::fs::write(dir.path().join(super::segment_name(3)), after).unwrap();
    let refused = recovered(dir.path(), 0).unwrap_err().to_string();
    assert!(
        refused.contains(&zeros.display().to_string())
            && refused.contains("not a hookd log of a known format"),
        "{refused}"
    );
}
