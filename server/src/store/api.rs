//! The storage API: what hookd asks of a storage engine, in its own
//! vocabulary (deliveries, attempts, queue entries, dead letters, catalog
//! rows), with no engine's types in it, and the values that cross it
//! ([`NewDelivery`], [`CommitOutcome`], [`Rejection`], [`RejectionFilter`]).
//! sled is the embedded engine ([`super::SledStore`]); a second engine
//! implements the same traits.
//!
//! Methods returning a value block on storage: call them on a blocking
//! thread ([`blocking`]), never on an async worker. Methods returning a
//! future ([`TenantData::commit`], [`TenantData::record_attempts`],
//! [`Storage::durable_barrier`], [`Storage::drop_tenant_trees`]) wait for
//! durability without blocking.

use std::{sync::Arc, time::Duration};

use futures_util::future::BoxFuture;
use serde::{Deserialize, Serialize};

use super::{
    lifecycle::{Next, Resend, Swept},
    records::{
        time_key, AttemptRecord, DeadLetter, DeliveryState, DeliveryStatus, EventMeta,
        IdempotencyRecord, RedirectRecord, RouteOutcome, StoredEvent,
    },
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId, TenantId},
};

/// One tenant's data in a storage engine.
pub type TenantStore = Arc<dyn TenantData>;

/// The engine behind the process.
pub type Store = Arc<dyn Storage>;

/// A queue entry's key: opaque to callers, ordered by when it is due.
pub type QueueKey = Vec<u8>;

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

/// One tenant's deliveries. Changes to one delivery are compare-and-set
/// transactions, so concurrent writers (the dispatcher, consumers, the
/// control plane) never leave a delivery half-changed or a queue entry
/// that no state points at.
pub trait TenantData: Send + Sync + 'static {
    /// The tenant.
    fn tenant(&self) -> &TenantId;

    /// False once the engine failed a write or sync: nothing more is
    /// acknowledged, not even a duplicate from a cache.
    fn is_healthy(&self) -> bool;

    /// Records a new delivery durably (group-committed); the future resolves
    /// once it is on disk, or names the first delivery of a duplicate.
    fn commit(&self, item: NewDelivery) -> BoxFuture<'static, Result<CommitOutcome>>;

    /// Queue depth, dead letters and the oldest due entry.
    fn counts(&self) -> Result<QueueCounts>;

    /// The stored event of a delivery.
    fn event(&self, id: &DeliveryId) -> Result<Option<StoredEvent>>;

    /// The state of a delivery.
    fn state(&self, id: &DeliveryId) -> Result<Option<DeliveryState>>;

    /// Every attempt of a delivery, in order.
    fn attempts(&self, id: &DeliveryId) -> Result<Vec<AttemptRecord>>;

    /// Records a redirect of a delivery with it (removed with the
    /// delivery); the delivery's state is not touched. A delivery that is
    /// not there is `NotFound`. Durable after [`Storage::durable_barrier`].
    fn record_redirect(&self, id: &DeliveryId, redirect: &RedirectRecord) -> Result<()>;

    /// Every redirect of a delivery, oldest first.
    fn redirects(&self, id: &DeliveryId) -> Result<Vec<RedirectRecord>>;

    /// The idempotency record under an event id or content key, if the log
    /// still holds it.
    fn idempotency(&self, key: &[u8]) -> Result<Option<IdempotencyRecord>>;

    /// Deliveries newest first, with ids below `before`, of `status` if
    /// given: at most `limit`.
    fn deliveries(
        &self,
        status: Option<DeliveryStatus>,
        before: Option<&DeliveryId>,
        limit: usize,
    ) -> Result<Vec<(DeliveryId, DeliveryState)>>;

    /// Dead letters newest first, with keys below `before`, that `keep`
    /// accepts: at most `limit`.
    fn dead_letters(
        &self,
        before: Option<&[u8]>,
        limit: usize,
        keep: &dyn Fn(&DeadLetter) -> bool,
    ) -> Result<Vec<(DeadKey, DeadLetter)>>;

    /// Queue entries in due order, after `after`: at most `limit`.
    fn queue(&self, after: Option<&[u8]>, limit: usize) -> Result<Vec<(QueueKey, DeliveryId)>>;

    /// Records one attempt and its consequence, only while `entry` is still
    /// the delivery's live queue entry; `None` when it moved on (nothing was
    /// recorded, a stale entry was dropped).
    fn record_attempt(
        &self,
        entry: &[u8],
        id: &DeliveryId,
        attempt: &AttemptRecord,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>>;

    /// Whether an attempt at `entry` may be sent now: `entry` is still
    /// queued for `id` and `fence` is still the tenant's forwarding lease,
    /// unexpired (one check); if so, how long the lease has left, on the
    /// clock that times it (`None`: it may not). An engine that serves one
    /// process grants every lease for ever: there is nothing to check.
    fn claim_attempt(
        &self,
        entry: &[u8],
        id: &DeliveryId,
        fence: &Fence,
    ) -> Result<Option<Duration>> {
        let _ = (entry, id, fence);
        Ok(Some(Duration::MAX))
    }

    /// [`TenantData::record_attempt`], only while `fence` is still the
    /// tenant's forwarding lease, checked in the statement that claims the
    /// queue entry: `None` (nothing recorded) when it is not. An engine
    /// that serves one process grants every lease.
    fn record_fenced_attempt(
        &self,
        attempt: FencedAttempt<'_>,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>> {
        let FencedAttempt {
            entry, id, record, ..
        } = attempt;
        self.record_attempt(entry, id, record, next, now_ms)
    }

    /// Records a round of finished attempts, each as
    /// [`TenantData::record_fenced_attempt`] would (each its own result, in
    /// order), and returns once every one recorded is durable. An engine
    /// may write the whole round at once; by default each is written on a
    /// blocking thread and is durable when written.
    fn record_attempts(
        self: Arc<Self>,
        round: Vec<FinishedAttempt>,
        now_ms: i64,
    ) -> BoxFuture<'static, Result<Vec<Result<Option<DeliveryState>>>>> {
        Box::pin(blocking(move || {
            Ok(round
                .iter()
                .map(|attempt| self.record_fenced_attempt(attempt.fenced(), &attempt.next, now_ms))
                .collect())
        }))
    }

    /// Drops a queue entry whose event is gone.
    fn drop_queue_entry(&self, entry: &[u8]) -> Result<()>;

    /// Queues a dead or delivered delivery again as a new delivery; of
    /// concurrent calls for a dead letter exactly one succeeds, and so for
    /// a delivered one under [`Resend::Once`].
    fn redeliver(&self, id: &DeliveryId, now_ms: i64, resend: Resend) -> Result<DeliveryId>;

    /// Removes a dead letter with its event, state and attempts, only if it
    /// is still dead; returns whether it was.
    fn purge_dead_letter(&self, key: &[u8], letter: &DeadLetter) -> Result<bool>;

    /// Hands out due deliveries of a pull-mode tenant, hiding each for the
    /// visibility timeout; returns each with its attempt number.
    fn pull(&self, request: PullRequest) -> Result<Vec<(StoredEvent, u32)>>;

    /// Marks pulled deliveries delivered; returns how many were pending.
    fn ack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32>;

    /// Makes pulled deliveries visible again; returns how many.
    fn nack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32>;

    /// One bounded step of retention; `cursor` carries the position of the
    /// idempotency scan between steps (empty: from the start). What it
    /// removed says whether more may be due ([`Swept::more`]): a pass calls
    /// it again, with the cursor it left, until nothing is.
    fn sweep(&self, request: &SweepRequest, cursor: &mut Vec<u8>) -> Result<Swept>;

    /// Whether a step of retention under `request` would find delivered
    /// events or dead letters past their cut-offs (the idempotency scan
    /// aside): a pass steps the tenant only then, or when its scan is due.
    /// By default always: the step itself finds out.
    fn sweep_due(&self, _request: &SweepRequest) -> Result<bool> {
        Ok(true)
    }
}

/// A process's hold on a tenant's forwarding lease, as a claim returned
/// it: the attempts it starts and records are fenced with it, so a holder
/// that stalled past its lease neither sends nor records once another
/// process took the tenant over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fence {
    /// The holder (one id per process).
    pub owner: Arc<str>,
    /// Bumped each time the lease passes to another holder; 0 on an engine
    /// that serves one process, where there is nothing to fence.
    pub epoch: i64,
}

impl Fence {
    /// Whether attempts must be checked against the lease at all.
    pub fn is_shared(&self) -> bool {
        self.epoch > 0
    }
}

/// One attempt to record, with the lease it was sent under.
#[derive(Debug, Clone, Copy)]
pub struct FencedAttempt<'a> {
    /// The queue entry it was started from.
    pub entry: &'a [u8],
    /// Its delivery.
    pub id: &'a DeliveryId,
    /// What happened.
    pub record: &'a AttemptRecord,
    /// The lease it was sent under.
    pub fence: &'a Fence,
}

/// A finished attempt and what it leads to, owned, for
/// [`TenantData::record_attempts`].
#[derive(Debug, Clone)]
pub struct FinishedAttempt {
    /// The queue entry it was started from.
    pub entry: Vec<u8>,
    /// Its delivery.
    pub id: DeliveryId,
    /// What happened.
    pub record: AttemptRecord,
    /// What follows from it.
    pub next: Next,
    /// The lease it was sent under.
    pub fence: Fence,
}

impl FinishedAttempt {
    /// The attempt as [`TenantData::record_fenced_attempt`] takes it.
    pub fn fenced(&self) -> FencedAttempt<'_> {
        FencedAttempt {
            entry: &self.entry,
            id: &self.id,
            record: &self.record,
            fence: &self.fence,
        }
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

/// Refused requests of every tenant, for the dashboard and
/// `ListRejections` (see [`super::rejections`] for what is kept). A record
/// is durable after the next [`Storage::durable_barrier`]; the ingress
/// waits for it before answering the refusal.
pub trait RejectionLog: Send + Sync + 'static {
    /// Stores `rejection`, its body cut to
    /// [`super::rejections::KEPT_BODY_BYTES`] (and dropped when the
    /// signature was not valid).
    fn record(&self, rejection: Rejection) -> Result<()>;

    /// Up to `size` of the tenant's rejections passing `filter`, newest
    /// first, from before `token` (the previous page's next token), and the
    /// token of the next page; a token this did not issue is an error.
    fn list(
        &self,
        tenant_id: &str,
        filter: &RejectionFilter,
        size: usize,
        token: Option<&str>,
    ) -> Result<(Vec<Rejection>, Option<String>)>;

    /// The tenant's rejections at or after `since_ms` by code, most
    /// frequent first; at most `cap` records are counted.
    fn count_by_code(
        &self,
        tenant_id: &str,
        since_ms: i64,
        cap: usize,
    ) -> Result<Vec<(String, u64)>>;

    /// Deletes every rejection of a deleted tenant; returns how many went.
    fn drop_tenant(&self, tenant_id: &str) -> Result<usize>;

    /// Deletes up to `batch` of the tenant's rejections older than
    /// `before_ms`; returns how many went.
    fn sweep(&self, tenant_id: &str, before_ms: i64, batch: usize) -> Result<usize>;

    /// Whether each of `tenants` has rejections recorded before
    /// `before_ms`, in order: a pass sweeps only those.
    fn sweep_due(&self, tenants: &[String], before_ms: i64) -> Result<Vec<bool>>;
}

/// A catalog row changed in one atomic write.
#[derive(Debug, Clone)]
pub enum RowChange {
    /// Set a key of a table.
    Put(Table, String, Vec<u8>),
    /// Set a key that must not be set yet: if it is (whoever set it, in
    /// whichever process), the whole write fails with
    /// [`Error::AlreadyExists`] and changes nothing.
    Create(Table, String, Vec<u8>),
    /// Remove a key of a table.
    Remove(Table, String),
}

impl RowChange {
    /// The table it changes.
    pub fn table(&self) -> Table {
        match self {
            RowChange::Put(table, ..)
            | RowChange::Create(table, ..)
            | RowChange::Remove(table, _) => *table,
        }
    }
}

/// The catalog's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Table {
    /// Tenant records by tenant id.
    Tenants,
    /// Sealed secrets by tenant id.
    Secrets,
    /// Token records and hashes.
    Tokens,
    /// Ids of deleted tenants whose data is still to be dropped.
    Drops,
    /// Event contracts in force, by tenant, type and version.
    Contracts,
    /// Every revision of every contract.
    ContractRevisions,
    /// A tenant's alert settings (its sink, sealed secret, and rules), by
    /// tenant id.
    AlertSettings,
    /// Every tenant's alerts, by `tenant/alert id`.
    Alerts,
}

/// The control plane's persistent rows: a few small tables of opaque
/// values, changed atomically. What the rows mean lives in
/// [`crate::catalog`]; an engine only keeps them.
pub trait CatalogRows: Send + Sync + 'static {
    /// One row.
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>>;

    /// Rows whose key starts with `prefix`, in key order.
    fn scan(&self, table: Table, prefix: &str) -> Result<Vec<(String, Vec<u8>)>>;

    /// Applies every change or none.
    fn apply(&self, changes: &[RowChange]) -> Result<()>;
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

/// A new event to record: idempotency entry, stored event and queue entry,
/// all or nothing.
pub struct NewDelivery {
    /// Idempotency key.
    pub event_id: EventId,
    /// Stored metadata.
    pub meta: EventMeta,
    /// Raw body.
    pub body: bytes::Bytes,
    /// When the first forward attempt is due (Unix ms).
    pub due_ms: i64,
    /// A second idempotency key for schemes that sign no timestamp: a digest
    /// of what the signature covers, so a resend under a fresh (unsigned)
    /// delivery-id header is a duplicate too. Never a valid event id.
    pub content_key: Option<Vec<u8>>,
    /// The tenant's other routes that get the event too: each gets a
    /// delivery of its own, in its route's scope, written in the same
    /// transaction as this one (all or nothing, and not at all for a
    /// duplicate).
    pub copies: Vec<RouteCopy>,
    /// How the default route's delivery is written: queued, or final at
    /// receipt when its filter did not pass the event.
    pub receipt: Receipt,
    /// What each route made of the event, kept on the default route's
    /// delivery; empty for a tenant without other routes (nothing is
    /// written then).
    pub routes: Vec<RouteOutcome>,
}

impl NewDelivery {
    /// How the default route's delivery of a new event is written, the same on
    /// every engine: its state (pending at `queue_key`, or final at receipt,
    /// with what each route made of the event) and, for one final at receipt,
    /// its key in the delivered index (retention removes it as it does a
    /// delivered one). A final one gets no queue entry.
    pub(crate) fn received(&self, queue_key: &[u8; 16]) -> (DeliveryState, Option<Vec<u8>>) {
        let mut state = DeliveryState::pending(self.event_id.clone(), self.meta.received_at_ms);
        state.routes = self.routes.clone();
        let Some(status) = self.receipt.settled() else {
            state.queue_key = Some(hex::encode(queue_key));
            return (state, None);
        };
        state.status = status;
        state.next_attempt_at_ms = None;
        state.finished_at_ms = Some(self.meta.received_at_ms);
        let done = time_key(self.meta.received_at_ms, &self.meta.delivery_id);
        (state, Some(done))
    }
}

/// How the default route's delivery of a new event is written (defined
/// beside the ingest's outcome, which reports it).
pub use crate::ingest::Receipt;

/// Another route's delivery of a new event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteCopy {
    /// The route's name.
    pub route: String,
    /// Where its deliveries are stored ([`TenantId::route_scope`]).
    pub scope: TenantId,
    /// The delivery it gets.
    pub delivery_id: DeliveryId,
}

impl RouteCopy {
    /// What the gate keeps on the default route's delivery `default` when
    /// every one of `copies` passed: the default route first, then each.
    #[cfg(test)]
    pub(crate) fn listed(default: &DeliveryId, copies: &[RouteCopy]) -> Vec<RouteOutcome> {
        let outcome = |route: &str, id: &DeliveryId| RouteOutcome {
            route: route.to_owned(),
            delivery_id: Some(id.clone()),
            filtered: false,
        };
        std::iter::once(outcome(hookd_proto::domain::DEFAULT_ROUTE, default))
            .chain(copies.iter().map(|c| outcome(&c.route, &c.delivery_id)))
            .collect()
    }

    /// Whether `routes` (what the default route's delivery of `tenant`
    /// keeps) names this copy in its scope: then an engine finds the copy
    /// from the default route's delivery.
    pub(crate) fn listed_in(&self, routes: &[RouteOutcome], tenant: &TenantId) -> bool {
        routes.iter().any(|r| {
            r.delivery_id.as_ref() == Some(&self.delivery_id)
                && tenant.route_scope(&r.route) == self.scope
        })
    }
}

/// What happened to a [`NewDelivery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Stored durably as a new delivery.
    Accepted,
    /// The event id was already recorded; nothing was written.
    Duplicate(DeliveryId),
    /// The signed content was already recorded under another event id (the
    /// first delivery's, given): a replay; nothing was written.
    DuplicateOf(DeliveryId, EventId),
}

/// Most body bytes kept with a content refusal.
pub const KEPT_BODY_BYTES: usize = 4096;

/// One refused request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Rejection {
    /// The tenant it was sent to.
    pub tenant_id: String,
    /// When it was refused, Unix ms.
    pub at_ms: i64,
    /// `req_<ulid>`, as the sender's answer carried it.
    pub request_id: String,
    /// The error code the sender got (`INVALID_JSON`, `BAD_SIGNATURE`, …).
    pub code: String,
    /// The sender's answer's message.
    pub reason: String,
    /// True for content refused after a valid signature; false for a bad
    /// or missing signature.
    pub signature_valid: bool,
    /// The body's full size in bytes.
    pub body_bytes: u64,
    /// The first [`KEPT_BODY_BYTES`] of the body; always empty when the
    /// signature was not valid.
    pub body: Vec<u8>,
}

/// Which rejections a listing shows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RejectionFilter {
    /// Only the one with this request id.
    pub request_id: Option<String>,
    /// Only content refusals (`Some(true)`) or only signature failures
    /// (`Some(false)`).
    pub signature_valid: Option<bool>,
}
