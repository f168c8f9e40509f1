//! DeliveryService against the fake backend: attempts, redelivery and the
//! watch stream's scoping, lag and shutdown behaviour.

use futures_util::StreamExt;

use super::*;
use crate::model::{
    AttemptView, DeadLetterView, DeliveryEventKind, DeliveryEventView, DeliveryStatus, DeliveryView,
};

fn event(tenant_id: &str, delivery_id: &str) -> DeliveryEventView {
    DeliveryEventView {
        kind: DeliveryEventKind::Accepted,
        tenant_id: tenant_id.into(),
        delivery_id: delivery_id.into(),
        event_id: "evt_1".into(),
        at_ms: 1,
        attempt: None,
        status_code: None,
        reason: None,
        redelivered_as: None,
        next_attempt_at_ms: None,
    }
}

#[tokio::test]
async fn get_delivery_returns_every_attempt() {
    let backend = Arc::new(FakeBackend::new());
    backend.add_delivery(DeliveryView {
        tenant_id: "acme".into(),
        delivery_id: "dlv_1".into(),
        event_id: "evt_1".into(),
        status: DeliveryStatus::Dead,
        received_at_ms: 10,
        attempt_count: 1,
        next_attempt_at_ms: None,
        last_error: Some("410 Gone".into()),
        redelivery_of: None,
        redelivered_as: None,
        attempts: vec![AttemptView {
            attempt: 1,
            started_at_ms: 11,
            duration_ms: 5,
            status_code: Some(410),
            error: Some("410 Gone".into()),
            response_body: b"gone".to_vec(),
            next_retry_at_ms: None,
            request_id: "req_1".into(),
        }],
        redirects: Vec::new(),
        route: "default".into(),
        routes: Vec::new(),
    });
    let (api, _stop) = deliveries(&backend);
    let got = api
        .get_delivery(request(
            Some(ACME),
            pb::GetDeliveryRequest {
                tenant_id: "acme".into(),
                delivery_id: "dlv_1".into(),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(got.status(), pb::DeliveryStatus::Dead);
    assert_eq!(got.attempts.len(), 1);
    assert_eq!(got.attempts[0].status_code, 410);
    assert_eq!(got.attempts[0].response_body, b"gone");
}

#[tokio::test]
async fn a_tenant_watcher_without_tenant_id_sees_only_its_tenant() {
    let backend = Arc::new(FakeBackend::new());
    let (api, _stop) = deliveries(&backend);
    let mut stream = api
        .watch_deliveries(request(Some(ACME), pb::WatchDeliveriesRequest::default()))
        .await
        .unwrap()
        .into_inner();
    backend.events.send(event("globex", "dlv_g")).unwrap();
    backend.events.send(event("acme", "dlv_a")).unwrap();
    let first = stream.next().await.unwrap().unwrap();
    assert_eq!(
        (first.tenant_id.as_str(), first.delivery_id.as_str()),
        ("acme", "dlv_a")
    );
    assert_eq!(first.kind(), pb::DeliveryEventKind::Accepted);
}

#[tokio::test]
async fn a_lagging_watcher_is_ended_with_unavailable() {
    let backend = Arc::new(FakeBackend::new());
    let (api, _stop) = deliveries(&backend);
    let mut stream = api
        .watch_deliveries(request(Some(ADMIN), pb::WatchDeliveriesRequest::default()))
        .await
        .unwrap()
        .into_inner();
    for n in 0..10 {
        backend
            .events
            .send(event("acme", &format!("dlv_{n}")))
            .unwrap();
    }
    let status = stream.next().await.unwrap().unwrap_err();
    assert_eq!(status.code(), Code::Unavailable);
    assert!(
        status.message().contains("ListDeliveries"),
        "{}",
        status.message()
    );
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn shutdown_ends_open_watch_streams() {
    let backend = Arc::new(FakeBackend::new());
    let (api, stop) = deliveries(&backend);
    let mut stream = api
        .watch_deliveries(request(
            Some(ADMIN),
            pb::WatchDeliveriesRequest {
                tenant_id: "acme".into(),
            },
        ))
        .await
        .unwrap()
        .into_inner();
    stop.send_replace(true);
    assert_eq!(
        stream.next().await.unwrap().unwrap_err().code(),
        Code::Unavailable
    );
    assert!(stream.next().await.is_none());
}

#[tokio::test]
async fn redeliver_answers_the_new_ids_in_request_order() {
    let backend = Arc::new(FakeBackend::new());
    for id in ["dlv_1", "dlv_2"] {
        backend.add_dead_letter(DeadLetterView {
            tenant_id: "acme".into(),
            delivery_id: id.into(),
            event_id: "evt_1".into(),
            reason: "410 Gone".into(),
            dead_at_ms: 10,
            attempt_count: 1,
            last_status_code: Some(410),
            route: "default".into(),
        });
    }
    let (api, _stop) = deliveries(&backend);
    let redeliver = pb::RedeliverRequest {
        tenant_id: "acme".into(),
        delivery_ids: vec!["dlv_2".into(), "dlv_1".into()],
        ..Default::default()
    };
    let answer = api
        .redeliver(request(Some(ACME), redeliver))
        .await
        .unwrap()
        .into_inner();
    assert_eq!(answer.delivery_ids, ["dlv_2-again", "dlv_1-again"]);
}
