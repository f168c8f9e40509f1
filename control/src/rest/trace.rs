//! A server span per REST call, named `{METHOD} {route}` as the HTTP
//! conventions ask.

use std::{future::Future, sync::Arc};

use axum::response::Response;
use opentelemetry::{
    global::BoxedTracer,
    trace::{Span as _, SpanKind, Status, Tracer as _},
    KeyValue,
};
#[allow(deprecated)]
use opentelemetry_semantic_conventions::attribute::{
    HTTP_REQUEST_METHOD, HTTP_RESPONSE_STATUS_CODE, HTTP_ROUTE, RPC_METHOD, RPC_SERVICE,
};

use super::table::Route;

/// Where REST spans go, if anywhere.
///
/// A server span per REST call, named `{METHOD} {route}` as the HTTP
/// conventions ask (`GET /v1/tenants/{tenant_id}`), with
/// `http.request.method`, `http.route`, `http.response.status_code` and the
/// RPC it calls (`rpc.service`, `rpc.method`). Paths' values, queries,
/// headers and bodies are never recorded. A 5xx answer marks it Error; a
/// stream's span ends when its answer starts.
#[derive(Clone, Default)]
pub(crate) struct RestTracer {
    tracer: Option<Arc<BoxedTracer>>,
}

impl RestTracer {
    /// Spans go to `tracer`; without one, calls pass through.
    pub(crate) fn new(tracer: Option<BoxedTracer>) -> Self {
        RestTracer {
            tracer: tracer.map(Arc::new),
        }
    }

    /// Runs `call`, the answer to a request `route` took, in a span.
    pub(crate) async fn traced(
        &self,
        route: &Route,
        call: impl Future<Output = Response>,
    ) -> Response {
        let Some(tracer) = &self.tracer else {
            return call.await;
        };
        let (service, method) = route.rpc.split_once('/').unwrap_or((route.rpc, ""));
        #[allow(deprecated)]
        let attributes = vec![
            KeyValue::new(HTTP_REQUEST_METHOD, route.method.to_string()),
            KeyValue::new(HTTP_ROUTE, route.path),
            KeyValue::new(RPC_SERVICE, service.to_owned()),
            KeyValue::new(RPC_METHOD, method.to_owned()),
        ];
        let mut span = tracer
            .span_builder(format!("{} {}", route.method, route.path))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start(tracer.as_ref());
        let response = call.await;
        let status = response.status();
        span.set_attribute(KeyValue::new(
            HTTP_RESPONSE_STATUS_CODE,
            i64::from(status.as_u16()),
        ));
        if status.is_server_error() {
            span.set_status(Status::error(format!("HTTP {}", status.as_u16())));
        }
        span.end();
        response
    }
}
