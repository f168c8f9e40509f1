//! What a tenant's conditions read as at one evaluation.

use std::collections::HashMap;

use hookd_proto::domain::AlertType;

use super::{lag_secs, TenantState};
use crate::{
    alerts::{rules::FailingMode, signals::RouteReading},
    error::Result,
    store::api::{QueueCounts, TenantStore},
    tenant::TenantHandle,
};

/// What a condition reads as.
#[derive(Debug, Clone, Copy)]
pub(super) enum Level {
    /// A monotonic total: holds when its count in the window reaches the threshold.
    Total(u64),
    /// A value now: holds when it reaches the threshold.
    AtLeast(u64),
    /// Seconds left: holds when at most the threshold.
    Within(u64),
    /// A destination's health: holds from a run of the threshold of failed
    /// attempts, or from the oldest queued delivery waiting as long as the
    /// rule's window, until an attempt delivers.
    Streak {
        /// Failed since the last that delivered.
        failed: u64,
        /// Delivered, in all.
        delivered: u64,
        /// How long the oldest queued delivery has waited, in seconds.
        waited_secs: u64,
    },
}

/// A tenant's queue counts at one evaluation.
#[derive(Debug, PartialEq)]
pub(super) enum Counts {
    /// Its last reading is recent enough: it stands.
    NotDue,
    /// Read now: one per route, in the order of its routes.
    Read(Vec<QueueCounts>),
    /// Due, but the read failed: the last reading stands until the next.
    Failed,
}

/// The queue counts of the tenants `due` names (each due one's routes'
/// handles; `None` for one whose last reading stands), read for all of them
/// with one call of `read` (the engine's `counts_of`: on PostgreSQL a
/// statement per thousand routes, not one per route), in order.
pub(super) fn read_counts(
    due: Vec<Option<Vec<TenantStore>>>,
    read: impl FnOnce(&[TenantStore]) -> Result<Vec<QueueCounts>>,
) -> Vec<Counts> {
    let data: Vec<TenantStore> = due.iter().flatten().flatten().cloned().collect();
    if data.is_empty() {
        return due.iter().map(|_| Counts::NotDue).collect();
    }
    let read = read(&data).unwrap_or_else(|e| {
        tracing::warn!(routes = data.len(), error = %e, "reading queue counts for alerts failed; the last readings stand");
        Vec::new()
    });
    let mut at = 0;
    due.into_iter()
        .map(|routes| {
            let Some(routes) = routes else {
                return Counts::NotDue;
            };
            let of = at..at + routes.len();
            at = of.end;
            read.get(of)
                .map_or(Counts::Failed, |c| Counts::Read(c.to_vec()))
        })
        .collect()
}

/// Everything a tenant's conditions read as now, its queue counts as `counts`.
///
/// What a tenant's conditions read as at one evaluation: its signals'
/// totals, its routes' reports, its previous key's expiry and its queue
/// counts (read from storage for every due tenant at once).
pub(super) fn readings(
    handle: &TenantHandle,
    state: &mut TenantState,
    now: i64,
    counts: Counts,
) -> Vec<(AlertType, String, Level)> {
    let signals = &handle.state().signals;
    let mut out: Vec<(AlertType, String, Level)> = [
        AlertType::VerificationFailureSpike,
        AlertType::IngestRateLimited,
        AlertType::ContractRejectionSpike,
        AlertType::HandshakeFailed,
    ]
    .into_iter()
    .map(|kind| (kind, String::new(), Level::Total(signals.total(kind))))
    .collect();
    let mode = state.settings.rules.get(AlertType::RouteFailing).mode;
    keep_counts(handle, state, now, counts);
    // Every route of the tenant now, read as zero until its dispatcher
    // reports (after a restart); a deleted route's reports are not read.
    let reported: HashMap<String, RouteReading> = signals.routes().into_iter().collect();
    for handle_of_route in handle.routes().iter() {
        let route = handle_of_route.name.clone();
        let r = reported.get(&route).copied().unwrap_or_default();
        // A delivery an operator holds waits by their choice: while the
        // route is paused it has not waited at all, and after a resume it
        // has waited since then.
        let hold = handle_of_route.hold.record();
        let waited_since = |since: i64| match hold {
            Some(hold) if hold.paused => None,
            Some(hold) => Some(since.max(hold.changed_at_ms)),
            None => Some(since),
        };
        let failing = match mode {
            FailingMode::InARow => Level::Streak {
                failed: r.failed_in_a_row,
                delivered: r.delivered,
                waited_secs: state
                    .storage
                    .iter()
                    .find(|(name, _)| *name == route)
                    .and_then(|(_, counts)| counts.oldest_pending_ms)
                    .and_then(waited_since)
                    .map_or(0, |since| lag_secs(since, now)),
            },
            FailingMode::FirstFailure => Level::Total(r.failed),
            FailingMode::LastAttempt => Level::Total(r.dead),
        };
        out.push((AlertType::RouteFailing, route.clone(), failing));
        out.push((
            AlertType::TransformFailing,
            route.clone(),
            Level::Total(r.transform_failed),
        ));
        let open = u64::from(r.breaker_open);
        out.push((AlertType::RouteCircuitOpened, route, Level::AtLeast(open)));
    }
    if let Some((secret, Some(until))) = &handle.settings().previous {
        // The overlap's end is in Unix seconds, the clock in ms.
        let until_ms = until.saturating_mul(1000);
        let left = u64::try_from((until_ms - now).max(0) / 1000).unwrap_or_default();
        let level = if until_ms > now {
            Level::Within(left)
        } else {
            Level::Within(u64::MAX)
        };
        out.push((
            AlertType::SecretPreviousExpiring,
            secret.kid().to_owned(),
            level,
        ));
    }
    for (route, counts) in &state.storage {
        out.push((
            AlertType::DeadLettersDepthExceeded,
            route.clone(),
            Level::AtLeast(counts.dead),
        ));
        let lag = counts.oldest_due_ms.map_or(0, |due| lag_secs(due, now));
        out.push((
            AlertType::BacklogLagExceeded,
            route.clone(),
            Level::AtLeast(lag),
        ));
    }
    out
}

/// Keeps the queue counts read at `now` in `state`, one per route of the
/// tenant; a failed read leaves the last reading standing until the next.
fn keep_counts(handle: &TenantHandle, state: &mut TenantState, now: i64, counts: Counts) {
    match counts {
        Counts::NotDue => {}
        Counts::Read(read) => {
            state.storage_read_at = Some(now);
            state.storage = handle
                .routes()
                .iter()
                .map(|r| r.name.clone())
                .zip(read)
                .collect();
        }
        Counts::Failed => state.storage_read_at = Some(now),
    }
}
