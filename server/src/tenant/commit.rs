//! The durable half of an ingest, what an accepted delivery tells about its
//! sender, and a contract rejection's look-up in the idempotency log.

use std::sync::Arc;

use super::replay::{Replay, ReplayKeys};
use crate::routes::handle::RouteHandle;
use crate::{
    error::Error,
    feed::{DeliveryEvent, DeliveryEventKind, DeliveryFeed},
    ids::{DeliveryId, EventId, RequestId, TenantId},
    ingest::{BodyError, IngestError, IngestOutcome},
    metrics::{SenderMetrics, TypeOutcome},
    store::{
        api::{blocking, Receipt, TenantStore},
        CommitOutcome, NewDelivery,
    },
    telemetry::spans::IngestSpan,
};

/// The durable half of one ingest, awaited by the worker once the checks
/// passed: commit, then wake the dispatcher, publish, fill the tenant's
/// replay scope.
///
/// The durable half of an ingest, run once the checks passed (commit, then
/// wake the dispatcher, publish, fill the tenant's replay scope), what an accepted
/// delivery tells about its sender, and a contract rejection's look-up in the
/// idempotency log.
pub(super) struct Commit {
    pub(super) data: TenantStore,
    pub(super) replay: Replay,
    /// The tenant's routes, whose dispatchers it wakes.
    pub(super) routes: Arc<[RouteHandle]>,
    pub(super) feed: DeliveryFeed,
    pub(super) tenant: TenantId,
    pub(super) request_id: RequestId,
    /// The `hookd.commit` span, ended once the write is durable or rejected.
    pub(super) span: IngestSpan,
    pub(super) senders: Option<Arc<SenderMetrics>>,
    pub(super) tolerance_secs: u64,
}

impl Commit {
    pub(super) async fn run(
        self,
        item: NewDelivery,
        replay_keys: ReplayKeys,
        sender: SenderFacts,
    ) -> Result<IngestOutcome, IngestError> {
        let event_id = item.event_id.clone();
        let new_id = item.meta.delivery_id.clone();
        let received_at_ms = item.meta.received_at_ms;
        let receipt = item.receipt;
        let routes: Vec<(String, DeliveryId)> = item
            .copies
            .iter()
            .map(|copy| (copy.route.clone(), copy.delivery_id.clone()))
            .collect();
        let committed = self.data.commit(item).await;
        let committed = committed.map_err(|e| self.rejected(&event_id, &new_id, e));
        let Commit {
            replay,
            routes: running,
            feed,
            tenant,
            span,
            senders,
            tolerance_secs,
            ..
        } = self;
        span.end(committed.as_ref().err());
        let outcome = committed?;
        let (event_id, delivery_id, duplicate, routes, receipt) = match outcome {
            CommitOutcome::Accepted => {
                sender.record(senders.as_deref(), tenant.as_str(), tolerance_secs);
                for route in running.iter() {
                    route.wake.queued();
                }
                let ids = std::iter::once(&new_id).chain(routes.iter().map(|(_, id)| id));
                for id in ids {
                    feed.publish(DeliveryEvent {
                        kind: DeliveryEventKind::Accepted,
                        tenant: tenant.clone(),
                        delivery_id: id.clone(),
                        event_id: event_id.clone(),
                        at_ms: received_at_ms,
                        attempt: 0,
                        status_code: None,
                        reason: None,
                    });
                }
                (event_id, new_id, false, routes, receipt)
            }
            CommitOutcome::Duplicate(first) => (event_id, first, true, Vec::new(), Receipt::Queued),
            CommitOutcome::DuplicateOf(first, first_event_id) => {
                (first_event_id, first, true, Vec::new(), Receipt::Queued)
            }
        };
        replay.remember(replay_keys, &event_id, &delivery_id);
        Ok(IngestOutcome {
            event_id,
            delivery_id,
            duplicate,
            routes,
            receipt,
        })
    }

    /// Logs a write storage rejected and says what the sender is told.
    fn rejected(&self, event_id: &EventId, new_id: &DeliveryId, e: Error) -> IngestError {
        let (tenant, request_id) = (&self.tenant, &self.request_id);
        // A poisoned store was logged loudly once by the committer.
        if matches!(e, Error::StoragePoisoned | Error::TenantDeleted(_)) {
            tracing::warn!(tenant = %tenant, event_id = %event_id, delivery_id = %new_id, request_id = %request_id, error = %e, "durable write rejected");
        } else {
            tracing::error!(tenant = %tenant, event_id = %event_id, delivery_id = %new_id, request_id = %request_id, error = %e, "durable write failed");
        }
        match e {
            Error::TenantDeleted(_) => IngestError::TenantDeleted(tenant.clone()),
            _ => IngestError::StorageUnavailable,
        }
    }
}

/// What an accepted delivery tells about its sender, recorded once the
/// delivery is durable.
pub(super) struct SenderFacts {
    pub(super) event_type: Option<String>,
    /// hookd's clock minus the signed timestamp, for timestamped schemes.
    pub(super) skew_ms: Option<i64>,
    pub(super) now_ms: i64,
}

impl SenderFacts {
    fn record(self, senders: Option<&SenderMetrics>, tenant: &str, tolerance_secs: u64) {
        let Some(senders) = senders else { return };
        senders.event(self.event_type.as_deref(), TypeOutcome::Accepted);
        let Some(skew_ms) = self.skew_ms else { return };
        if let Some(median) = senders.observe_skew(skew_ms, self.now_ms, tolerance_secs) {
            tracing::warn!(
                tenant = %tenant,
                median_skew_secs = median,
                tolerance_secs,
                "the sender's clock is far from hookd's: the median skew of recent deliveries is past half the tolerance; check NTP on both sides"
            );
        }
    }
}

/// A body a contract rejected, with what it takes to find the event in the
/// idempotency log: a resend of an event accepted before the contracts
/// changed is a duplicate, never a rejection. The log is read on the
/// blocking pool, off the HTTP worker (a database round trip on a shared
/// store), and only on this path.
pub(super) struct ContractRejection {
    pub(super) error: BodyError,
    pub(super) event_type: Option<String>,
    pub(super) outcome: TypeOutcome,
    pub(super) event_id: EventId,
    pub(super) content_key: Option<Vec<u8>>,
}

impl ContractRejection {
    /// The first delivery's answer, or the rejection (counted by event type).
    pub(super) async fn answer(
        self,
        data: TenantStore,
        senders: Option<Arc<SenderMetrics>>,
    ) -> Result<IngestOutcome, IngestError> {
        let ContractRejection {
            error,
            event_type,
            outcome,
            event_id,
            content_key,
        } = self;
        let id_key = event_id.as_str().as_bytes().to_vec();
        let first = blocking(move || {
            let first = match data.idempotency(&id_key)? {
                Some(first) => Some(first),
                None => match content_key {
                    Some(key) => data.idempotency(&key)?,
                    None => None,
                },
            };
            Ok(first)
        })
        .await;
        match first {
            Ok(Some(first)) => Ok(IngestOutcome {
                event_id: first.event_id.unwrap_or(event_id),
                delivery_id: first.delivery_id,
                duplicate: true,
                routes: Vec::new(),
                receipt: Receipt::Queued,
            }),
            Ok(None) => {
                if let Some(senders) = senders {
                    senders.event(event_type.as_deref(), outcome);
                }
                Err(error.into())
            }
            Err(e) => {
                tracing::warn!(event_id = %event_id, error = %e, "idempotency log unreadable while rejecting a body; answering the rejection");
                Err(error.into())
            }
        }
    }
}
