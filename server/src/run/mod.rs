//! The run seam: [`run`] serves one hookd on listeners bound by the caller
//! until a shutdown future resolves.

use std::{
    collections::HashSet,
    future::Future,
    net::TcpListener,
    sync::{mpsc as std_mpsc, Arc},
};

use opentelemetry_sdk::trace::SdkTracerProvider;

use self::serve::{Serving, Tls};

mod background;
mod dashboard;
mod private;
mod scrape;
mod serve;

use crate::catalog::follow::Tenants;
use crate::routes::replay::{ReplayOrder, ReplayProgress};
use crate::tenant::{resolve_tenants, TenantSettings};
use crate::{
    admin::Backend,
    alerts::Alerts,
    catalog::{
        follow::{start_stored, Follower},
        Catalog, Resolver,
    },
    clock::SharedClock,
    config::{parse_addr, Config, StorageBackend, TenantConfig},
    egress::AddressPolicy,
    error::{Error, Result},
    keyring::{load_admin_token, MasterKey},
    store::{
        api::Store,
        postgres::{PgOptions, PgStore},
        OsSync, SharedSync, SledStore,
    },
    tenant::{Registry, Services},
    tls::CertSource,
};

/// What a hookd process runs on besides its configuration.
pub struct Runtime {
    clock: SharedClock,
    sync: SharedSync,
    tracer_provider: Option<SdkTracerProvider>,
    ready: Option<std_mpsc::Sender<Started>>,
}

impl Runtime {
    /// Runs on `clock`, with real syncs and spans that get ids but are not
    /// exported.
    pub fn new(clock: SharedClock) -> Runtime {
        Runtime {
            clock,
            sync: Arc::new(OsSync),
            tracer_provider: None,
            ready: None,
        }
    }

    /// Storage's syncs go through `sync` (unless `storage.fsync` is off):
    /// tests record them or make them fail.
    pub fn with_sync(mut self, sync: SharedSync) -> Runtime {
        self.sync = sync;
        self
    }

    /// Spans go to `provider`: the binary's OTLP pipeline from the `OTEL_*`
    /// variables, or a test's in-memory exporter.
    pub fn with_tracer_provider(mut self, provider: SdkTracerProvider) -> Runtime {
        self.tracer_provider = Some(provider);
        self
    }

    /// Hands `ready` the running tenants once hookd accepts deliveries.
    pub(crate) fn reporting_to(mut self, ready: std_mpsc::Sender<Started>) -> Runtime {
        self.ready = Some(ready);
        self
    }
}

/// The already-bound listeners hookd serves on.
pub struct Listeners {
    /// The HTTP ingress (and `/metrics`, `/healthz`).
    pub http: TcpListener,
    /// The gRPC control plane.
    pub grpc: TcpListener,
    /// `metrics.addr`, when set (plain HTTP, `GET /metrics` only).
    pub metrics: Option<TcpListener>,
    /// `dashboard.addr`, with the dashboard on.
    pub dashboard: Option<TcpListener>,
}

impl Listeners {
    /// Binds `http.addr`, `grpc.addr` and, with metrics on, `metrics.addr`
    /// and, with the dashboard on, `dashboard.addr`; errors name the key.
    pub fn bind(config: &Config) -> Result<Listeners> {
        let http = listen("http.addr", &config.http.addr)?;
        let grpc = listen("grpc.addr", &config.grpc.addr)?;
        let metrics = match (&config.metrics.addr, config.metrics.enabled) {
            (Some(addr), true) => Some(listen("metrics.addr", addr)?),
            _ => None,
        };
        let dashboard = config
            .dashboard
            .enabled
            .then(|| listen("dashboard.addr", &config.dashboard.addr))
            .transpose()?;
        Ok(Listeners {
            http,
            grpc,
            metrics,
            dashboard,
        })
    }
}

/// Binds the address of config `key` (`dashboard.addr`); a failure names
/// the listener, its address and the setting that moves it, since "Address
/// already in use" alone does not say which of four listeners it was.
fn listen(key: &str, value: &str) -> Result<TcpListener> {
    let addr = parse_addr(key, value)?;
    TcpListener::bind(addr).map_err(|e| {
        let (listener, _) = key.split_once('.').unwrap_or((key, ""));
        let env = format!("HOOKD_{}", key.to_uppercase().replace('.', "__"));
        let flag = match listener {
            "http" | "grpc" => format!(", flag --{listener}-addr"),
            _ => String::new(),
        };
        Error::config(
            format!("{listener} {addr}"),
            format!("cannot listen: {e}; set `{key}` (env {env}{flag}) to a free address"),
        )
    })
}

/// What a started hookd hands back to [`crate::Server`].
pub(crate) struct Started {
    pub(crate) registry: Registry,
    pub(crate) services: Arc<Services>,
    pub(crate) certs: Vec<Arc<CertSource>>,
    /// The control plane, for tests below gRPC.
    pub(crate) control: Arc<dyn hookd_control::ControlBackend>,
}

/// Resolves every tenant of `config` as a start would (secrets loaded,
/// contracts, filters and transforms compiled), starting nothing: what
/// [`Config::load`] leaves to the start, checked ahead of it.
pub fn check_tenants(config: &Config) -> Result<()> {
    resolve_tenants(config).map(drop)
}

/// Opens storage, starts every tenant and serves on `listeners` until
/// `shutdown` resolves; then finishes in-flight requests, flushes storage
/// and returns once everything is closed. Must run inside an actix system
/// (`actix_rt::System::new().block_on(run(..))`).
///
/// The run seam: [`run`] serves one hookd on listeners bound by the caller
/// until a shutdown future resolves, in the style of mini-redis's
/// `server::run`. Runtime handles (clock, storage syncs, tracer provider)
/// travel in [`Runtime`], never in [`Config`].
pub async fn run(
    config: Config,
    runtime: Runtime,
    listeners: Listeners,
    shutdown: impl Future<Output = ()> + 'static,
) -> Result<()> {
    private::keep_private(&config.data_dir).map_err(|e| {
        Error::config(
            "data_dir",
            format!("{} cannot be made private: {e}", config.data_dir.display()),
        )
    })?;
    let warnings = std::iter::once(config.metrics.scan_limit_warning()).chain(
        config
            .tenants
            .iter()
            .map(TenantConfig::replay_cache_capacity_warning),
    );
    for warning in warnings.flatten() {
        tracing::warn!("{warning}");
    }
    let tenants = resolve_tenants(&config)?;
    let tls = Tls::build(&config)?;
    let (store, committer): (Store, _) = match config.storage.backend {
        StorageBackend::Sled => {
            let (store, committer) = SledStore::open_with(
                &config.data_dir,
                config.storage.commit_batch_max,
                config.storage.fsync.then_some(runtime.sync.clone()),
                config.storage.cache_capacity_bytes,
            )?;
            (Arc::new(store), Some(committer))
        }
        StorageBackend::Postgres => (Arc::new(open_postgres(&config)?), None),
    };
    let served = serve::serve(Serving {
        config,
        runtime,
        listeners,
        tls,
        store,
        tenants,
        shutdown: Box::pin(shutdown),
    })
    .await;
    let joined = match committer {
        Some(committer) => committer
            .join()
            .map_err(|_| Error::panicked("durable writer")),
        None => Ok(()),
    };
    served.and(joined)
}

/// Connects to `[storage.postgres]`, migrates, and refuses a master key
/// other than the one the database's secrets were sealed with.
fn open_postgres(config: &Config) -> Result<PgStore> {
    let pg = &config.storage.postgres;
    let store = PgStore::open(PgOptions {
        url: pg.connection_url()?,
        max_connections: pg.max_connections,
        statement_timeout_ms: pg.statement_timeout_ms,
        batch_max: config.storage.commit_batch_max,
    })?;
    store.check_master_key(&MasterKey::load(&config.keys, &config.data_dir)?)?;
    Ok(store)
}

impl Runtime {
    pub(crate) fn clock(&self) -> &SharedClock {
        &self.clock
    }

    pub(crate) fn tracer_provider(&self) -> Option<&SdkTracerProvider> {
        self.tracer_provider.as_ref()
    }

    /// Reports a started hookd, once.
    pub(crate) fn report_ready(&mut self, started: Started) {
        if let Some(ready) = self.ready.take() {
            let _ = ready.send(started);
        }
    }
}

/// Runs again every replay still open (neither done nor cancelled) of a
/// tenant running here: each carries on from its stored progress where
/// the route's lease is held.
fn resume_replays(registry: &Registry, services: &Services) -> Result<()> {
    let rows = services.store.catalog_rows()?;
    for (tenant, order) in ReplayOrder::all(&*rows, None)? {
        let progress = ReplayProgress::load(&*rows, &tenant, &order.id)?;
        if order.is_open(&progress) && registry.replay(&tenant, &order.id) {
            tracing::info!(tenant = %tenant, replay = %order.id, route = %order.route, "replay resumed after a restart");
        }
    }
    Ok(())
}

/// Starts the config file's tenants, then those created over the control
/// plane (a config tenant wins an id clash), and builds the control-plane
/// backend over them, and a follower of changes other processes make.
pub(crate) fn start_tenants(
    config: &Config,
    (registry, services): (&Registry, &Arc<Services>),
    tenants: Vec<TenantSettings>,
) -> Result<(Backend, Follower)> {
    let key = MasterKey::load(&config.keys, &config.data_dir)?;
    let admin_token = load_admin_token(&config.keys, &config.data_dir)?;
    let address_policy = Arc::new(AddressPolicy::new(config.forward.allow_networks.clone()));
    let resolver = Resolver::new(config.limits.tenant_max_body_bytes, address_policy.clone());
    let config_ids: HashSet<String> = tenants.iter().map(|t| t.id.to_string()).collect();
    let config_alerts = config
        .tenants
        .iter()
        .filter_map(|t| Some((t.id.clone(), t.alerts.clone()?)))
        .collect();
    let alerts = Alerts::new(
        (registry.clone(), services.clone()),
        &config.alerts,
        config_alerts,
        (key.clone(), address_policy.clone()),
    )?;
    let catalog = Catalog::open(services.store.clone(), key, config_ids.clone())?;
    for tenant in tenants {
        registry.start_tenant(tenant)?;
    }
    // The follower's baseline (the catalog's version, then its rows) is
    // taken before the stored tenants are read: a change another process
    // makes while they start is newer than it, so the first poll applies it.
    let follower = Follower::new(
        Arc::new(registry.clone()),
        services.store.clone(),
        catalog.clone(),
        resolver.clone(),
    )?;
    for id in catalog.ids()? {
        if config_ids.contains(&id) {
            tracing::warn!(tenant = %id, "tenant is both in the config file and created over the API; the config file wins");
            continue;
        }
        if let Err(reason) = start_stored(registry, &resolver, &catalog, &id) {
            tracing::error!(tenant = %id, reason = %reason, "stored tenant cannot start and is skipped; its deliveries get 503 TENANT_UNAVAILABLE until UpdateTenant fixes it or it is deleted");
            registry.mark_unavailable(&id, reason.to_string());
        }
    }
    resume_replays(registry, services)?;
    let backend = Backend::new(
        (registry.clone(), services.clone()),
        catalog,
        config_ids,
        admin_token,
        resolver,
        config.grpc.watch_streams_per_token,
        alerts,
    );
    Ok((backend, follower))
}
