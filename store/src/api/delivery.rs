//! A new event as the ingest path hands it to storage ([`NewDelivery`], with
//! its [`Receipt`] and [`RouteCopy`]s) and what became of it ([`CommitOutcome`]).

use crate::ids::{DeliveryId, EventId, TenantId};
use crate::records::{time_key, DeliveryState, DeliveryStatus, EventMeta, RouteOutcome};

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
    /// The event's type, kept on every delivery of it (and indexed where
    /// the engine indexes it), if the body names one.
    pub event_type: Option<String>,
}

impl NewDelivery {
    /// How the default route's delivery of a new event is written, the same on
    /// every engine: its state (pending at `queue_key`, or final at receipt,
    /// with what each route made of the event) and, for one final at receipt,
    /// its key in the delivered index (retention removes it as it does a
    /// delivered one). A final one gets no queue entry.
    pub(crate) fn received(&self, queue_key: &[u8; 16]) -> (DeliveryState, Option<Vec<u8>>) {
        let mut state = DeliveryState::pending(self.event_id.clone(), self.meta.received_at_ms);
        state.next_attempt_at_ms = Some(self.due_ms.max(self.meta.received_at_ms));
        state.routes = self.routes.clone();
        state.event_type = self.event_type.clone();
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

/// How the default route's delivery of a new event is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Receipt {
    /// Queued for forwarding or pulling: its filter passed the event (or
    /// it has none).
    Queued,
    /// Its filter did not pass the event but another route's did: final
    /// as [`DeliveryStatus::Filtered`].
    Filtered,
    /// No route's filter passed the event: final as
    /// [`DeliveryStatus::Unrouted`].
    Unrouted,
}

impl Receipt {
    /// The status a delivery written at receipt as this is final in;
    /// `None` for one that is queued.
    pub fn settled(self) -> Option<DeliveryStatus> {
        match self {
            Receipt::Queued => None,
            Receipt::Filtered => Some(DeliveryStatus::Filtered),
            Receipt::Unrouted => Some(DeliveryStatus::Unrouted),
        }
    }
}

/// Another route's delivery of a new event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteCopy {
    /// The route's name.
    pub route: String,
    /// Where its deliveries are stored ([`TenantId::route_scope`]).
    pub scope: TenantId,
    /// The delivery it gets.
    pub delivery_id: DeliveryId,
    /// When its first attempt is due (Unix ms): the event's
    /// [`NewDelivery::due_ms`] plus the route's delay.
    pub due_ms: i64,
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
        std::iter::once(outcome(hookd_domain::DEFAULT_ROUTE, default))
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
