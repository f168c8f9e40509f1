//! The storage engine on a shared PostgreSQL (14 or newer), so that any
//! number of hookd processes serve the same tenants: [`PgStore`] and its schema.

mod batch;
mod committer;
mod connect;
mod counts;
mod delivery_rows;
mod migrate;
mod pull;
mod redirects;
mod rejections;
mod retention;
mod round;
mod rows;
mod tenant;
#[doc(hidden)]
pub mod testing;
#[cfg(test)]
mod tests;
mod transitions;

use std::{
    collections::HashMap,
    future::Future,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use deadpool_postgres::Pool;
use futures_util::{future::BoxFuture, FutureExt};
use secrecy::SecretString;
use tokio_postgres::{error::SqlState, GenericClient};

use self::connect::{pool, probe, session_config};
pub use migrate::migrate;

use super::api::{
    CatalogRows, CommitFigures, Fence, QueueCounts, RejectionLog, Storage, SweepRequest,
    TenantStore,
};
use crate::{
    error::{Error, Result},
    ids::TenantId,
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

/// Connections of the side pool: the health probe and the queue counts
/// of `/metrics` and the control plane, apart from `max_connections`.
const SIDE_CONNECTIONS: usize = 2;

/// What every database task shares: the pools and the process's block of
/// sequence numbers.
#[derive(Clone)]
pub(crate) struct Db {
    pool: Pool,
    /// A small pool of its own for the health probe and the queue counts,
    /// so neither waits behind ingest and forwarding (nor starves them).
    side: Pool,
    seq: Arc<Mutex<(u64, u64)>>,
}

impl Db {
    /// A pooled connection.
    async fn client(&self) -> Result<deadpool_postgres::Client> {
        checkout(&self.pool).await
    }

    /// A connection of the side pool.
    async fn side_client(&self) -> Result<deadpool_postgres::Client> {
        checkout(&self.side).await
    }

    /// A fresh number, unique across every process sharing the database;
    /// a new block is taken on a connection of the pool. Inside a
    /// transaction use [`Db::sequence_in`].
    async fn sequence(&self) -> Result<u64> {
        match self.next_in_block() {
            Some(n) => Ok(n),
            None => self.new_block(&**self.client().await?).await,
        }
    }

    /// [`Db::sequence`] taking a new block on `client` (a transaction's
    /// own connection), never on a second connection of the pool.
    async fn sequence_in(&self, client: &impl GenericClient) -> Result<u64> {
        match self.next_in_block() {
            Some(n) => Ok(n),
            None => self.new_block(client).await,
        }
    }

    fn next_in_block(&self) -> Option<u64> {
        let mut block = self.seq.lock().expect("sequence lock");
        (block.0 < block.1).then(|| {
            block.0 += 1;
            block.0 - 1
        })
    }

    /// Takes a new block (`nextval` is not transactional: a rollback
    /// never hands the block out twice) and returns its first number.
    async fn new_block(&self, client: &impl GenericClient) -> Result<u64> {
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

/// The database's clock (Unix ms, at the start of `client`'s transaction):
/// what every replica compares times shared between replicas against.
pub(super) async fn db_now_ms(client: &impl GenericClient) -> Result<i64> {
    let row = client
        .query_one("SELECT (extract(epoch FROM now()) * 1000)::bigint", &[])
        .await
        .map_err(pg)?;
    Ok(row.get(0))
}

/// A connection of `pool`.
async fn checkout(pool: &Pool) -> Result<deadpool_postgres::Client> {
    pool.get().await.map_err(|e| {
        let context = format!("storage: postgres connection: {}", chain(&e));
        Error::storage(context, Some(Box::new(e)))
    })
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

/// A database error as hookd's, with the server's own message; a lost
/// deadlock or serialization race (by its SQLSTATE) is a retryable
/// [`Error::Storage`], which [`retrying`] tries again.
pub(crate) fn pg(e: tokio_postgres::Error) -> Error {
    let (retryable, context) = match e.as_db_error() {
        Some(db) => {
            let text = format!("postgres: {} ({})", db.message(), db.code().code());
            match *db.code() {
                SqlState::T_R_DEADLOCK_DETECTED | SqlState::T_R_SERIALIZATION_FAILURE => {
                    (true, format!("storage contended: {text}"))
                }
                _ => (false, format!("storage: {text}")),
            }
        }
        None => (false, format!("storage: postgres: {}", chain(&e))),
    };
    Error::Storage {
        retryable,
        context,
        source: Some(Box::new(e)),
    }
}

/// How often a transaction that lost a deadlock or serialization race is
/// tried in all.
const TRIES: usize = 3;

/// Runs the transaction `work` makes, again (up to [`TRIES`] in all) while
/// it loses a deadlock or serialization race: PostgreSQL rolled it back
/// whole, so trying again is safe.
pub(super) async fn retrying<T, F, Fut>(mut work: F) -> Result<T>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T>>,
{
    let mut tried = 1;
    loop {
        match work().await {
            Err(
                e @ Error::Storage {
                    retryable: true, ..
                },
            ) if tried < TRIES => {
                tracing::info!(reason = %e, "a transaction lost a race; trying it again");
                tried += 1;
            }
            done => return done,
        }
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

/// The storage engine on PostgreSQL (cheap to clone): the [`Storage`];
/// `PgTenant` is a tenant's [`super::api::TenantData`],
/// `PgRows` the catalog's rows.
///
/// The API's methods block by contract; the engine owns a small tokio
/// runtime that runs every database future, and a caller waits for the
/// answer on a plain channel, so a call never panics whatever thread (or
/// runtime) it comes from. New deliveries are group-committed by one task
/// (`committer`): one transaction per batch, answered after `COMMIT`
/// (with `synchronous_commit` on).
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
        let config = session_config(&options)?;
        let db = Db {
            pool: pool(&config, options.max_connections)?,
            side: pool(&config, SIDE_CONNECTIONS)?,
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
    pub fn check_master_key(&self, key: &impl KeyCheck) -> Result<()> {
        let sealed = key.sealed_check();
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
        match key.opens_check(&stored) {
            true => Ok(()),
            false => Err(Error::config(
                "master key",
                "HOOKD_MASTER_KEY is not the key this database's secrets were sealed \
                 with; every replica must share one master key",
            )),
        }
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

/// The master key as the database's key check uses it: a value it sealed
/// at the database's first start must open with it at every later start.
pub trait KeyCheck {
    /// The key check's value, sealed with this key.
    fn sealed_check(&self) -> Vec<u8>;
    /// Whether `sealed` (the key check's value as stored) opens with this key.
    fn opens_check(&self, sealed: &[u8]) -> bool;
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
    rx.recv().map_err(|_| Error::panicked("postgres task"))?
}

impl Storage for PgStore {
    /// Asks the catalog whether the tenant is stored there (not only in a
    /// config file): such a tenant's deliveries commit only while it is.
    fn tenant(&self, id: &TenantId) -> Result<TenantStore> {
        let key = id.to_string();
        let stored = self.run(|db| async move {
            let row = db
                .client()
                .await?
                .query_opt(
                    "SELECT 1 FROM hookd_catalog WHERE tbl = 'tenants' AND key = $1",
                    &[&key],
                )
                .await
                .map_err(pg)?;
            Ok(row.is_some())
        })?;
        let shared = tenant::EngineParts {
            db: self.inner.db.clone(),
            runtime: self.inner.runtime.handle().clone(),
            committer: self.inner.committer.clone(),
            healthy: self.inner.healthy.clone(),
        };
        Ok(Arc::new(tenant::PgTenant::new(
            id.clone(),
            shared,
            self.mark(id),
            stored,
        )))
    }

    fn is_healthy(&self) -> bool {
        self.inner.healthy.load(Ordering::SeqCst)
    }

    fn needs_restart(&self) -> bool {
        false
    }

    fn durable_barrier(&self) -> BoxFuture<'static, Result<()>> {
        // Every write commits with synchronous_commit on before it answers:
        // what was written before is durable already.
        let healthy = self.is_healthy();
        async move {
            match healthy {
                true => Ok(()),
                false => Err(Error::storage("storage: postgres does not answer", None)),
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

    /// Only while no tenant of the id is stored: see
    /// `committer::clear_unless_stored`.
    fn clear_tenant(&self, id: &TenantId) -> Result<()> {
        let (tenant, mark) = (id.to_string(), self.mark(id));
        self.run(|db| async move { committer::clear_unless_stored(&db, &tenant, &mark).await })?;
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

    fn counts_of(&self, tenants: &[TenantStore]) -> Result<Vec<QueueCounts>> {
        let ids: Vec<String> = tenants.iter().map(|t| t.tenant().to_string()).collect();
        self.run(|db| async move { counts::counts_of(&db, &ids).await })
    }

    fn sweep_due(&self, tenants: &[TenantStore], request: &SweepRequest) -> Result<Vec<bool>> {
        let ids: Vec<String> = tenants.iter().map(|t| t.tenant().to_string()).collect();
        let request = *request;
        self.run(|db| async move { retention::sweep_due(&db, &ids, &request).await })
    }

    fn flush(&self) -> Result<()> {
        Ok(())
    }

    /// On the database's clock; a takeover (another owner) bumps the
    /// epoch, a renewal keeps it.
    fn claim_forwarding(
        &self,
        tenant: &TenantId,
        owner: &str,
        lease_ms: i64,
    ) -> Result<Option<Fence>> {
        let (tenant, holder) = (tenant.to_string(), owner.to_string());
        let epoch = self.run(|db| async move {
            let client = db.client().await?;
            let held = client
                .query_opt(
                    "INSERT INTO hookd_forward_leases AS l (tenant, owner, expires_at) \
                     VALUES ($1, $2, now() + make_interval(secs => $3::float8 / 1000)) \
                     ON CONFLICT (tenant) DO UPDATE \
                     SET owner = EXCLUDED.owner, expires_at = EXCLUDED.expires_at, \
                         epoch = l.epoch + (l.owner <> EXCLUDED.owner)::int \
                     WHERE l.owner = EXCLUDED.owner OR l.expires_at < now() \
                     RETURNING epoch",
                    &[&tenant, &holder, &(lease_ms as f64)],
                )
                .await
                .map_err(pg)?;
            Ok(held.map(|row| row.get::<_, i64>(0)))
        })?;
        Ok(epoch.map(|epoch| Fence {
            owner: owner.into(),
            epoch,
        }))
    }

    /// Expires the lease rather than deleting it, so its epoch never goes
    /// back and an old holder's attempts stay fenced out.
    fn release_forwarding(&self, tenant: &TenantId, owner: &str) -> Result<()> {
        let (tenant, owner) = (tenant.to_string(), owner.to_string());
        self.run(|db| async move {
            db.client()
                .await?
                .execute(
                    "UPDATE hookd_forward_leases SET expires_at = '-infinity' \
                     WHERE tenant = $1 AND owner = $2",
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

#[cfg(test)]
mod retry_tests {
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    fn failure(retryable: bool) -> Error {
        Error::Storage {
            retryable,
            context: "storage: postgres: lost a race".into(),
            source: None,
        }
    }

    /// Runs `retrying` over answers taken in turn; how many were taken.
    async fn tries(answers: Vec<Result<()>>) -> (Result<()>, usize) {
        let taken = AtomicUsize::new(0);
        let answers = std::sync::Mutex::new(answers.into_iter());
        let out = retrying(|| {
            taken.fetch_add(1, Ordering::Relaxed);
            let next = answers.lock().unwrap().next().unwrap();
            async move { next }
        })
        .await;
        (out, taken.into_inner())
    }

    /// The retry decision is the error's `retryable` flag, not its text.
    #[tokio::test]
    async fn only_a_retryable_failure_is_tried_again_and_at_most_three_times() {
        let (out, taken) = tries(vec![Err(failure(true)), Ok(())]).await;
        assert!(out.is_ok());
        assert_eq!(taken, 2);
        let (out, taken) = tries((0..TRIES).map(|_| Err(failure(true))).collect()).await;
        assert!(matches!(
            out,
            Err(Error::Storage {
                retryable: true,
                ..
            })
        ));
        assert_eq!(taken, TRIES);
        let (out, taken) = tries(vec![Err(failure(false)), Ok(())]).await;
        assert!(matches!(
            out,
            Err(Error::Storage {
                retryable: false,
                ..
            })
        ));
        assert_eq!(taken, 1);
    }
}
