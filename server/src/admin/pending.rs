//! A route's pending deliveries acted on over the control plane, by id or
//! by filter: retry now (those waiting for their next retry made due at
//! once) and cancel (pending ones dead-lettered, nothing sent).

use hookd_control::{
    model::{Cancel, Matched, RetryNow, Waiting, WaitingFilter, MAX_REDELIVER_PER_CALL},
    Error as ApiError, Result as ApiResult,
};
use hookd_proto::domain::DEFAULT_ROUTE;

use super::{
    api,
    deliveries::{blocking, located, named_route},
    Backend,
};
use crate::{
    ids::DeliveryId,
    routes::handle::RouteHandle,
    store::{
        api::QueueKey,
        records::{DeliveryState, DeliveryStatus},
    },
    tenant::TenantHandle,
};

/// Queue entries one read lists while the backlog is looked through.
const QUEUE_PAGE: usize = 500;

/// What is done to the pending deliveries chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Act {
    /// Those waiting for their next retry are made due now.
    RetryNow,
    /// Pending ones are dead-lettered as cancelled.
    Cancel,
}

impl Act {
    /// Whether a delivery in `state`, queued under an entry due at
    /// `due_ms`, is one this acts on at `now_ms`.
    fn takes(self, state: &DeliveryState, due_ms: i64, now_ms: i64) -> bool {
        state.status == DeliveryStatus::Pending
            && match self {
                Act::RetryNow => state.attempts > 0 && due_ms > now_ms,
                Act::Cancel => true,
            }
    }
}

impl Backend {
    /// Makes the chosen waiting deliveries due now and wakes their routes;
    /// answers once that is durable.
    pub(super) async fn retry_waiting(
        &self,
        tenant_id: &str,
        request: RetryNow,
    ) -> ApiResult<Matched> {
        self.act(tenant_id, (request.route, request.pick), Act::RetryNow)
            .await
    }

    /// Dead-letters the chosen pending deliveries as cancelled; answers
    /// once that is durable.
    pub(super) async fn cancel_pending(
        &self,
        tenant_id: &str,
        request: Cancel,
    ) -> ApiResult<Matched> {
        self.act(tenant_id, (request.route, request.pick), Act::Cancel)
            .await
    }

    async fn act(
        &self,
        tenant_id: &str,
        chosen: (Option<String>, Waiting),
        act: Act,
    ) -> ApiResult<Matched> {
        let handle = self.tenant(tenant_id)?;
        let now = self.now_ms();
        let done = blocking(move || act_on(&handle, chosen, act, now)).await;
        self.durable().await?;
        done
    }
}

fn act_on(
    handle: &TenantHandle,
    (route, pick): (Option<String>, Waiting),
    act: Act,
    now_ms: i64,
) -> ApiResult<Matched> {
    let (chosen, more, dry_run) = match pick {
        Waiting::Ids(ids) => (by_ids(handle, route.as_deref(), (&ids, act))?, false, false),
        Waiting::All { dry_run, filter } => {
            let route = named_route(handle, route.as_deref())?;
            if act == Act::RetryNow {
                forwarding(handle, &route)?;
            }
            let (ids, more) = pending(&route, (&filter, act), now_ms)?;
            let chosen = ids.into_iter().map(|id| (route.clone(), id)).collect();
            (chosen, more, dry_run)
        }
    };
    if dry_run {
        let ids: Vec<String> = chosen.iter().map(|(_, id)| id.to_string()).collect();
        return Ok(Matched::of(&ids, more));
    }
    let mut made = Vec::new();
    for (route, id) in chosen {
        let one = std::slice::from_ref(&id);
        let done = match act {
            Act::RetryNow => route.data.retry_now(one, now_ms),
            Act::Cancel => route.data.cancel(one, now_ms),
        };
        if done.map_err(api)? == 1 {
            made.push(id.to_string());
            if act == Act::RetryNow {
                route.wake.retry_now();
            }
        }
    }
    if act == Act::Cancel && !made.is_empty() {
        tracing::info!(tenant = %handle.settings().id, cancelled = made.len(), "pending deliveries cancelled by an operator");
    }
    Ok(Matched::of(&made, more))
}

/// The deliveries `ids` name, each with its route, those on a pulled route
/// left out of a retry now: every one must be a delivery of `route` (of
/// any route of the tenant without one), or nothing happens.
fn by_ids(
    handle: &TenantHandle,
    route: Option<&str>,
    (ids, act): (&[String], Act),
) -> ApiResult<Vec<(RouteHandle, DeliveryId)>> {
    Ok(located(handle, route, ids)?
        .into_iter()
        .filter(|(route, _, _)| act == Act::Cancel || forwarding(handle, route).is_ok())
        .map(|(route, id, _)| (route, id))
        .collect())
}

/// `route` forwards to a destination; a pulled route's deliveries wait for
/// their consumer, who nacks them instead.
fn forwarding(handle: &TenantHandle, route: &RouteHandle) -> ApiResult<()> {
    let settings = handle.settings();
    let forwards = match route.name.as_str() {
        DEFAULT_ROUTE => settings.forward.is_some(),
        name => settings
            .routes
            .iter()
            .any(|r| r.name == name && r.forward.is_some()),
    };
    match forwards {
        true => Ok(()),
        false => Err(ApiError::FailedPrecondition(format!(
            "route {} is pulled: its consumer nacks what it wants again",
            route.name
        ))),
    }
}

/// The deliveries of `route` that `act` takes at `now_ms` and `filter`
/// passes, soonest due first, at most [`MAX_REDELIVER_PER_CALL`], and
/// whether more wait.
fn pending(
    route: &RouteHandle,
    (filter, act): (&WaitingFilter, Act),
    now_ms: i64,
) -> ApiResult<(Vec<DeliveryId>, bool)> {
    let mut found = Vec::new();
    let mut after: Option<QueueKey> = None;
    loop {
        let page = route.data.queue(after.as_ref(), QUEUE_PAGE).map_err(api)?;
        let last = page.len() < QUEUE_PAGE;
        for (key, id) in &page {
            let state = route.data.state(id).map_err(api)?;
            let wanted = state.is_some_and(|s| {
                act.takes(&s, key.due_ms(), now_ms)
                    && filter.passes(s.event_type.as_deref(), s.received_at_ms)
            });
            if wanted {
                if found.len() == MAX_REDELIVER_PER_CALL {
                    return Ok((found, true));
                }
                found.push(id.clone());
            }
        }
        match (last, page.into_iter().last()) {
            (false, Some((key, _))) => after = Some(key),
            _ => return Ok((found, false)),
        }
    }
}
