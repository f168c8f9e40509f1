//! Retry now over the control plane: deliveries waiting for their next
//! retry made due at once, by id or a route's whole backlog.

use hookd_control::{
    model::{RetriedNow, RetryNow, Waiting, MAX_REDELIVER_PER_CALL},
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
    store::{api::QueueKey, records::DeliveryStatus},
    tenant::TenantHandle,
};

/// Queue entries one read lists while the backlog is looked through.
const QUEUE_PAGE: usize = 500;

impl Backend {
    /// Makes the chosen waiting deliveries due now and wakes their routes;
    /// answers once that is durable.
    pub(super) async fn retry_waiting(
        &self,
        tenant_id: &str,
        request: RetryNow,
    ) -> ApiResult<RetriedNow> {
        let handle = self.tenant(tenant_id)?;
        let now = self.now_ms();
        let done = blocking(move || retry_now(&handle, request, now)).await;
        self.durable().await?;
        done
    }
}

fn retry_now(handle: &TenantHandle, request: RetryNow, now_ms: i64) -> ApiResult<RetriedNow> {
    let (chosen, more, dry_run) = match request.pick {
        Waiting::Ids(ids) => (
            by_ids(handle, request.route.as_deref(), &ids)?,
            false,
            false,
        ),
        Waiting::All { dry_run } => {
            let route = named_route(handle, request.route.as_deref())?;
            forwarding(handle, &route)?;
            let (ids, more) = waiting(&route, now_ms)?;
            let chosen = ids.into_iter().map(|id| (route.clone(), id)).collect();
            (chosen, more, dry_run)
        }
    };
    if dry_run {
        let ids: Vec<String> = chosen.iter().map(|(_, id)| id.to_string()).collect();
        return Ok(RetriedNow::of(&ids, more));
    }
    let mut made = Vec::new();
    for (route, id) in chosen {
        if route
            .data
            .retry_now(std::slice::from_ref(&id), now_ms)
            .map_err(api)?
            == 1
        {
            made.push(id.to_string());
            route.wake.retry_now();
        }
    }
    Ok(RetriedNow::of(&made, more))
}

/// The deliveries `ids` name, each with its route, those on a pulled route
/// left out: every one must be a delivery of `route` (of any route of the
/// tenant without one), or nothing happens.
fn by_ids(
    handle: &TenantHandle,
    route: Option<&str>,
    ids: &[String],
) -> ApiResult<Vec<(RouteHandle, DeliveryId)>> {
    Ok(located(handle, route, ids)?
        .into_iter()
        .filter(|(route, _, _)| forwarding(handle, route).is_ok())
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

/// The deliveries of `route` waiting for their retry at `now_ms`, soonest
/// due first, at most [`MAX_REDELIVER_PER_CALL`], and whether more wait.
fn waiting(route: &RouteHandle, now_ms: i64) -> ApiResult<(Vec<DeliveryId>, bool)> {
    let mut found = Vec::new();
    let mut after: Option<QueueKey> = None;
    loop {
        let page = route.data.queue(after.as_ref(), QUEUE_PAGE).map_err(api)?;
        let last = page.len() < QUEUE_PAGE;
        for (key, id) in &page {
            if key.due_ms() <= now_ms {
                continue;
            }
            let state = route.data.state(id).map_err(api)?;
            if state.is_some_and(|s| s.status == DeliveryStatus::Pending && s.attempts > 0) {
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
