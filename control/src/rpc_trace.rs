//! A server span per control-plane RPC, named `{service}/{method}`: a tower
//! layer on the tonic server.

use std::{
    future::Future,
    pin::Pin,
    sync::Arc,
    task::{Context, Poll},
};

use opentelemetry::{
    global::BoxedTracer,
    trace::{Span as _, SpanKind, Status, Tracer as _},
    KeyValue,
};
#[allow(deprecated)]
use opentelemetry_semantic_conventions::attribute::{
    RPC_GRPC_STATUS_CODE, RPC_METHOD, RPC_SERVICE, RPC_SYSTEM,
};
use tower_layer::Layer;
use tower_service::Service;

/// The service whose calls get no span.
const UNTRACED_SERVICE: &str = "grpc.health.v1.Health";

/// Wraps services in [`RpcTrace`]; without a tracer it passes calls through.
///
/// A server span per control-plane RPC, named `{service}/{method}` and
/// attributed as the OpenTelemetry RPC conventions ask (`rpc.system`,
/// `rpc.service`, `rpc.method`, `rpc.grpc.status_code`); requests and
/// responses are never read. A tower layer on the tonic server; health
/// probes (`grpc.health.v1.Health`) are left out, they would flood traces.
#[derive(Clone, Default)]
pub struct RpcTraceLayer {
    tracer: Option<Arc<BoxedTracer>>,
}

impl RpcTraceLayer {
    /// Spans go to `tracer`, if any.
    pub fn new(tracer: Option<BoxedTracer>) -> Self {
        RpcTraceLayer {
            tracer: tracer.map(Arc::new),
        }
    }
}

impl<S> Layer<S> for RpcTraceLayer {
    type Service = RpcTrace<S>;

    fn layer(&self, inner: S) -> RpcTrace<S> {
        RpcTrace {
            inner,
            tracer: self.tracer.clone(),
        }
    }
}

/// A service that records a span per call of the service it wraps.
#[derive(Clone)]
pub struct RpcTrace<S> {
    inner: S,
    tracer: Option<Arc<BoxedTracer>>,
}

impl<S, B, R> Service<http::Request<B>> for RpcTrace<S>
where
    S: Service<http::Request<B>, Response = http::Response<R>>,
    S::Future: Send + 'static,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = Pin<Box<dyn Future<Output = Result<S::Response, S::Error>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: http::Request<B>) -> Self::Future {
        let (service, method) = service_and_method(request.uri().path());
        let tracer = match &self.tracer {
            Some(tracer) if service != UNTRACED_SERVICE => Arc::clone(tracer),
            _ => return Box::pin(self.inner.call(request)),
        };
        #[allow(deprecated)]
        let attributes = vec![
            KeyValue::new(RPC_SYSTEM, "grpc"),
            KeyValue::new(RPC_SERVICE, service.to_owned()),
            KeyValue::new(RPC_METHOD, method.to_owned()),
        ];
        let mut span = tracer
            .span_builder(format!("{service}/{method}"))
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start(tracer.as_ref());
        let call = self.inner.call(request);
        Box::pin(async move {
            let result = call.await;
            // A failing call answers "trailers only": its grpc-status is in
            // the headers. Headers without one start a successful answer.
            let code = match &result {
                Ok(response) => response
                    .headers()
                    .get("grpc-status")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.parse::<i64>().ok())
                    .unwrap_or(0),
                Err(_) => GRPC_UNKNOWN,
            };
            #[allow(deprecated)]
            span.set_attribute(KeyValue::new(RPC_GRPC_STATUS_CODE, code));
            if is_server_error(code) {
                span.set_status(Status::error(format!("gRPC status {code}")));
            }
            span.end();
            result
        })
    }
}

/// `UNKNOWN`, what a call that failed below gRPC is answered.
const GRPC_UNKNOWN: i64 = 2;

/// The service and method of a gRPC path `/pkg.Service/Method`.
fn service_and_method(path: &str) -> (&str, &str) {
    path.trim_start_matches('/')
        .split_once('/')
        .unwrap_or((path, ""))
}

/// The codes that are the server's failure rather than the caller's, which
/// the conventions mark Error on a server span: UNKNOWN, DEADLINE_EXCEEDED,
/// UNIMPLEMENTED, INTERNAL, UNAVAILABLE, DATA_LOSS.
fn is_server_error(code: i64) -> bool {
    matches!(code, 2 | 4 | 12 | 13 | 14 | 15)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_split_into_service_and_method_and_codes_classify() {
        assert_eq!(
            service_and_method("/hookd.v1.TenantService/ListTenants"),
            ("hookd.v1.TenantService", "ListTenants")
        );
        assert_eq!(service_and_method("/odd"), ("/odd", ""));
        assert!(is_server_error(13) && is_server_error(14));
        assert!(!is_server_error(0) && !is_server_error(5) && !is_server_error(16));
    }
}
