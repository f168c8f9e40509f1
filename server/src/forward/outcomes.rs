//! Writing a dispatcher's finished attempts: one write of a round's outcomes
//! at a time, on a task of its own (one trip to the blocking pool, then one
//! durability barrier), so the dispatcher keeps starting attempts while the
//! round is made durable; what finishes meanwhile waits for the next round.

use tokio::task::JoinHandle;

use super::attempt::AttemptResult;
use crate::{
    error::Result,
    ids::{DeliveryId, RequestId, TenantId},
    store::{
        api::{blocking, Fence, FencedAttempt, Store, TenantData, TenantStore},
        lifecycle::Next,
        records::DeliveryState,
    },
};

/// A finished attempt with its outcome decided, to be written.
pub(super) enum Decided {
    /// The queued delivery had no stored event: its queue entry goes.
    NoEvent {
        key: Vec<u8>,
    },
    /// Not sent: nothing to write.
    Fenced {
        key: Vec<u8>,
    },
    Attempted(Box<Attempted>),
}

/// An attempt that was made, and what follows from it.
pub(super) struct Attempted {
    pub(super) key: Vec<u8>,
    pub(super) delivery_id: DeliveryId,
    pub(super) next: Next,
    pub(super) result: AttemptResult,
    pub(super) request_id: RequestId,
    pub(super) trace: opentelemetry::Context,
    /// The lease the attempt was claimed under, to record it under.
    pub(super) fence: Fence,
}

impl Decided {
    /// The queue entry it was taken from.
    fn key(&self) -> &[u8] {
        match self {
            Decided::NoEvent { key } | Decided::Fenced { key } => key,
            Decided::Attempted(attempted) => &attempted.key,
        }
    }
}

/// An outcome recorded in the store, reported once it is durable.
pub(super) struct Recorded {
    pub(super) delivery_id: DeliveryId,
    pub(super) state: DeliveryState,
    pub(super) next: Next,
    pub(super) result: AttemptResult,
    pub(super) request_id: RequestId,
    pub(super) trace: opentelemetry::Context,
    pub(super) now: i64,
}

/// A round being written, and the queue entries it covers.
type Writing = (JoinHandle<Vec<Recorded>>, Vec<Vec<u8>>);

/// Outcomes on their way to disk: the round being written (with the queue
/// entries it covers, free to be taken again once it is), and those that
/// finished meanwhile, for the next round.
#[derive(Default)]
pub(super) struct Rounds {
    writing: Option<Writing>,
    /// Decided, not written yet.
    pub(super) waiting: Vec<Decided>,
}

impl Rounds {
    /// Whether a round is being written.
    pub(super) fn is_writing(&self) -> bool {
        self.writing.is_some()
    }

    /// Starts writing what waits, unless a round is being written.
    pub(super) fn write_next(&mut self, writer: &Writer, now: i64) {
        if self.writing.is_none() && !self.waiting.is_empty() {
            let decided = std::mem::take(&mut self.waiting);
            let keys = decided.iter().map(|d| d.key().to_vec()).collect();
            self.writing = Some((writer.spawn(decided, now), keys));
        }
    }

    /// Waits for the round being written (forever if none is): its queue
    /// entries and the outcomes now durable, to report. Cancel safe.
    pub(super) async fn written(&mut self) -> (Vec<Vec<u8>>, Vec<Recorded>) {
        let Some((writing, _)) = self.writing.as_mut() else {
            return std::future::pending().await;
        };
        let recorded = writing.await.unwrap_or_else(|e| {
            tracing::error!(error = %e, "writing forward outcomes stopped");
            Vec::new()
        });
        let (_, keys) = self.writing.take().expect("a round was being written");
        (keys, recorded)
    }
}

/// Where a round is written: the route's data and the store's barrier.
#[derive(Clone)]
pub(super) struct Writer {
    pub(super) data: TenantStore,
    pub(super) store: Store,
    pub(super) tenant: TenantId,
    pub(super) route: String,
}

impl Writer {
    /// Writes `decided` on a task of its own, then waits until it is on
    /// disk; the handle resolves to the outcomes recorded. A write that
    /// failed is logged and its outcomes are not reported (their entries
    /// stay queued and are tried again).
    fn spawn(&self, decided: Vec<Decided>, now: i64) -> JoinHandle<Vec<Recorded>> {
        let writer = self.clone();
        tokio::spawn(async move { writer.write(decided, now).await })
    }

    async fn write(self, decided: Vec<Decided>, now: i64) -> Vec<Recorded> {
        let Writer {
            data,
            store,
            tenant,
            route,
        } = self;
        let (t, r) = (tenant.clone(), route.clone());
        let written = blocking(move || Ok(write_outcomes(&*data, (&t, &r), decided, now))).await;
        let recorded: Vec<Recorded> = match written {
            Ok(written) => written
                .into_iter()
                .filter_map(|outcome| {
                    outcome
                        .inspect_err(|e| tracing::error!(tenant = %tenant, route = %route, error = %e, "recording a forward attempt failed"))
                        .ok()
                        .flatten()
                })
                .collect(),
            Err(e) => {
                tracing::error!(tenant = %tenant, route = %route, error = %e, "recording forward attempts failed");
                Vec::new()
            }
        };
        if !recorded.is_empty() {
            if let Err(e) = store.durable_barrier().await {
                tracing::error!(tenant = %tenant, route = %route, error = %e, "making forward outcomes durable failed");
            }
        }
        recorded
    }
}

/// Writes each decided outcome (blocks on storage); `None` for those with
/// nothing to report.
fn write_outcomes(
    data: &dyn TenantData,
    (tenant, route): (&TenantId, &str),
    decided: Vec<Decided>,
    now: i64,
) -> Vec<Result<Option<Recorded>>> {
    decided
        .into_iter()
        .map(|decided| match decided {
            Decided::NoEvent { key } => data.drop_queue_entry(&key).map(|_| None),
            Decided::Fenced { .. } => Ok(None),
            Decided::Attempted(attempted) => {
                let Attempted {
                    key,
                    delivery_id,
                    next,
                    result,
                    request_id,
                    trace,
                    fence,
                } = *attempted;
                let attempt = FencedAttempt {
                    entry: &key,
                    id: &delivery_id,
                    record: &result.record,
                    fence: &fence,
                };
                let state = data.record_fenced_attempt(attempt, &next, now)?;
                let Some(state) = state else {
                    tracing::warn!(tenant = %tenant, route = %route, delivery_id = %delivery_id, attempt = result.record.attempt, "delivery changed or the forwarding lease passed elsewhere while its attempt was in flight; outcome not recorded");
                    return Ok(None);
                };
                Ok(Some(Recorded {
                    delivery_id,
                    state,
                    next,
                    result,
                    request_id,
                    trace,
                    now,
                }))
            }
        })
        .collect()
}
