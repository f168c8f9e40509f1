//! A tenant's routes under the contract: `default` made from the tenant's
//! destination, others created, changed and deleted by name.

use hookd_sdk::client::{
    proto::{CreateRouteRequest, Route, UpdateRouteRequest},
    Code,
};

use super::{refused, Subject};

const FILTER: &str = r#"{"body":{"type":{"$startsWith":"order."}}}"#;

fn audit(tenant_id: &str) -> CreateRouteRequest {
    CreateRouteRequest {
        tenant_id: tenant_id.into(),
        name: "audit".into(),
        destination_url: "https://audit.example/hooks".into(),
        max_in_flight: 4,
        filter_json: FILTER.into(),
        ..Default::default()
    }
}

/// A route without what its dispatcher reports now (the concurrency
/// limit it runs with), which is no part of what was stored.
fn settled(route: Route) -> Route {
    Route {
        concurrency_limit: 0,
        ..route
    }
}

pub(super) async fn a_route_is_created_read_changed_and_deleted(s: Subject) {
    s.create("orders", "https://orders.example/hooks").await;
    let route = s.admin.create_route(audit("orders")).await.unwrap();
    assert_eq!(
        (
            route.tenant_id.as_str(),
            route.name.as_str(),
            route.destination_url.as_str(),
            route.max_in_flight,
            route.from_config
        ),
        ("orders", "audit", "https://audit.example/hooks", 4, false)
    );
    assert_eq!(
        serde_json::from_str::<serde_json::Value>(&route.filter_json).unwrap(),
        serde_json::from_str::<serde_json::Value>(FILTER).unwrap()
    );
    assert_eq!(
        settled(s.admin.get_route("orders", "audit").await.unwrap()),
        settled(route)
    );
    let names: Vec<String> = s
        .admin
        .list_routes("orders")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["default", "audit"]);

    let changed = s
        .admin
        .update_route(UpdateRouteRequest {
            tenant_id: "orders".into(),
            name: "audit".into(),
            destination_url: Some("https://audit.example/v2".into()),
            filter_json: Some(String::new()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(changed.destination_url, "https://audit.example/v2");
    assert_eq!(changed.filter_json, "");
    assert_eq!(changed.max_in_flight, 4);
    let read = s.admin.get_route("orders", "audit").await.unwrap();
    assert_eq!(settled(read), settled(changed));

    s.admin
        .delete_route("orders", "audit", false)
        .await
        .unwrap();
    assert_eq!(
        refused(s.admin.get_route("orders", "audit").await).0,
        Code::NotFound
    );
    assert_eq!(
        refused(s.admin.delete_route("orders", "audit", false).await).0,
        Code::NotFound
    );
    assert_eq!(s.admin.list_routes("orders").await.unwrap().len(), 1);
}

pub(super) async fn the_default_route_is_the_tenants_destination(s: Subject) {
    s.create("orders", "https://orders.example/hooks").await;
    let routes = s.admin.list_routes("orders").await.unwrap();
    assert_eq!(routes.len(), 1);
    let default = &routes[0];
    assert_eq!(
        (default.name.as_str(), default.destination_url.as_str()),
        ("default", "https://orders.example/hooks")
    );
    assert_eq!(
        &s.admin.get_route("orders", "default").await.unwrap(),
        default
    );
    let moved = s
        .admin
        .update_route(UpdateRouteRequest {
            tenant_id: "orders".into(),
            name: "default".into(),
            destination_url: Some("https://orders.example/v2".into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(moved.destination_url, "https://orders.example/v2");
    let read = s.admin.get_route("orders", "default").await.unwrap();
    assert_eq!(read.destination_url, "https://orders.example/v2");
    let tenant = s.admin.get_tenant("orders").await.unwrap();
    assert_eq!(tenant.destination_url, "https://orders.example/v2");
}

pub(super) async fn route_refusals_name_their_codes(s: Subject) {
    s.create("orders", "https://orders.example/hooks").await;
    s.admin.create_route(audit("orders")).await.unwrap();
    let taken = s.admin.create_route(audit("orders")).await;
    assert_eq!(refused(taken).0, Code::AlreadyExists);
    let default = s
        .admin
        .create_route(CreateRouteRequest {
            name: "default".into(),
            ..audit("orders")
        })
        .await;
    assert_eq!(refused(default).0, Code::AlreadyExists);
    let bad_name = s
        .admin
        .create_route(CreateRouteRequest {
            name: "Audit Log".into(),
            ..audit("orders")
        })
        .await;
    assert_eq!(refused(bad_name).0, Code::InvalidArgument);
    let floor = s
        .admin
        .create_route(CreateRouteRequest {
            name: "floor".into(),
            max_in_flight: 2,
            min_in_flight: 3,
            ..audit("orders")
        })
        .await;
    assert_eq!(refused(floor).0, Code::InvalidArgument);
    let not_json = s
        .admin
        .create_route(CreateRouteRequest {
            name: "broken".into(),
            filter_json: "{not json".into(),
            ..audit("orders")
        })
        .await;
    assert_eq!(refused(not_json).0, Code::InvalidArgument);
    let unknown = s
        .admin
        .update_route(UpdateRouteRequest {
            tenant_id: "orders".into(),
            name: "nope".into(),
            max_in_flight: Some(2),
            ..Default::default()
        })
        .await;
    assert_eq!(refused(unknown).0, Code::NotFound);
    let default_transform = s
        .admin
        .update_route(UpdateRouteRequest {
            tenant_id: "orders".into(),
            name: "default".into(),
            transform_cpu_ms: Some(10),
            ..Default::default()
        })
        .await;
    assert_eq!(refused(default_transform).0, Code::InvalidArgument);
    let delete_default = s.admin.delete_route("orders", "default", false).await;
    assert_eq!(refused(delete_default).0, Code::FailedPrecondition);
    assert_eq!(
        refused(
            s.admin
                .list_all_route_deliveries("orders", "nope", Default::default())
                .await
        )
        .0,
        Code::NotFound
    );
}
