//! Restarts after a crash: what the write-ahead log gives back to sled.
//! A crash is a copy of the data dir taken while the store runs: sled's
//! files as they were before the writes, the log as it was after their
//! answers.

use std::{path::Path, sync::Arc};

use bytes::Bytes;

use super::{
    durability_tests::{delivery, fanned_out},
    sled_path,
    wal::wal_path,
    CommitOutcome, SledStore,
};
use crate::{
    api::{Fence, FinishedAttempt, QueueKey, TenantData},
    ids::{DeliveryId, TenantId},
    lifecycle::Next,
    records::{AttemptRecord, DeliveryStatus},
};

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

fn tenant() -> TenantId {
    TenantId::try_from("t").unwrap()
}

/// Deliveries acknowledged after sled's last durable state are in the log
/// only; the next start applies them: their events, queue entries and
/// idempotency records are back, and a retry is a duplicate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledged_deliveries_sled_never_made_durable_come_back_from_the_log() {
    let (live, crashed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, thread) = SledStore::open(live.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    copy_dir(&sled_path(live.path()), &sled_path(crashed.path()));
    for n in 0..3 {
        let item = delivery(&format!("evt_{n}"), Bytes::from_static(b"{}"));
        let outcome = store.committer().commit(trees.clone(), Vec::new(), item);
        assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    }
    copy_dir(&wal_path(live.path()), &wal_path(crashed.path()));
    drop((trees, store));
    thread.join().unwrap();

    let (store, _thread) = SledStore::open(crashed.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    assert_eq!(
        trees.counts().unwrap().depth,
        3,
        "every queue entry is back"
    );
    let queued = trees.queue(None, 10).unwrap();
    for (_, id) in &queued {
        assert!(trees.event(id).unwrap().is_some(), "the event of {id}");
        assert!(trees.state(id).unwrap().is_some(), "the state of {id}");
    }
    let retry = delivery("evt_1", Bytes::from_static(b"{}"));
    let retry = store.committer().commit(trees.clone(), Vec::new(), retry);
    assert!(
        matches!(retry.await.unwrap(), CommitOutcome::Duplicate(_)),
        "the sender's retry of an acknowledged event"
    );
}

/// A record sled already holds is not applied again at the next start:
/// a delivery dequeued after it stays dequeued.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_record_sled_holds_is_not_applied_again() {
    let dir = tempfile::tempdir().unwrap();
    let (store, thread) = SledStore::open(dir.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    let item = delivery("evt_1", Bytes::from_static(b"{}"));
    let outcome = store.committer().commit(trees.clone(), Vec::new(), item);
    assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    let (entry, _) = trees.queue(None, 1).unwrap().remove(0);
    trees.drop_queue_entry(&entry).unwrap();
    store.durable_barrier().await.unwrap();
    let segments = std::fs::read_dir(wal_path(dir.path())).unwrap().count();
    assert!(segments > 0, "the log still holds the record");
    drop((trees, store));
    thread.join().unwrap();

    let (store, _thread) = SledStore::open(dir.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    assert_eq!(trees.counts().unwrap().depth, 0, "nothing was queued again");
}

/// A round of attempts is durable in the log alone: after a crash that
/// kept none of it in sled, the next start gives each outcome back: the
/// delivered delivery leaves the queue with its attempt, the failed one
/// waits in the queue for its retry.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn rounds_of_attempts_sled_never_made_durable_come_back_from_the_log() {
    let (live, crashed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, thread) = SledStore::open(live.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    for n in 0..2 {
        let item = delivery(&format!("evt_{n}"), Bytes::from_static(b"{}"));
        let outcome = store.committer().commit(trees.clone(), Vec::new(), item);
        assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    }
    store.durable_barrier().await.unwrap();
    copy_dir(&sled_path(live.path()), &sled_path(crashed.path()));
    let queued = trees.queue(None, 10).unwrap();
    let fence = Fence {
        owner: "p".into(),
        epoch: 0,
    };
    let finished = |(entry, id): &(QueueKey, DeliveryId), status, next| FinishedAttempt {
        entry: entry.clone(),
        id: id.clone(),
        record: AttemptRecord::answered(status, 1_000),
        next,
        fence: fence.clone(),
    };
    let round = vec![
        finished(&queued[0], 200, Next::Delivered),
        finished(&queued[1], 500, Next::Retry { due_ms: 60_000 }),
    ];
    let states = Arc::new(trees.clone()).record_attempts(round, 1_001);
    let states = states.await.unwrap();
    assert!(
        states.iter().all(|s| matches!(s, Ok(Some(_)))),
        "{states:?}"
    );
    copy_dir(&wal_path(live.path()), &wal_path(crashed.path()));
    drop((trees, store));
    thread.join().unwrap();

    let (store, _thread) = SledStore::open(crashed.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    let (delivered, retried) = (&queued[0].1, &queued[1].1);
    let status = |id| trees.state(id).unwrap().unwrap().status;
    assert_eq!(status(delivered), DeliveryStatus::Delivered);
    assert_eq!(trees.attempts(delivered).unwrap().len(), 1);
    assert_eq!(trees.attempts(retried).unwrap().len(), 1);
    let now_queued = trees.queue(None, 10).unwrap();
    assert_eq!(now_queued.len(), 1, "only the retry is queued");
    assert_eq!(&now_queued[0].1, retried);
    assert_eq!(now_queued[0].0.due_ms(), 60_000);
    assert_eq!(trees.counts().unwrap().depth, 1);
}

/// A fanned-out event acknowledged after sled's last durable state comes
/// back from the log whole: the default route's delivery with the body,
/// each route's copy naming it in its state, each read as the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fanned_out_event_comes_back_from_the_log_with_its_copies() {
    let (live, crashed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, thread) = SledStore::open(live.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    copy_dir(&sled_path(live.path()), &sled_path(crashed.path()));
    let item = fanned_out(
        "evt_fan",
        Bytes::from_static(b"{\"n\":1}"),
        &tenant(),
        &["a", "b"],
    );
    let copies = item.copies.clone();
    let copy_trees = copies
        .iter()
        .map(|c| store.tenant_trees(&c.scope).unwrap())
        .collect();
    let outcome = store.committer().commit(trees.clone(), copy_trees, item);
    assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    copy_dir(&wal_path(live.path()), &wal_path(crashed.path()));
    drop((trees, store));
    thread.join().unwrap();

    let (store, _thread) = SledStore::open(crashed.path(), 64, true).unwrap();
    for copy in &copies {
        let route = store.tenant_trees(&copy.scope).unwrap();
        let queued = route.queue(None, 10).unwrap();
        assert_eq!(queued.len(), 1, "{}: its queue entry is back", copy.route);
        let event = route.event(&copy.delivery_id).unwrap().unwrap();
        assert_eq!(event.meta.delivery_id, copy.delivery_id);
        assert_eq!(&event.body[..], b"{\"n\":1}");
    }
}

/// Copies sharing a place are one queue entry, made by one commit and
/// added to by the next; a round takes one record out of it. After a crash
/// that kept none of it in sled the log gives back exactly that: the
/// entry without the delivered copy, the others still pending in it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_entry_shared_by_copies_comes_back_from_the_log_record_by_record() {
    let (live, crashed) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let (store, thread) = SledStore::open(live.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    copy_dir(&sled_path(live.path()), &sled_path(crashed.path()));
    let slot = crate::ids::SharedSlot::new();
    let mut ids = Vec::new();
    let mut route = None;
    for n in 0..3 {
        let mut item = fanned_out(
            &format!("evt_{n}"),
            Bytes::from_static(b"{}"),
            &tenant(),
            &["a"],
        );
        item.copies[0].delivery_id = slot.next(item.due_ms);
        item.routes = crate::api::RouteCopy::listed(&item.meta.delivery_id, &item.copies);
        ids.push(item.copies[0].delivery_id.clone());
        let copy = store.tenant_trees(&item.copies[0].scope).unwrap();
        route = Some(copy.clone());
        let outcome = store.committer().commit(trees.clone(), vec![copy], item);
        assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    }
    let route = route.unwrap();
    assert_eq!(route.queue.iter().count(), 1, "one entry for the three");
    let queued = route.queue(None, 10).unwrap();
    let first = queued.iter().find(|(_, id)| *id == ids[0]).unwrap();
    let round = vec![FinishedAttempt {
        entry: first.0.clone(),
        id: first.1.clone(),
        record: AttemptRecord::answered(200, 1_000),
        next: Next::Delivered,
        fence: Fence {
            owner: "p".into(),
            epoch: 0,
        },
    }];
    let states = Arc::new(route.clone())
        .record_attempts(round, 1_001)
        .await
        .unwrap();
    assert!(matches!(states[..], [Ok(Some(_))]), "{states:?}");
    copy_dir(&wal_path(live.path()), &wal_path(crashed.path()));
    drop((trees, route, store));
    thread.join().unwrap();

    let (store, _thread) = SledStore::open(crashed.path(), 64, true).unwrap();
    let route = store.tenant_trees(&tenant().route_scope("a")).unwrap();
    let status = |id| route.state(id).unwrap().unwrap().status;
    assert_eq!(status(&ids[0]), DeliveryStatus::Delivered);
    let left: Vec<DeliveryId> = route
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .map(|(_, id)| id)
        .collect();
    assert_eq!(left, ids[1..]);
    assert_eq!(route.counts().unwrap().depth, 2);
    assert_eq!(route.queue.iter().count(), 1);
    for id in &ids[1..] {
        assert_eq!(status(id), DeliveryStatus::Pending);
        assert!(route.event(id).unwrap().is_some());
    }
}

/// The log's record changes replay as what they add and take, so a change
/// sled made in between (a pull, an ack: not in the log) is never undone
/// by a replay that rewrote the whole entry.
#[test]
fn a_replayed_record_change_keeps_what_other_changes_left_in_the_entry() {
    use super::wal::record::{Batch, Op};
    let db = sled::Config::new().temporary(true).open().unwrap();
    let (queue, marker) = (db.open_tree("queue").unwrap(), db.open_tree("wal").unwrap());
    queue.insert("k", &b"dlv_a\n{}\x1edlv_b\n{}"[..]).unwrap();
    let replay = |lsn, record: fn(&mut Batch)| {
        let mut batch = Batch::default();
        record(&mut batch);
        let sealed = batch.seal(lsn, lsn - 1);
        // The ops follow the record's 24-byte header.
        let ops = &sealed.bytes()[24..];
        assert!(super::wal::record::ops(ops).all(|op| !matches!(op, Ok(Op::Insert(..)))));
        super::apply::apply_record(std::slice::from_ref(&queue), &marker, lsn, ops).unwrap();
    };
    // b was pulled (sled only); the log then adds c and takes a.
    queue.insert("k", &b"dlv_a\n{}"[..]).unwrap();
    replay(1, |b| b.add_records(0, b"k", b"dlv_c\n{}"));
    assert_eq!(
        queue.get("k").unwrap().unwrap(),
        &b"dlv_a\n{}\x1edlv_c\n{}"[..]
    );
    replay(2, |b| b.take_record(0, b"k", b"dlv_a"));
    assert_eq!(queue.get("k").unwrap().unwrap(), &b"dlv_c\n{}"[..]);
    replay(3, |b| b.take_record(0, b"k", b"dlv_b"));
    assert_eq!(
        queue.get("k").unwrap().unwrap(),
        &b"dlv_c\n{}"[..],
        "b was gone"
    );
    replay(4, |b| b.take_record(0, b"k", b"dlv_c"));
    assert_eq!(
        queue.get("k").unwrap(),
        None,
        "the last record takes the entry"
    );
    replay(5, |b| b.add_records(0, b"k", b"dlv_d\n{}"));
    assert_eq!(queue.get("k").unwrap().unwrap(), &b"dlv_d\n{}"[..]);
}

/// A damaged sled file holding records older than the write-ahead log
/// reaches is refused at start (sled says only "Read corrupted data at file
/// offset None"): the error names the database's files and what to do.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_damaged_database_file_is_refused_naming_it_and_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let (store, thread) = SledStore::open(dir.path(), 64, true).unwrap();
    let trees = store.tenant_trees(&tenant()).unwrap();
    for n in 0..300 {
        let item = delivery(&format!("evt_{n}"), Bytes::from(vec![b'x'; 2000]));
        let outcome = store.committer().commit(trees.clone(), Vec::new(), item);
        assert_eq!(outcome.await.unwrap(), CommitOutcome::Accepted);
    }
    drop((trees, store));
    thread.join().unwrap();
    // A start that applies nothing and begins a fresh log: sled alone
    // holds the deliveries.
    let (store, thread) = SledStore::open(dir.path(), 64, true).unwrap();
    drop(store);
    thread.join().unwrap();

    let db = sled_path(dir.path()).join("db");
    let mut bytes = std::fs::read(&db).unwrap();
    let at = bytes.len() / 10;
    bytes[at] ^= 0x55;
    std::fs::write(&db, &bytes).unwrap();
    let refused = SledStore::open(dir.path(), 64, true)
        .err()
        .expect("refused");
    let text = refused.to_string();
    assert!(
        text.contains(&sled_path(dir.path()).display().to_string())
            && text.contains("restore the data dir from a backup")
            && text.contains("docs/durability.md"),
        "{text}"
    );
}
