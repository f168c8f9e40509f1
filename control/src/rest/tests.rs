//! The REST face against the fake backend, through its router: a route for
//! every RPC, the same authorization as gRPC on every route, the answers'
//! JSON and the committed OpenAPI document.

use std::sync::Arc;

use axum::{
    body::Body,
    http::{Method, Request, StatusCode},
};
use serde_json::{json, Value};
use tower::ServiceExt;

use super::*;
use crate::fake::{FakeBackend, ACME, ADMIN};

fn services(backend: &Arc<FakeBackend>) -> Services<FakeBackend> {
    Services::new(backend, tokio::sync::watch::channel(false).1)
}

async fn call(
    router: &axum::Router,
    method: Method,
    path: &str,
    token: Option<&str>,
    body: &str,
) -> (StatusCode, String) {
    let mut request = Request::builder().method(method).uri(path);
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = router
        .clone()
        .oneshot(request.body(Body::from(body.to_owned())).unwrap())
        .await
        .unwrap();
    let status = response.status();
    let streaming = response
        .headers()
        .get("content-type")
        .is_some_and(|v| v.as_bytes().starts_with(b"text/event-stream"));
    if streaming {
        return (status, String::new());
    }
    let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
        .await
        .unwrap();
    (status, String::from_utf8(bytes.to_vec()).unwrap())
}

/// `route`'s path with every parameter filled, `tenant_id` as `tenant`.
fn concrete(route: &table::Route, tenant: &str) -> String {
    let mut path = route.path.to_owned();
    for name in route.params() {
        let value = if name == "tenant_id" { tenant } else { "x1" };
        path = path.replace(&format!("{{{name}}}"), value);
    }
    path
}

#[test]
fn every_rpc_of_every_service_has_a_rest_route_that_fits_it() {
    let backend = Arc::new(FakeBackend::new());
    let table = routes::table(&services(&backend));
    for service in message::pool().services() {
        for method in service.methods() {
            let rpc = format!("{}/{}", service.full_name(), method.name());
            assert!(
                table.routes().iter().any(|route| route.rpc == rpc),
                "{rpc} has no REST route"
            );
        }
    }
    // Table::add checks that each route fits its RPC.
    let mut seen = Vec::new();
    for route in table.routes() {
        let key = (route.method.clone(), route.path);
        assert!(
            !seen.contains(&key),
            "{} {} twice",
            route.method,
            route.path
        );
        seen.push(key);
    }
}

#[tokio::test]
async fn every_route_authorizes_as_grpc_does() {
    let backend = Arc::new(FakeBackend::new());
    let services = services(&backend);
    let table = routes::table(&services);
    let router = router(&services, RestTracer::default());
    for route in table.routes() {
        let path = concrete(route, "globex");
        let name = format!("{} {path}", route.method);
        let body = if route.has_body() { "{}" } else { "" };
        let (status, text) = call(&router, route.method.clone(), &path, None, body).await;
        assert_eq!(status, StatusCode::UNAUTHORIZED, "{name}: no token");
        assert_eq!(
            serde_json::from_str::<Value>(&text).unwrap()["code"],
            "UNAUTHENTICATED"
        );
        // A tenant token may act on its own tenant only. Three calls name
        // no tenant and a tenant token may make them, on its own: listing
        // tenants (it sees itself), watching and searching (here without
        // the id it requires).
        let (status, text) = call(&router, route.method.clone(), &path, Some(ACME), body).await;
        match route.path {
            "/v1/tenants" if route.method == Method::GET => {
                assert_eq!(status, StatusCode::OK, "{name}: {text}");
                let listed: Value = serde_json::from_str(&text).unwrap();
                assert_eq!(listed["tenants"].as_array().map(Vec::len), Some(1));
                assert_eq!(listed["tenants"][0]["tenantId"], "acme");
            }
            "/v1/deliveries:watch" => assert_eq!(status, StatusCode::OK, "{name}"),
            "/v1/deliveries:search" => assert_eq!(status, StatusCode::BAD_REQUEST, "{name}"),
            _ => {
                assert_eq!(
                    status,
                    StatusCode::FORBIDDEN,
                    "{name}: acme's token: {text}"
                );
                assert_eq!(
                    serde_json::from_str::<Value>(&text).unwrap()["code"],
                    "PERMISSION_DENIED"
                );
            }
        }
        let (status, text) = call(&router, route.method.clone(), &path, Some(ADMIN), body).await;
        assert!(
            status != StatusCode::UNAUTHORIZED && status != StatusCode::FORBIDDEN,
            "{name}: the admin is let past authorization, got {status}: {text}"
        );
    }
}

#[tokio::test]
async fn answers_are_proto3_json_and_errors_their_status() {
    let backend = Arc::new(FakeBackend::new());
    let router = router(&services(&backend), RestTracer::default());
    let (status, text) = call(&router, Method::GET, "/v1/tenants/globex", Some(ADMIN), "").await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let tenant: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(tenant["tenantId"], "globex");
    assert_eq!(tenant["destinationUrl"], "https://globex.test/hooks");
    assert!(tenant.get("tenant_id").is_none());

    let (status, text) = call(&router, Method::GET, "/v1/tenants/nobody", Some(ADMIN), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    let error: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(error["code"], "NOT_FOUND");
    assert_eq!(error["details"], json!([]));
    assert!(
        error["message"].as_str().unwrap().contains("nobody"),
        "{text}"
    );

    let (status, text) = call(
        &router,
        Method::POST,
        "/v1/tenants",
        Some(ADMIN),
        "{\"tenantId\":",
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(
        text.contains("INVALID_ARGUMENT") && text.contains("not valid JSON"),
        "{text}"
    );
    let (status, text) = call(
        &router,
        Method::POST,
        "/v1/tenants",
        Some(ADMIN),
        r#"{"colour": 1}"#,
    )
    .await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("unknown field `colour`"), "{text}");

    let big = format!(
        "{{\"tenantId\": \"{}\"}}",
        "a".repeat(hookd_proto::MAX_REQUEST_BYTES)
    );
    let (status, text) = call(&router, Method::POST, "/v1/tenants", Some(ADMIN), &big).await;
    assert_eq!(status, StatusCode::BAD_REQUEST);
    assert!(text.contains("OUT_OF_RANGE"), "{text}");

    let snake = r#"{"tenant_id": "newco", "max_body_bytes": 4096}"#;
    let (status, text) = call(&router, Method::POST, "/v1/tenants", Some(ADMIN), snake).await;
    assert_eq!(
        status,
        StatusCode::OK,
        "proto field names are accepted too: {text}"
    );
    let (_, text) = call(&router, Method::GET, "/v1/tenants/newco", Some(ADMIN), "").await;
    let created: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(created["tenantId"], "newco", "{text}");

    let (status, text) = call(
        &router,
        Method::GET,
        "/v1/tenants?page_size=1",
        Some(ADMIN),
        "",
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let page: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(page["tenants"].as_array().map(Vec::len), Some(1));
    assert!(page["nextPageToken"].is_string(), "{text}");

    let (status, text) = call(&router, Method::GET, "/v1/nothing", Some(ADMIN), "").await;
    assert_eq!(status, StatusCode::NOT_FOUND);
    assert!(text.contains("no route for GET /v1/nothing"), "{text}");
}

#[tokio::test]
async fn the_openapi_document_is_served_without_a_token() {
    let backend = Arc::new(FakeBackend::new());
    let router = router(&services(&backend), RestTracer::default());
    let (status, text) = call(&router, Method::GET, "/v1/openapi.json", None, "").await;
    assert_eq!(status, StatusCode::OK);
    let document: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(document["openapi"], "3.1.0");
    let get_route = &document["paths"]["/v1/tenants/{tenant_id}/routes/{name}"]["get"];
    assert_eq!(get_route["operationId"], "RouteService_GetRoute");
    let schema = &document["components"]["schemas"]["DeadLetter"]["properties"]["deadAtUnixMs"];
    assert_eq!(schema["type"], "string", "int64 is a string in proto3 JSON");
}

/// Fails when `docs/openapi.json` is not what the code generates; run with
/// `HOOKD_WRITE_OPENAPI=1` to write it anew.
#[test]
fn openapi_document_in_docs_is_current() {
    let backend = Arc::new(FakeBackend::new());
    let document = openapi::document(&routes::table(&services(&backend)));
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/openapi.json");
    if std::env::var_os("HOOKD_WRITE_OPENAPI").is_some_and(|v| v == "1") {
        let text = serde_json::to_string_pretty(&document).unwrap() + "\n";
        std::fs::write(path, text).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    let committed: Value = serde_json::from_str(&committed).unwrap_or(Value::Null);
    assert!(
        committed == document,
        "docs/openapi.json is stale; regenerate it with \
         HOOKD_WRITE_OPENAPI=1 cargo test -p hookd-control --lib rest::tests::openapi"
    );
}

#[test]
fn docs_rest_md_lists_every_route() {
    let backend = Arc::new(FakeBackend::new());
    let table = routes::table(&services(&backend));
    let docs = include_str!("../../../docs/rest.md");
    for route in table.routes() {
        let line = format!("`{} {}`", route.method, route.path);
        assert!(docs.contains(&line), "docs/rest.md does not list {line}");
    }
}

#[tokio::test]
async fn a_watch_is_server_sent_events_ended_by_an_error_event() {
    use http_body_util::BodyExt;

    use crate::model::{DeliveryEventKind, DeliveryEventView};

    let backend = Arc::new(FakeBackend::new());
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let router = router(&Services::new(&backend, stopping), RestTracer::default());
    let request = Request::get("/v1/tenants/acme/deliveries:watch")
        .header("authorization", format!("Bearer {ACME}"))
        .body(Body::empty())
        .unwrap();
    let response = router.oneshot(request).await.unwrap();
    assert_eq!(response.status(), StatusCode::OK);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let mut body = response.into_body();
    let mut next = async || {
        let frame = body.frame().await.expect("a frame").unwrap();
        String::from_utf8(frame.into_data().unwrap().to_vec()).unwrap()
    };
    backend
        .events
        .send(DeliveryEventView {
            kind: DeliveryEventKind::Accepted,
            tenant_id: "acme".into(),
            delivery_id: "dlv_a".into(),
            event_id: "evt_1".into(),
            at_ms: 1,
            attempt: None,
            status_code: None,
            reason: None,
            redelivered_as: None,
            next_attempt_at_ms: None,
        })
        .unwrap();
    let event = next().await;
    let data = event.strip_prefix("data: ").unwrap().trim_end();
    let data: Value = serde_json::from_str(data).unwrap();
    assert_eq!(data["kind"], "DELIVERY_EVENT_KIND_ACCEPTED");
    assert_eq!(data["deliveryId"], "dlv_a");
    assert_eq!(data["atUnixMs"], "1");

    stop.send_replace(true);
    let event = next().await;
    let data = event
        .strip_prefix("event: error\ndata: ")
        .unwrap()
        .trim_end();
    let error: Value = serde_json::from_str(data).unwrap();
    assert_eq!(error["code"], "UNAVAILABLE");
    assert!(
        body.frame().await.is_none(),
        "the stream ends after the error"
    );
}
