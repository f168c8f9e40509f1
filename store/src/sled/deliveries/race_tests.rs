//! Concurrent callers of the queue transitions: pulls, acks, nacks and
//! redeliveries racing on one tenant's trees, repeated so that a missing
//! compare-and-set shows up.

use std::{
    collections::HashSet,
    sync::{Arc, Barrier},
};

use super::*;
use crate::api::{PullRequest, TenantData};
use crate::{
    ids::{EventId, RequestId, TenantId},
    {records::EventMeta, SledStore},
};

const THREADS: usize = 8;
const ROUNDS: usize = 25;
const VISIBLE_MS: i64 = 30_000;
const WINDOW_MS: i64 = 86_400_000;

fn open() -> (tempfile::TempDir, SledStore, TenantTrees) {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
    let trees = store
        .tenant_trees(&TenantId::try_from("t").unwrap())
        .unwrap();
    (dir, store, trees)
}

/// A freshly accepted delivery, queued due at `at_ms`.
fn pending(trees: &TenantTrees, n: usize, at_ms: i64) -> DeliveryId {
    let id = DeliveryId::new(format!("dlv_{n:04}"));
    let event_id = EventId::new(format!("evt_{n}"));
    let meta = EventMeta {
        event_id: event_id.clone(),
        delivery_id: id.clone(),
        request_id: RequestId::new("req_1"),
        received_at_ms: at_ms,
        headers: vec![],
        trace_id: String::new(),
        span_id: String::new(),
        sampled: true,
    };
    let key = queue_key(at_ms, n as u64);
    let mut state = DeliveryState::pending(event_id, at_ms);
    state.queue_key = Some(hex::encode(key));
    trees
        .events
        .insert(id.as_str(), StoredEvent::encode(&meta, b"{}"))
        .unwrap();
    trees.state.insert(id.as_str(), encode(&state)).unwrap();
    trees.queue.insert(key, id.as_str()).unwrap();
    trees.gauges.queued_one();
    id
}

/// Runs `f(i)` on `THREADS` threads released at once; returns their results.
fn at_once<T: Send + 'static>(f: impl Fn(usize) -> T + Send + Sync + 'static) -> Vec<T> {
    let f = Arc::new(f);
    let gate = Arc::new(Barrier::new(THREADS));
    let threads: Vec<_> = (0..THREADS)
        .map(|i| {
            let (f, gate) = (f.clone(), gate.clone());
            std::thread::spawn(move || {
                gate.wait();
                f(i)
            })
        })
        .collect();
    threads.into_iter().map(|t| t.join().unwrap()).collect()
}

/// Every queue entry names a pending delivery whose state points back at
/// it, and every pending delivery has exactly one entry; the gauges count
/// what the queue and the dead-letter index hold.
fn assert_queue_consistent(trees: &TenantTrees) {
    assert_eq!(
        (trees.gauges.queue_depth(), trees.gauges.dead_letters()),
        (trees.queue.len() as u64, trees.dead.len() as u64),
        "gauges (queue depth, dead letters) against the trees"
    );
    let mut queued = HashSet::new();
    for kv in trees.queue.iter() {
        let (key, value) = kv.unwrap();
        let id = DeliveryId::new(String::from_utf8_lossy(&value).into_owned());
        let state = load_state(trees, &id).unwrap().unwrap();
        assert_eq!(
            state.status,
            DeliveryStatus::Pending,
            "orphaned queue entry for {} delivery {id}",
            state.status.as_str()
        );
        assert_eq!(
            state.queue_key.as_deref(),
            Some(hex::encode(&key).as_str()),
            "queue entry of {id} is not the one its state points at"
        );
        assert!(queued.insert(id.clone()), "{id} is queued twice");
    }
    for kv in trees.state.iter() {
        let (key, value) = kv.unwrap();
        let state: DeliveryState = decode(&value).unwrap();
        if state.status == DeliveryStatus::Pending {
            let id = DeliveryId::new(String::from_utf8_lossy(&key).into_owned());
            assert!(queued.contains(&id), "pending {id} has no queue entry");
        }
    }
}

#[test]
fn concurrent_pulls_never_hand_one_message_to_two_consumers() {
    for round in 0..ROUNDS {
        let (_dir, _store, trees) = open();
        for n in 0..40 {
            pending(&trees, n, 1_000);
        }
        let shared = trees.clone();
        let pulled = at_once(move |_| {
            pull(
                &shared,
                &PullRequest {
                    max: 5,
                    max_bytes: usize::MAX,
                    visibility_ms: VISIBLE_MS,
                    window_ms: WINDOW_MS,
                    now_ms: 2_000,
                },
            )
            .unwrap()
            .into_iter()
            .map(|(event, _)| event.meta.delivery_id)
            .collect::<Vec<_>>()
        });
        let mut seen = HashSet::new();
        for id in pulled.into_iter().flatten() {
            assert!(
                seen.insert(id.clone()),
                "round {round}: {id} handed to two consumers within the visibility timeout"
            );
        }
        assert_queue_consistent(&trees);
        for id in &seen {
            assert_eq!(load_state(&trees, id).unwrap().unwrap().attempts, 1);
        }
    }
}

#[test]
fn concurrent_ack_and_pull_leave_no_orphan_that_later_dead_letters() {
    for round in 0..ROUNDS {
        let (_dir, _store, trees) = open();
        let id = pending(&trees, 1, 1_000);
        assert_eq!(
            pull(
                &trees,
                &PullRequest {
                    max: 1,
                    max_bytes: usize::MAX,
                    visibility_ms: VISIBLE_MS,
                    window_ms: WINDOW_MS,
                    now_ms: 2_000
                }
            )
            .unwrap()
            .len(),
            1
        );
        // The visibility timeout has passed: pulls may take it again while
        // the first consumer's ack arrives.
        let later = 2_000 + VISIBLE_MS + 1;
        let (shared, ack_id) = (trees.clone(), id.clone());
        at_once(move |i| {
            if i % 2 == 0 {
                ack(&shared, std::slice::from_ref(&ack_id), later).unwrap();
            } else {
                pull(
                    &shared,
                    &PullRequest {
                        max: 1,
                        max_bytes: usize::MAX,
                        visibility_ms: VISIBLE_MS,
                        window_ms: WINDOW_MS,
                        now_ms: later,
                    },
                )
                .unwrap();
            }
        });
        let state = load_state(&trees, &id).unwrap().unwrap();
        assert_eq!(state.status, DeliveryStatus::Delivered, "round {round}");
        assert_queue_consistent(&trees);
        // Far past the retry window nothing may turn the delivered event
        // into a dead letter.
        pull(
            &trees,
            &PullRequest {
                max: 10,
                max_bytes: usize::MAX,
                visibility_ms: VISIBLE_MS,
                window_ms: WINDOW_MS,
                now_ms: WINDOW_MS * 2,
            },
        )
        .unwrap();
        assert_eq!(
            load_state(&trees, &id).unwrap().unwrap().status,
            DeliveryStatus::Delivered,
            "round {round}: a delivered event was dead-lettered"
        );
        assert_eq!(trees.dead.len(), 0);
    }
}

#[test]
fn concurrent_redeliver_of_one_dead_letter_makes_exactly_one_delivery() {
    for round in 0..ROUNDS {
        let (_dir, _store, trees) = open();
        let id = pending(&trees, 1, 1_000);
        // Pulled, never acked: dead after the retry window.
        pull(
            &trees,
            &PullRequest {
                max: 1,
                max_bytes: usize::MAX,
                visibility_ms: VISIBLE_MS,
                window_ms: WINDOW_MS,
                now_ms: 2_000,
            },
        )
        .unwrap();
        pull(
            &trees,
            &PullRequest {
                max: 1,
                max_bytes: usize::MAX,
                visibility_ms: VISIBLE_MS,
                window_ms: WINDOW_MS,
                now_ms: WINDOW_MS * 2,
            },
        )
        .unwrap();
        assert_eq!(
            load_state(&trees, &id).unwrap().unwrap().status,
            DeliveryStatus::Dead
        );
        let (shared, dead_id) = (trees.clone(), id.clone());
        let answers = at_once(move |_| redeliver(&shared, &dead_id, WINDOW_MS * 3, Resend::Any));
        let made: Vec<_> = answers.iter().filter_map(|a| a.as_ref().ok()).collect();
        assert_eq!(made.len(), 1, "round {round}: {answers:?}");
        for lost in answers.iter().filter_map(|a| a.as_ref().err()) {
            assert!(
                matches!(lost, Error::Precondition(why) if why.contains(made[0].as_str())),
                "a losing redeliver names the winner's delivery: {lost:?}"
            );
        }
        let copies = trees
            .state
            .iter()
            .filter(|kv| {
                let state: DeliveryState = decode(&kv.as_ref().unwrap().1).unwrap();
                state.redelivery_of.as_ref() == Some(&id)
            })
            .count();
        assert_eq!(copies, 1, "round {round}: one new delivery");
        assert_eq!(trees.queue.len(), 1);
        assert_eq!(trees.dead.len(), 0);
        assert_queue_consistent(&trees);
    }
}

#[test]
fn ack_after_the_visibility_timeout_counts_once_and_a_stale_nack_is_skipped() {
    let (_dir, _store, trees) = open();
    let id = pending(&trees, 1, 1_000);
    let first = pull(
        &trees,
        &PullRequest {
            max: 1,
            max_bytes: usize::MAX,
            visibility_ms: VISIBLE_MS,
            window_ms: WINDOW_MS,
            now_ms: 2_000,
        },
    )
    .unwrap();
    assert_eq!(first[0].1, 1);
    // Consumer A's lease ran out; consumer B pulls it again.
    let later = 2_000 + VISIBLE_MS + 1;
    // A nack after the timeout is stale: the delivery is already visible.
    assert_eq!(
        make_due(&trees, std::slice::from_ref(&id), later).unwrap(),
        0
    );
    let second = pull(
        &trees,
        &PullRequest {
            max: 1,
            max_bytes: usize::MAX,
            visibility_ms: VISIBLE_MS,
            window_ms: WINDOW_MS,
            now_ms: later,
        },
    )
    .unwrap();
    assert_eq!(second[0].1, 2, "pulled again with a higher attempt");
    // A's late ack still counts; B's ack then finds it delivered.
    assert_eq!(
        ack(&trees, std::slice::from_ref(&id), later + 1).unwrap(),
        1
    );
    assert_eq!(
        ack(&trees, std::slice::from_ref(&id), later + 2).unwrap(),
        0
    );
    assert_eq!(
        make_due(&trees, std::slice::from_ref(&id), later + 3).unwrap(),
        0
    );
    let state = load_state(&trees, &id).unwrap().unwrap();
    assert_eq!(state.status, DeliveryStatus::Delivered);
    assert_eq!(state.finished_at_ms, Some(later + 1));
    assert_eq!(trees.done.len(), 1);
    assert_queue_consistent(&trees);
    assert!(pull(
        &trees,
        &PullRequest {
            max: 1,
            max_bytes: usize::MAX,
            visibility_ms: VISIBLE_MS,
            window_ms: WINDOW_MS,
            now_ms: later + 4
        }
    )
    .unwrap()
    .is_empty());
}

#[test]
fn concurrent_nacks_and_pulls_keep_one_queue_entry_per_delivery() {
    for round in 0..ROUNDS {
        let (_dir, _store, trees) = open();
        let ids: Vec<_> = (0..10).map(|n| pending(&trees, n, 1_000)).collect();
        assert_eq!(
            pull(
                &trees,
                &PullRequest {
                    max: 10,
                    max_bytes: usize::MAX,
                    visibility_ms: VISIBLE_MS,
                    window_ms: WINDOW_MS,
                    now_ms: 2_000
                }
            )
            .unwrap()
            .len(),
            10
        );
        let shared = trees.clone();
        let pulled = at_once(move |i| {
            if i % 2 == 0 {
                make_due(&shared, &ids, 2_001).unwrap();
                Vec::new()
            } else {
                pull(
                    &shared,
                    &PullRequest {
                        max: 10,
                        max_bytes: usize::MAX,
                        visibility_ms: VISIBLE_MS,
                        window_ms: WINDOW_MS,
                        now_ms: 2_001,
                    },
                )
                .unwrap()
            }
        });
        // A nack may return a delivery another consumer just pulled, so it
        // can be pulled again, but every pull is a new attempt.
        let mut seen = HashSet::new();
        for (event, attempt) in pulled.into_iter().flatten() {
            assert!(
                seen.insert((event.meta.delivery_id.clone(), attempt)),
                "round {round}: {} handed out twice as attempt {attempt}",
                event.meta.delivery_id
            );
        }
        assert_queue_consistent(&trees);
    }
}

#[test]
fn racing_attempts_and_purges_of_one_delivery_count_it_once() {
    for round in 0..ROUNDS {
        let (_dir, _store, trees) = open();
        let id = pending(&trees, 1, 1_000);
        pending(&trees, 2, 1_000);
        let key = queue_key(1_000, 1);
        let shared = trees.clone();
        let attempt_id = id.clone();
        let settled = at_once(move |i| {
            let attempt = AttemptRecord {
                attempt: 1,
                started_at_ms: 2_000,
                duration_ms: 1,
                status_code: Some(500),
                error: None,
                response_body: vec![],
                next_retry_at_ms: None,
                request_id: RequestId::new("req_2"),
                transform_version: None,
            };
            let next = match i % 3 {
                0 => Next::Retry { due_ms: 9_000 },
                _ => Next::Dead {
                    reason: "gone".into(),
                },
            };
            record_attempt(&shared, &key, &attempt_id, &attempt, &next, 2_000)
                .unwrap()
                .is_some()
        });
        assert_eq!(
            settled.iter().filter(|won| **won).count(),
            1,
            "round {round}: one attempt holds the entry"
        );
        assert_queue_consistent(&trees);
        let state = load_state(&trees, &id).unwrap().unwrap();
        if state.status == DeliveryStatus::Pending {
            continue;
        }
        let (dead_key, letter) = trees.dead_letters(None, 1, &|_| true).unwrap().remove(0);
        let shared = trees.clone();
        let purged = at_once(move |_| purge_dead_letter(&shared, &dead_key, &letter).unwrap());
        assert_eq!(purged.iter().filter(|p| **p).count(), 1, "round {round}");
        assert_queue_consistent(&trees);
        assert_eq!(trees.gauges.queue_depth(), 1, "round {round}");
    }
}
