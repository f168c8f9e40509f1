//! Tests of what the committer makes durable before it answers, with the
//! syncs recorded (or failed) through [`FaultSync`].

use std::{
    path::Path,
    sync::{Arc, Mutex, OnceLock},
};

use bytes::Bytes;

use super::{
    api::RouteCopy, records::EventMeta, sled_path, CommitOutcome, NewDelivery, SharedSync,
    SledStore, TenantTrees,
};
use crate::{
    ids::{DeliveryId, EventId, TenantId},
    inject::{FaultSync, Synced},
};

/// Every log line of this test binary, from every thread (the committer's
/// included). Only this module installs it; lines of other tests mix in, so
/// a test looks for its own message.
#[derive(Clone, Default)]
struct CapturedLogs(Arc<Mutex<Vec<u8>>>);

impl CapturedLogs {
    fn install() -> CapturedLogs {
        static LOGS: OnceLock<CapturedLogs> = OnceLock::new();
        LOGS.get_or_init(|| {
            let logs = CapturedLogs::default();
            let writer = logs.clone();
            tracing_subscriber::fmt()
                .with_ansi(false)
                .with_writer(move || writer.clone())
                .init();
            logs
        })
        .clone()
    }

    fn lines(&self) -> Vec<String> {
        String::from_utf8_lossy(&self.0.lock().unwrap())
            .lines()
            .map(str::to_owned)
            .collect()
    }
}

impl std::io::Write for CapturedLogs {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(super) fn delivery(event_id: &str, body: Bytes) -> NewDelivery {
    NewDelivery {
        event_id: EventId::new(event_id),
        meta: EventMeta::bare(event_id, 1),
        body,
        due_ms: 1,
        content_key: None,
        copies: Vec::new(),
        receipt: crate::api::Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

/// [`delivery`] fanned out to `routes` of `tenant` too, each copy sharing
/// its place as the gate makes copies ([`DeliveryId::sharing`]) and listed
/// on the default route's delivery as the gate lists it.
pub(super) fn fanned_out(
    event_id: &str,
    body: Bytes,
    tenant: &TenantId,
    routes: &[&str],
) -> NewDelivery {
    let mut item = delivery(event_id, body);
    item.copies = routes
        .iter()
        .map(|route| RouteCopy {
            route: (*route).to_owned(),
            scope: tenant.route_scope(route),
            delivery_id: DeliveryId::sharing(item.due_ms),
            due_ms: item.due_ms,
        })
        .collect();
    item.routes = RouteCopy::listed(&item.meta.delivery_id, &item.copies);
    item
}

/// Files under `dir` that are not durable according to `log`: never synced
/// at their present length, or synced without a later sync of `dir` (which
/// makes their names durable).
fn unsynced_files(log: &[Synced], dir: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let (path, len) = (entry.path(), entry.metadata().unwrap().len());
        let synced_at = log.iter().rposition(
            |s| matches!(s, Synced::File { path: p, len: l } if *p == path && *l == len),
        );
        let named = synced_at.is_some_and(|at| {
            log[at..]
                .iter()
                .any(|s| matches!(s, Synced::Dir(d) if d == dir))
        });
        if !named {
            missing.push(format!("{} ({len} bytes)", path.display()));
        }
    }
    missing
}

/// Log segments under `dir` that are not durable according to `log`: never
/// synced at their present length, or whose name was never made durable (a
/// sync of `dir` after the segment's first sync). Appending to a segment
/// changes its data, not its name.
fn unsynced_segments(log: &[Synced], dir: &Path) -> Vec<String> {
    let mut missing = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let entry = entry.unwrap();
        let (path, len) = (entry.path(), entry.metadata().unwrap().len());
        let synced = log
            .iter()
            .any(|s| matches!(s, Synced::File { path: p, len: l } if *p == path && *l == len));
        let first = log
            .iter()
            .position(|s| matches!(s, Synced::File { path: p, .. } if *p == path));
        let named = first.is_some_and(|at| {
            log[at..]
                .iter()
                .any(|s| matches!(s, Synced::Dir(d) if d == dir))
        });
        if !(synced && named) {
            missing.push(format!("{} ({len} bytes)", path.display()));
        }
    }
    missing
}

/// A store in a fresh dir whose syncs are recorded.
fn recorded_store() -> (
    tempfile::TempDir,
    Arc<FaultSync>,
    SledStore,
    std::thread::JoinHandle<()>,
) {
    let dir = tempfile::tempdir().unwrap();
    let sync = FaultSync::new();
    let (store, thread) = SledStore::open_with(
        dir.path(),
        64,
        Some(sync.clone() as SharedSync),
        crate::sled::DEFAULT_CACHE_BYTES,
    )
    .unwrap();
    (dir, sync, store, thread)
}

/// An acknowledged event is in the write-ahead log, on disk: every file
/// under `wal/` (the segment holding it) was synced at its present length
/// before the answer, and the directory after it. sled's own files are
/// made durable by checkpoints: once a barrier returns, every file behind
/// the store (blob files of bodies of 200-300 KiB included) is synced.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_backing_an_acknowledged_event_is_synced() {
    let (dir, sync, store, _thread) = recorded_store();
    let trees = store
        .tenant_trees(&TenantId::try_from("big").unwrap())
        .unwrap();
    let (wal, blobs) = (
        super::wal::wal_path(dir.path()),
        sled_path(dir.path()).join("blobs"),
    );
    for n in 0..48 {
        let len = 200 * 1024 + (n * 7919) % (100 * 1024);
        let body = Bytes::from(vec![b'a' + (n % 26) as u8; len]);
        let outcome = store
            .committer()
            .commit(
                trees.clone(),
                Vec::new(),
                delivery(&format!("evt_{n}"), body),
            )
            .await
            .unwrap();
        assert_eq!(outcome, CommitOutcome::Accepted);
        let missing = unsynced_segments(&sync.synced(), &wal);
        assert!(
            missing.is_empty(),
            "event {n} was acknowledged while its log segment was not durable: {missing:?}"
        );
    }
    store.durable_barrier().await.unwrap();
    let missing = unsynced_files(&sync.synced(), &blobs);
    assert!(
        missing.is_empty(),
        "a barrier returned while these blob files were not durable: {missing:?}"
    );
    let blob_count = std::fs::read_dir(&blobs).unwrap().count();
    assert!(blob_count > 0, "the bodies made sled write blob files");
    // The syncer settles blobs by their checksum: sled's real blobs pass it.
    for entry in std::fs::read_dir(&blobs).unwrap() {
        let path = entry.unwrap().path();
        let file = std::fs::File::open(&path).unwrap();
        let len = file.metadata().unwrap().len();
        assert!(
            super::sync::blob_is_complete(&file, len).unwrap(),
            "{} is a whole blob",
            path.display()
        );
    }
}

/// A power loss between two syncs of one checkpoint must never leave
/// sled's log pointing at a blob that is not on disk: within every
/// checkpoint, each blob file and the `blobs/` directory are synced before
/// sled's log.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn blobs_are_durable_before_the_log_that_points_at_them() {
    let (dir, sync, store, _thread) = recorded_store();
    let trees = store
        .tenant_trees(&TenantId::try_from("big").unwrap())
        .unwrap();
    let (sled_dir, blobs) = (sled_path(dir.path()), sled_path(dir.path()).join("blobs"));
    let mut blob_syncs = 0;
    for n in 0..24 {
        let body = Bytes::from(vec![b'a' + (n % 26) as u8; 256 * 1024]);
        store
            .committer()
            .commit(
                trees.clone(),
                Vec::new(),
                delivery(&format!("evt_{n}"), body),
            )
            .await
            .unwrap();
        let before = sync.synced().len();
        store.durable_barrier().await.unwrap();
        let checkpoint = sync.synced().split_off(before);
        let log_at = checkpoint
            .iter()
            .rposition(|s| matches!(s, Synced::File { path, .. } if *path == sled_dir.join("db")))
            .expect("every checkpoint syncs sled's log");
        let late: Vec<_> = checkpoint[log_at..]
            .iter()
            .filter(|s| match s {
                Synced::File { path, .. } => path.starts_with(&blobs),
                Synced::Dir(d) => *d == blobs,
            })
            .collect();
        assert!(
            late.is_empty(),
            "checkpoint {n} synced blobs after the log: {late:?}"
        );
        blob_syncs += checkpoint[..log_at]
            .iter()
            .filter(|s| matches!(s, Synced::File { path, .. } if path.starts_with(&blobs)))
            .count();
    }
    assert!(blob_syncs > 0, "the bodies made sled write blob files");
}

/// Linux reports a writeback error once: the sync after a failed one
/// succeeds although the failed batch may never reach the disk. The failed
/// write's retry must not be answered "duplicate" from memory, nor may
/// anything else be acknowledged, until a restart reads what is on disk.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_sync_poisons_the_store_until_it_is_reopened() {
    let logs = CapturedLogs::install();
    let dir = tempfile::tempdir().unwrap();
    let sync = FaultSync::new();
    let (store, thread) = SledStore::open_with(
        dir.path(),
        64,
        Some(sync.clone() as SharedSync),
        crate::sled::DEFAULT_CACHE_BYTES,
    )
    .unwrap();
    let trees = store
        .tenant_trees(&TenantId::try_from("t").unwrap())
        .unwrap();
    let commit = |id: &str| {
        store.committer().commit(
            trees.clone(),
            Vec::new(),
            delivery(id, Bytes::from_static(b"{}")),
        )
    };
    assert_eq!(commit("evt_1").await.unwrap(), CommitOutcome::Accepted);

    sync.fail_once();
    let failed = commit("evt_2").await;
    assert!(failed.is_err(), "the write whose sync failed: {failed:?}");
    let retry = commit("evt_2").await;
    assert!(
        retry.is_err(),
        "the sender's retry after a failed sync must fail too, got {retry:?}"
    );
    let other = commit("evt_3").await;
    assert!(other.is_err(), "a new event after a failed sync: {other:?}");
    let known = commit("evt_1").await;
    assert!(known.is_err(), "even a duplicate is refused: {known:?}");
    assert!(!store.is_healthy(), "a poisoned store is not healthy");
    let loud: Vec<String> = logs
        .lines()
        .into_iter()
        .filter(|l| l.contains("ERROR") && l.contains("storage is poisoned"))
        .collect();
    assert_eq!(
        loud.len(),
        1,
        "one loud log line, not one per write: {loud:?}"
    );
    assert!(loud[0].contains("restarted"), "{}", loud[0]);

    drop((trees, store));
    thread.join().unwrap();
    let (store, _thread) = SledStore::open(dir.path(), 64, true).unwrap();
    assert!(store.is_healthy());
    let trees = store
        .tenant_trees(&TenantId::try_from("t").unwrap())
        .unwrap();
    let commit = |id: &str| {
        store.committer().commit(
            trees.clone(),
            Vec::new(),
            delivery(id, Bytes::from_static(b"{}")),
        )
    };
    assert!(matches!(
        commit("evt_1").await.unwrap(),
        CommitOutcome::Duplicate(_)
    ));
    assert!(
        commit("evt_2").await.is_ok(),
        "after a restart the retry is taken"
    );
    assert_eq!(commit("evt_4").await.unwrap(), CommitOutcome::Accepted);
}

/// Writes for a tenant whose trees were just dropped share batches with
/// other tenants' writes; only the deleted tenant's writes may fail.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn deleting_a_tenant_fails_only_its_own_writes() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _thread) = SledStore::open(dir.path(), 512, true).unwrap();
    let trees: Vec<TenantTrees> = ["a", "b", "gone"]
        .iter()
        .map(|t| {
            store
                .tenant_trees(&TenantId::try_from(*t).unwrap())
                .unwrap()
        })
        .collect();
    let spawn_commits = |round: usize| {
        (0..90)
            .map(|n| {
                let item = delivery(&format!("evt_{round}_{n}"), Bytes::from_static(b"{}"));
                let (committer, tenant) = (store.committer().clone(), trees[n % 3].clone());
                tokio::spawn(
                    async move { (n % 3, committer.commit(tenant, Vec::new(), item).await) },
                )
            })
            .collect::<Vec<_>>()
    };
    // Round 0 races the delete; round 1 comes after it.
    let racing = spawn_commits(0);
    store
        .drop_tenant_trees(&TenantId::try_from("gone").unwrap())
        .await
        .unwrap();
    let after = spawn_commits(1);
    for (round, commits) in [(0, racing), (1, after)] {
        for outcome in futures_util::future::join_all(commits).await {
            let (tenant, outcome) = outcome.unwrap();
            match tenant {
                2 if round == 1 => assert!(
                    matches!(outcome, Err(crate::error::Error::TenantDeleted(_))),
                    "a write for the deleted tenant: {outcome:?}"
                ),
                2 => {}
                _ => assert!(
                    matches!(outcome, Ok(CommitOutcome::Accepted)),
                    "round {round}: another tenant's write failed with the deleted one's: {outcome:?}"
                ),
            }
        }
    }
}
