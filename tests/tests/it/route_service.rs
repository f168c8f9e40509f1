//! RouteService over real gRPC and its effect on real HTTP ingest and
//! forwarding: routes of a tenant created over the API get their copies, a
//! throwing transform dead-letters as `transform_failed` until UpdateRoute
//! fixes it and a redelivery sends the transformed request, TestRoute shows
//! that request and sends nothing; the `default` route, config-file tenants,
//! bad filters, queued deliveries on a deleted route and other tenants'
//! tokens are refused as documented; on PostgreSQL a route changed on one
//! replica is in force on the other.

use std::time::{Duration, Instant};

use hookd_sdk::{
    client::{
        proto::{
            test_route_request::{Event, Route as RouteChoice},
            CreateRouteRequest, CreateTenantRequest, DeliveryStatus, InlineRoute, PastedEvent,
            RouteHeader, TestRouteRequest, UpdateRouteRequest,
        },
        Code, HookdClient,
    },
    signature::{sign, Scheme, Secret},
};
use hookd_server::ids::TenantId;
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer},
    postgres::{Cluster, MASTER_KEY},
    receiver::{Receiver, Reply},
};

const WAIT: Duration = Duration::from_secs(10);

/// Lets destinations set over the API reach the receivers on 127.0.0.1.
pub(crate) const LOCAL_DESTINATIONS: &str = "[forward]\nallow_networks = [\"127.0.0.1/32\"]\n";

/// A transform that always throws.
const THROWS: &str = r#"addHandler("transform", (request) => { throw new Error("no amount"); });"#;

/// The fixed transform: a path per event type, a header, a smaller body.
pub(crate) const FIXED: &str = r#"addHandler("transform", (request, context) => {
  request.path = "/billing/" + request.body.type;
  request.headers["x-route"] = context.route;
  request.body = { id: context.event_id, cents: request.body.data.amount * 100 };
  return request;
});"#;

/// Creates tenant `id` forwarding to `url` (empty: pull); returns its kid
/// and signing secret.
pub(crate) async fn create_tenant(client: &HookdClient, id: &str, url: &str) -> (String, String) {
    let created = client
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            destination_url: url.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    (created.kid, created.secret)
}

pub(crate) fn new_route(
    tenant: &str,
    name: &str,
    url: &str,
    transform: &str,
) -> CreateRouteRequest {
    CreateRouteRequest {
        tenant_id: tenant.into(),
        name: name.into(),
        destination_url: url.into(),
        transform: transform.into(),
        ..Default::default()
    }
}

/// The delivery id of route `route` in an ingest answer.
fn delivery_of(answer: &crate::harness::Answer, route: &str) -> String {
    answer.body["deliveries"]
        .as_array()
        .unwrap_or_else(|| panic!("no deliveries in {:?}", answer.body))
        .iter()
        .find(|d| d["route"] == route)
        .unwrap_or_else(|| panic!("no delivery of {route} in {:?}", answer.body))["delivery_id"]
        .as_str()
        .unwrap()
        .to_owned()
}

/// Polls delivery `id` of `tenant` until its transform has failed, bounded.
async fn wait_transform_failed(
    client: &HookdClient,
    tenant: &str,
    id: &str,
) -> hookd_sdk::client::proto::Delivery {
    let deadline = Instant::now() + WAIT;
    loop {
        let delivery = client.get_delivery(tenant, id).await.unwrap();
        if delivery.status == DeliveryStatus::TransformFailed as i32 {
            return delivery;
        }
        assert!(
            Instant::now() < deadline,
            "{id} never transform_failed: {delivery:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_route_created_over_grpc_fails_as_transform_failed_then_a_fix_redelivers_it() {
    let main_sink = Receiver::start(Reply::Status(200)).await;
    let billing = Receiver::start(Reply::Status(200)).await;
    let s = TestServer::start_live(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", &main_sink.url).await;
    let created = admin
        .create_route(new_route("shop", "billing", &billing.url, THROWS))
        .await
        .unwrap();
    assert_eq!(created.name, "billing");
    assert_eq!(created.transform_version.len(), 8, "{created:?}");

    let accepted = s.post_signed("shop", &kid, &secret, "evt_1").await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
    let broken = delivery_of(&accepted, "billing");
    main_sink.wait_for(1, WAIT).await;
    let dead = wait_transform_failed(&admin, "shop", &broken).await;
    assert!(
        dead.last_error.starts_with("transform_failed"),
        "{:?}",
        dead.last_error
    );
    assert!(dead.last_error.contains("no amount"), "{}", dead.last_error);
    assert!(billing.received().is_empty(), "nothing was sent");

    let fixed = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "billing".into(),
            transform: Some(FIXED.into()),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_ne!(fixed.transform_version, created.transform_version);
    admin
        .redeliver_ids("shop", [broken.as_str()])
        .await
        .unwrap();
    let got = billing.wait_for(1, WAIT).await;
    assert_eq!(got[0].path, "/billing/order.paid");
    assert_eq!(got[0].header("x-route"), Some("billing"));
    assert_eq!(got[0].body.as_ref(), br#"{"cents":10000,"id":"evt_1"}"#);
    assert_eq!(
        main_sink.received().len(),
        1,
        "the default route is untouched"
    );
}

#[tokio::test(flavor = "multi_thread")]
async fn test_route_shows_the_transformed_request_and_sends_nothing() {
    let sink = Receiver::start(Reply::Status(500)).await;
    let s = TestServer::start_live(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", "").await;
    admin
        .create_route(new_route(
            "shop",
            "billing",
            &format!("{}/in", sink.url),
            FIXED,
        ))
        .await
        .unwrap();
    // Pulled on the default route; the billing copy fails (500) and retries.
    let accepted = s.post_signed("shop", &kid, &secret, "evt_2").await;
    let stored = delivery_of(&accepted, "default");
    sink.wait_for(1, WAIT).await;

    let saved = |event| TestRouteRequest {
        tenant_id: "shop".into(),
        route: Some(RouteChoice::Name("billing".into())),
        event: Some(event),
    };
    let shown = admin
        .test_route(saved(Event::DeliveryId(stored)))
        .await
        .unwrap();
    assert!(shown.matched, "{shown:?}");
    assert_eq!(shown.transform_error, "");
    let request = shown.request.expect("a request");
    assert_eq!(
        (request.method.as_str(), request.path.as_str()),
        ("POST", "/billing/order.paid")
    );
    assert_eq!(request.body, br#"{"cents":10000,"id":"evt_2"}"#);
    assert!(request
        .headers
        .iter()
        .any(|h| h.name == "x-route" && h.value == "billing"));

    let pasted = PastedEvent {
        body: br#"{"event_id":"evt_p","type":"refund","data":{"amount":7}}"#.to_vec(),
        headers: vec![RouteHeader {
            name: "x-shop".into(),
            value: "eu-1".into(),
        }],
        ..Default::default()
    };
    let shown = admin
        .test_route(saved(Event::Pasted(pasted.clone())))
        .await
        .unwrap();
    let request = shown.request.expect("a request");
    assert_eq!(request.path, "/billing/refund");
    assert_eq!(request.body, br#"{"cents":700,"id":"evt_p"}"#);

    let inline = |filter: &str, code: &str| TestRouteRequest {
        tenant_id: "shop".into(),
        route: Some(RouteChoice::Inline(InlineRoute {
            filter_json: filter.into(),
            transform: code.into(),
            destination_url: String::new(),
        })),
        event: Some(Event::Pasted(pasted.clone())),
    };
    let missed = admin
        .test_route(inline(r#"{"headers":{"x-shop":"us-1"}}"#, FIXED))
        .await
        .unwrap();
    assert!(!missed.matched && missed.request.is_none(), "{missed:?}");
    assert!(missed.filter_result.contains("does not pass"), "{missed:?}");
    let threw = admin.test_route(inline("", THROWS)).await.unwrap();
    assert!(threw.transform_error.contains("no amount"), "{threw:?}");
    assert!(threw.request.is_none());
    let dropped = admin
        .test_route(inline("", r#"function transform() { return null; }"#))
        .await
        .unwrap();
    assert!(dropped.dropped && dropped.request.is_none(), "{dropped:?}");

    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(sink.received().len(), 1, "TestRoute sent nothing");
}

#[tokio::test(flavor = "multi_thread")]
async fn the_default_route_bad_filters_and_queued_deletes_are_refused_as_documented() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", "").await;
    let taken = admin
        .create_route(new_route("shop", "default", "", ""))
        .await
        .unwrap_err();
    assert_eq!(taken.code(), Code::AlreadyExists, "{taken}");
    let bad = CreateRouteRequest {
        filter_json: r#"{"body":{"amount":{"$gte":[]}}}"#.into(),
        ..new_route("shop", "big", "", "")
    };
    let refused = admin.create_route(bad).await.unwrap_err();
    assert_eq!(refused.code(), Code::InvalidArgument, "{refused}");
    assert!(
        refused
            .status()
            .unwrap()
            .message()
            .contains("filter/body/amount/$gte"),
        "{refused}"
    );
    let undeletable = admin
        .delete_route("shop", "default", true)
        .await
        .unwrap_err();
    assert_eq!(
        undeletable.code(),
        Code::FailedPrecondition,
        "{undeletable}"
    );
    let moved = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            destination_url: Some("http://127.0.0.1:9/in".into()),
            max_in_flight: Some(3),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(
        (moved.destination_url.as_str(), moved.max_in_flight),
        ("http://127.0.0.1:9/in", 3)
    );
    let tenant = admin.get_tenant("shop").await.unwrap();
    assert_eq!(
        (tenant.destination_url.as_str(), tenant.max_in_flight),
        ("http://127.0.0.1:9/in", 3)
    );
    let transformed = admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            transform: Some(FIXED.into()),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(transformed.code(), Code::InvalidArgument, "{transformed}");
    admin
        .update_route(UpdateRouteRequest {
            tenant_id: "shop".into(),
            name: "default".into(),
            destination_url: Some(String::new()),
            ..Default::default()
        })
        .await
        .unwrap();

    admin
        .create_route(new_route("shop", "audit", "", ""))
        .await
        .unwrap();
    let names: Vec<String> = admin
        .list_routes("shop")
        .await
        .unwrap()
        .into_iter()
        .map(|r| r.name)
        .collect();
    assert_eq!(names, ["default", "audit"]);
    let accepted = s.post_signed("shop", &kid, &secret, "evt_q").await;
    let queued = delivery_of(&accepted, "audit");
    let busy = admin
        .delete_route("shop", "audit", false)
        .await
        .unwrap_err();
    assert_eq!(busy.code(), Code::FailedPrecondition, "{busy}");
    assert!(busy.status().unwrap().message().contains("force"), "{busy}");
    assert!(admin.get_delivery("shop", &queued).await.is_ok());
    let scope = TenantId::try_from("shop").unwrap().route_scope("audit");
    let stored = || {
        let data = s.server().services().store.tenant(&scope).unwrap();
        data.deliveries(None, None, 10).unwrap().len()
    };
    assert_eq!(stored(), 1);
    admin.delete_route("shop", "audit", true).await.unwrap();
    assert_eq!(stored(), 0, "the deleted route's data is dropped");
    let gone = admin.get_route("shop", "audit").await.unwrap_err();
    assert_eq!(gone.code(), Code::NotFound, "{gone}");
    let after = s.post_signed("shop", &kid, &secret, "evt_r").await;
    assert_eq!(after.body["deliveries"].as_array().unwrap().len(), 1);

    // Recreated under the same name, the route starts empty.
    admin
        .create_route(new_route("shop", "audit", "", ""))
        .await
        .unwrap();
    let missing = admin.get_delivery("shop", &queued).await.unwrap_err();
    assert_eq!(missing.code(), Code::NotFound, "{missing}");
}

#[tokio::test(flavor = "multi_thread")]
async fn deleting_a_tenant_drops_its_routes_data_too() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    let (kid, secret) = create_tenant(&admin, "shop", "").await;
    admin
        .create_route(new_route("shop", "audit", "", ""))
        .await
        .unwrap();
    let accepted = s.post_signed("shop", &kid, &secret, "evt_d").await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
    let scope = TenantId::try_from("shop").unwrap().route_scope("audit");
    let stored = || {
        let data = s.server().services().store.tenant(&scope).unwrap();
        data.deliveries(None, None, 10).unwrap().len()
    };
    assert_eq!(stored(), 1, "the route's copy is stored in its scope");
    admin.delete_tenant("shop").await.unwrap();
    assert_eq!(stored(), 0, "the route's copy went with its tenant");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_token_is_refused_on_another_tenants_routes() {
    let s = TestServer::start(LOCAL_DESTINATIONS);
    let admin = s.admin().await;
    create_tenant(&admin, "shop", "").await;
    create_tenant(&admin, "other", "").await;
    let token = admin.create_token("other", "ci").await.unwrap().token;
    let other = s.client(&token).await;
    let denied = other.list_routes("shop").await.unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied}");
    let denied = other
        .create_route(new_route("shop", "audit", "", ""))
        .await
        .unwrap_err();
    assert_eq!(denied.code(), Code::PermissionDenied, "{denied}");
    other
        .create_route(new_route("other", "audit", "", ""))
        .await
        .expect("its own tenant");
    assert_eq!(other.list_routes("other").await.unwrap().len(), 2);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_config_file_tenants_routes_are_listed_and_tested_but_read_only() {
    let config = tenant("shop", "http://127.0.0.1:9/in", "", "", "")
        + "[[tenants.routes]]\nname = \"audit\"\nfilter = { body = { type = \"order.paid\" } }\n";
    let s = TestServer::start(&config);
    let admin = s.admin().await;
    let routes = admin.list_routes("shop").await.unwrap();
    assert_eq!(routes.len(), 2);
    assert!(routes.iter().all(|r| r.from_config));
    assert_eq!(routes[1].filter_json, r#"{"body":{"type":"order.paid"}}"#);
    let refused = admin
        .create_route(new_route("shop", "crm", "", ""))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), Code::FailedPrecondition, "{refused}");
    assert!(
        refused.status().unwrap().message().contains("config file"),
        "{refused}"
    );
    let body = order("evt_c");
    let accepted = s
        .post("shop", &signed("evt_c", s.clock_secs(), &body), &body)
        .await;
    let shown = admin
        .test_route(TestRouteRequest {
            tenant_id: "shop".into(),
            route: Some(RouteChoice::Name("audit".into())),
            event: Some(Event::DeliveryId(delivery_of(&accepted, "default"))),
        })
        .await
        .unwrap();
    assert!(shown.matched, "{shown:?}");
    assert_eq!(shown.request.unwrap().body, body);
}

/// The routes of `tenant` an event posted to `replica` was copied to (none
/// when it was refused, e.g. before the replica knows the tenant).
async fn routes_taking(
    replica: &crate::process::HookdProcess,
    tenant: &str,
    (kid, secret): (&str, &str),
    event_id: &str,
) -> Vec<String> {
    let key = Secret::from_provider(Scheme::Standard, kid, secret).unwrap();
    let body = order(event_id);
    let mut request = reqwest::Client::new().post(format!("{}/hooks/{tenant}", replica.base));
    for (name, value) in sign(Scheme::Standard, &key, event_id, now_secs(), &body) {
        request = request.header(name, value);
    }
    let answer: serde_json::Value = request
        .body(body)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    let deliveries = answer["deliveries"].as_array().cloned().unwrap_or_default();
    deliveries
        .iter()
        .map(|d| d["route"].as_str().unwrap().to_owned())
        .collect()
}

/// Posts new events to `replica` until their copies go to `routes`, bounded.
async fn until_routes(
    replica: &crate::process::HookdProcess,
    created: (&str, &str),
    routes: &[&str],
) {
    let deadline = Instant::now() + WAIT;
    for n in 0.. {
        let got = routes_taking(
            replica,
            "shop",
            created,
            &format!("evt_{}_{n}", replica.base),
        )
        .await;
        if got == routes {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "{} copies to {got:?}, not {routes:?}",
            replica.base
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn on_postgres_a_route_changed_on_one_replica_is_in_force_on_the_other() {
    let Some(cluster) = Cluster::with_tenants("route_replicas", "") else {
        return;
    };
    let replicas = [cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY)];
    let admins = [replicas[0].admin().await, replicas[1].admin().await];
    let (kid, secret) = create_tenant(&admins[0], "shop", "").await;
    let created = (kid.as_str(), secret.as_str());
    until_routes(&replicas[1], created, &["default"]).await;
    admins[0]
        .create_route(new_route("shop", "audit", "", ""))
        .await
        .unwrap();
    until_routes(&replicas[1], created, &["default", "audit"]).await;
    let seen = admins[1].get_route("shop", "audit").await.unwrap();
    assert_eq!(seen.name, "audit");
    admins[1].delete_route("shop", "audit", true).await.unwrap();
    until_routes(&replicas[0], created, &["default"]).await;
}
