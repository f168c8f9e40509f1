//! A route's settings over RouteService beyond its destination: the
//! `default` route's filter on a tenant created over the API (an event no
//! route passes is then stored as `unrouted`), and a route's transform
//! budget, set, reset to its default and held to its bounds.

use hookd_sdk::{
    client::{
        proto::{CreateRouteRequest, DeliveryStatus, UpdateRouteRequest},
        Code,
    },
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;

use crate::{
    harness::TestServer,
    route_service::{create_tenant, new_route, FIXED, LOCAL_DESTINATIONS},
};

#[tokio::test(flavor = "multi_thread")]
async fn an_api_tenants_default_route_takes_a_filter_and_an_event_no_route_passes_is_unrouted() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", "").await;
    let only_paid = r#"{"body":{"type":"order.paid"}}"#;
    let bad = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            filter_json: Some(r#"{"body":{"n":{"$gte":[]}}}"#.into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(bad.code(), Code::InvalidArgument, "{bad}");
    assert!(
        bad.status()
            .unwrap()
            .message()
            .contains("filter/body/n/$gte"),
        "{bad}"
    );
    let default = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            filter_json: Some(only_paid.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    let filter: serde_json::Value = serde_json::from_str(&default.filter_json).unwrap();
    assert_eq!(filter, serde_json::json!({"body": {"type": "order.paid"}}));
    let read = admin.get_route("shop", "default").await.unwrap();
    assert_eq!(read.filter_json, default.filter_json, "kept in the catalog");

    let key = Secret::from_provider(Scheme::Standard, &kid, &secret).unwrap();
    let body = br#"{"id":"evt_refund","type":"order.refunded"}"#;
    let headers = sign(Scheme::Standard, &key, "evt_refund", s.clock_secs(), body);
    let answer = s.post("shop", &headers, body).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
    assert_eq!(answer.body["status"], "unrouted", "{:?}", answer.body);
    let id = answer.body["delivery_id"].as_str().unwrap().to_owned();
    let delivery = admin.get_delivery("shop", &id).await.unwrap();
    assert_eq!(delivery.status(), DeliveryStatus::Unrouted);

    admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            filter_json: Some(String::new()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        admin
            .get_route("shop", "default")
            .await
            .unwrap()
            .filter_json,
        ""
    );
    let body = br#"{"id":"evt_refund_2","type":"order.refunded"}"#;
    let headers = sign(Scheme::Standard, &key, "evt_refund_2", s.clock_secs(), body);
    let again = s.post("shop", &headers, body).await;
    assert_eq!(again.status, StatusCode::ACCEPTED, "{:?}", again.body);
    assert!(
        again.body.get("status").is_none(),
        "routed again: {:?}",
        again.body
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn a_routes_transform_budget_is_set_changed_and_bounded_over_the_api() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    create_tenant(&admin, "shop", "").await;
    let created = admin
        .create_route(CreateRouteRequest {
            transform_cpu_ms: 200,
            transform_memory_mib: 32,
            ..new_route("shop", "shaped", "http://127.0.0.1:9/in", FIXED)
        })
        .await
        .unwrap();
    assert_eq!(
        (created.transform_cpu_ms, created.transform_memory_mib),
        (200, 32)
    );
    let reset = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "shaped".into(),
            transform_cpu_ms: Some(0),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (reset.transform_cpu_ms, reset.transform_memory_mib),
        (50, 32),
        "0 is the default; the memory cap is kept"
    );
    for (cpu, memory, field) in [
        (1001, 0, "transform_cpu_ms"),
        (0, 257, "transform_memory_mib"),
    ] {
        let refused = admin
            .update_route(UpdateRouteRequest {
                tenant_id: "shop".into(),
                name: "shaped".into(),
                transform_cpu_ms: (cpu != 0).then_some(cpu),
                transform_memory_mib: (memory != 0).then_some(memory),
                ..Default::default()
            })
            .await
            .unwrap_err();
        assert_eq!(refused.code(), Code::InvalidArgument, "{refused}");
        let message = refused.status().unwrap().message().to_owned();
        assert!(message.starts_with(field), "{message}");
    }
    let kept = admin.get_route("shop", "shaped").await.unwrap();
    assert_eq!((kept.transform_cpu_ms, kept.transform_memory_mib), (50, 32));
}
