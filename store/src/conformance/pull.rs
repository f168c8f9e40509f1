//! Conformance of pull mode: a pulled delivery is acknowledged or given
//! back once, and concurrent pulls never share a delivery.

use super::*;

fn pull_request(max: usize, now_ms: i64) -> PullRequest {
    PullRequest {
        max,
        max_bytes: 1 << 20,
        visibility_ms: 30_000,
        window_ms: 3_600_000,
        now_ms,
    }
}

pub(super) async fn pull_ack_nack(engine: Engine) {
    let data = tenant(&engine, "acme");
    for n in 0..3 {
        accepted(&data, &format!("evt_{n}"), 1_000 + n).await;
    }
    let first = data.pull(pull_request(2, 2_000)).unwrap();
    assert_eq!(first.len(), 2);
    assert!(first.iter().all(|(_, attempt)| *attempt == 1));
    let second = data.pull(pull_request(2, 2_000)).unwrap();
    assert_eq!(second.len(), 1, "pulled ones stay hidden");
    assert!(data.pull(pull_request(2, 2_000)).unwrap().is_empty());
    let nacked = second[0].0.meta.delivery_id.clone();
    assert_eq!(data.nack(std::slice::from_ref(&nacked), 2_100).unwrap(), 1);
    let again = data.pull(pull_request(5, 2_200)).unwrap();
    assert_eq!(again.len(), 1);
    assert_eq!(again[0].0.meta.delivery_id, nacked);
    assert_eq!(again[0].1, 2);
    let all: Vec<DeliveryId> = first
        .iter()
        .chain(&again)
        .map(|(event, _)| event.meta.delivery_id.clone())
        .collect();
    assert_eq!(data.ack(&all, 2_300).unwrap(), 3);
    assert_eq!(data.ack(&all, 2_400).unwrap(), 0, "acked once");
    assert_eq!(data.counts().unwrap().depth, 0);
    // Past its visibility timeout an unacked pull comes back.
    accepted(&data, "evt_late", 3_000).await;
    if engine.shared {
        // Visibility runs on the database's clock there, not the caller's
        // (postgres/tests.rs): a timeout of 0 ms has passed at once.
        let brief = PullRequest {
            visibility_ms: 0,
            ..pull_request(1, 3_000)
        };
        assert_eq!(data.pull(brief).unwrap().len(), 1);
        assert_eq!(data.pull(pull_request(1, 3_000)).unwrap()[0].1, 2);
        return;
    }
    assert_eq!(data.pull(pull_request(1, 3_000)).unwrap().len(), 1);
    assert!(data.pull(pull_request(1, 3_001)).unwrap().is_empty());
    assert_eq!(data.pull(pull_request(1, 40_000)).unwrap()[0].1, 2);
}

pub(super) async fn concurrent_pulls_never_share_a_delivery(engine: Engine) {
    let data = tenant(&engine, "acme");
    for n in 0..40 {
        accepted(&data, &format!("evt_{n}"), 1_000).await;
    }
    let pulled: Vec<DeliveryId> = std::thread::scope(|s| {
        let consumers: Vec<_> = (0..4)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    for _ in 0..20 {
                        let batch = data.pull(pull_request(3, 2_000)).unwrap();
                        mine.extend(batch.into_iter().map(|(e, _)| e.meta.delivery_id));
                    }
                    mine
                })
            })
            .collect();
        consumers
            .into_iter()
            .flat_map(|c| c.join().unwrap())
            .collect()
    });
    let distinct: std::collections::HashSet<&DeliveryId> = pulled.iter().collect();
    assert_eq!(
        distinct.len(),
        pulled.len(),
        "a delivery went to two consumers"
    );
    assert_eq!(pulled.len(), 40);
}
