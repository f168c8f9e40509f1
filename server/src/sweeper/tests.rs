//! A pass is sized to what is due: it goes round the tenants, one bounded
//! batch each, until none has anything due left.

use super::*;
use crate::{
    ids::{DeliveryId, EventId, RequestId},
    store::{
        api::{Rejection, Storage},
        lifecycle::Next,
        records::{AttemptRecord, EventMeta},
        NewDelivery, SledStore,
    },
};

/// Accepts `n` events at `at_ms` and delivers each at once.
async fn delivered(data: &TenantStore, prefix: &str, n: usize, at_ms: i64) {
    for i in 0..n {
        let event_id = EventId::new(format!("{prefix}_{i}"));
        let delivery_id = DeliveryId::generate();
        let item = NewDelivery {
            event_id: event_id.clone(),
            meta: EventMeta {
                event_id,
                delivery_id: delivery_id.clone(),
                request_id: RequestId::generate(),
                received_at_ms: at_ms,
                headers: vec![],
                trace_id: String::new(),
                span_id: String::new(),
                sampled: true,
            },
            body: bytes::Bytes::from_static(b"{}"),
            due_ms: at_ms,
            content_key: None,
            copies: Vec::new(),
            receipt: crate::store::api::Receipt::Queued,
            routes: Vec::new(),
            event_type: None,
        };
        data.commit(item).await.unwrap();
        let (entry, _) = data.queue(None, 1).unwrap().remove(0);
        let attempt = AttemptRecord::answered(200, at_ms);
        data.record_attempt(&entry, &delivery_id, &attempt, &Next::Delivered, at_ms)
            .unwrap()
            .unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_removes_all_that_is_due_one_batch_per_tenant_in_turn() {
    let dir = tempfile::tempdir().unwrap();
    let store: Store = Arc::new(SledStore::open(dir.path(), 64, false).unwrap().0);
    let tenant = |id: &str| store.tenant(&TenantId::try_from(id).unwrap()).unwrap();
    let (busy, quiet) = (tenant("busy"), tenant("quiet"));
    delivered(&busy, "evt_busy", 35, 1_000).await;
    delivered(&busy, "evt_new", 2, 9_000).await;
    delivered(&quiet, "evt_quiet", 1, 1_000).await;
    let retention = retention(5, 10);
    let due = Due::at(&retention, 10_000);

    let removed = pass(store.clone(), vec![busy.clone(), quiet.clone()], None, &due).await;

    assert_eq!(
        (removed.data.delivered, removed.data.idempotency),
        (36, 36),
        "every due record of both tenants: {removed:?}"
    );
    // busy: 37 records to scan and 35 to delete, ten per step: four steps;
    // quiet: one. A pass of one step per tenant would have left 25.
    assert_eq!(removed.steps, 5, "{removed:?}");
    assert_eq!(busy.deliveries(None, None, 100).unwrap().len(), 2);
    assert!(quiet.deliveries(None, None, 100).unwrap().is_empty());
    let again = pass(store.clone(), vec![busy, quiet], None, &due).await;
    assert_eq!(
        (again.total(), again.steps),
        (0, 2),
        "nothing left: {again:?}"
    );
}

/// A paced pass scans a tenant's idempotency log whole a cycle after it
/// first saw it, then in cycles spread over passes: a cycle's passes go on
/// from where the one before stopped, and none scans between cycles.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn paced_passes_scan_the_idempotency_log_in_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let store: Store = Arc::new(SledStore::open(dir.path(), 64, false).unwrap().0);
    let acme = store.tenant(&TenantId::try_from("acme").unwrap()).unwrap();
    delivered(&acme, "evt", 30, 1_000).await;
    // Cycles of a second (a 24th of 24 s), ten passes each.
    let retention = RetentionConfig {
        idempotency_secs: 24,
        sweep_interval_secs: 0.1,
        ..retention(86_400, 10)
    };
    let mut pacing = pacing::Pacing::new(&retention);
    let seen = paced_at(&mut pacing, &store, &acme, &retention, 1_500).await;
    assert_eq!(
        seen.steps, 0,
        "nothing due, no scan in the first cycle: {seen:?}"
    );
    let first = paced_at(&mut pacing, &store, &acme, &retention, 2_500).await;
    assert_eq!((first.data.idempotency, first.steps), (0, 4), "{first:?}");
    // Every record expired at 25 000. The cycle begun then scans ten
    // records a pass (the forty the first one counted, and a quarter, over
    // ten passes, at least a batch), each pass on from the last.
    for (now_ms, forgotten) in [(26_000, 10), (26_100, 10), (26_200, 10), (26_300, 0)] {
        let pass = paced_at(&mut pacing, &store, &acme, &retention, now_ms).await;
        assert_eq!(pass.data.idempotency, forgotten, "at {now_ms}: {pass:?}");
    }
    assert!(acme.idempotency(b"evt_29").unwrap().is_none());
    // The cycle began at 26 000; the next begins at 27 000.
    let between = paced_at(&mut pacing, &store, &acme, &retention, 26_900).await;
    assert_eq!(between.steps, 0, "no scan between cycles: {between:?}");
}

/// One paced pass over `data` at `now_ms`.
async fn paced_at(
    pacing: &mut pacing::Pacing,
    store: &Store,
    data: &TenantStore,
    retention: &RetentionConfig,
    now_ms: i64,
) -> Removed {
    let due = Due::at(retention, now_ms);
    paced_pass(
        pacing,
        store.clone(),
        vec![data.clone()],
        None,
        &due,
        now_ms,
    )
    .await
}

/// A pass asks the engine once which tenants have anything due and steps
/// only those (and those whose idempotency scan is due): of four tenants,
/// the one with a delivered event past its retention and the one with an
/// old rejection; not the one whose event is recent nor the idle one.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pass_steps_only_the_tenants_with_something_due() {
    let dir = tempfile::tempdir().unwrap();
    let store: Store = Arc::new(SledStore::open(dir.path(), 64, false).unwrap().0);
    let tenant = |id: &str| store.tenant(&TenantId::try_from(id).unwrap()).unwrap();
    let (old, recent, idle, refused) = (
        tenant("old"),
        tenant("recent"),
        tenant("idle"),
        tenant("refused"),
    );
    delivered(&old, "evt_old", 1, 1_000).await;
    delivered(&recent, "evt_recent", 1, 9_000).await;
    let log = store.rejections().unwrap();
    log.record(Rejection {
        tenant_id: "refused".into(),
        at_ms: 1_000,
        request_id: "req_1".into(),
        code: "BAD_SIGNATURE".into(),
        reason: "no key matched".into(),
        signature_valid: false,
        body_bytes: 2,
        body: b"{}".to_vec(),
    })
    .unwrap();
    let retention = RetentionConfig {
        idempotency_secs: 86_400,
        ..retention(5, 10)
    };
    let due = Due::at(&retention, 10_000);
    let mut pacing = pacing::Pacing::new(&retention);
    let tenants = vec![old.clone(), recent.clone(), idle, refused];

    let removed = paced_pass(&mut pacing, store.clone(), tenants, Some(log), &due, 10_000).await;

    assert_eq!(
        (removed.data.delivered, removed.rejections, removed.steps),
        (1, 1, 2),
        "{removed:?}"
    );
    assert!(old.deliveries(None, None, 10).unwrap().is_empty());
    assert_eq!(recent.deliveries(None, None, 10).unwrap().len(), 1);
}

/// A tenant's alert-sink handles are made once and kept while its data
/// handle is the same; a new data handle (the tenant made again) gets new
/// ones, and a tenant gone from the registry is dropped.
#[test]
fn sink_handles_are_kept_while_the_tenants_data_handle_is() {
    let dir = tempfile::tempdir().unwrap();
    let (store, _committer) = SledStore::open(dir.path(), 64, false).unwrap();
    let acme = TenantId::try_from("acme").unwrap();
    let data = store.tenant(&acme).unwrap();
    let mut sinks = SinkHandles::default();

    let first = sinks.of(&store, &data);
    assert_eq!(first.len(), crate::alerts::SINK_NAMES.len());
    assert_eq!(
        first[0].tenant(),
        &acme.alert_scope(crate::alerts::SINK_NAMES[0])
    );
    let again = sinks.of(&store, &data);
    assert!(first.iter().zip(&again).all(|(a, b)| Arc::ptr_eq(a, b)));

    let made_again = store.tenant(&acme).unwrap();
    let fresh = sinks.of(&store, &made_again);
    assert!(
        !Arc::ptr_eq(&first[0], &fresh[0]),
        "a new data handle, new sink handles"
    );

    sinks.keep(&HashSet::new());
    assert!(sinks.0.is_empty());
}
