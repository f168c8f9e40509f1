//! The storage API: what hookd asks of a storage engine, in its own vocabulary
//! and with no engine's types in it, and the store-wide trait ([`Storage`]).

mod catalog;
mod delivery;
mod rejections;
mod tenant;

use std::sync::Arc;

use futures_util::future::BoxFuture;

pub use catalog::{CatalogRows, RowChange, Table};
pub use delivery::{CommitOutcome, NewDelivery, Receipt, RouteCopy};
pub use rejections::{Rejection, RejectionFilter, RejectionLog, KEPT_BODY_BYTES};
pub use tenant::{
    Due, DueEntry, Fence, FencedAttempt, FinishedAttempt, Listing, TenantData, CANCELLED,
};

use crate::{
    error::{Error, Result},
    ids::TenantId,
    records::queue_key_due_ms,
};

/// One tenant's data in a storage engine.
pub type TenantStore = Arc<dyn TenantData>;

/// The engine behind the process.
pub type Store = Arc<dyn Storage>;

/// A queue entry's key as its engine hands it out: ordered by when the
/// entry is due, its bytes read by that engine alone.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct QueueKey(Vec<u8>);

impl QueueKey {
    /// When the entry is due (Unix ms).
    pub fn due_ms(&self) -> i64 {
        queue_key_due_ms(&self.0).unwrap_or_default()
    }

    /// The key an engine keeps as `bytes`.
    pub(crate) fn from_bytes(bytes: Vec<u8>) -> QueueKey {
        QueueKey(bytes)
    }

    /// The bytes the engine keeps it as.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.0
    }
}

/// A dead letter's key in the dead-letter index: opaque, ordered by time.
pub type DeadKey = Vec<u8>;

/// How much one tenant has waiting.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct QueueCounts {
    /// Deliveries in the queue: waiting, scheduled for a retry, or pulled
    /// and not yet acknowledged.
    pub depth: u64,
    /// Dead letters waiting for redelivery or purge.
    pub dead: u64,
    /// When the earliest queue entry is due (Unix ms), if any.
    pub oldest_due_ms: Option<i64>,
    /// Since when the oldest delivery in the queue waits (Unix ms, when it
    /// was accepted or redelivered), if any: a delivery scheduled for a
    /// retry counts, though its entry is due later.
    pub oldest_pending_ms: Option<i64>,
}

impl QueueCounts {
    /// Since when the oldest queued delivery waits, from the queue's first
    /// entry due at `first_due_ms` (a new delivery's entry is due when it
    /// was accepted) and the oldest delivery whose entry a later change
    /// wrote (a retry, a pull, a retry now), made at `moved_ms`: the older.
    pub fn oldest_pending(first_due_ms: Option<i64>, moved_ms: Option<i64>) -> Option<i64> {
        match (first_due_ms, moved_ms) {
            (Some(due), Some(moved)) => Some(due.min(moved)),
            (due, moved) => due.or(moved),
        }
    }
}

/// What a pull asks for.
#[derive(Debug, Clone, Copy)]
pub struct PullRequest {
    /// At most this many deliveries.
    pub max: usize,
    /// Stop before the bodies and headers handed out pass this (the first
    /// is handed out whatever its size).
    pub max_bytes: usize,
    /// How long a pulled delivery stays hidden.
    pub visibility_ms: i64,
    /// A delivery older than this is dead-lettered instead.
    pub window_ms: i64,
    /// Now (Unix ms).
    pub now_ms: i64,
}

/// What a retention sweep removes, in bounded batches. A delivery goes
/// with its event, state, attempts and redirects; the originals it was
/// redelivered from (dead letters sent again, kept in no index of their
/// own) go with it.
#[derive(Debug, Clone, Copy)]
pub struct SweepRequest {
    /// Delivered events finished before this (Unix ms) are deleted.
    pub delivered_before_ms: i64,
    /// Idempotency records older than this are forgotten.
    pub idem_before_ms: i64,
    /// Dead letters dead before this (Unix ms) are deleted.
    pub dead_before_ms: i64,
    /// At most this many delivered events and this many dead letters per
    /// call.
    pub batch: usize,
    /// At most this many idempotency records scanned per call; none when 0
    /// (the scan's cursor is then left where it was).
    pub idem_scan: usize,
}

impl SweepRequest {
    /// The key below which delivered events are due: the finish time their
    /// index keys begin with, big-endian.
    pub fn delivered_cutoff(&self) -> [u8; 8] {
        (self.delivered_before_ms.max(0) as u64).to_be_bytes()
    }

    /// The key below which dead letters are due, likewise by time of death.
    pub fn dead_cutoff(&self) -> [u8; 8] {
        (self.dead_before_ms.max(0) as u64).to_be_bytes()
    }
}

/// Group-commit figures, for the metrics.
#[derive(Debug, Default, Clone, Copy)]
pub struct CommitFigures {
    /// Batches applied.
    pub batches: u64,
    /// Writes in them.
    pub writes: u64,
}

/// A storage engine.
///
/// The storage API is what hookd asks of a storage engine, in its own
/// vocabulary (deliveries, attempts, queue entries, dead letters, catalog
/// rows), with no engine's types in it, and the values that cross it
/// ([`NewDelivery`], [`CommitOutcome`], [`Rejection`], [`RejectionFilter`]).
/// This trait is the store-wide API; one tenant's is in
/// `tenant.rs`, the catalog's rows in `catalog.rs`, refusals in
/// `rejections.rs`, a new event in `delivery.rs`. sled is the embedded
/// engine ([`super::SledStore`]); PostgreSQL implements the same traits.
///
/// Methods returning a value block on storage: call them on a blocking
/// thread ([`blocking`]), never on an async worker. Methods returning a
/// future ([`TenantData::commit`], [`TenantData::record_attempts`],
/// [`Storage::durable_barrier`], [`Storage::drop_tenant_trees`]) wait for
/// durability without blocking.
pub trait Storage: Send + Sync + 'static {
    /// A handle on one tenant's data (cheap; the first call may count its
    /// queue once).
    fn tenant(&self, id: &TenantId) -> Result<TenantStore>;

    /// False once a write or sync failed: nothing more is acknowledged.
    fn is_healthy(&self) -> bool;

    /// True once the engine takes writes again only after hookd restarts
    /// and recovers from what is on disk (sled, after a failed write or
    /// sync); an engine that heals by itself (PostgreSQL answering again)
    /// never needs it. Liveness fails then, so a supervisor restarts hookd.
    fn needs_restart(&self) -> bool;

    /// Resolves once everything written before the call is durable.
    fn durable_barrier(&self) -> BoxFuture<'static, Result<()>>;

    /// Removes all of a tenant's data, durably, failing its writes in flight.
    fn drop_tenant_trees(&self, id: &TenantId) -> BoxFuture<'static, Result<()>>;

    /// Removes what a tenant no actor holds left behind, now.
    fn clear_tenant(&self, id: &TenantId) -> Result<()>;

    /// The control plane's rows.
    fn catalog_rows(&self) -> Result<Arc<dyn CatalogRows>>;

    /// The refused requests.
    fn rejections(&self) -> Result<Arc<dyn RejectionLog>>;

    /// Group-commit figures.
    fn commit_figures(&self) -> CommitFigures;

    /// The queue counts of each of `tenants` (handles made by this engine),
    /// in order: by default each asked of its handle; an engine whose
    /// counts are a query reads them all in a few.
    fn counts_of(&self, tenants: &[TenantStore]) -> Result<Vec<QueueCounts>> {
        tenants.iter().map(|t| t.counts()).collect()
    }

    /// [`TenantData::sweep_due`] of each of `tenants` (handles made by this
    /// engine), in order: by default each asked of its handle; an engine
    /// whose answer is a query reads them all in a few.
    fn sweep_due(&self, tenants: &[TenantStore], request: &SweepRequest) -> Result<Vec<bool>> {
        tenants.iter().map(|t| t.sweep_due(request)).collect()
    }

    /// Writes everything out now (at shutdown).
    fn flush(&self) -> Result<()>;

    /// Claims (or renews) the right to forward `tenant`'s deliveries for
    /// `lease_ms` from now on behalf of `owner` (one id per process), so
    /// that of several processes sharing the store one at a time forwards a
    /// tenant and its `max_in_flight`, delivery rate and breaker hold for the
    /// tenant as a whole. The lease's [`Fence`] while `owner` holds it; a
    /// lease not renewed in time passes to the next claimant. An embedded
    /// engine serves one process and always grants it (epoch 0).
    fn claim_forwarding(
        &self,
        tenant: &TenantId,
        owner: &str,
        lease_ms: i64,
    ) -> Result<Option<Fence>>;

    /// Gives up `owner`'s forwarding lease of `tenant`, if it holds it.
    fn release_forwarding(&self, tenant: &TenantId, owner: &str) -> Result<()>;

    /// A number that changes whenever any process changes the catalog, so
    /// processes sharing the store see tenants created, changed or deleted
    /// elsewhere by polling it. An embedded engine serves one process:
    /// its catalog only changes through it.
    fn catalog_version(&self) -> Result<u64>;
}

/// Runs blocking storage work on tokio's blocking pool, off the async threads.
pub async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| match e.is_panic() {
            true => Error::panicked("storage task"),
            false => Error::stopped("storage task"),
        })?
}
