//! A round of a dispatcher's finished attempts: what each one led to, and how
//! the round is written.

use super::attempt::AttemptResult;
use crate::{
    ids::{DeliveryId, RequestId, TenantId},
    store::{
        api::{blocking, Fence, FinishedAttempt, QueueKey, TenantStore},
        lifecycle::Next,
        records::DeliveryState,
    },
};

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

/// A finished attempt with its outcome decided, to be written.
pub(super) enum Decided {
    /// The queued delivery had no stored event: its queue entry goes.
    NoEvent { key: QueueKey },
    /// Not sent: nothing to write.
    Fenced,
    Attempted {
        key: QueueKey,
        delivery_id: DeliveryId,
        next: Next,
        result: Box<AttemptResult>,
        request_id: RequestId,
        trace: opentelemetry::Context,
        fence: Fence,
    },
}

/// Writes a round of decided outcomes: queue entries with no event are
/// dropped, the attempts recorded as one round (durable when it returns);
/// returns the ones recorded, to report.
///
/// A round of a dispatcher's finished attempts: what each one led to
/// ([`Decided`]), and how the round is written (queue entries without an
/// event dropped, the attempts recorded at once by
/// [`crate::store::api::TenantData::record_attempts`], durable when it
/// returns) into the outcomes the dispatcher then reports ([`Recorded`]).
pub(super) async fn write_round(
    data: &TenantStore,
    (tenant, route): (&TenantId, &str),
    decided: Vec<Decided>,
    now: i64,
) -> Vec<Recorded> {
    let (mut orphans, mut round, mut pending) = (Vec::new(), Vec::new(), Vec::new());
    for decided in decided {
        match decided {
            Decided::NoEvent { key } => orphans.push(key),
            Decided::Fenced => {}
            Decided::Attempted {
                key,
                delivery_id,
                next,
                result,
                request_id,
                trace,
                fence,
            } => {
                round.push(FinishedAttempt {
                    entry: key,
                    id: delivery_id.clone(),
                    record: result.record.clone(),
                    next: next.clone(),
                    fence,
                });
                pending.push((delivery_id, next, result, request_id, trace));
            }
        }
    }
    if !orphans.is_empty() {
        let data = data.clone();
        let dropped = blocking(move || {
            orphans
                .iter()
                .try_for_each(|key| data.drop_queue_entry(key))
        });
        if let Err(e) = dropped.await {
            tracing::error!(tenant = %tenant, route = %route, error = %e, "dropping queue entries without an event failed");
        }
    }
    if round.is_empty() {
        return Vec::new();
    }
    let states = match data.clone().record_attempts(round, now).await {
        Ok(states) => states,
        Err(e) => {
            tracing::error!(tenant = %tenant, route = %route, error = %e, "recording forward attempts failed");
            return Vec::new();
        }
    };
    states
        .into_iter()
        .zip(pending)
        .filter_map(|(state, (delivery_id, next, result, request_id, trace))| {
            let state = state
                .inspect_err(|e| tracing::error!(tenant = %tenant, route = %route, error = %e, "recording a forward attempt failed"))
                .ok()?;
            let Some(state) = state else {
                tracing::warn!(tenant = %tenant, route = %route, delivery_id = %delivery_id, attempt = result.record.attempt, "delivery changed or the forwarding lease passed elsewhere while its attempt was in flight; outcome not recorded");
                return None;
            };
            Some(Recorded {
                delivery_id,
                state,
                next,
                result: *result,
                request_id,
                trace,
                now,
            })
        })
        .collect()
}
