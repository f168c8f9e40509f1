//! What [`crate::run`] serves with: the tenant actors on their arbiters,
//! the HTTP ingress (actix) and the gRPC control plane (tonic on its own
//! runtime), and their graceful shutdown.

use std::{future::Future, pin::Pin, sync::Arc, thread::JoinHandle, time::Duration};

use actix_web::{dev::ServerHandle, middleware::from_fn, App, HttpServer};
use tokio::sync::oneshot;

use crate::{
    admin::Backend,
    config::{Config, TenantSettings},
    error::{Error, Result},
    feed::DeliveryFeed,
    ingress::{self, AppState},
    run::{start_tenants, Listeners, Runtime, Started},
    store::Store,
    sweeper,
    telemetry::Telemetry,
    tenant::Registry,
    tls::{self, ListenerTls},
};

/// The TLS configurations of the two listeners, built (and checked) before
/// anything starts; `None` serves plaintext.
pub(crate) struct Tls {
    http: Option<ListenerTls>,
    grpc: Option<ListenerTls>,
}

impl Tls {
    /// Loads the `[http.tls]` and `[grpc.tls]` files, if configured.
    pub(crate) fn build(config: &Config) -> Result<Tls> {
        Ok(Tls {
            http: config
                .http
                .tls
                .as_ref()
                .map(tls::http_server_config)
                .transpose()?,
            grpc: config
                .grpc
                .tls
                .as_ref()
                .map(tls::grpc_server_config)
                .transpose()?,
        })
    }
}

/// Everything one serving hookd owns.
pub(crate) struct Serving {
    pub(crate) config: Config,
    pub(crate) runtime: Runtime,
    pub(crate) listeners: Listeners,
    pub(crate) tls: Tls,
    pub(crate) store: Store,
    pub(crate) tenants: Vec<TenantSettings>,
    pub(crate) shutdown: Pin<Box<dyn Future<Output = ()>>>,
}

/// Serves until shutdown; returns once every thread it started is joined
/// and storage is flushed.
pub(crate) async fn serve(serving: Serving) -> Result<()> {
    let Serving {
        config,
        mut runtime,
        listeners,
        tls,
        store,
        tenants,
        shutdown,
    } = serving;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let arbiters: Vec<actix_rt::Arbiter> = (0..cores).map(|_| actix_rt::Arbiter::new()).collect();
    let registry = Registry::new(
        arbiters.iter().map(|a| a.handle()).collect(),
        store,
        runtime.clock().clone(),
        DeliveryFeed::default(),
        Telemetry::new(runtime.tracer_provider(), &config.metrics),
    );
    let backend = match start_tenants(&config, &registry, tenants) {
        Ok(backend) => Arc::new(backend),
        Err(e) => {
            stop_arbiters(arbiters);
            return Err(e);
        }
    };
    let certs = [&tls.http, &tls.grpc]
        .into_iter()
        .flatten()
        .map(|listener| Arc::clone(&listener.cert))
        .collect();
    let schemes = (tls.http.is_some(), tls.grpc.is_some());
    let (http_addr, grpc_addr) = (listeners.http.local_addr()?, listeners.grpc.local_addr()?);
    let server = http_server(&config, &registry, cores, listeners.http, tls.http)?;
    let http_handle = server.handle();
    let (grpc_stop_tx, grpc_stop_rx) = oneshot::channel::<()>();
    let grpc_grace = Duration::from_secs_f64(config.grpc.shutdown_grace_secs);
    let grpc_thread = grpc_thread(
        listeners.grpc,
        backend,
        tls.grpc,
        Stop {
            signal: grpc_stop_rx,
            grace: grpc_grace,
        },
    )?;

    actix_rt::spawn(stop_http_on(shutdown, http_handle));
    let sweeper = actix_rt::spawn(sweeper::run(registry.clone(), config.retention.clone()));
    runtime.report_ready(Started {
        registry: registry.clone(),
        certs,
    });
    let scheme = |tls: bool| if tls { "https" } else { "http" };
    tracing::info!(scheme = scheme(schemes.0), "http listening on {http_addr}");
    tracing::info!(scheme = scheme(schemes.1), "grpc listening on {grpc_addr}");
    let served = server.await;

    // The sweeper holds the registry, so storage: it must be gone before
    // [`crate::run`] waits for the committer.
    sweeper.abort();
    let _ = sweeper.await;
    let _ = grpc_stop_tx.send(());
    let _ = grpc_thread.join();
    stop_arbiters(arbiters);
    registry.store().flush()?;
    drop(registry);
    tracing::info!("shutdown complete");
    served.map_err(Error::from)
}

fn stop_arbiters(arbiters: Vec<actix_rt::Arbiter>) {
    for arbiter in arbiters {
        arbiter.stop();
        let _ = arbiter.join();
    }
}

async fn stop_http_on(shutdown: Pin<Box<dyn Future<Output = ()>>>, http: ServerHandle) {
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    http.stop(true).await;
}

/// The HTTP ingress on `listener`, running (it serves once awaited).
fn http_server(
    config: &Config,
    registry: &Registry,
    cores: usize,
    listener: std::net::TcpListener,
    tls: Option<ListenerTls>,
) -> Result<actix_web::dev::Server> {
    let state = AppState {
        registry: registry.clone(),
    };
    let workers = if config.http.workers == 0 {
        cores
    } else {
        config.http.workers
    };
    let server = HttpServer::new(move || {
        App::new()
            .wrap(from_fn(ingress::request_id))
            .configure(ingress::configure(state.clone()))
    })
    .workers(workers)
    .disable_signals()
    .shutdown_timeout(config.http.shutdown_timeout_secs);
    let server = match tls {
        Some(listener_tls) => server.listen_rustls_0_23(listener, listener_tls.config)?,
        None => server.listen(listener)?,
    };
    Ok(server.run())
}

/// When the gRPC server stops, and how long its clients get to hang up.
struct Stop {
    signal: oneshot::Receiver<()>,
    grace: Duration,
}

/// The gRPC control plane on a thread and tokio runtime of its own.
fn grpc_thread(
    listener: std::net::TcpListener,
    backend: Arc<Backend>,
    tls: Option<ListenerTls>,
    stop: Stop,
) -> std::io::Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name("hookd-grpc".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("grpc runtime");
            runtime.block_on(async move {
                let (stopping_tx, stopping_rx) = oneshot::channel::<()>();
                let grpc_tls = tls.map(|listener| Arc::new(listener.config));
                let serve = hookd_control::serve(listener, backend, grpc_tls, async move {
                    let _ = stop.signal.await;
                    let _ = stopping_tx.send(());
                });
                // Graceful shutdown waits for clients to hang up; past the
                // grace period the runtime closes their connections.
                let grace = async move {
                    let _ = stopping_rx.await;
                    tokio::time::sleep(stop.grace).await;
                };
                tokio::select! {
                    served = serve => if let Err(e) = served {
                        tracing::error!(error = %e, "grpc server stopped");
                    },
                    _ = grace => tracing::info!("grpc clients still connected after the grace period; closing them"),
                }
            });
            runtime.shutdown_timeout(Duration::from_secs(5));
        })
}
