//! The REST/JSON face of the control plane, on the gRPC listener, and its
//! OpenAPI document.

mod call;
mod error;
mod message;
mod openapi;
mod routes;
mod table;
mod trace;

use std::sync::Arc;

use axum::{
    body::{Body, Bytes},
    extract::Request,
    http::{header, HeaderValue},
    response::{IntoResponse, Response},
    routing::{any, get},
};
use hookd_proto::MAX_REQUEST_BYTES;
use tonic::{metadata::MetadataMap, Status};

pub(crate) use trace::RestTracer;

use crate::{backend::ControlBackend, services::Services};
use table::{Call, Route, Table};

/// The REST routes over `services`, to merge with the gRPC ones; their
/// spans go to `tracer`.
///
/// The REST/JSON face of the control plane, on the gRPC listener: every RPC
/// of every `hookd.v1` service at a resource-style path (`routes.rs`), its
/// request assembled from the path, the query and a JSON body in the proto3
/// JSON mapping (`message.rs`), then handed, with the caller's metadata, to
/// the same service the gRPC server calls (`call.rs`), so authentication,
/// validation and the backend call are the gRPC ones. Errors are the gRPC
/// status as JSON (`error.rs`); `GET /v1/openapi.json` is the OpenAPI 3.1
/// document generated from the descriptor set and the table (`openapi/`).
pub(crate) fn router<B: ControlBackend>(
    services: &Services<B>,
    tracer: RestTracer,
) -> axum::Router {
    let table = Arc::new(routes::table(services));
    let document = Bytes::from(openapi::document(&table).to_string());
    axum::Router::new()
        .route(
            "/v1/openapi.json",
            get(move || async move { openapi_response(document) }),
        )
        .route(
            "/v1/{*path}",
            any(move |request: Request| dispatch(Arc::clone(&table), tracer.clone(), request)),
        )
}

fn openapi_response(document: Bytes) -> Response {
    let mut response = document.into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// Finds the route and answers the request in its span.
async fn dispatch(table: Arc<Table>, tracer: RestTracer, request: Request) -> Response {
    let (parts, body) = request.into_parts();
    let path = parts.uri.path();
    let Some((route, params)) = table.find(&parts.method, path) else {
        let status = Status::not_found(format!("no route for {} {path}", parts.method));
        return error::response(&status);
    };
    tracer
        .traced(route, answer(route, params, parts, body))
        .await
}

/// Reads the body (at most [`MAX_REQUEST_BYTES`], as over gRPC), assembles
/// the request message and calls the route's handler.
async fn answer(
    route: &Route,
    params: Vec<(&'static str, String)>,
    parts: axum::http::request::Parts,
    body: Body,
) -> Response {
    let body = match read(body).await {
        Ok(body) => body,
        Err(status) => return error::response(&status),
    };
    let Some(method) = message::method(route.rpc) else {
        return error::response(&Status::internal(format!("no RPC {}", route.rpc)));
    };
    let message = match message::assemble(&method.input(), params, parts.uri.query(), &body) {
        Ok(message) => message,
        Err(status) => return error::response(&status),
    };
    let metadata = MetadataMap::from_headers(parts.headers);
    (route.endpoint.handler)(Call { metadata, message }).await
}

async fn read(body: Body) -> Result<Bytes, Status> {
    axum::body::to_bytes(body, MAX_REQUEST_BYTES)
        .await
        .map_err(|e| {
            let over = std::error::Error::source(&e)
                .is_some_and(|source| source.is::<http_body_util::LengthLimitError>());
            if over {
                Status::out_of_range(format!(
                    "the request body is over {MAX_REQUEST_BYTES} bytes"
                ))
            } else {
                Status::invalid_argument(format!("the request body could not be read: {e}"))
            }
        })
}

#[cfg(test)]
mod tests;
