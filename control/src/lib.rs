//! hookd's gRPC control plane. It reaches the server only through
//! [`ControlBackend`], so the server depends on this crate and never the reverse.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

use std::{future::Future, sync::Arc};

use tonic::transport::server::TcpIncoming;
use tonic_health::ServingStatus;

/// What the control plane needs from the server.
pub trait ControlBackend: Send + Sync + 'static {
    /// True while storage is open and every tenant actor runs; drives
    /// `grpc.health.v1`.
    fn is_ready(&self) -> bool;
}

/// Serves the control plane on `listener` until `shutdown` resolves.
/// Must run inside a tokio runtime.
pub async fn serve<B: ControlBackend>(
    listener: std::net::TcpListener,
    backend: Arc<B>,
    shutdown: impl Future<Output = ()> + Send,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    listener.set_nonblocking(true)?;
    let incoming = TcpIncoming::from(tokio::net::TcpListener::from_std(listener)?);
    let (reporter, health) = tonic_health::server::health_reporter();
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(std::time::Duration::from_secs(1));
        loop {
            tick.tick().await;
            let status = if backend.is_ready() {
                ServingStatus::Serving
            } else {
                ServingStatus::NotServing
            };
            reporter.set_service_status("", status).await;
        }
    });
    tonic::transport::Server::builder()
        .add_service(health)
        .serve_with_incoming_shutdown(incoming, shutdown)
        .await?;
    Ok(())
}
