//! A damaged data dir at start, against the real `hookd` binary: hookd
//! refuses to start, names the damaged file and what to do, and changes
//! nothing on disk.

use std::path::{Path, PathBuf};

use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, ACME},
    process::HookdProcess,
};

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, ACME).unwrap();
    let data = dir.path().join("data");
    (dir, data, config)
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// Every file under `dir` with its bytes, sorted by path.
fn files(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        match path.is_dir() {
            true => found.extend(files(&path)),
            false => found.push((path.clone(), std::fs::read(&path).unwrap())),
        }
    }
    found.sort();
    found
}

/// The offsets of the records of a write-ahead log segment: after its
/// 12-byte header, each record is `len: u32 | crc32: u32 | len bytes`.
fn record_offsets(segment: &[u8]) -> Vec<usize> {
    let mut offsets = Vec::new();
    let mut at = 12;
    while at + 8 <= segment.len() {
        let len = u32::from_le_bytes(segment[at..at + 4].try_into().unwrap()) as usize;
        if len == 0 {
            break;
        }
        offsets.push(at);
        at += 8 + len;
    }
    offsets
}

/// One flipped byte in the 20th record from the end of the log, whose
/// deliveries were acknowledged and which sled did not hold yet (a power
/// loss before its next checkpoint): the start is refused with the
/// segment's path, the record's offset and what to do, and no file of the
/// log is deleted or changed. (Reading the log up to the damage would
/// drop the 19 acknowledged records after it.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flipped_byte_mid_log_refuses_the_start_and_keeps_the_log() {
    let (_dir, data, config) = setup();
    let mut hookd = tokio::task::block_in_place(|| HookdProcess::spawn(&data, &config, &[]));
    tokio::task::block_in_place(|| hookd.terminate());
    let store = data.join("store");
    let before = tempfile::tempdir().unwrap();
    copy_dir(&store, before.path());

    let mut hookd = tokio::task::block_in_place(|| HookdProcess::spawn(&data, &config, &[]));
    for n in 0..40 {
        let id = format!("evt_{n}");
        let (status, answer) = hookd.post(&id, now_secs(), &order(&id)).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    }
    hookd.child.kill().unwrap();
    hookd.child.wait().unwrap();
    std::fs::remove_dir_all(&store).unwrap();
    copy_dir(before.path(), &store);

    let wal = data.join("wal");
    let segment = files(&wal)
        .into_iter()
        .filter(|(path, _)| path.extension().is_some_and(|x| x == "wal"))
        .max()
        .unwrap()
        .0;
    let mut bytes = std::fs::read(&segment).unwrap();
    let offsets = record_offsets(&bytes);
    assert!(offsets.len() >= 40, "{} records", offsets.len());
    let at = offsets[offsets.len() - 20];
    bytes[at + 30] ^= 0x01;
    std::fs::write(&segment, &bytes).unwrap();
    let log = files(&wal);

    let stderr = tokio::task::block_in_place(|| HookdProcess::refused(&data, &config));
    assert!(
        stderr.contains(&segment.display().to_string())
            && stderr.contains(&format!("byte offset {at}"))
            && stderr.contains("restore the data dir from a backup"),
        "names the segment, the offset and what to do:\n{stderr}"
    );
    assert_eq!(files(&wal), log, "the log is kept as it was");
}
