//! Wires one hookd process: storage, tenant actors, the HTTP ingress (actix)
//! and the gRPC control plane (tonic on its own runtime), with graceful
//! shutdown.

use std::{
    collections::HashSet,
    net::{SocketAddr, TcpListener},
    sync::{mpsc as std_mpsc, Arc},
    thread::JoinHandle,
    time::Duration,
};

use actix_web::{middleware::from_fn, App, HttpServer};
use tokio::sync::oneshot;

use crate::{
    admin::Backend,
    catalog::{effective_config, Catalog},
    clock::SharedClock,
    config::{parse_addr, Config, TenantSettings},
    error::{Error, Result},
    events::EventBus,
    forward::AddressPolicy,
    ingress::{self, AppState},
    keyring::{load_admin_token, MasterKey},
    store::{OsSync, SharedSync, Store},
    sweeper,
    telemetry::Telemetry,
    tenant::Registry,
    tls::{self, CertSource, ListenerTls},
};

/// A running hookd: its bound addresses and the means to stop it.
pub struct Server {
    /// Dropped before joining: it holds storage open.
    registry: Option<Registry>,
    http_addr: SocketAddr,
    grpc_addr: SocketAddr,
    metrics_addr: Option<SocketAddr>,
    /// The listeners' TLS certificates, for [`Server::reload_tls`].
    certs: Vec<Arc<CertSource>>,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<Result<()>>>,
}

impl Server {
    /// Binds both listeners, opens storage, starts every configured tenant
    /// and begins serving on a thread of its own. Returns once hookd accepts
    /// deliveries.
    pub fn start(config: Config, clock: SharedClock) -> Result<Server> {
        Server::start_with_sync(config, clock, Arc::new(OsSync))
    }

    /// [`Server::start`] with storage's syncs going through `sync` (unless
    /// `storage.fsync` is off): tests record them or make them fail.
    pub fn start_with_sync(config: Config, clock: SharedClock, sync: SharedSync) -> Result<Server> {
        if let Some(warning) = config.metrics.scan_limit_warning() {
            tracing::warn!("{warning}");
        }
        let tenants = config
            .tenants
            .iter()
            .map(|t| {
                t.resolve_under(config.limits.tenant_max_body_bytes)
                    .map_err(|e| Error::Config(format!("tenant {}: {e}", t.id)))
            })
            .collect::<Result<Vec<TenantSettings>>>()?;
        let tls = Tls {
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
        };
        let schemes = (tls.http.is_some(), tls.grpc.is_some());
        let certs = [&tls.http, &tls.grpc]
            .into_iter()
            .flatten()
            .map(|listener| Arc::clone(&listener.cert))
            .collect();
        let http = TcpListener::bind(parse_addr("http.addr", &config.http.addr)?)?;
        let grpc = TcpListener::bind(parse_addr("grpc.addr", &config.grpc.addr)?)?;
        let (http_addr, grpc_addr) = (http.local_addr()?, grpc.local_addr()?);
        let metrics = match (&config.metrics.addr, config.metrics.enabled) {
            (Some(addr), true) => Some(TcpListener::bind(parse_addr("metrics.addr", addr)?)?),
            _ => None,
        };
        let metrics_addr = metrics.as_ref().map(TcpListener::local_addr).transpose()?;
        let (store, committer) = Store::open_with(
            &config.data_dir,
            config.storage.commit_batch_max,
            config.storage.fsync.then_some(sync),
        )?;
        let (shutdown_tx, shutdown_rx) = oneshot::channel();
        let (ready_tx, ready_rx) = std_mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("hookd-main".into())
            .spawn(move || {
                let served = actix_rt::System::new().block_on(serve(
                    config,
                    Listeners {
                        http,
                        grpc,
                        metrics,
                        tls,
                    },
                    store,
                    tenants,
                    clock,
                    shutdown_rx,
                    ready_tx,
                ));
                let joined = committer.join().map_err(|_| Error::CommitterGone);
                served.and(joined)
            })?;
        let registry = match ready_rx.recv() {
            Ok(Ok(registry)) => registry,
            Ok(Err(e)) => return Err(e),
            Err(_) => {
                return Err(thread
                    .join()
                    .map_err(|_| Error::CommitterGone)?
                    .err()
                    .unwrap_or(Error::CommitterGone))
            }
        };
        let scheme = |tls: bool| if tls { "https" } else { "http" };
        tracing::info!(scheme = scheme(schemes.0), "http listening on {http_addr}");
        tracing::info!(scheme = scheme(schemes.1), "grpc listening on {grpc_addr}");
        if let Some(addr) = metrics_addr {
            tracing::info!(scheme = "http", "metrics listening on {addr}");
        }
        Ok(Server {
            registry: Some(registry),
            http_addr,
            grpc_addr,
            metrics_addr,
            certs,
            shutdown: Some(shutdown_tx),
            thread: Some(thread),
        })
    }

    /// Where the HTTP ingress listens.
    pub fn http_addr(&self) -> SocketAddr {
        self.http_addr
    }

    /// The running tenants: redelivery and the live delivery feed.
    pub fn registry(&self) -> &Registry {
        self.registry
            .as_ref()
            .expect("registry lives until shutdown")
    }

    /// Where `GET /metrics` is served apart from the ingress, when
    /// `metrics.addr` is set.
    pub fn metrics_addr(&self) -> Option<SocketAddr> {
        self.metrics_addr
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

    fn join_thread(&mut self) -> Result<()> {
        self.registry = None;
        match self.thread.take() {
            Some(t) => t.join().map_err(|_| Error::CommitterGone)?,
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

/// The bound sockets one server serves on, and their TLS.
struct Listeners {
    http: TcpListener,
    grpc: TcpListener,
    /// `metrics.addr`, when set (plain HTTP).
    metrics: Option<TcpListener>,
    tls: Tls,
}

/// The TLS configurations of the two listeners, built (and checked) before
/// anything starts; `None` serves plaintext.
struct Tls {
    http: Option<ListenerTls>,
    grpc: Option<ListenerTls>,
}

async fn serve(
    config: Config,
    Listeners {
        http,
        grpc,
        metrics,
        tls,
    }: Listeners,
    store: Store,
    tenants: Vec<TenantSettings>,
    clock: SharedClock,
    shutdown: oneshot::Receiver<()>,
    ready: std_mpsc::Sender<Result<Registry>>,
) -> Result<()> {
    let forward_cas = config.forward.ca_certs()?;
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(2);
    let arbiters: Vec<actix_rt::Arbiter> = (0..cores).map(|_| actix_rt::Arbiter::new()).collect();
    let registry = Registry::new(
        arbiters.iter().map(|a| a.handle()).collect(),
        store,
        clock,
        EventBus::default(),
        Telemetry::new(config.tracer_provider.as_ref(), &config.metrics),
    )
    .with_forward_cas(forward_cas);
    let backend = match start_tenants(&config, &registry, tenants) {
        Ok(backend) => Arc::new(backend),
        Err(e) => {
            for arbiter in arbiters {
                arbiter.stop();
                let _ = arbiter.join();
            }
            let _ = ready.send(Err(e));
            return Ok(());
        }
    };

    let state = AppState {
        registry: registry.clone(),
        limits: ingress::EdgeLimits::new(&config.http),
    };
    let metrics_state = state.clone();
    let workers = if config.http.workers == 0 {
        cores
    } else {
        config.http.workers
    };
    let max_header_bytes = config.http.max_header_bytes;
    let unrouted = registry.telemetry().metrics().other().clone();
    let server = HttpServer::new(move || {
        let unrouted = unrouted.clone();
        App::new()
            .wrap(from_fn(move |req, next| {
                ingress::header_limit(max_header_bytes, unrouted.clone(), req, next)
            }))
            .wrap(from_fn(ingress::close_unread_body))
            .wrap(from_fn(ingress::request_id))
            .configure(ingress::configure(state.clone()))
    })
    .workers(workers)
    .max_connections(config.http.max_connections)
    .keep_alive(config.http.keep_alive())
    .client_request_timeout(config.http.head_timeout())
    .disable_signals()
    .shutdown_timeout(config.http.shutdown_timeout_secs);
    let server = match tls.http {
        Some(listener) => server.listen_rustls_0_23(http, listener.config)?,
        None => server.listen(http)?,
    }
    .run();
    let http_handle = server.handle();
    let metrics_server = match metrics {
        Some(listener) => {
            let server = HttpServer::new(move || {
                App::new()
                    .wrap(from_fn(ingress::request_id))
                    .configure(ingress::configure_metrics(metrics_state.clone()))
            })
            .workers(1)
            .max_connections(64)
            .client_request_timeout(config.http.head_timeout())
            .disable_signals()
            .shutdown_timeout(1)
            .listen(listener)?
            .run();
            Some((server.handle(), actix_rt::spawn(server)))
        }
        None => None,
    };
    let metrics_handle = metrics_server.as_ref().map(|(handle, _)| handle.clone());

    let (grpc_stop_tx, grpc_stop_rx) = oneshot::channel::<()>();
    let grpc_grace = Duration::from_secs_f64(config.grpc.shutdown_grace_secs);
    let grpc_thread = std::thread::Builder::new()
        .name("hookd-grpc".into())
        .spawn(move || {
            let runtime = tokio::runtime::Builder::new_multi_thread()
                .worker_threads(2)
                .enable_all()
                .build()
                .expect("grpc runtime");
            runtime.block_on(async move {
                let (stopping_tx, stopping_rx) = oneshot::channel::<()>();
                let grpc_tls = tls.grpc.map(|listener| Arc::new(listener.config));
                let serve = hookd_control::serve(grpc, backend, grpc_tls, async move {
                    let _ = grpc_stop_rx.await;
                    let _ = stopping_tx.send(());
                });
                // Graceful shutdown waits for clients to hang up; past the
                // grace period the runtime closes their connections.
                let grace = async move {
                    let _ = stopping_rx.await;
                    tokio::time::sleep(grpc_grace).await;
                };
                tokio::select! {
                    served = serve => if let Err(e) = served {
                        tracing::error!(error = %e, "grpc server stopped");
                    },
                    _ = grace => tracing::info!("grpc clients still connected after the grace period; closing them"),
                }
            });
            runtime.shutdown_timeout(Duration::from_secs(5));
        })?;

    actix_rt::spawn(async move {
        let _ = shutdown.await;
        tracing::info!("shutting down: finishing in-flight requests");
        http_handle.stop(true).await;
        if let Some(handle) = metrics_handle {
            handle.stop(false).await;
        }
    });
    actix_rt::spawn(sweeper::run(registry.clone(), config.retention.clone()));
    let _ = ready.send(Ok(registry.clone()));
    let served = server.await;
    if let Some((_, task)) = metrics_server {
        let _ = task.await;
    }

    let _ = grpc_stop_tx.send(());
    let _ = grpc_thread.join();
    for arbiter in arbiters {
        arbiter.stop();
        let _ = arbiter.join();
    }
    registry.store().flush()?;
    drop(registry);
    tracing::info!("shutdown complete");
    served.map_err(Error::from)
}

/// Starts the config file's tenants, then those created over the control
/// plane (a config tenant wins an id clash), and builds the control-plane
/// backend over them.
fn start_tenants(
    config: &Config,
    registry: &Registry,
    tenants: Vec<TenantSettings>,
) -> Result<Backend> {
    let key = MasterKey::load(&config.keys, &config.data_dir)?;
    let admin_token = load_admin_token(&config.keys, &config.data_dir)?;
    let address_policy = Arc::new(AddressPolicy::new(config.forward.allow_networks.clone()));
    let config_ids: HashSet<String> = tenants.iter().map(|t| t.id.to_string()).collect();
    let catalog = Catalog::open(registry.store().db(), key, config_ids.clone())?;
    for tenant in tenants {
        registry.start_tenant(tenant)?;
    }
    for id in catalog.ids()? {
        if config_ids.contains(&id) {
            tracing::warn!(tenant = %id, "tenant is both in the config file and created over the API; the config file wins");
            continue;
        }
        let started = match catalog.get(&id) {
            Ok(Some((record, secrets))) => effective_config(&record, &secrets)
                .resolve_under(config.limits.tenant_max_body_bytes)
                .and_then(|settings| {
                    registry
                        .start_tenant(settings.with_address_policy(&address_policy))
                        .map_err(|e| e.to_string())
                }),
            Ok(None) => continue,
            Err(e) => Err(format!("stored record cannot be read: {e}")),
        };
        if let Err(reason) = started {
            tracing::error!(tenant = %id, reason = %reason, "stored tenant cannot start and is skipped; its deliveries get 503 TENANT_UNAVAILABLE until UpdateTenant fixes it or it is deleted");
            registry.mark_unavailable(&id, reason);
        }
    }
    Ok(Backend::new(
        registry.clone(),
        catalog,
        config_ids,
        admin_token,
        config.limits.tenant_max_body_bytes,
        address_policy,
    ))
}
