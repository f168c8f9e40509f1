//! Conformance of fan-out: one delivery per route, in one commit, each
//! route's queue, states and dead letters its own.

use super::{attempt, kill, new_delivery, tenant, Engine};
use crate::{
    api::{CommitOutcome, QueueKey, RouteCopy, SweepRequest, TenantStore},
    ids::{DeliveryId, TenantId},
    lifecycle::{Next, Resend},
    records::DeliveryStatus,
};

/// The copies of an event due at `due_ms` for routes `routes` of tenant
/// `acme`, with ids as the gate makes them.
fn copies(routes: &[&str], due_ms: i64) -> Vec<RouteCopy> {
    let acme = TenantId::try_from("acme").unwrap();
    routes
        .iter()
        .map(|route| RouteCopy {
            route: (*route).to_owned(),
            scope: acme.route_scope(route),
            delivery_id: DeliveryId::sharing(due_ms),
            due_ms,
        })
        .collect()
}

/// A pull of one delivery at `now_ms`.
fn one_pull(now_ms: i64) -> crate::api::PullRequest {
    crate::api::PullRequest {
        max: 1,
        max_bytes: 1 << 20,
        visibility_ms: 30_000,
        window_ms: 3_600_000,
        now_ms,
    }
}

fn scope(engine: &Engine, route: &str) -> TenantStore {
    let acme = TenantId::try_from("acme").unwrap();
    engine.store.tenant(&acme.route_scope(route)).unwrap()
}

/// Conformance of fan-out: an event accepted for a tenant with routes gets
/// one delivery per route, each in its route's scope, written in the one
/// commit that records the event (a duplicate writes none), and each
/// route's queue, states and dead letters are its own.
pub(super) async fn a_fan_out_is_one_commit_and_a_duplicate_writes_none(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut item = new_delivery("evt_fan", 1_000, None);
    item.copies = copies(&["audit", "pull"], item.due_ms);
    let (first, others) = (item.meta.delivery_id.clone(), item.copies.clone());
    assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
    assert_eq!(data.queue(None, 10).unwrap().len(), 1);
    for copy in &others {
        let route = scope(&engine, &copy.route);
        let queue = route.queue(None, 10).unwrap();
        assert_eq!(queue.len(), 1, "{}: one queue entry", copy.route);
        assert_eq!(queue[0].1, copy.delivery_id);
        let state = route.state(&copy.delivery_id).unwrap().unwrap();
        assert_eq!(state.status, DeliveryStatus::Pending);
        let event = route.event(&copy.delivery_id).unwrap().unwrap();
        assert_eq!(event.meta.delivery_id, copy.delivery_id);
        assert_eq!(&event.body[..], br#"{"event":"evt_fan"}"#);
        assert!(
            data.state(&copy.delivery_id).unwrap().is_none(),
            "not the tenant's own"
        );
    }

    let mut again = new_delivery("evt_fan", 2_000, None);
    again.copies = copies(&["audit", "pull"], again.due_ms);
    assert_eq!(
        data.commit(again).await.unwrap(),
        CommitOutcome::Duplicate(first)
    );
    for route in ["audit", "pull"] {
        assert_eq!(scope(&engine, route).queue(None, 10).unwrap().len(), 1);
    }
}

pub(super) async fn route_queues_are_apart(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut item = new_delivery("evt_apart", 1_000, None);
    item.copies = copies(&["audit"], item.due_ms);
    let audit_id = item.copies[0].delivery_id.clone();
    data.commit(item).await.unwrap();
    let audit = scope(&engine, "audit");
    let (entry, id) = audit.queue(None, 10).unwrap().remove(0);
    assert_eq!(id, audit_id);
    let dead = Next::Dead {
        reason: "gave up".into(),
    };
    audit
        .record_attempt(&entry, &id, &attempt(1, 1_000), &dead, 1_000)
        .unwrap()
        .unwrap();
    assert_eq!(audit.counts().unwrap().dead, 1);
    assert_eq!(data.counts().unwrap().dead, 0, "the default route has none");
    assert_eq!(
        data.counts().unwrap().depth,
        1,
        "and its own is still queued"
    );
    assert_eq!(audit.counts().unwrap().depth, 0);
}

/// Each copy's event, read through its route: the body and its own id.
fn assert_copies_read_whole(engine: &Engine, copies: &[RouteCopy], body: &[u8]) {
    for copy in copies {
        let event = scope(engine, &copy.route)
            .event(&copy.delivery_id)
            .unwrap()
            .unwrap_or_else(|| panic!("{}: the copy's event is gone", copy.route));
        assert_eq!(event.meta.delivery_id, copy.delivery_id, "{}", copy.route);
        assert_eq!(&event.body[..], body, "{}", copy.route);
    }
}

/// However an engine stores a fanned-out event, each route's copy keeps it
/// after the default route's delivery is gone: swept once delivered, or
/// purged as a dead letter; and a copy redelivered after that sends it.
pub(super) async fn a_route_copy_keeps_its_event_when_the_default_delivery_goes(engine: Engine) {
    let data = tenant(&engine, "acme");
    let sweep = |delivered_before_ms, dead_before_ms| SweepRequest {
        delivered_before_ms,
        idem_before_ms: 0,
        dead_before_ms,
        batch: 100,
        idem_scan: 100,
    };

    let mut item = new_delivery("evt_kept", 1_000, None);
    item.copies = copies(&["audit", "pull"], item.due_ms);
    item.routes = RouteCopy::listed(&item.meta.delivery_id, &item.copies);
    let (default, kept) = (item.meta.delivery_id.clone(), item.copies.clone());
    data.commit(item).await.unwrap();
    assert_copies_read_whole(&engine, &kept, br#"{"event":"evt_kept"}"#);
    let (entry, id) = data.queue(None, 10).unwrap().remove(0);
    assert_eq!(id, default);
    data.record_attempt(&entry, &id, &attempt(1, 2_000), &Next::Delivered, 2_000)
        .unwrap()
        .unwrap();
    assert_eq!(
        data.sweep(&sweep(5_000, 0), &mut Vec::new())
            .unwrap()
            .delivered,
        1
    );
    assert!(
        data.event(&default).unwrap().is_none(),
        "the default's is gone"
    );
    assert_copies_read_whole(&engine, &kept, br#"{"event":"evt_kept"}"#);

    let audit = scope(&engine, "audit");
    let dead = kill(&audit, 6_000);
    assert_eq!(dead, kept[0].delivery_id);
    let again = audit.redeliver(&dead, 7_000, Resend::Once).unwrap();
    let event = audit.event(&again).unwrap().unwrap();
    assert_eq!(event.meta.delivery_id, again);
    assert_eq!(&event.body[..], br#"{"event":"evt_kept"}"#);

    let mut item = new_delivery("evt_purged", 10_000, None);
    item.copies = copies(&["audit"], item.due_ms);
    item.routes = RouteCopy::listed(&item.meta.delivery_id, &item.copies);
    let purged = item.copies.clone();
    data.commit(item).await.unwrap();
    let dead_default = kill(&data, 11_000);
    assert_eq!(
        data.sweep(&sweep(0, 12_000), &mut Vec::new()).unwrap().dead,
        1
    );
    assert!(data.event(&dead_default).unwrap().is_none());
    assert_copies_read_whole(&engine, &purged, br#"{"event":"evt_purged"}"#);
}

/// A route's copy, from its receipt until its first attempt and after:
/// found by id, listed newest first page by page among the route's other
/// deliveries, pulled, acknowledged and attempted as any delivery, and its
/// queue counted; and when the default route's delivery goes before the
/// copy was ever attempted, the copy keeps its event.
pub(super) async fn a_route_copy_is_a_delivery_from_its_receipt_on(engine: Engine) {
    let data = tenant(&engine, "acme");
    let mut copies_in_order = Vec::new();
    let mut defaults = Vec::new();
    for (n, at) in [1_000, 2_000, 3_000, 4_000].into_iter().enumerate() {
        let mut item = new_delivery(&format!("evt_receipt_{n}"), at, None);
        item.copies = copies(&["audit"], item.due_ms);
        item.routes = RouteCopy::listed(&item.meta.delivery_id, &item.copies);
        copies_in_order.push(item.copies[0].delivery_id.clone());
        defaults.push(item.meta.delivery_id.clone());
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
    }
    let audit = scope(&engine, "audit");
    let newest_first: Vec<DeliveryId> = copies_in_order.iter().rev().cloned().collect();
    let listed = |status, before: Option<&DeliveryId>, limit| -> Vec<DeliveryId> {
        audit
            .deliveries(status, before, limit)
            .unwrap()
            .into_iter()
            .map(|(id, _)| id)
            .collect()
    };
    assert_eq!(listed(None, None, 10), newest_first);
    assert_eq!(listed(None, None, 2), newest_first[..2]);
    assert_eq!(listed(None, Some(&newest_first[1]), 10), newest_first[2..]);
    assert!(listed(Some(DeliveryStatus::Delivered), None, 10).is_empty());
    assert_eq!(audit.counts().unwrap().depth, 4);
    for (n, id) in copies_in_order.iter().enumerate() {
        let state = audit.state(id).unwrap().unwrap();
        assert_eq!(
            (state.status, state.attempts, state.received_at_ms),
            (DeliveryStatus::Pending, 0, 1_000 * (n as i64 + 1))
        );
    }

    // The newest is attempted and delivered; the oldest acknowledged
    // without ever being pulled; the second pulled, then acknowledged.
    let (entry, id) = audit
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .find(|(_, id)| *id == newest_first[0])
        .unwrap();
    audit
        .record_attempt(&entry, &id, &attempt(1, 5_000), &Next::Delivered, 5_000)
        .unwrap()
        .unwrap();
    assert_eq!(audit.ack(&copies_in_order[..1], 5_000).unwrap(), 1);
    let pulled = audit.pull(one_pull(5_000)).unwrap();
    assert_eq!(pulled.len(), 1);
    assert_eq!(pulled[0].0.meta.delivery_id, copies_in_order[1]);
    assert_eq!(pulled[0].1, 1, "its first attempt");
    assert_eq!(&pulled[0].0.body[..], br#"{"event":"evt_receipt_1"}"#);
    assert_eq!(audit.ack(&copies_in_order[1..2], 6_000).unwrap(), 1);
    assert_eq!(audit.ack(&copies_in_order[1..2], 6_000).unwrap(), 0);

    assert_eq!(listed(None, None, 10), newest_first, "the order holds");
    let statuses: Vec<DeliveryStatus> = audit
        .deliveries(None, None, 10)
        .unwrap()
        .into_iter()
        .map(|(_, state)| state.status)
        .collect();
    use DeliveryStatus::{Delivered, Pending};
    assert_eq!(statuses, [Delivered, Pending, Delivered, Delivered]);
    assert_eq!(
        listed(Some(Pending), None, 10),
        [copies_in_order[2].clone()]
    );
    assert_eq!(audit.counts().unwrap().depth, 1);

    // The default route's delivery of the third event is delivered and
    // swept while its copy was never attempted: the copy keeps the event.
    let (entry, id) = data
        .queue(None, 10)
        .unwrap()
        .into_iter()
        .find(|(_, id)| *id == defaults[2])
        .unwrap();
    data.record_attempt(&entry, &id, &attempt(1, 7_000), &Next::Delivered, 7_000)
        .unwrap()
        .unwrap();
    let sweep = SweepRequest {
        delivered_before_ms: 8_000,
        idem_before_ms: 0,
        dead_before_ms: 0,
        batch: 100,
        idem_scan: 100,
    };
    assert_eq!(data.sweep(&sweep, &mut Vec::new()).unwrap().delivered, 1);
    assert!(data.event(&defaults[2]).unwrap().is_none());
    let kept = &copies_in_order[2];
    let event = audit.event(kept).unwrap().unwrap();
    assert_eq!(
        (&event.meta.delivery_id, &event.body[..]),
        (kept, &br#"{"event":"evt_receipt_2"}"#[..])
    );
    let state = audit.state(kept).unwrap().unwrap();
    assert_eq!((state.status, state.attempts), (Pending, 0));
    assert_eq!(listed(Some(Pending), None, 10), std::slice::from_ref(kept));
}

/// Copies whose ids share a place (as the gate makes them, and as an
/// engine may file them together) are each a delivery of their own: listed,
/// counted, attempted, acknowledged and pulled one by one, whether they were
/// written in one commit or in several.
pub(super) async fn copies_sharing_a_place_are_each_a_delivery(engine: Engine) {
    let data = tenant(&engine, "acme");
    let slot = crate::ids::SharedSlot::new();
    let acme = TenantId::try_from("acme").unwrap();
    let item = |n: i64| {
        let mut item = new_delivery(&format!("evt_place_{n}"), 1_000 + n, None);
        item.copies = vec![RouteCopy {
            route: "audit".into(),
            scope: acme.route_scope("audit"),
            delivery_id: slot.next(item.due_ms),
            due_ms: item.due_ms,
        }];
        item.routes = RouteCopy::listed(&item.meta.delivery_id, &item.copies);
        item
    };
    let mut ids = Vec::new();
    for n in 0..3 {
        let item = item(n);
        ids.push(item.copies[0].delivery_id.clone());
        assert_eq!(data.commit(item).await.unwrap(), CommitOutcome::Accepted);
    }
    let (fourth, fifth) = (item(3), item(4));
    ids.extend([&fourth, &fifth].map(|i| i.copies[0].delivery_id.clone()));
    let (a, b) = tokio::join!(data.commit(fourth), data.commit(fifth));
    assert_eq!(
        (a.unwrap(), b.unwrap()),
        (CommitOutcome::Accepted, CommitOutcome::Accepted)
    );
    let place = ids[0].queue_slot().unwrap();
    assert!(ids.iter().all(|id| id.queue_slot() == Some(place)));

    let audit = scope(&engine, "audit");
    let queued = |after: Option<&QueueKey>| audit.queue(after, 10).unwrap();
    let mut listed: Vec<DeliveryId> = queued(None).into_iter().map(|(_, id)| id).collect();
    listed.sort();
    assert_eq!(listed, ids, "each copy listed once");
    let entries = queued(None);
    let mut keys: Vec<&QueueKey> = entries.iter().map(|(key, _)| key).collect();
    keys.dedup();
    assert_eq!(keys.len(), 5, "each handed out under an entry of its own");
    assert_eq!(queued(Some(&entries[1].0)), entries[2..], "paged after one");
    assert_eq!(audit.counts().unwrap().depth, 5);
    for (n, id) in ids.iter().enumerate() {
        let event = audit.event(id).unwrap().unwrap();
        assert_eq!(
            event.body,
            format!(r#"{{"event":"evt_place_{n}"}}"#).into_bytes()
        );
        let state = audit.state(id).unwrap().unwrap();
        assert_eq!((state.status, state.attempts), (DeliveryStatus::Pending, 0));
    }

    // One is delivered, one dead-lettered, one acknowledged, one pulled:
    // each leaves the others where they were.
    let entry_of = |id: &DeliveryId| queued(None).into_iter().find(|(_, i)| i == id).unwrap().0;
    let delivered = audit
        .record_attempt(
            &entry_of(&ids[2]),
            &ids[2],
            &attempt(1, 2_000),
            &Next::Delivered,
            2_000,
        )
        .unwrap()
        .unwrap();
    assert_eq!(delivered.status, DeliveryStatus::Delivered);
    let dead = Next::Dead {
        reason: "gave up".into(),
    };
    let state = audit
        .record_attempt(
            &entry_of(&ids[0]),
            &ids[0],
            &attempt(1, 2_000),
            &dead,
            2_000,
        )
        .unwrap()
        .unwrap();
    assert_eq!(state.status, DeliveryStatus::Dead);
    assert_eq!(audit.ack(&ids[3..4], 2_000).unwrap(), 1);
    let left: Vec<DeliveryId> = queued(None).into_iter().map(|(_, id)| id).collect();
    assert_eq!(left, [ids[1].clone(), ids[4].clone()]);
    assert_eq!(audit.counts().unwrap().depth, 2);
    let pulled = audit.pull(one_pull(2_000)).unwrap();
    assert_eq!(pulled.len(), 1);
    assert_eq!(pulled[0].0.meta.delivery_id, ids[1]);
    assert_eq!(
        audit.counts().unwrap().depth,
        2,
        "a pulled delivery stays queued"
    );
    let state = audit.state(&ids[4]).unwrap().unwrap();
    assert_eq!((state.status, state.attempts), (DeliveryStatus::Pending, 0));
    assert!(audit
        .record_attempt(
            &entry_of(&ids[4]),
            &ids[4],
            &attempt(1, 3_000),
            &Next::Delivered,
            3_000
        )
        .unwrap()
        .is_some());
    assert_eq!(audit.ack(&ids[1..2], 3_000).unwrap(), 1);
    assert!(queued(None).is_empty());
    assert_eq!(audit.counts().unwrap().depth, 0);
    let statuses: Vec<DeliveryStatus> = ids
        .iter()
        .map(|id| audit.state(id).unwrap().unwrap().status)
        .collect();
    use DeliveryStatus::{Dead, Delivered};
    assert_eq!(statuses, [Dead, Delivered, Delivered, Delivered, Delivered]);
}
