//! The tenant-scope API: one tenant's deliveries ([`TenantData`]) and the
//! values a forward attempt crosses it with.

use std::{collections::HashSet, sync::Arc, time::Duration};

use futures_util::future::BoxFuture;

use super::{
    blocking, CommitOutcome, DeadKey, NewDelivery, PullRequest, QueueCounts, QueueKey, SweepRequest,
};
use crate::{
    error::Result,
    ids::{DeliveryId, RequestId, TenantId},
    lifecycle::{Next, Resend, Swept},
    records::{
        AttemptRecord, DeadLetter, DeliveryState, DeliveryStatus, IdempotencyRecord,
        RedirectRecord, StoredEvent,
    },
};

/// One tenant's deliveries. Changes to one delivery are compare-and-set
/// transactions, so concurrent writers (the dispatcher, consumers, the
/// control plane) never leave a delivery half-changed or a queue entry
/// that no state points at.
///
/// The values a forward attempt crosses it with are [`Fence`],
/// [`FencedAttempt`] and [`FinishedAttempt`].
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
    /// not there is `NotFound`. Durable after [`super::Storage::durable_barrier`].
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
    ) -> Result<Vec<(DeliveryId, DeliveryState)>> {
        let filter = Listing {
            status,
            event_type: None,
        };
        self.deliveries_in(&filter, (before, None), limit)
    }

    /// Deliveries `filter` passes, newest first, with ids from `since`
    /// (inclusive) up to `before` (exclusive): at most `limit`. An id's
    /// order is its time ([`DeliveryId::time_ms`]), so a time window is a
    /// range of ids, read in the engine's id order and never past it.
    fn deliveries_in(
        &self,
        filter: &Listing,
        range: (Option<&DeliveryId>, Option<&DeliveryId>),
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
    fn queue(&self, after: Option<&QueueKey>, limit: usize) -> Result<Vec<(QueueKey, DeliveryId)>>;

    /// The due deliveries at the head of the queue at `now_ms`, at most
    /// `limit`, leaving out `busy` (those in flight), each with its state,
    /// its stored event and how long `fence` lets it be sent (as
    /// [`TenantData::claim_attempt`] says, checked as it is read); and when
    /// the first entry not yet due is due, if one was seen. By default read
    /// entry by entry; an engine may read them in one go, and may start at
    /// the lowest entry its last read returned or had in `busy`, reading
    /// the whole queue at least once a second (an entry another process
    /// wrote below that, its clock behind, waits at most that long).
    fn due(
        &self,
        now_ms: i64,
        (limit, busy): (usize, &HashSet<QueueKey>),
        fence: &Fence,
    ) -> Result<Due> {
        let mut due = Due::default();
        for (key, id) in self.queue(None, busy.len() + limit + 1)? {
            if key.due_ms() > now_ms {
                due.next_due_ms = Some(key.due_ms());
                break;
            }
            if busy.contains(&key) {
                continue;
            }
            if due.entries.len() >= limit {
                break;
            }
            let send_for = self.claim_attempt(&key, &id, fence)?;
            let (state, event) = (self.state(&id)?, self.event(&id)?);
            due.entries.push(DueEntry {
                key,
                id,
                state,
                event,
                send_for,
            });
        }
        Ok(due)
    }

    /// Records one attempt and its consequence, only while `entry` is still
    /// the delivery's live queue entry; `None` when it moved on (nothing was
    /// recorded, a stale entry was dropped).
    fn record_attempt(
        &self,
        entry: &QueueKey,
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
        entry: &QueueKey,
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
    fn drop_queue_entry(&self, entry: &QueueKey) -> Result<()>;

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

    /// Makes deliveries waiting for their next retry (pending, attempted
    /// at least once, their entry due after `now_ms`) due at `now_ms`,
    /// their attempt counts unchanged; returns how many. A delivery in
    /// flight or due already is left as it is.
    fn retry_now(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32>;

    /// Dead-letters pending deliveries (new, held or waiting for a retry)
    /// with reason [`CANCELLED`], without sending them: each is recorded as
    /// its last attempt, one nothing was sent for, under the
    /// compare-and-set every attempt takes, so of a cancel and an attempt
    /// racing one is recorded. Returns how many were pending. A cancelled
    /// delivery is a dead letter like any other: redeliverable, purgeable.
    fn cancel(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        let mut cancelled = 0;
        for id in ids {
            let Some(state) = self.state(id)? else {
                continue;
            };
            let entry = state.queue_key.as_deref().and_then(|k| hex::decode(k).ok());
            let (DeliveryStatus::Pending, Some(entry)) = (state.status, entry) else {
                continue;
            };
            let record = AttemptRecord {
                attempt: state.attempts + 1,
                started_at_ms: now_ms,
                duration_ms: 0,
                status_code: None,
                error: Some("cancelled by an operator: nothing was sent".into()),
                response_body: Vec::new(),
                next_retry_at_ms: None,
                request_id: RequestId::generate(),
                transform_version: None,
            };
            let next = Next::Dead {
                reason: CANCELLED.into(),
            };
            let entry = QueueKey::from_bytes(entry);
            if self
                .record_attempt(&entry, id, &record, &next, now_ms)?
                .is_some()
            {
                cancelled += 1;
            }
        }
        Ok(cancelled)
    }

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

/// The reason of a dead letter an operator cancelled ([`TenantData::cancel`]).
pub const CANCELLED: &str = "cancelled";

/// Which deliveries [`TenantData::deliveries_in`] lists.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Listing {
    /// Only those in this status.
    pub status: Option<DeliveryStatus>,
    /// Only those of this event type ([`DeliveryState::event_type`]).
    pub event_type: Option<String>,
}

impl Listing {
    /// Whether `state` passes.
    pub fn passes(&self, state: &DeliveryState) -> bool {
        self.status.is_none_or(|s| s == state.status)
            && self
                .event_type
                .as_deref()
                .is_none_or(|t| state.event_type.as_deref() == Some(t))
    }
}

/// What [`TenantData::due`] found at the head of the queue.
#[derive(Debug, Default)]
pub struct Due {
    /// The due deliveries, in due order.
    pub entries: Vec<DueEntry>,
    /// When the first entry not yet due is due (Unix ms), if one was seen.
    pub next_due_ms: Option<i64>,
}

/// A due queue entry, with what a forward attempt needs of its delivery.
#[derive(Debug)]
pub struct DueEntry {
    /// The queue entry.
    pub key: QueueKey,
    /// Its delivery.
    pub id: DeliveryId,
    /// The delivery's state (`None`: gone).
    pub state: Option<DeliveryState>,
    /// The delivery's stored event (`None`: gone).
    pub event: Option<StoredEvent>,
    /// How long the forwarding lease it was read under has left (`None`:
    /// it is no longer this process's, and nothing may be sent).
    pub send_for: Option<Duration>,
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
    pub entry: &'a QueueKey,
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
    pub entry: QueueKey,
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
