//! [`Server`]: hookd on a thread of its own, a thin wrapper over
//! [`crate::run`].

use std::{
    net::SocketAddr,
    sync::{mpsc as std_mpsc, Arc},
    thread::JoinHandle,
};

use tokio::sync::oneshot;

use crate::{
    config::Config,
    error::{Error, Result},
    run::{run, Listeners, Runtime},
    tenant::{Registry, Services},
    tls::CertSource,
};

/// A running hookd: its bound addresses and the means to stop it.
///
/// [`Server`]: hookd on a thread of its own, a thin wrapper over
/// [`crate::run`] that binds the listeners, waits until hookd accepts
/// deliveries and keeps the means to reload TLS and to stop it.
pub struct Server {
    /// Dropped before joining: it holds storage open.
    registry: Option<Registry>,
    /// Dropped with the registry: they hold storage too.
    services: Option<Arc<Services>>,
    /// Dropped with the registry: it holds storage too.
    control: Option<Arc<dyn hookd_control::ControlBackend>>,
    http_addr: SocketAddr,
    grpc_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    dashboard_addr: Option<SocketAddr>,
    /// The listeners' TLS certificates, for [`Server::reload_tls`].
    certs: Vec<Arc<CertSource>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Server {
    /// Binds both listeners and runs hookd ([`crate::run`]) on a thread of
    /// its own until [`Server::shutdown`]. Returns once hookd accepts
    /// deliveries.
    pub fn start(config: Config, runtime: Runtime) -> Result<Server> {
        let listeners = Listeners::bind(&config)?;
        let (http_addr, grpc_addr) = (listeners.http.local_addr()?, listeners.grpc.local_addr()?);
        let metrics_addr = listeners
            .metrics
            .as_ref()
            .map(std::net::TcpListener::local_addr)
            .transpose()?;
        let dashboard_addr = listeners
            .dashboard
            .as_ref()
            .map(std::net::TcpListener::local_addr)
            .transpose()?;
        let (shutdown_tx, shutdown_rx) = oneshot::channel::<()>();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let runtime = runtime.reporting_to(ready_tx);
        let thread = std::thread::Builder::new()
            .name("hookd-main".into())
            .spawn(move || {
                let shutdown = async move {
                    let _ = shutdown_rx.await;
                };
                actix_rt::System::new().block_on(run(config, runtime, listeners, shutdown))
            })?;
        let started = match ready_rx.recv() {
            Ok(started) => started,
            Err(_) => {
                return Err(thread
                    .join()
                    .map_err(|_| Error::panicked("hookd-main thread"))?
                    .err()
                    .unwrap_or(Error::stopped("hookd-main thread")))
            }
        };
        Ok(Server {
            registry: Some(started.registry),
            services: Some(started.services),
            control: Some(started.control),
            http_addr,
            grpc_addr,
            metrics_addr,
            dashboard_addr,
            certs: started.certs,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        })
    }

    /// Where the HTTP ingress listens.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// Where `GET /metrics` is served apart from the ingress, when
    /// `metrics.addr` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
    }

    /// Where the delivery dashboard listens, when `dashboard.enabled`.
    pub fn dashboard_addr(&self) -> Option<SocketAddr> {
        self.dashboard_addr
    }

    /// The running tenants: redelivery and the live delivery feed.
    pub fn registry(&self) -> &Registry {
        self.registry
            .as_ref()
            .expect("registry lives until shutdown")
    }

    /// What the tenants share: storage, the clock, the live delivery feed
    /// and telemetry.
    pub fn services(&self) -> &Services {
        self.services
            .as_ref()
            .expect("services live until shutdown")
    }

    /// Re-reads every TLS certificate and key file (what SIGHUP does): new
    /// handshakes use the new pairs. A listener whose files fail to load
    /// keeps its current pair; the first such error is returned after every
    /// listener was tried.
    pub fn reload_tls(&self) -> Result<()> {
        let mut failed = None;
        for cert in &self.certs {
            match cert.reload() {
                Ok(()) => tracing::info!(section = cert.section(), "TLS certificate reloaded"),
                Err(e) => {
                    tracing::error!(section = cert.section(), error = %e, "TLS certificate not reloaded; the previous one stays in use");
                    failed.get_or_insert(e);
                }
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Where the gRPC control plane listens.
    pub fn grpc_addr(&self) -> SocketAddr {
        self.grpc_addr
    }

    /// Stops accepting, lets in-flight requests finish, flushes storage and
    /// waits until everything is closed (the data dir can then be reopened).
    pub fn shutdown(mut self) -> Result<()> {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        self.join_thread()
    }

    /// The control plane's backend, as gRPC calls it (for tests of
    /// services a client does not reach yet).
    #[doc(hidden)]
    pub fn control(&self) -> Arc<dyn hookd_control::ControlBackend> {
        self.control
            .clone()
            .expect("the control plane lives until shutdown")
    }

    fn join_thread(&mut self) -> Result<()> {
        self.registry = None;
        self.services = None;
        self.control = None;
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| Error::panicked("hookd-main thread"))?,
            None => Ok(()),
        }
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
            let _ = self.join_thread();
        }
    }
}
