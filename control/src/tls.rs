//! TLS in front of the control plane: accepts TCP connections and hands tonic
//! only those whose handshake completed.

use std::{sync::Arc, time::Duration};

use futures_util::Stream;
use tokio::{net::TcpStream, sync::mpsc};
use tokio_rustls::{rustls::ServerConfig, server::TlsStream, TlsAcceptor};

/// A client that has not finished its handshake by then is dropped.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// Handshakes in progress beyond which finished ones wait to be served.
const BACKLOG: usize = 128;

/// The TLS connections accepted on `listener`, until the stream is dropped.
///
/// TLS in front of the control plane: accepts TCP connections and runs each
/// handshake on a task of its own (so a slow or silent client delays nobody),
/// handing tonic only connections whose handshake completed. The rustls
/// configuration is the caller's, so its certificate resolver can swap
/// certificates while hookd runs.
pub(crate) fn incoming(
    listener: tokio::net::TcpListener,
    config: Arc<ServerConfig>,
) -> impl Stream<Item = std::io::Result<TlsStream<TcpStream>>> {
    let acceptor = TlsAcceptor::from(config);
    let (ready, connections) = mpsc::channel(BACKLOG);
    tokio::spawn(async move {
        loop {
            let (tcp, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(accepted) => accepted,
                    Err(e) => {
                        tracing::warn!(error = %e, "grpc accept failed");
                        tokio::time::sleep(Duration::from_millis(50)).await;
                        continue;
                    }
                },
                _ = ready.closed() => return,
            };
            let _ = tcp.set_nodelay(true);
            let (acceptor, ready) = (acceptor.clone(), ready.clone());
            tokio::spawn(async move {
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, acceptor.accept(tcp)).await {
                    Ok(Ok(tls)) => {
                        let _ = ready.send(Ok(tls)).await;
                    }
                    Ok(Err(e)) => {
                        tracing::info!(%peer, error = %e, "grpc TLS handshake failed");
                    }
                    Err(_) => tracing::info!(%peer, "grpc TLS handshake timed out"),
                }
            });
        }
    });
    futures_util::stream::unfold(connections, |mut connections| async move {
        connections
            .recv()
            .await
            .map(|connection| (connection, connections))
    })
}
