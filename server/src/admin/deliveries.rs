//! Deliveries, dead letters, redelivery and pull mode for the control
//! plane.

use hookd_control::{
    model::{
        AttemptView, DeadLetterFilter, DeadLetterView, DeliveryQuery, DeliveryView, Page,
        PageRequest, PulledDelivery, RedirectView, RouteOutcomeView, DEFAULT_ROUTE,
        MAX_BODIES_READ, MAX_BODY_BYTES_READ, MAX_SEARCH_RESULTS,
    },
    Error as ApiError, Result as ApiResult,
};

use super::{api, Backend};
use crate::routes::handle::RouteHandle;
use crate::{
    ids::{DeliveryId, SHARED_SLOT_MS},
    store::{
        api::{Listing, PullRequest},
        records::RedirectRecord,
        records::{DeadLetter, DeliveryState, DeliveryStatus},
    },
    tenant::TenantHandle,
};

// A delivery at the largest body limit, with its headers and attempts, must
// fit in one gRPC response (Pull hands it out alone, GetDelivery shows it).
const _: () =
    assert!(hookd_proto::MAX_RESPONSE_BYTES >= crate::config::MAX_BODY_LIMIT + 8 * 1024 * 1024);

/// Longest visibility timeout a pull may ask for: 12 h.
const MAX_VISIBILITY_SECS: u32 = 43_200;

impl Backend {
    pub(super) fn tenant(&self, tenant_id: &str) -> ApiResult<TenantHandle> {
        self.registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    /// The deliveries of a route that `query` passes, newest first: an
    /// event's through the idempotency log, the others through the store's
    /// id order (a window is a range of ids), its status and type filters,
    /// and, for a body field, the bodies of those, at most
    /// [`MAX_BODIES_READ`] a page.
    pub(super) fn deliveries(
        &self,
        tenant_id: &str,
        query: &DeliveryQuery,
        page: PageRequest,
    ) -> ApiResult<Page<DeliveryView>> {
        let handle = self.tenant(tenant_id)?;
        let route = named_route(&handle, Some(&query.route))?;
        let held = route.hold.is_paused();
        // While the route is paused its pending deliveries are held.
        let status = match (query.status, held) {
            (Some(DeliveryStatus::Held), true) => Some(DeliveryStatus::Pending),
            (Some(DeliveryStatus::Held), false) | (Some(DeliveryStatus::Pending), true) => {
                return Ok(Page {
                    items: Vec::new(),
                    next_token: None,
                })
            }
            (status, _) => status,
        };
        let listing = Listing {
            status,
            event_type: query.event_type.clone(),
        };
        let found = match &query.event_id {
            Some(event_id) => Found {
                items: of_event(&handle, &route, event_id)?
                    .into_iter()
                    .filter(|(_, state)| {
                        listing.passes(state) && query.in_window(state.received_at_ms)
                    })
                    .collect(),
                next: None,
            },
            None => {
                let settings = handle.settings();
                let delay_ms = match route.name.as_str() {
                    DEFAULT_ROUTE => settings.delay_ms,
                    name => settings
                        .routes
                        .iter()
                        .find(|r| r.name == name)
                        .map_or(0, |r| r.delay_ms),
                };
                listed((&route, delay_ms), query, &listing, page)?
            }
        };
        let items = found
            .items
            .into_iter()
            .map(|(id, state)| delivery_view(tenant_id, &route, id.to_string(), state))
            .collect();
        Ok(Page {
            items,
            next_token: found.next.map(|id| id.to_string()),
        })
    }

    /// Every delivery whose id is `id`, or of an event whose id is `id`,
    /// on every route of `tenant_id` (`None`: of every running tenant), at
    /// most [`MAX_SEARCH_RESULTS`].
    pub(super) fn search(&self, tenant_id: Option<&str>, id: &str) -> ApiResult<Vec<DeliveryView>> {
        let tenants = match tenant_id {
            Some(one) => vec![self.tenant(one)?],
            None => self.registry.handles(),
        };
        let mut found = Vec::new();
        let delivery = DeliveryId::new(id);
        for handle in tenants {
            let tenant = handle.settings().id.to_string();
            let first = first_of(&handle, id)?;
            for route in handle.routes().iter() {
                if found.len() >= MAX_SEARCH_RESULTS {
                    return Ok(found);
                }
                let mut hits = match route.data.state(&delivery).map_err(api)? {
                    Some(state) => vec![(delivery.clone(), state)],
                    None => Vec::new(),
                };
                if let Some(first) = &first {
                    hits.extend(chain_on(route, first)?);
                }
                found.extend(
                    hits.into_iter()
                        .map(|(d, state)| delivery_view(&tenant, route, d.to_string(), state)),
                );
            }
        }
        found.truncate(MAX_SEARCH_RESULTS);
        Ok(found)
    }

    pub(super) fn delivery(&self, tenant_id: &str, delivery_id: &str) -> ApiResult<DeliveryView> {
        let handle = self.tenant(tenant_id)?;
        let id = DeliveryId::new(delivery_id);
        let route = handle.route_of(&id).map_err(api)?;
        let state = route.data.state(&id).map_err(api)?.ok_or_else(|| {
            ApiError::NotFound(format!("delivery {delivery_id} of tenant {tenant_id}"))
        })?;
        let attempts = route.data.attempts(&id).map_err(api)?;
        let attempts = attempts
            .into_iter()
            .map(|a| AttemptView {
                attempt: a.attempt,
                started_at_ms: a.started_at_ms,
                duration_ms: a.duration_ms,
                status_code: a.status_code,
                error: a.error,
                response_body: a.response_body,
                next_retry_at_ms: a.next_retry_at_ms,
                request_id: a.request_id.to_string(),
            })
            .collect();
        let redirects = route.data.redirects(&id).map_err(api)?;
        let routes = state
            .routes
            .iter()
            .map(|r| RouteOutcomeView {
                route: r.route.clone(),
                delivery_id: r.delivery_id.as_ref().map(|d| d.to_string()),
                filtered: r.filtered,
            })
            .collect();
        Ok(DeliveryView {
            attempts,
            routes,
            redirects: redirects.into_iter().map(redirect_view).collect(),
            ..delivery_view(tenant_id, &route, delivery_id.to_owned(), state)
        })
    }

    pub(super) fn dead_letters(
        &self,
        tenant_id: &str,
        route: &str,
        filter: DeadLetterFilter,
        page: PageRequest,
    ) -> ApiResult<Page<DeadLetterView>> {
        let handle = self.tenant(tenant_id)?;
        let route = named_route(&handle, Some(route))?;
        let before = match &page.token {
            Some(token) => Some(
                hex::decode(token)
                    .map_err(|_| ApiError::InvalidArgument("page_token is not valid".into()))?,
            ),
            None => None,
        };
        let size = page.size as usize;
        let keep = |letter: &DeadLetter| filter.matches(letter.dead_at_ms, &letter.reason);
        let mut letters = route
            .data
            .dead_letters(before.as_deref(), size + 1, &keep)
            .map_err(api)?;
        let next_token = (letters.len() > size).then(|| {
            letters.truncate(size);
            letters.last().map(|(key, _)| hex::encode(key))
        });
        let items = letters
            .into_iter()
            .map(|(_, letter)| dead_letter_view(tenant_id, &route.name, letter))
            .collect();
        Ok(Page {
            items,
            next_token: next_token.flatten(),
        })
    }

    /// Waits until every write made so far is on disk.
    pub(super) async fn durable(&self) -> ApiResult<()> {
        self.services.store.durable_barrier().await.map_err(api)
    }

    /// Pulls for a pull-mode tenant; answers once the hand-out (the
    /// hidden queue entries, the attempt counts) is durable.
    pub(super) async fn pull_deliveries(
        &self,
        tenant_id: &str,
        max: u32,
        visibility_secs: u32,
    ) -> ApiResult<Vec<PulledDelivery>> {
        let handle = self.pull_tenant(tenant_id)?;
        if visibility_secs > MAX_VISIBILITY_SECS {
            return Err(ApiError::InvalidArgument(format!(
                "visibility_timeout_secs must be at most {MAX_VISIBILITY_SECS}"
            )));
        }
        let request = PullRequest {
            max: max as usize,
            max_bytes: hookd_proto::PULL_RESPONSE_BUDGET_BYTES,
            visibility_ms: i64::from(visibility_secs) * 1000,
            window_ms: handle.settings().retry_window_ms,
            now_ms: self.now_ms(),
        };
        let pulled = blocking(move || handle.data().pull(request).map_err(api)).await;
        self.durable().await?;
        Ok(pulled?
            .into_iter()
            .map(|(event, attempt)| PulledDelivery {
                delivery_id: event.meta.delivery_id.to_string(),
                event_id: event.meta.event_id.to_string(),
                body: event.body,
                headers: event.meta.headers,
                received_at_ms: event.meta.received_at_ms,
                attempt,
            })
            .collect())
    }

    /// Acks; answers once the acks are durable.
    pub(super) async fn ack_deliveries(&self, tenant_id: &str, ids: Vec<String>) -> ApiResult<u32> {
        let handle = self.pull_tenant(tenant_id)?;
        let ids: Vec<DeliveryId> = ids.into_iter().map(DeliveryId::new).collect();
        let now = self.now_ms();
        let acked = blocking(move || handle.data().ack(&ids, now).map_err(api)).await;
        self.durable().await?;
        acked
    }

    /// Nacks; answers once the returned deliveries are durable.
    pub(super) async fn nack_deliveries(&self, tenant_id: &str, ids: Vec<String>) -> ApiResult<()> {
        let handle = self.pull_tenant(tenant_id)?;
        let ids: Vec<DeliveryId> = ids.into_iter().map(DeliveryId::new).collect();
        let now = self.now_ms();
        let returned = blocking(move || handle.data().nack(&ids, now).map_err(api)).await;
        self.durable().await?;
        returned.map(drop)
    }

    /// A tenant in pull mode: one with a destination is served by hookd.
    fn pull_tenant(&self, tenant_id: &str) -> ApiResult<TenantHandle> {
        let handle = self.tenant(tenant_id)?;
        if handle.settings().forward.is_some() {
            return Err(ApiError::FailedPrecondition(format!(
                "tenant {tenant_id} forwards to a destination; only pull-mode tenants can be pulled"
            )));
        }
        Ok(handle)
    }
}

/// Runs blocking storage work on tokio's blocking pool, off the async threads.
pub(super) async fn blocking<T: Send + 'static>(
    work: impl FnOnce() -> ApiResult<T> + Send + 'static,
) -> ApiResult<T> {
    tokio::task::spawn_blocking(work)
        .await
        .map_err(|e| ApiError::Internal(format!("storage task failed: {e}")))?
}

/// Each of `ids` with its route and state: on `route` when named, else on
/// whichever route of the tenant holds it; an id none holds is `NotFound`.
pub(super) fn located(
    handle: &TenantHandle,
    route: Option<&str>,
    ids: &[String],
) -> ApiResult<Vec<(RouteHandle, DeliveryId, DeliveryState)>> {
    let only = route
        .map(|name| named_route(handle, Some(name)))
        .transpose()?;
    ids.iter()
        .map(|id| {
            let id = DeliveryId::new(id.as_str());
            let route = match &only {
                Some(route) => route.clone(),
                None => handle.route_of(&id).map_err(api)?,
            };
            let state = route
                .data
                .state(&id)
                .map_err(api)?
                .ok_or_else(|| ApiError::NotFound(format!("delivery {id}")))?;
            Ok((route, id, state))
        })
        .collect()
}

/// The tenant's route `name` (`None`: the default one); `NotFound`
/// naming it when the tenant has none of that name.
pub(super) fn named_route(handle: &TenantHandle, name: Option<&str>) -> ApiResult<RouteHandle> {
    let name = name.unwrap_or(DEFAULT_ROUTE);
    handle
        .routes()
        .iter()
        .find(|route| route.name == name)
        .cloned()
        .ok_or_else(|| {
            ApiError::NotFound(format!("route {name} of tenant {}", handle.settings().id))
        })
}

/// A page of deliveries as the store listed them, and where the next
/// starts.
struct Found {
    items: Vec<(DeliveryId, DeliveryState)>,
    next: Option<DeliveryId>,
}

/// The deliveries on `route` of event `event_id` (the sender's id), newest
/// first: the first one the idempotency log names (on the default route,
/// or the copy it names on `route`) and each redelivery of it.
fn of_event(
    handle: &TenantHandle,
    route: &RouteHandle,
    event_id: &str,
) -> ApiResult<Vec<(DeliveryId, DeliveryState)>> {
    match first_of(handle, event_id)? {
        Some(first) => chain_on(route, &first),
        None => Ok(Vec::new()),
    }
}

/// The default route's first delivery of event `event_id`, as the
/// idempotency log names it, with its state (which lists each route's
/// copy), if the log still holds the id.
fn first_of(
    handle: &TenantHandle,
    event_id: &str,
) -> ApiResult<Option<(DeliveryId, Option<DeliveryState>)>> {
    let default = handle.data();
    let Some(first) = default.idempotency(event_id.as_bytes()).map_err(api)? else {
        return Ok(None);
    };
    let state = default.state(&first.delivery_id).map_err(api)?;
    Ok(Some((first.delivery_id, state)))
}

/// The deliveries on `route` of the event whose first delivery is
/// `first`, newest first: that one (or its copy on `route`) and each
/// redelivery of it.
fn chain_on(
    route: &RouteHandle,
    (first_id, first_state): &(DeliveryId, Option<DeliveryState>),
) -> ApiResult<Vec<(DeliveryId, DeliveryState)>> {
    let start = match route.name == DEFAULT_ROUTE {
        true => Some(first_id.clone()),
        false => first_state.as_ref().and_then(|state| {
            let copy = state.routes.iter().find(|r| r.route == route.name)?;
            copy.delivery_id.clone()
        }),
    };
    let mut chain = Vec::new();
    let mut next = start;
    while let Some(id) = next.take() {
        if chain.len() >= MAX_SEARCH_RESULTS {
            break;
        }
        if let Some(state) = route.data.state(&id).map_err(api)? {
            next = state.redelivered_as.clone();
            chain.push((id, state));
        }
    }
    chain.reverse();
    Ok(chain)
}

/// One page of `route`'s deliveries that `listing` and `query` pass, from
/// `page`'s token on: read from the store in id order within the query's
/// window; with a body field, at most [`MAX_BODIES_READ`] bodies or
/// [`MAX_BODY_BYTES_READ`] of them read. A
/// route with a delay of `delay_ms` names each delivery by when it is due,
/// so its window reaches that much further.
fn listed(
    (route, delay_ms): (&RouteHandle, i64),
    query: &DeliveryQuery,
    listing: &Listing,
    page: PageRequest,
) -> ApiResult<Found> {
    let size = page.size as usize;
    let token = page.token.map(DeliveryId::new);
    // An id is made up to SHARED_SLOT_MS before its delivery is received
    // (or due, on a delayed route).
    let until = query
        .until_ms
        .map(|until| DeliveryId::lowest_at(until + delay_ms));
    let mut cursor = match (token, until) {
        (Some(token), Some(until)) => Some(token.min(until)),
        (token, until) => token.or(until),
    };
    let since = query
        .since_ms
        .map(|ms| DeliveryId::lowest_at(ms - SHARED_SLOT_MS as i64));
    let chunk = match query.body {
        Some(_) => 500,
        None => size + 1,
    };
    let (mut items, mut read, mut bytes) = (Vec::new(), 0, 0);
    loop {
        let batch = route
            .data
            .deliveries_in(listing, (cursor.as_ref(), since.as_ref()), chunk)
            .map_err(api)?;
        let exhausted = batch.len() < chunk;
        for (id, state) in batch {
            cursor = Some(id.clone());
            if !query.in_window(state.received_at_ms) {
                continue;
            }
            if let Some(field) = &query.body {
                read += 1;
                let event = route.data.event(&id).map_err(api)?;
                bytes += event.as_ref().map_or(0, |e| e.body.len());
                let matched = event.is_some_and(|e| field.matches(&e.body));
                if matched {
                    items.push((id, state));
                }
                let spent = read >= MAX_BODIES_READ || bytes >= MAX_BODY_BYTES_READ;
                if spent && items.len() <= size {
                    return Ok(Found {
                        items,
                        next: cursor,
                    });
                }
            } else {
                items.push((id, state));
            }
            if items.len() > size {
                items.truncate(size);
                let next = items.last().map(|(id, _)| id.clone());
                return Ok(Found { items, next });
            }
        }
        if exhausted {
            return Ok(Found { items, next: None });
        }
    }
}

/// A delivery of route `route` without its attempts and redirects: held
/// while it is pending on a paused route.
fn delivery_view(
    tenant_id: &str,
    route: &RouteHandle,
    delivery_id: String,
    state: DeliveryState,
) -> DeliveryView {
    let status = match state.status {
        DeliveryStatus::Pending if route.hold.is_paused() => DeliveryStatus::Held,
        status => status,
    };
    DeliveryView {
        tenant_id: tenant_id.to_owned(),
        delivery_id,
        event_id: state.event_id.to_string(),
        status,
        received_at_ms: state.received_at_ms,
        attempt_count: state.attempts,
        next_attempt_at_ms: state.next_attempt_at_ms,
        last_error: state.last_error,
        redelivery_of: state.redelivery_of.map(|d| d.to_string()),
        redelivered_as: state.redelivered_as.map(|d| d.to_string()),
        attempts: Vec::new(),
        redirects: Vec::new(),
        route: route.name.clone(),
        routes: Vec::new(),
    }
}

fn redirect_view(r: RedirectRecord) -> RedirectView {
    RedirectView {
        by: r.by.as_str().to_owned(),
        url: r.url,
        started_at_ms: r.started_at_ms,
        duration_ms: r.duration_ms,
        status_code: r.status_code,
        error: r.error,
        request_id: r.request_id.to_string(),
    }
}

fn dead_letter_view(tenant_id: &str, route: &str, letter: DeadLetter) -> DeadLetterView {
    DeadLetterView {
        tenant_id: tenant_id.to_owned(),
        delivery_id: letter.delivery_id.to_string(),
        event_id: letter.event_id.to_string(),
        reason: letter.reason,
        dead_at_ms: letter.dead_at_ms,
        attempt_count: letter.attempts,
        last_status_code: letter.last_status,
        route: route.to_owned(),
    }
}
