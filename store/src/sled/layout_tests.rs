//! Tests of where the store puts a delivery's keys in the shared trees.

use bytes::Bytes;

use super::{deliveries, records::EventMeta, CommitOutcome, NewDelivery, SledStore};
use crate::ids::{DeliveryId, EventId, RequestId, TenantId};

/// A delivery whose id carries the ULID timestamp `at_ms`.
fn delivery_at(at_ms: u64, n: u128) -> NewDelivery {
    let id = DeliveryId::new(format!("dlv_{}", ulid::Ulid::from_parts(at_ms, n)));
    let event_id = EventId::new(format!("evt_{n}"));
    NewDelivery {
        event_id: event_id.clone(),
        meta: EventMeta {
            event_id,
            delivery_id: id,
            request_id: RequestId::generate(),
            received_at_ms: at_ms as i64,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        },
        body: Bytes::from(vec![b'x'; 1024]),
        due_ms: at_ms as i64,
        content_key: None,
        copies: Vec::new(),
        receipt: crate::api::Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

/// Stored events are ordered by time before tenant, so the newest events
/// of every tenant sit together at the end of the tree and a batch of
/// writes spread over many tenants touches few of its pages; each tenant
/// still reads its own events by delivery id.
#[tokio::test]
async fn events_of_many_tenants_are_stored_in_time_order() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _thread) = SledStore::open(dir.path(), 64, false).unwrap();
    let tenants = ["zeta", "alpha", "mid", "alpha", "zeta"];
    let mut written = Vec::new();
    for (n, tenant) in tenants.iter().enumerate() {
        let trees = store
            .tenant_trees(&TenantId::try_from(*tenant).unwrap())
            .unwrap();
        let item = delivery_at(1_700_000_000_000 + n as u64, n as u128);
        let id = item.meta.delivery_id.clone();
        let outcome = store
            .committer()
            .commit(trees, Vec::new(), item)
            .await
            .unwrap();
        assert_eq!(outcome, CommitOutcome::Accepted);
        written.push((*tenant, id));
    }
    let stored: Vec<String> = store.shared.0[1]
        .iter()
        .keys()
        .map(|k| String::from_utf8(k.unwrap().to_vec()).unwrap())
        .collect();
    let owners: Vec<&str> = stored
        .iter()
        .map(|key| {
            tenants
                .iter()
                .copied()
                .find(|t| key.contains(&format!("{t}/dlv_")))
                .unwrap_or("?")
        })
        .collect();
    assert_eq!(owners, tenants, "stored event keys in order: {stored:?}");
    for (tenant, id) in &written {
        let trees = store
            .tenant_trees(&TenantId::try_from(*tenant).unwrap())
            .unwrap();
        let event = deliveries::load_event(&trees, id).unwrap().unwrap();
        assert_eq!(&event.meta.delivery_id, id);
        let other = store
            .tenant_trees(&TenantId::try_from("other").unwrap())
            .unwrap();
        assert!(deliveries::load_event(&other, id).unwrap().is_none());
    }
}

/// Dropping a tenant removes its events, found through its deliveries,
/// and leaves every other tenant's.
#[tokio::test]
async fn dropping_a_tenant_removes_its_time_first_events() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _thread) = SledStore::open(dir.path(), 64, false).unwrap();
    let (gone, kept) = (
        TenantId::try_from("gone").unwrap(),
        TenantId::try_from("kept").unwrap(),
    );
    for n in 0..2_500u128 {
        let tenant = if n % 5 == 0 { &kept } else { &gone };
        let trees = store.tenant_trees(tenant).unwrap();
        let item = delivery_at(1_700_000_000_000 + n as u64, n);
        store
            .committer()
            .commit(trees, Vec::new(), item)
            .await
            .unwrap();
    }
    store.drop_tenant_trees(&gone).await.unwrap();
    let events = &store.shared.0[1];
    assert_eq!(events.len(), 500, "only the kept tenant's events are left");
    assert!(events
        .iter()
        .keys()
        .all(|k| String::from_utf8_lossy(&k.unwrap()).contains("kept/dlv_")));
}
