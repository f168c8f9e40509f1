//! What a forwarding outcome tells, in one place: alert signals, counters,
//! the attempt's span, its log line and its feed event.

use std::sync::Arc;

use super::round::Recorded;
use crate::{
    alerts::Signals,
    feed::{DeliveryEvent, DeliveryEventKind, DeliveryFeed},
    ids::{DeliveryId, TenantId},
    metrics::{RouteMetrics, TransformRun},
    store::lifecycle::Next,
    telemetry::spans::{self, ForwardRecord, ForwardTarget},
};

/// The report of one route's forwarding outcomes.
///
/// What a forwarding outcome tells, in one place: the tenant's alert
/// signals when it is decided; the route's counters, the attempt's span,
/// its log line and its feed event once it is durable.
pub(super) struct ForwardReport {
    pub(super) tenant: TenantId,
    pub(super) route: String,
    /// The route's storage scope, which its feed events name.
    pub(super) scope: TenantId,
    pub(super) metrics: Arc<RouteMetrics>,
    pub(super) feed: DeliveryFeed,
    /// Where the route's failures, transform failures and breaker are told
    /// to the tenant's alerts; `None` for an alert sink's own.
    pub(super) signals: Option<Arc<Signals>>,
    /// Whether the route runs a transform, whose runs are counted.
    pub(super) transformed: bool,
}

impl ForwardReport {
    /// The outcome of delivery `id` decided (before it is written): the
    /// tenant's signals.
    pub(super) fn decided(&self, id: &DeliveryId, next: &Next, breaker_open: bool) {
        if let Some(signals) = &self.signals {
            signals.outcome((&self.route, id), next, breaker_open);
        }
    }

    /// The breaker opened (`true`) or closed again.
    pub(super) fn breaker(&self, target: &ForwardTarget, opened: bool) {
        let (tenant, route, destination) = (&self.tenant, &self.route, target.host());
        if opened {
            tracing::warn!(tenant = %tenant, route = %route, destination = %destination, "circuit breaker open: destination failing, pausing forwards");
        } else {
            tracing::info!(tenant = %tenant, route = %route, destination = %destination, "circuit breaker closed: destination answering again");
        }
    }

    /// Counters, span, log line and feed event of a durable outcome.
    pub(super) fn recorded(&self, outcome: Recorded) {
        let Recorded {
            delivery_id,
            state,
            next,
            result,
            request_id,
            trace,
            now,
        } = outcome;
        let attempt = result.record.attempt;
        let error = match &next {
            Next::Delivered | Next::Dropped => None,
            Next::Retry { .. } => Some(result.error.as_str()),
            Next::Dead { reason } | Next::TransformFailed { reason } => Some(reason.as_str()),
        };
        self.metrics.forwarded(
            (&next, now),
            result.elapsed,
            spans::sampled_trace_id(&trace),
        );
        if self.transformed {
            self.metrics.transformed(TransformRun::of(&next));
        }
        ForwardRecord {
            outcome: &next,
            status_code: result.record.status_code,
            duration_ms: result.record.duration_ms,
            error,
            error_type: result.error_type.as_deref(),
        }
        .end(&trace);
        let trace_id = spans::trace_id(&trace);
        let attempt_request_id = &result.record.request_id;
        match &next {
            Next::Delivered => {
                tracing::info!(tenant = %self.tenant, route = %self.route, event_id = %state.event_id, delivery_id = %delivery_id, request_id = %request_id, trace_id = %trace_id, attempt, attempt_request_id = %attempt_request_id, status = ?result.record.status_code, "forward delivered");
            }
            Next::Dropped => {
                tracing::info!(tenant = %self.tenant, route = %self.route, event_id = %state.event_id, delivery_id = %delivery_id, request_id = %request_id, trace_id = %trace_id, attempt, attempt_request_id = %attempt_request_id, "dropped by the route's transform; nothing sent");
            }
            Next::Retry { due_ms } => {
                tracing::warn!(tenant = %self.tenant, route = %self.route, event_id = %state.event_id, delivery_id = %delivery_id, request_id = %request_id, trace_id = %trace_id, attempt, attempt_request_id = %attempt_request_id, reason = %result.error, retry_in_ms = due_ms - now, "forward failed; retry scheduled");
            }
            Next::Dead { reason } | Next::TransformFailed { reason } => {
                tracing::warn!(tenant = %self.tenant, route = %self.route, event_id = %state.event_id, delivery_id = %delivery_id, request_id = %request_id, trace_id = %trace_id, attempt, attempt_request_id = %attempt_request_id, reason = %reason, status = state.status.as_str(), "delivery dead-lettered");
            }
        }
        let reason = error.map(str::to_owned);
        self.feed.publish(DeliveryEvent {
            kind: DeliveryEventKind::from(&next),
            tenant: self.scope.clone(),
            delivery_id,
            event_id: state.event_id,
            at_ms: now,
            attempt,
            status_code: result.record.status_code,
            reason,
        });
    }
}
