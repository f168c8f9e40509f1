//! Conformance of the statuses a route gives a delivery without sending it:
//! `filtered`, `unrouted`, `transform_failed` and `dropped`.

use super::{attempt, new_delivery, only_entry, tenant, Engine};
use crate::{
    api::{CommitOutcome, Receipt, RouteCopy, SweepRequest},
    ids::{DeliveryId, TenantId},
    lifecycle::{Next, Resend},
    records::{DeliveryStatus, RouteOutcome},
};

fn outcome(route: &str, delivery_id: Option<&DeliveryId>, filtered: bool) -> RouteOutcome {
    RouteOutcome {
        route: route.to_owned(),
        delivery_id: delivery_id.cloned(),
        filtered,
    }
}

/// A default delivery whose filter failed (`filtered`) or an event no
/// route passed (`unrouted`) is final at receipt, never queued, keeps which
/// route got which delivery, and goes with retention like a delivered one.
pub(super) async fn filtered_and_unrouted_are_final_at_receipt_and_swept(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut none = new_delivery("evt_none", 1_000, None);
    let none_id = none.meta.delivery_id.clone();
    none.receipt = Receipt::Unrouted;
    none.routes = vec![
        outcome("default", Some(&none_id), true),
        outcome("audit", None, true),
    ];
    let none_routes = none.routes.clone();
    assert_eq!(data.commit(none).await.unwrap(), CommitOutcome::Accepted);

    let acme = TenantId::try_from("acme").unwrap();
    let mut some = new_delivery("evt_some", 1_000, None);
    let some_id = some.meta.delivery_id.clone();
    let copy = RouteCopy {
        route: "audit".into(),
        scope: acme.route_scope("audit"),
        delivery_id: DeliveryId::due_at(some.due_ms),
        due_ms: some.due_ms,
    };
    some.receipt = Receipt::Filtered;
    some.routes = vec![
        outcome("default", Some(&some_id), true),
        outcome("audit", Some(&copy.delivery_id), false),
    ];
    some.copies = vec![copy.clone()];
    assert_eq!(data.commit(some).await.unwrap(), CommitOutcome::Accepted);

    assert!(data.queue(None, 10).unwrap().is_empty(), "nothing queued");
    assert_eq!(data.counts().unwrap().depth, 0);
    let state = data.state(&none_id).unwrap().unwrap();
    assert_eq!(state.status, DeliveryStatus::Unrouted);
    assert_eq!(
        (state.finished_at_ms, state.next_attempt_at_ms),
        (Some(1_000), None)
    );
    assert_eq!(state.routes, none_routes);
    let state = data.state(&some_id).unwrap().unwrap();
    assert_eq!(state.status, DeliveryStatus::Filtered);
    assert_eq!(
        state.routes[1].delivery_id.as_ref(),
        Some(&copy.delivery_id)
    );
    let listed = |status| {
        data.deliveries(Some(status), None, 10)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect::<Vec<_>>()
    };
    assert_eq!(
        listed(DeliveryStatus::Unrouted),
        std::slice::from_ref(&none_id)
    );
    assert_eq!(
        listed(DeliveryStatus::Filtered),
        std::slice::from_ref(&some_id)
    );
    let audit = engine.store.tenant(&copy.scope).unwrap();
    assert_eq!(audit.queue(None, 10).unwrap().len(), 1, "the route's copy");
    assert!(audit
        .state(&copy.delivery_id)
        .unwrap()
        .unwrap()
        .routes
        .is_empty());

    let again = new_delivery("evt_none", 2_000, None);
    assert_eq!(
        data.commit(again).await.unwrap(),
        CommitOutcome::Duplicate(none_id.clone())
    );

    let request = SweepRequest {
        delivered_before_ms: 5_000,
        idem_before_ms: 0,
        dead_before_ms: 0,
        batch: 100,
        idem_scan: 100,
    };
    let swept = data.sweep(&request, &mut Vec::new()).unwrap();
    assert_eq!(swept.delivered, 2, "{swept:?}");
    assert!(data.state(&none_id).unwrap().is_none());
    assert!(data.event(&some_id).unwrap().is_none());
    let kept = audit.event(&copy.delivery_id).unwrap().unwrap();
    assert_eq!(
        kept.meta.delivery_id, copy.delivery_id,
        "the copy keeps its event"
    );
    assert_eq!(&kept.body[..], br#"{"event":"evt_some"}"#);
}

/// A transform's failure is a dead letter (`transform_failed`), its drop
/// final (`dropped`).
pub(super) async fn a_transform_failure_is_a_dead_letter_and_a_drop_is_final(engine: Engine) {
    let data = tenant(&engine, "acme");
    let failed = super::accepted(&data, "evt_fail", 1_000).await;
    let (entry, _) = only_entry(&data);
    let next = Next::TransformFailed {
        reason: "transform_failed: transform threw: Error: no".into(),
    };
    let state = data
        .record_attempt(&entry, &failed, &attempt(1, 1_000), &next, 1_100)
        .unwrap()
        .unwrap();
    assert_eq!(state.status, DeliveryStatus::TransformFailed);
    assert_eq!(data.counts().unwrap().dead, 1);
    let letters = data.dead_letters(None, 10, &|_| true).unwrap();
    assert_eq!(letters.len(), 1);
    assert!(letters[0].1.reason.starts_with("transform_failed: "));
    let again = data.redeliver(&failed, 1_200, Resend::Any).unwrap();
    assert_eq!(
        data.state(&failed).unwrap().unwrap().status,
        DeliveryStatus::Redelivered
    );
    assert_eq!(data.counts().unwrap().dead, 0);

    let (entry, id) = only_entry(&data);
    assert_eq!(id, again);
    let state = data
        .record_attempt(&entry, &again, &attempt(1, 1_300), &Next::Dropped, 1_300)
        .unwrap()
        .unwrap();
    assert_eq!(state.status, DeliveryStatus::Dropped);
    assert_eq!(state.finished_at_ms, Some(1_300));
    assert_eq!(data.counts().unwrap(), Default::default());
    let request = SweepRequest {
        delivered_before_ms: 5_000,
        idem_before_ms: 0,
        dead_before_ms: 0,
        batch: 100,
        idem_scan: 100,
    };
    let swept = data.sweep(&request, &mut Vec::new()).unwrap();
    assert_eq!((swept.delivered, swept.originals), (1, 1), "{swept:?}");
    assert!(data.state(&failed).unwrap().is_none());

    let purged = super::accepted(&data, "evt_purge", 2_000).await;
    let (entry, _) = only_entry(&data);
    data.record_attempt(&entry, &purged, &attempt(1, 2_000), &next, 2_000)
        .unwrap()
        .unwrap();
    let (key, letter) = data.dead_letters(None, 10, &|_| true).unwrap().remove(0);
    assert!(data.purge_dead_letter(&key, &letter).unwrap(), "purged");
    assert!(data.state(&purged).unwrap().is_none());
    assert_eq!(data.counts().unwrap().dead, 0);
}
