//! The storage API ([`super::api`]) on a shared PostgreSQL (14 or newer),
//! so that any number of hookd processes serve the same tenants:
//! [`PgStore`] is the [`Storage`], [`tenant::PgTenant`] a tenant's
//! [`super::api::TenantData`], [`rows::PgRows`] the catalog's rows.
//!
//! The API's methods block by contract; the engine owns a small tokio
//! runtime that runs every database future, and a caller waits for the
//! answer on a plain channel, so a call never panics whatever thread (or
//! runtime) it comes from. New deliveries are group-committed by one task
//! ([`committer`]): one transaction per batch, answered after `COMMIT`
//! (with `synchronous_commit` on).

mod committer;
mod migrate;
mod pull;
mod redirects;
mod rejections;
mod retention;
mod rows;
mod tenant;
#[doc(hidden)]
pub mod testing;

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use futures_util::{future::BoxFuture, FutureExt};
use secrecy::{ExposeSecret, SecretString};
use tokio_postgres_rustls::MakeRustlsConnect;

pub use migrate::migrate;

use super::api::{CatalogRows, CommitFigures, RejectionLog, Storage, Tenant};
use crate::{
    error::{Error, Result},
    ids::TenantId,
    keyring::{Binding, MasterKey},
};

/// Queue-key sequence numbers each `nextval` hands this process (the
/// sequence's increment in the schema).
const SEQ_BLOCK: u64 = 1024;

/// How to reach PostgreSQL and how much of it to use.
pub struct PgOptions {
    /// Connection URL: a secret, never logged.
    pub url: SecretString,
    /// Most connections.
    pub max_connections: usize,
    /// Longest one statement may run (ms); 0 for no limit.
    pub statement_timeout_ms: u64,
    /// Most writes one group commit takes.
    pub batch_max: usize,
}

/// What every database task shares: the pool and the process's block of
/// sequence numbers.
#[derive(Clone)]
pub(crate) struct Db {
    pool: Pool,
    seq: Arc<Mutex<(u64, u64)>>,
}

impl Db {
    /// A pooled connection.
    async fn client(&self) -> Result<deadpool_postgres::Client> {
        self.pool
            .get()
            .await
            .map_err(|e| Error::Storage(format!("postgres connection: {}", chain(&e))))
    }

    /// A fresh number, unique across every process sharing the database.
    async fn sequence(&self) -> Result<u64> {
        {
            let mut block = self.seq.lock().expect("sequence lock");
            if block.0 < block.1 {
                block.0 += 1;
                return Ok(block.0 - 1);
            }
        }
        let client = self.client().await?;
        let base: i64 = client
            .query_one("SELECT nextval('hookd_seq')", &[])
            .await
            .map_err(pg)?
            .get(0);
        let base = base as u64;
        let mut block = self.seq.lock().expect("sequence lock");
        *block = (base + 1, base + SEQ_BLOCK);
        Ok(base)
    }
}

/// An error with its sources (a failed connection says why: refused,
/// a TLS handshake and what in it); never holds the URL.
fn chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// A database error as hookd's, with the server's own message.
pub(crate) fn pg(e: tokio_postgres::Error) -> Error {
    match e.as_db_error() {
        Some(db) => Error::Storage(format!("postgres: {} ({})", db.message(), db.code().code())),
        None => Error::Storage(format!("postgres: {}", chain(&e))),
    }
}

/// Owns the engine's runtime; shuts it down without waiting, so it may be
/// dropped anywhere (inside another runtime too).
struct OwnedRuntime(Option<tokio::runtime::Runtime>);

impl OwnedRuntime {
    fn handle(&self) -> &tokio::runtime::Handle {
        self.0.as_ref().expect("runtime until dropped").handle()
    }
}

impl Drop for OwnedRuntime {
    fn drop(&mut self) {
        if let Some(runtime) = self.0.take() {
            runtime.shutdown_background();
        }
    }
}

struct Inner {
    runtime: OwnedRuntime,
    db: Db,
    committer: committer::Handle,
    healthy: Arc<AtomicBool>,
    /// Tenants dropped by this process: handles made before refuse writes.
    marks: Mutex<HashMap<TenantId, Arc<AtomicBool>>>,
    figures: Arc<Figures>,
}

/// Group-commit counters.
#[derive(Default)]
pub(crate) struct Figures {
    batches: AtomicU64,
    writes: AtomicU64,
}

/// The storage engine on PostgreSQL (cheap to clone).
#[derive(Clone)]
pub struct PgStore {
    inner: Arc<Inner>,
}

impl PgStore {
    /// Connects, applies the embedded migrations (under an advisory lock)
    /// and starts the group committer and the health probe.
    pub fn open(options: PgOptions) -> Result<PgStore> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("hookd-postgres")
            .enable_all()
            .build()?;
        let runtime = OwnedRuntime(Some(runtime));
        let pool = pool(&options)?;
        let db = Db {
            pool,
            seq: Arc::new(Mutex::new((0, 0))),
        };
        let applied = block_on(runtime.handle(), {
            let db = db.clone();
            async move { migrate::apply(&mut db.client().await?).await }
        })?;
        if applied > 0 {
            tracing::info!(migrations = applied, "database schema migrated");
        }
        let healthy = Arc::new(AtomicBool::new(true));
        let figures = Arc::new(Figures::default());
        let committer = {
            let _entered = runtime.handle().enter();
            committer::start(db.clone(), options.batch_max, figures.clone())
        };
        runtime.handle().spawn(probe(db.clone(), healthy.clone()));
        Ok(PgStore {
            inner: Arc::new(Inner {
                runtime,
                db,
                committer,
                healthy,
                marks: Mutex::default(),
                figures,
            }),
        })
    }

    /// Runs `work` on the engine's runtime and waits for it on this thread.
    fn run<T, F, Fut>(&self, work: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(Db) -> Fut,
        Fut: Future<Output = Result<T>> + Send + 'static,
    {
        block_on(self.inner.runtime.handle(), work(self.inner.db.clone()))
    }

    /// Refuses to start when `key` cannot open the value sealed with the
    /// master key at the database's first start (which seals it now).
    pub fn check_master_key(&self, key: &MasterKey) -> Result<()> {
        const BINDING: Binding<'static> = Binding {
            tenant: "hookd",
            kid: "key-check",
        };
        let sealed = key.seal(b"hookd master key check", BINDING);
        let stored: Vec<u8> = self.run(|db| async move {
            let client = db.client().await?;
            client
                .execute(
                    "INSERT INTO hookd_key_check (id, sealed) VALUES (1, $1) ON CONFLICT DO NOTHING",
                    &[&sealed],
                )
                .await
                .map_err(pg)?;
            let row = client
                .query_one("SELECT sealed FROM hookd_key_check WHERE id = 1", &[])
                .await
                .map_err(pg)?;
            Ok(row.get(0))
        })?;
        key.open(&stored, BINDING).map(drop).map_err(|_| {
            Error::Config(
                "master key: HOOKD_MASTER_KEY is not the key this database's secrets were sealed \
                 with; every replica must share one master key"
                    .into(),
            )
        })
    }

    fn mark(&self, id: &TenantId) -> Arc<AtomicBool> {
        self.inner
            .marks
            .lock()
            .expect("marks lock")
            .entry(id.clone())
            .or_default()
            .clone()
    }
}

/// Waits on this thread for `work` run on `runtime`.
fn block_on<T: Send + 'static>(
    runtime: &tokio::runtime::Handle,
    work: impl Future<Output = Result<T>> + Send + 'static,
) -> Result<T> {
    let (tx, rx) = std::sync::mpsc::sync_channel(1);
    runtime.spawn(async move {
        let _ = tx.send(work.await);
    });
    rx.recv()
        .map_err(|_| Error::Internal("postgres task ended without an answer".into()))?
}

/// The connection pool; the URL's host and database are logged, never the URL.
fn pool(options: &PgOptions) -> Result<Pool> {
    let mut config: tokio_postgres::Config = options.url.expose_secret().parse().map_err(|_| {
        Error::Config("storage.postgres.url: not a valid PostgreSQL connection URL".into())
    })?;
    let mut session = String::from("-c synchronous_commit=on");
    if options.statement_timeout_ms > 0 {
        session.push_str(&format!(
            " -c statement_timeout={}",
            options.statement_timeout_ms
        ));
    }
    config.options(&session);
    config.application_name("hookd");
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    tracing::info!(
        hosts = %hosts.join(","),
        database = config.get_dbname().unwrap_or("(default)"),
        max_connections = options.max_connections,
        "storage: postgres"
    );
    let manager = Manager::from_config(
        config,
        tls_connector(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(options.max_connections)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()
        .map_err(|e| Error::Config(format!("storage.postgres: {e}")))
}

/// TLS as the URL's `sslmode` asks (`prefer`, the default, falls back to
/// plaintext when the server offers none; `require` insists): the server's
/// certificate is verified against the system's roots (`SSL_CERT_FILE`
/// for a private CA) and the public ones, and must name the host.
fn tls_connector() -> MakeRustlsConnect {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    MakeRustlsConnect::new(config)
}

/// Keeps [`Storage::is_healthy`] true while the database answers.
async fn probe(db: Db, healthy: Arc<AtomicBool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        let up = match db.client().await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        };
        if healthy.swap(up, Ordering::SeqCst) != up {
            match up {
                true => tracing::info!("postgres answers again"),
                false => tracing::error!(
                    "postgres does not answer: deliveries get 503 STORAGE_UNAVAILABLE and \
                     /readyz fails until it does"
                ),
            }
        }
    }
}

impl Storage for PgStore {
    fn tenant(&self, id: &TenantId) -> Result<Tenant> {
        Ok(Arc::new(tenant::PgTenant::new(
            id.clone(),
            self.inner.db.clone(),
            self.inner.runtime.handle().clone(),
            self.inner.committer.clone(),
            self.inner.healthy.clone(),
            self.mark(id),
        )))
    }

    fn is_healthy(&self) -> bool {
        self.inner.healthy.load(Ordering::SeqCst)
    }

    fn durable_barrier(&self) -> BoxFuture<'static, Result<()>> {
        // Every write commits with synchronous_commit on before it answers:
        // what was written before is durable already.
        let healthy = self.is_healthy();
        async move {
            match healthy {
                true => Ok(()),
                false => Err(Error::Storage("postgres does not answer".into())),
            }
        }
        .boxed()
    }

    fn drop_tenant_trees(&self, id: &TenantId) -> BoxFuture<'static, Result<()>> {
        let (committer, id, mark) = (self.inner.committer.clone(), id.clone(), self.mark(id));
        let inner = self.inner.clone();
        async move {
            let dropped = committer.drop_tenant(id.clone(), mark).await;
            inner.marks.lock().expect("marks lock").remove(&id);
            dropped
        }
        .boxed()
    }

    fn clear_tenant(&self, id: &TenantId) -> Result<()> {
        self.mark(id).store(true, Ordering::SeqCst);
        let tenant = id.to_string();
        self.run(|db| async move { committer::delete_tenant(&db, &tenant).await })?;
        self.inner.marks.lock().expect("marks lock").remove(id);
        Ok(())
    }

    fn catalog_rows(&self) -> Result<Arc<dyn CatalogRows>> {
        Ok(Arc::new(rows::PgRows::new(self.clone())))
    }

    fn rejections(&self) -> Result<Arc<dyn RejectionLog>> {
        Ok(Arc::new(rejections::PgRejections::new(self.clone())))
    }

    fn commit_figures(&self) -> CommitFigures {
        CommitFigures {
            batches: self.inner.figures.batches.load(Ordering::Relaxed),
            writes: self.inner.figures.writes.load(Ordering::Relaxed),
        }
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    fn claim_forwarding(&self, tenant: &TenantId, owner: &str, lease_ms: i64) -> Result<bool> {
        let (tenant, owner) = (tenant.to_string(), owner.to_string());
        self.run(|db| async move {
            let client = db.client().await?;
            let held = client
                .query_opt(
                    "INSERT INTO hookd_forward_leases AS l (tenant, owner, expires_at) \
                     VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000)) \
                     ON CONFLICT (tenant) DO UPDATE \
                     SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at \
                     WHERE l.owner = EXCLUDED.owner OR l.expires_at < now() \
                     RETURNING owner",
                    &[&tenant, &owner, &(lease_ms as f64)],
                )
                .await
                .map_err(pg)?;
            Ok(held.is_some())
        })
    }

    fn release_forwarding(&self, tenant: &TenantId, owner: &str) -> Result<()> {
        let (tenant, owner) = (tenant.to_string(), owner.to_string());
        self.run(|db| async move {
            db.client()
                .await?
                .execute(
                    "DELETE FROM hookd_forward_leases WHERE tenant = $1 AND owner = $2",
                    &[&tenant, &owner],
                )
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn catalog_version(&self) -> Result<u64> {
        self.run(|db| async move {
            let version: i64 = db
                .client()
                .await?
                .query_one(
                    "SELECT version FROM hookd_catalog_version WHERE id = 1",
                    &[],
                )
                .await
                .map_err(pg)?
                .get(0);
            Ok(version as u64)
        })
    }
}
