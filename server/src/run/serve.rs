//! What [`crate::run`] serves with: the tenant actors, the HTTP ingress and the
//! gRPC control plane, and their graceful shutdown.

use std::{
    future::Future, net::SocketAddr, pin::Pin, sync::Arc, thread::JoinHandle, time::Duration,
};

use actix_web::{dev::ServerHandle, middleware::from_fn, web, App, HttpServer};
use tokio::sync::oneshot;

use super::{
    background::Background, dashboard, scrape, start_tenants, Listeners, Runtime, Started,
};
use crate::catalog::follow::Follower;
use crate::tenant::TenantSettings;
use crate::{
    admin::Backend,
    alerts::Alerts,
    config::Config,
    error::{Error, Result},
    feed::DeliveryFeed,
    forward::ForwardRuntime,
    ingress::{self, AppState},
    store::api::{blocking, Store},
    telemetry::Telemetry,
    tenant::{report::EdgeReport, Registry, Services},
    tls::{self, ListenerTls},
};

/// The TLS configurations of the two listeners, built (and checked) before
/// anything starts; `None` serves plaintext.
pub(crate) struct Tls {
    http: Option<ListenerTls>,
    grpc: Option<ListenerTls>,
    /// The dashboard's: the `[http.tls]` certificate, with the dashboard on.
    dashboard: Option<ListenerTls>,
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
            dashboard: match (&config.http.tls, config.dashboard.enabled) {
                (Some(http), true) => Some(tls::http_server_config(http)?),
                _ => None,
            },
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
///
/// What [`crate::run`] serves with: the tenant actors on their arbiters,
/// the HTTP ingress (actix) and the gRPC control plane (tonic on its own
/// runtime), and their graceful shutdown.
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
    let RunningTenants {
        arbiters,
        registry,
        services,
        backend,
        follower,
    } = start_registry(&config, &runtime, store, tenants, cores)?;
    let alerts = backend.alerts().clone();
    let control: Arc<dyn hookd_control::ControlBackend> = backend.clone();
    let certs = [&tls.http, &tls.grpc, &tls.dashboard]
        .into_iter()
        .flatten()
        .map(|listener| Arc::clone(&listener.cert))
        .collect();
    let listening = Listening::new(&listeners, &tls)?;
    let state = AppState {
        registry: registry.clone(),
        services: services.clone(),
        limits: ingress::EdgeLimits::new(&config.http, &config.limits),
    };
    let server = http_server(&config, state.clone(), cores, listeners.http, tls.http)?;
    let http_handle = server.handle();
    let side = SideServers::start(
        &config,
        state,
        &backend,
        [listeners.metrics, listeners.dashboard],
        tls.dashboard,
    )?;
    let (grpc_stop_tx, grpc_stop_rx) = oneshot::channel::<()>();
    let grpc_thread = grpc_thread(
        listeners.grpc,
        backend,
        tls.grpc,
        Stop {
            signal: grpc_stop_rx,
            grace: Duration::from_secs_f64(config.grpc.shutdown_grace_secs),
        },
    )?;

    actix_rt::spawn(stop_http_on(shutdown, http_handle, side.handles.clone()));
    let background = Background::start(&config, (&registry, &services), follower, alerts.clone());
    runtime.report_ready(Started {
        registry: registry.clone(),
        services: services.clone(),
        certs,
        control,
    });
    listening.log();
    let served = server.await;
    side.finish().await;
    let grpc = (grpc_stop_tx, grpc_thread);
    stop_serving(background, grpc, arbiters, registry, services, &alerts).await?;
    tracing::info!("shutdown complete");
    served.map_err(Error::from)
}

/// Stops what serving started once the HTTP servers returned, in order:
/// the background tasks, the gRPC server, the tenant arbiters, forwarding
/// and the alert sinks; then releases the forwarding leases and flushes
/// storage.
async fn stop_serving(
    background: Background,
    (grpc_stop_tx, grpc_thread): (oneshot::Sender<()>, JoinHandle<()>),
    arbiters: Vec<actix_rt::Arbiter>,
    registry: Registry,
    services: Arc<Services>,
    alerts: &Alerts,
) -> Result<()> {
    // The background tasks hold the registry, so storage: they must be gone
    // before [`crate::run`] waits for the committer.
    background.stop().await;
    let _ = grpc_stop_tx.send(());
    let _ = grpc_thread.join();
    stop_arbiters(arbiters);
    registry.stop_forwarding();
    alerts.stop_sinks();
    let leases = registry.clone();
    let _ = blocking(move || {
        leases.release_leases();
        Ok(())
    })
    .await;
    services.store.flush()?;
    drop(registry);
    drop(services);
    Ok(())
}

/// The tenant arbiters (one per core), the registry with every tenant
/// started on them, the control-plane backend over it, and the follower of
/// catalog changes other processes make.
/// The metrics and dashboard listeners, each running when configured.
struct SideServers {
    handles: [Option<ServerHandle>; 2],
    tasks: Vec<actix_rt::task::JoinHandle<std::io::Result<()>>>,
}

impl SideServers {
    /// Starts `/metrics` on the metrics listener and the dashboard on its
    /// own, for those that were bound.
    fn start(
        config: &Config,
        state: AppState,
        backend: &Arc<Backend>,
        [metrics, dashboard]: [Option<std::net::TcpListener>; 2],
        dashboard_tls: Option<ListenerTls>,
    ) -> Result<SideServers> {
        let clock = state.services.clock.clone();
        let metrics = metrics
            .map(|listener| metrics_server(config, state, listener))
            .transpose()?;
        let dashboard = dashboard
            .map(|listener| {
                let backend: Arc<dyn hookd_control::ControlBackend> = backend.clone();
                dashboard::server(config, backend, clock, listener, dashboard_tls)
            })
            .transpose()?;
        let handles = [
            metrics.as_ref().map(actix_web::dev::Server::handle),
            dashboard.as_ref().map(actix_web::dev::Server::handle),
        ];
        let tasks = [metrics, dashboard]
            .into_iter()
            .flatten()
            .map(actix_rt::spawn)
            .collect();
        Ok(SideServers { handles, tasks })
    }

    /// Waits until both have stopped.
    async fn finish(self) {
        for task in self.tasks {
            let _ = task.await;
        }
    }
}

/// The tenants started, the arbiters their actors run on, what they share,
/// the control plane over them and the follower of other processes' changes.
struct RunningTenants {
    arbiters: Vec<actix_rt::Arbiter>,
    registry: Registry,
    services: Arc<Services>,
    backend: Arc<Backend>,
    follower: Follower,
}

fn start_registry(
    config: &Config,
    runtime: &Runtime,
    store: Store,
    tenants: Vec<TenantSettings>,
    cores: usize,
) -> Result<RunningTenants> {
    let forward_cas = config.forward.ca_certs()?;
    let arbiters: Vec<actix_rt::Arbiter> = (0..cores).map(|_| actix_rt::Arbiter::new()).collect();
    let services = Services::new(
        store,
        runtime.clock().clone(),
        ForwardRuntime::new(cores)?,
        DeliveryFeed::default(),
        Telemetry::new(runtime.tracer_provider(), &config.metrics),
    )
    .with_forward_cas(forward_cas)
    .with_rejection_records(config.limits.rejection_records)
    .with_replay_cache_keys(config.limits.replay_cache_keys)
    .with_forward_lease(Duration::from_secs(
        config.storage.postgres.forward_lease_secs,
    ));
    let services = Arc::new(services);
    let registry = Registry::new(
        arbiters.iter().map(|a| a.handle()).collect(),
        services.clone(),
    );
    match start_tenants(config, (&registry, &services), tenants) {
        Ok((backend, follower)) => Ok(RunningTenants {
            arbiters,
            registry,
            services,
            backend: Arc::new(backend),
            follower,
        }),
        Err(e) => {
            stop_arbiters(arbiters);
            Err(e)
        }
    }
}

/// Where hookd listens and whether with TLS, announced once it is ready.
struct Listening {
    http: (SocketAddr, bool),
    grpc: (SocketAddr, bool),
    metrics: Option<SocketAddr>,
    dashboard: Option<(SocketAddr, bool)>,
}

impl Listening {
    fn new(listeners: &Listeners, tls: &Tls) -> Result<Listening> {
        Ok(Listening {
            http: (listeners.http.local_addr()?, tls.http.is_some()),
            grpc: (listeners.grpc.local_addr()?, tls.grpc.is_some()),
            metrics: listeners
                .metrics
                .as_ref()
                .map(std::net::TcpListener::local_addr)
                .transpose()?,
            dashboard: listeners
                .dashboard
                .as_ref()
                .map(|l| l.local_addr().map(|addr| (addr, tls.dashboard.is_some())))
                .transpose()?,
        })
    }

    fn log(&self) {
        let scheme = |tls: bool| if tls { "https" } else { "http" };
        let ((http, http_tls), (grpc, grpc_tls)) = (self.http, self.grpc);
        tracing::info!(scheme = scheme(http_tls), "http listening on {http}");
        tracing::info!(scheme = scheme(grpc_tls), "grpc listening on {grpc}");
        if let Some(addr) = self.metrics {
            tracing::info!(scheme = "http", "metrics listening on {addr}");
        }
        if let Some((addr, tls)) = self.dashboard {
            tracing::info!(scheme = scheme(tls), "dashboard listening on {addr}");
        }
    }
}

fn stop_arbiters(arbiters: Vec<actix_rt::Arbiter>) {
    for arbiter in arbiters {
        arbiter.stop();
        let _ = arbiter.join();
    }
}

async fn stop_http_on(
    shutdown: Pin<Box<dyn Future<Output = ()>>>,
    http: ServerHandle,
    others: [Option<ServerHandle>; 2],
) {
    shutdown.await;
    tracing::info!("shutting down: finishing in-flight requests");
    http.stop(true).await;
    // The metrics and dashboard listeners (whose live tails never end on
    // their own) are not waited for.
    for other in others.into_iter().flatten() {
        other.stop(false).await;
    }
}

/// The HTTP ingress on `listener`, running (it serves once awaited).
fn http_server(
    config: &Config,
    state: AppState,
    cores: usize,
    listener: std::net::TcpListener,
    tls: Option<ListenerTls>,
) -> Result<actix_web::dev::Server> {
    let workers = if config.http.workers == 0 {
        cores
    } else {
        config.http.workers
    };
    let max_header_bytes = config.http.max_header_bytes;
    let edge = EdgeReport::of(&state.services);
    let public_metrics = state.services.telemetry.metrics().on_public_port();
    let server = HttpServer::new(move || {
        let edge = edge.clone();
        let app = App::new()
            .wrap(from_fn(move |req, next| {
                ingress::header_limit(max_header_bytes, edge.clone(), req, next)
            }))
            .wrap(from_fn(ingress::close_unread_body))
            .wrap(from_fn(ingress::answer_headers));
        let app = match public_metrics {
            true => app.route("/metrics", web::get().to(scrape::metrics)),
            false => app,
        };
        app.configure(ingress::configure(state.clone()))
    })
    .workers(workers)
    .max_connections(config.http.max_connections)
    .keep_alive(config.http.keep_alive())
    .client_request_timeout(config.http.head_timeout())
    .disable_signals()
    .shutdown_timeout(config.http.shutdown_timeout_secs);
    let server = match tls {
        Some(listener_tls) => server.listen_rustls_0_23(listener, listener_tls.config)?,
        None => server.listen(listener)?,
    };
    Ok(server.run())
}

/// `GET /metrics` alone on `metrics.addr`, plain HTTP, running once awaited.
fn metrics_server(
    config: &Config,
    state: AppState,
    listener: std::net::TcpListener,
) -> Result<actix_web::dev::Server> {
    Ok(HttpServer::new(move || {
        App::new()
            .wrap(from_fn(ingress::answer_headers))
            .configure(scrape::configure_metrics(state.clone()))
    })
    .workers(1)
    .max_connections(64)
    .client_request_timeout(config.http.head_timeout())
    .disable_signals()
    .shutdown_timeout(1)
    .listen(listener)?
    .run())
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
