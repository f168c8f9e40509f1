//! Tests of what the committer makes durable before it answers, with the
//! syncs recorded (or failed) through [`FaultSync`].

use std::path::Path;

use actix_web::web::Bytes;

use super::{
    records::EventMeta, sled_path, CommitOutcome, NewDelivery, SharedSync, Store, TenantTrees,
};
use crate::{
    faults::{FaultSync, Synced},
    ids::{DeliveryId, EventId, RequestId, TenantId},
};

fn delivery(trees: &TenantTrees, event_id: &str, body: Bytes) -> NewDelivery {
    NewDelivery {
        trees: trees.clone(),
        event_id: EventId::new(event_id),
        meta: EventMeta {
            event_id: EventId::new(event_id),
            delivery_id: DeliveryId::generate(),
            request_id: RequestId::generate(),
            received_at_ms: 1,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        },
        body,
        due_ms: 1,
    }
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

/// Bodies of 200-300 KiB, each far below the size at which sled writes one
/// value to a blob file, still make sled write leaves of such events to
/// blob files. Every file that exists when a commit is answered, blob or
/// not, must have been synced at its present length, and its directory
/// after it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_file_backing_an_acknowledged_event_is_synced() {
    let dir = tempfile::tempdir().unwrap();
    let sync = FaultSync::new();
    let (store, _thread) =
        Store::open_with(dir.path(), 64, Some(sync.clone() as SharedSync)).unwrap();
    let trees = store.tenant_trees(&TenantId::new("big")).unwrap();
    let blobs = sled_path(dir.path()).join("blobs");
    for n in 0..48 {
        let len = 200 * 1024 + (n * 7919) % (100 * 1024);
        let body = Bytes::from(vec![b'a' + (n % 26) as u8; len]);
        let outcome = store
            .committer()
            .commit(delivery(&trees, &format!("evt_{n}"), body))
            .await
            .unwrap();
        assert_eq!(outcome, CommitOutcome::Accepted);
        let log = sync.synced();
        let missing = unsynced_files(&log, &blobs);
        assert!(
            missing.is_empty(),
            "event {n} was acknowledged while these blob files were not durable: {missing:?}"
        );
    }
    let blob_count = std::fs::read_dir(&blobs).unwrap().count();
    assert!(blob_count > 0, "the bodies made sled write blob files");
}
