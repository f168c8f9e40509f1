//! hookd's gRPC control plane: the `hookd.v1` services, `grpc.health.v1` and
//! server reflection, and the same services as REST/JSON (`/v1/...`, with
//! its OpenAPI document) on the same listener. It reaches the server only
//! through [`ControlBackend`], so the server depends on this crate and never
//! the reverse.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod auth;
mod backend;
mod convert;
mod error;
pub mod model;
mod rest;
mod rpc_trace;
mod services;
mod tls;
pub mod watch;

#[cfg(any(test, feature = "fake"))]
pub mod fake;

use std::{future::Future, sync::Arc, time::Duration};

use hookd_proto::v1::{
    alert_service_server::{self, AlertServiceServer},
    consumer_service_server::{self, ConsumerServiceServer},
    contract_service_server::{self, ContractServiceServer},
    delivery_service_server::{self, DeliveryServiceServer},
    rejection_service_server::{self, RejectionServiceServer},
    route_service_server::{self, RouteServiceServer},
    secret_service_server::{self, SecretServiceServer},
    tenant_service_server::{self, TenantServiceServer},
    token_service_server::{self, TokenServiceServer},
};
use hookd_proto::{MAX_REQUEST_BYTES, MAX_RESPONSE_BYTES};
use tokio_rustls::rustls::ServerConfig;
use tonic::transport::server::TcpIncoming;
use tonic_health::{server::HealthReporter, ServingStatus};

/// The attribute [`ControlBackend`] is declared with; implementations put
/// `#[hookd_control::async_trait]` on their `impl` block.
pub use tonic::async_trait;

use crate::services::Services;
pub use crate::{
    backend::{ControlBackend, EventStream, DEFAULT_WATCHES_PER_TOKEN},
    error::{Error, Result},
};

/// A `hookd.v1` service with the message size limits of the wire contract:
/// requests up to [`MAX_REQUEST_BYTES`], responses up to
/// [`MAX_RESPONSE_BYTES`].
macro_rules! limited {
    ($service:expr) => {
        $service
            .max_decoding_message_size(MAX_REQUEST_BYTES)
            .max_encoding_message_size(MAX_RESPONSE_BYTES)
    };
}

/// Every service whose health is reported: the server as a whole ("") and
/// each `hookd.v1` service, so a probe may ask for either.
const HEALTH_NAMES: [&str; 10] = [
    "",
    tenant_service_server::SERVICE_NAME,
    secret_service_server::SERVICE_NAME,
    token_service_server::SERVICE_NAME,
    delivery_service_server::SERVICE_NAME,
    consumer_service_server::SERVICE_NAME,
    contract_service_server::SERVICE_NAME,
    rejection_service_server::SERVICE_NAME,
    route_service_server::SERVICE_NAME,
    alert_service_server::SERVICE_NAME,
];

/// Serves the control plane on `listener` until `shutdown` resolves, then
/// ends open WatchDeliveries streams (UNAVAILABLE) and lets in-flight calls
/// finish. gRPC and REST (`/v1/...`) share the listener. With `tls` (which
/// must offer ALPN `h2`, and `http/1.1` for REST clients that do not speak
/// HTTP/2), every connection must complete a TLS handshake first, on the
/// configuration's terms (e.g. a client certificate its verifier accepts).
/// Must run inside a tokio runtime.
pub async fn serve<B: ControlBackend>(
    listener: std::net::TcpListener,
    backend: Arc<B>,
    tls: Option<Arc<ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    listener.set_nonblocking(true)?;
    let listener = tokio::net::TcpListener::from_std(listener)?;
    let reflection_v1 = reflection().build_v1()?;
    let reflection_v1alpha = reflection().build_v1alpha()?;
    let (reporter, health) = tonic_health::server::health_reporter();
    let readiness = tokio::spawn(report_readiness(reporter, Arc::clone(&backend)));
    let (stop, stopping) = tokio::sync::watch::channel(false);
    let services = Services::new(&backend, stopping);
    let traces = rpc_trace::RpcTraceLayer::new(backend.tracer());
    let mut grpc = tonic::service::Routes::builder();
    grpc.add_service(health)
        .add_service(reflection_v1)
        .add_service(reflection_v1alpha)
        .add_service(limited!(TenantServiceServer::from_arc(Arc::clone(
            &services.tenants
        ))))
        .add_service(limited!(SecretServiceServer::from_arc(Arc::clone(
            &services.secrets
        ))))
        .add_service(limited!(TokenServiceServer::from_arc(Arc::clone(
            &services.tokens
        ))))
        .add_service(limited!(DeliveryServiceServer::from_arc(Arc::clone(
            &services.deliveries
        ))))
        .add_service(limited!(ConsumerServiceServer::from_arc(Arc::clone(
            &services.consumer
        ))))
        .add_service(limited!(ContractServiceServer::from_arc(Arc::clone(
            &services.contracts
        ))))
        .add_service(limited!(RejectionServiceServer::from_arc(Arc::clone(
            &services.rejections
        ))))
        .add_service(limited!(RouteServiceServer::from_arc(Arc::clone(
            &services.routes
        ))))
        .add_service(limited!(AlertServiceServer::from_arc(Arc::clone(
            &services.alerts
        ))));
    // gRPC and REST share the listener (and its TLS); HTTP/1.1 is accepted
    // for REST clients, gRPC keeps HTTP/2.
    let routes = grpc
        .routes()
        .into_axum_router()
        .layer(traces)
        .merge(rest::router(
            &services,
            rest::RestTracer::new(backend.tracer()),
        ));
    let router = tonic::transport::Server::builder()
        .accept_http1(true)
        .add_routes(routes.into());
    let shutdown = async move {
        shutdown.await;
        stop.send_replace(true);
    };
    let served = match tls {
        Some(config) => {
            router
                .serve_with_incoming_shutdown(tls::incoming(listener, config), shutdown)
                .await
        }
        None => {
            router
                .serve_with_incoming_shutdown(TcpIncoming::from(listener), shutdown)
                .await
        }
    };
    readiness.abort();
    served?;
    Ok(())
}

/// Reflection over `hookd.v1` and `grpc.health.v1`, so `grpcurl` needs no
/// `.proto` files. Served as v1 and as v1alpha, which older clients (older
/// grpcurl among them) still ask for.
fn reflection() -> tonic_reflection::server::Builder<'static> {
    tonic_reflection::server::Builder::configure()
        .register_encoded_file_descriptor_set(hookd_proto::FILE_DESCRIPTOR_SET)
        .register_encoded_file_descriptor_set(tonic_health::pb::FILE_DESCRIPTOR_SET)
}

/// Mirrors [`ControlBackend::is_ready`] into `grpc.health.v1` once a second.
async fn report_readiness<B: ControlBackend>(reporter: HealthReporter, backend: Arc<B>) {
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tick.tick().await;
        let status = if backend.is_ready() {
            ServingStatus::Serving
        } else {
            ServingStatus::NotServing
        };
        for name in HEALTH_NAMES {
            reporter.set_service_status(name, status).await;
        }
    }
}

#[cfg(test)]
mod tests;
