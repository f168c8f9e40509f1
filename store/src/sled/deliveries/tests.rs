//! Retention: the sweep deletes expired deliveries and idempotency
//! records in bounded batches.

use super::*;
use crate::{
    api::SweepRequest,
    ids::{EventId, RequestId, TenantId},
    records::{EventMeta, IdempotencyRecord},
    SledStore,
};

fn delivered(trees: &TenantTrees, n: u32, at_ms: i64) -> DeliveryId {
    let id = DeliveryId::new(format!("dlv_{n}"));
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
    trees
        .events
        .insert(id.as_str(), StoredEvent::encode(&meta, b"{}"))
        .unwrap();
    trees
        .state
        .insert(
            id.as_str(),
            encode(&DeliveryState::pending(event_id.clone(), at_ms)),
        )
        .unwrap();
    let idem = IdempotencyRecord {
        delivery_id: id.clone(),
        received_at_ms: at_ms,
        event_id: None,
    };
    trees.idem.insert(event_id.as_str(), encode(&idem)).unwrap();
    let key = queue_key(at_ms, u64::from(n));
    trees.queue.insert(key, id.as_str()).unwrap();
    let attempt = AttemptRecord {
        attempt: 1,
        started_at_ms: at_ms,
        duration_ms: 1,
        status_code: Some(200),
        error: None,
        response_body: vec![],
        next_retry_at_ms: None,
        request_id: RequestId::new("req_2"),
        transform_version: None,
    };
    record_attempt(trees, &key, &id, &attempt, &Next::Delivered, at_ms).unwrap();
    id
}

#[test]
fn sweep_removes_only_expired_records_in_bounded_batches() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
    let trees = store
        .tenant_trees(&TenantId::try_from("t").unwrap())
        .unwrap();
    let old: Vec<_> = (0..5).map(|n| delivered(&trees, n, 1_000)).collect();
    let fresh = delivered(&trees, 9, 50_000);
    assert_eq!(load_attempts(&trees, &old[0]).unwrap().len(), 1);

    let mut cursor = Vec::new();
    let first = sweep(
        &trees,
        &SweepRequest {
            delivered_before_ms: 10_000,
            idem_before_ms: 10_000,
            dead_before_ms: 0,
            batch: 3,
            idem_scan: 3,
        },
        &mut cursor,
    )
    .unwrap();
    assert_eq!(first.delivered, 3, "bounded by the batch size");
    let mut total = first;
    for _ in 0..3 {
        let s = sweep(
            &trees,
            &SweepRequest {
                delivered_before_ms: 10_000,
                idem_before_ms: 10_000,
                dead_before_ms: 0,
                batch: 3,
                idem_scan: 3,
            },
            &mut cursor,
        )
        .unwrap();
        total.delivered += s.delivered;
        total.idempotency += s.idempotency;
    }
    assert_eq!((total.delivered, total.idempotency), (5, 5));
    for id in &old {
        assert!(load_event(&trees, id).unwrap().is_none());
        assert!(load_attempts(&trees, id).unwrap().is_empty());
    }
    assert!(load_event(&trees, &fresh).unwrap().is_some());
    assert!(trees.idem.get("evt_9").unwrap().is_some());
    assert_eq!(trees.idem.len(), 1);
}
