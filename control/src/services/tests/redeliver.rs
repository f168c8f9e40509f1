//! DeliveryService's routes and redelivery by filter against the fake
//! backend: the route each call names reaches the backend (an unknown one
//! is NOT_FOUND), the new filters and the dry run need all_matching, and a
//! dry run answers the count without redelivering.

use super::*;
use crate::model::{DeadLetterFilter, DeadLetterView, Matching, Pick, Selection};

fn dead(delivery_id: &str, route: &str, dead_at_ms: i64) -> DeadLetterView {
    DeadLetterView {
        tenant_id: "acme".into(),
        delivery_id: delivery_id.into(),
        event_id: format!("evt_{delivery_id}"),
        reason: "500 Internal Server Error".into(),
        dead_at_ms,
        attempt_count: 1,
        last_status_code: Some(500),
        route: route.into(),
    }
}

fn list(route: &str) -> pb::ListDeadLettersRequest {
    pb::ListDeadLettersRequest {
        tenant_id: "acme".into(),
        route: route.into(),
        ..Default::default()
    }
}

fn matching_on(route: &str, dry_run: bool) -> pb::RedeliverRequest {
    pb::RedeliverRequest {
        tenant_id: "acme".into(),
        all_matching: true,
        route: route.into(),
        event_type: "order.paid".into(),
        dry_run,
        ..Default::default()
    }
}

#[tokio::test]
async fn dead_letters_are_listed_per_route_and_empty_is_default() {
    let backend = Arc::new(FakeBackend::new());
    backend.add_route("acme", "audit");
    backend.add_dead_letter(dead("dlv_a", "audit", 10));
    backend.add_dead_letter(dead("dlv_d", "default", 20));
    let (api, _stop) = deliveries(&backend);
    let listed = |route: &str| {
        let request = request(Some(ACME), list(route));
        let api = &api;
        async move {
            let page = api.list_dead_letters(request).await.unwrap().into_inner();
            let ids: Vec<(String, String)> = page
                .dead_letters
                .into_iter()
                .map(|d| (d.delivery_id, d.route))
                .collect();
            ids
        }
    };
    assert_eq!(listed("audit").await, [("dlv_a".into(), "audit".into())]);
    assert_eq!(listed("").await, [("dlv_d".into(), "default".into())]);
    assert_eq!(listed("default").await, listed("").await);
}

#[tokio::test]
async fn an_unknown_route_is_not_found_and_a_malformed_one_invalid() {
    let backend = Arc::new(FakeBackend::new());
    let (api, _stop) = deliveries(&backend);
    let (code, message) = refused(
        api.list_dead_letters(request(Some(ACME), list("nope")))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    assert!(message.contains("nope"), "{message}");
    let listing = pb::ListDeliveriesRequest {
        tenant_id: "acme".into(),
        route: "nope".into(),
        ..Default::default()
    };
    let (code, _) = refused(api.list_deliveries(request(Some(ACME), listing)).await);
    assert_eq!(code, Code::NotFound);
    let (code, _) = refused(
        api.redeliver(request(Some(ACME), matching_on("nope", true)))
            .await,
    );
    assert_eq!(code, Code::NotFound);
    let (code, message) = refused(
        api.list_dead_letters(request(Some(ACME), list("Not A Route")))
            .await,
    );
    assert_eq!(code, Code::InvalidArgument, "{message}");
}

#[tokio::test]
async fn dry_run_and_the_new_filters_need_all_matching() {
    let backend = Arc::new(FakeBackend::new());
    let (api, _stop) = deliveries(&backend);
    let by_id = pb::RedeliverRequest {
        tenant_id: "acme".into(),
        delivery_ids: vec!["dlv_1".into()],
        ..Default::default()
    };
    let invalid = [
        pb::RedeliverRequest {
            dry_run: true,
            ..by_id.clone()
        },
        pb::RedeliverRequest {
            event_type: "order.paid".into(),
            ..by_id.clone()
        },
        pb::RedeliverRequest {
            status: pb::DeliveryStatus::Dead.into(),
            ..by_id.clone()
        },
        pb::RedeliverRequest {
            status: pb::DeliveryStatus::Pending.into(),
            ..matching_on("", false)
        },
        pb::RedeliverRequest {
            status: pb::DeliveryStatus::Delivered.into(),
            reason_contains: "500".into(),
            ..matching_on("", false)
        },
    ];
    for redeliver in invalid {
        let (code, message) = refused(api.redeliver(request(Some(ACME), redeliver.clone())).await);
        assert_eq!(code, Code::InvalidArgument, "{redeliver:?}: {message}");
    }
    assert!(
        !backend.calls().contains(&"redeliver"),
        "refused before the backend"
    );
}

#[tokio::test]
async fn a_dry_run_answers_the_count_and_redelivers_nothing() {
    let backend = Arc::new(FakeBackend::new());
    backend.add_route("acme", "audit");
    for (id, at) in [("dlv_2", 20), ("dlv_1", 10), ("dlv_3", 30)] {
        backend.add_dead_letter(dead(id, "audit", at));
    }
    backend.add_dead_letter(dead("dlv_other", "default", 5));
    let (api, _stop) = deliveries(&backend);
    let dry = api
        .redeliver(request(Some(ACME), matching_on("audit", true)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(dry.matched, 3);
    assert_eq!(dry.matched_ids, ["dlv_1", "dlv_2", "dlv_3"], "oldest first");
    assert!(dry.delivery_ids.is_empty() && !dry.more);
    assert_eq!(
        backend.selections()[0],
        Selection {
            route: Some("audit".into()),
            pick: Pick::Matching(Matching {
                filter: DeadLetterFilter::default(),
                status: crate::model::DeliveryStatus::Dead,
                event_type: Some("order.paid".into()),
                dry_run: true,
            }),
        }
    );
    let still = api
        .list_dead_letters(request(Some(ACME), list("audit")))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(still.dead_letters.len(), 3, "a dry run changes nothing");

    let done = api
        .redeliver(request(Some(ACME), matching_on("audit", false)))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(done.matched, 3);
    assert_eq!(done.matched as usize, done.delivery_ids.len());
    assert_eq!(done.delivery_ids[0], "dlv_1-again");
}
