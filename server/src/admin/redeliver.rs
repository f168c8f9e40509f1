//! Redelivery and purge over the control plane, each on a tenant's route: by
//! id, or by filter with a dry run.

use std::collections::HashSet;

use hookd_control::{
    model::{Matching, Pick, Redelivered, Selection, MAX_REDELIVER_PER_CALL},
    Error as ApiError, Result as ApiResult,
};

use super::{
    api,
    deliveries::{blocking, located, named_route},
    Backend,
};
use crate::routes::handle::RouteHandle;
use crate::{
    contracts::TenantContracts,
    error::Error,
    ids::DeliveryId,
    store::{
        lifecycle::Resend,
        records::{DeadLetter, DeliveryStatus},
    },
    tenant::TenantHandle,
};

/// How many delivered deliveries one storage read lists while a filter
/// looks for those to redeliver.
const DELIVERED_PAGE: usize = 500;

impl Backend {
    /// Redelivers the selection (or, in a dry run, only finds it); answers
    /// once the new deliveries are durable.
    ///
    /// Redelivery and purge over the control plane, each on a tenant's route:
    /// by id, or by filter (final status, time range, reason, event type) with
    /// a dry run that writes nothing. One call by filter takes at most
    /// [`MAX_REDELIVER_PER_CALL`] deliveries, oldest first.
    pub(super) async fn redeliver_selection(
        &self,
        tenant_id: &str,
        selection: Selection,
    ) -> ApiResult<Redelivered> {
        let handle = self.tenant(tenant_id)?;
        let backend = self.clone();
        let done = blocking(move || backend.redeliver_now(&handle, selection)).await;
        self.durable().await?;
        done
    }

    /// Purges the selected dead letters; answers once that is durable.
    pub(super) async fn purge(&self, tenant_id: &str, selection: Selection) -> ApiResult<u64> {
        let handle = self.tenant(tenant_id)?;
        let purged = blocking(move || purge(&handle, selection)).await;
        self.durable().await?;
        let purged = purged?;
        tracing::info!(tenant = %tenant_id, purged, "dead letters purged");
        Ok(purged)
    }

    fn redeliver_now(&self, handle: &TenantHandle, selection: Selection) -> ApiResult<Redelivered> {
        let m = match selection.pick {
            Pick::Ids(ids) => {
                let chosen = by_ids(handle, selection.route.as_deref(), &ids)?;
                let new_ids = chosen
                    .iter()
                    .map(|(route, id)| {
                        let new_id = self.registry.redeliver_on(handle, route, id, Resend::Any);
                        new_id.map(|n| n.to_string()).map_err(api)
                    })
                    .collect::<ApiResult<_>>()?;
                return Ok(Redelivered::of(&ids, new_ids, false));
            }
            Pick::Matching(m) => m,
        };
        let route = named_route(handle, selection.route.as_deref())?;
        let contracts = handle.snapshot().contracts().clone();
        let (found, more) = matching(&route, &contracts, &m, MAX_REDELIVER_PER_CALL)?;
        if m.dry_run {
            let ids: Vec<String> = found.iter().map(ToString::to_string).collect();
            return Ok(Redelivered::of(&ids, Vec::new(), more));
        }
        let (mut originals, mut new_ids) = (Vec::new(), Vec::new());
        for id in found {
            match self
                .registry
                .redeliver_on(handle, &route, &id, Resend::Once)
            {
                Ok(new_id) => {
                    originals.push(id.to_string());
                    new_ids.push(new_id.to_string());
                }
                // Another call redelivered it since it was found.
                Err(Error::Precondition(_)) => {}
                Err(e) => return Err(api(e)),
            }
        }
        Ok(Redelivered::of(&originals, new_ids, more))
    }
}

/// The deliveries `ids` name, each with its route: every one must be a
/// dead or delivered delivery of `route` (of any route of the tenant
/// without one), or nothing happens.
fn by_ids(
    handle: &TenantHandle,
    route: Option<&str>,
    ids: &[String],
) -> ApiResult<Vec<(RouteHandle, DeliveryId)>> {
    located(handle, route, ids)?
        .into_iter()
        .map(|(route, id, state)| match (state.status, state.redelivered_as) {
            (status, _) if status.may_be_redelivered() => Ok((route, id)),
            (DeliveryStatus::Redelivered, Some(as_id)) => Err(ApiError::FailedPrecondition(
                format!("delivery {id} was already redelivered as {as_id}"),
            )),
            (other, _) => Err(ApiError::FailedPrecondition(format!(
                "delivery {id} is {}; only settled deliveries (dead, delivered, dropped, filtered or unrouted) can be redelivered",
                other.as_str()
            ))),
        })
        .collect()
}

/// The deliveries of `route` that `m` matches, oldest first, at most `cap`
/// ([`MAX_REDELIVER_PER_CALL`]), and whether more matched. The event type
/// is read from the stored events of at most `cap + 1` candidates past
/// the other filters.
fn matching(
    route: &RouteHandle,
    contracts: &TenantContracts,
    m: &Matching,
    cap: usize,
) -> ApiResult<(Vec<DeliveryId>, bool)> {
    let candidates = match m.status {
        DeliveryStatus::Delivered => delivered(route, m)?,
        _ => {
            let keep = |letter: &DeadLetter| m.filter.matches(letter.dead_at_ms, &letter.reason);
            let letters = route
                .data
                .dead_letters(None, usize::MAX, &keep)
                .map_err(api)?;
            letters
                .into_iter()
                .rev()
                .map(|(_, letter)| letter.delivery_id)
                .collect()
        }
    };
    let mut found = Vec::new();
    for id in candidates {
        if found.len() > cap {
            break;
        }
        if of_type(route, contracts, &id, m.event_type.as_deref())? {
            found.push(id);
        }
    }
    let more = found.len() > cap;
    found.truncate(cap);
    Ok((found, more))
}

/// `route`'s delivered deliveries not yet redelivered whose delivery time
/// `m`'s range holds, oldest first.
fn delivered(route: &RouteHandle, m: &Matching) -> ApiResult<Vec<DeliveryId>> {
    let mut found = Vec::new();
    let mut before: Option<DeliveryId> = None;
    loop {
        let page = route
            .data
            .deliveries(
                Some(DeliveryStatus::Delivered),
                before.as_ref(),
                DELIVERED_PAGE,
            )
            .map_err(api)?;
        let full = page.len() == DELIVERED_PAGE;
        before = page.last().map(|(id, _)| id.clone());
        found.extend(page.into_iter().filter_map(|(id, state)| {
            let at = state.finished_at_ms.unwrap_or(state.received_at_ms);
            (state.redelivered_as.is_none() && m.filter.matches(at, "")).then_some(id)
        }));
        if !full {
            break;
        }
    }
    found.reverse();
    Ok(found)
}

/// Whether delivery `id`'s stored event names `event_type` in the tenant's
/// type field (any event when `None`).
fn of_type(
    route: &RouteHandle,
    contracts: &TenantContracts,
    id: &DeliveryId,
    event_type: Option<&str>,
) -> ApiResult<bool> {
    let Some(wanted) = event_type else {
        return Ok(true);
    };
    let event = route.data.event(id).map_err(api)?;
    Ok(event.and_then(|e| contracts.event_type(&e.body)).as_deref() == Some(wanted))
}

/// Purges the dead letters `selection` names; returns how many.
fn purge(handle: &TenantHandle, selection: Selection) -> ApiResult<u64> {
    type Chosen = Box<dyn Fn(&DeadLetter) -> bool>;
    let (routes, chosen): (Vec<RouteHandle>, Chosen) = match selection.pick {
        Pick::Ids(ids) => {
            let routes = match selection.route.as_deref() {
                Some(name) => vec![named_route(handle, Some(name))?],
                None => handle.routes().to_vec(),
            };
            let ids: HashSet<String> = ids.into_iter().collect();
            (
                routes,
                Box::new(move |l| ids.contains(l.delivery_id.as_str())),
            )
        }
        Pick::Matching(m) => {
            let route = named_route(handle, selection.route.as_deref())?;
            let chosen = move |l: &DeadLetter| m.filter.matches(l.dead_at_ms, &l.reason);
            (vec![route], Box::new(chosen))
        }
    };
    let mut purged = 0;
    for route in routes {
        let letters = route
            .data
            .dead_letters(None, usize::MAX, &*chosen)
            .map_err(api)?;
        for (key, letter) in letters {
            if route.data.purge_dead_letter(&key, &letter).map_err(api)? {
                purged += 1;
            }
        }
    }
    Ok(purged)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use hookd_control::model::DeadLetterFilter;

    use super::*;
    use crate::{
        contracts::Policy,
        ids::{EventId, RequestId, TenantId},
        metrics::Metrics,
        store::{
            api::{Receipt, Storage, TenantStore},
            lifecycle::Next,
            records::{AttemptRecord, EventMeta},
            CommitOutcome, NewDelivery, SledStore,
        },
    };

    /// Route `audit` of `tenant`, its deliveries in `data`.
    fn audit(data: TenantStore, tenant: &TenantId) -> RouteHandle {
        let metrics = Metrics::new(&crate::metrics::tests::config(16));
        let labels = metrics.tenant(tenant);
        RouteHandle {
            name: "audit".into(),
            data,
            wake: Arc::default(),
            hold: Arc::default(),
            metrics: metrics.route(&labels, "audit"),
        }
    }

    /// Commits an event of `kind` (in the field `kind`) at `at_ms` and
    /// dead-letters it; returns its delivery id.
    async fn dead(route: &RouteHandle, kind: &str, at_ms: i64) -> DeliveryId {
        let next = Next::Dead {
            reason: "gave up".into(),
        };
        settled(route, kind, at_ms, next).await
    }

    /// Commits an event of `kind` at `at_ms` and settles its one attempt
    /// with `next`; returns its delivery id.
    async fn settled(route: &RouteHandle, kind: &str, at_ms: i64, next: Next) -> DeliveryId {
        let id = DeliveryId::generate();
        let event_id = EventId::new(format!("evt_{at_ms}"));
        let item = NewDelivery {
            event_id: event_id.clone(),
            meta: EventMeta {
                event_id,
                delivery_id: id.clone(),
                request_id: RequestId::generate(),
                received_at_ms: at_ms,
                headers: Vec::new(),
                trace_id: String::new(),
                span_id: String::new(),
                sampled: true,
            },
            body: format!(r#"{{"kind":"{kind}","type":"other"}}"#).into(),
            due_ms: at_ms,
            content_key: None,
            copies: Vec::new(),
            receipt: Receipt::Queued,
            routes: Vec::new(),
            event_type: None,
        };
        assert_eq!(
            route.data.commit(item).await.unwrap(),
            CommitOutcome::Accepted
        );
        let (entry, _) = route.data.queue(None, 1).unwrap().remove(0);
        let attempt = AttemptRecord {
            attempt: 1,
            started_at_ms: at_ms,
            duration_ms: 1,
            status_code: Some(500),
            error: Some("HTTP 500".into()),
            response_body: Vec::new(),
            next_retry_at_ms: None,
            request_id: RequestId::generate(),
            transform_version: None,
        };
        let state = route
            .data
            .record_attempt(&entry, &id, &attempt, &next, at_ms);
        assert!(state.unwrap().is_some(), "settled");
        id
    }

    #[tokio::test]
    async fn a_filter_takes_the_oldest_of_the_type_up_to_the_cap_and_says_more() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
        let shop = TenantId::try_from("shop").unwrap();
        let route = audit(store.tenant(&shop.route_scope("audit")).unwrap(), &shop);
        let mut paid = Vec::new();
        for (n, kind) in ["paid", "refund", "paid", "paid"].into_iter().enumerate() {
            let id = dead(&route, kind, 1_000 * (n as i64 + 1)).await;
            if kind == "paid" {
                paid.push(id);
            }
        }
        let by_kind = TenantContracts::new(
            Policy {
                type_field: "kind".into(),
                ..Policy::default()
            },
            [],
        );
        let m = Matching {
            event_type: Some("paid".into()),
            ..Matching::dead(DeadLetterFilter::default())
        };
        let at_most = |cap| matching(&route, &by_kind, &m, cap).unwrap();
        assert_eq!(
            at_most(2),
            (paid[..2].to_vec(), true),
            "the two oldest, more left"
        );
        assert_eq!(at_most(3), (paid.clone(), false));
        let since = Matching {
            filter: DeadLetterFilter {
                since_ms: Some(2_000),
                ..DeadLetterFilter::default()
            },
            ..m.clone()
        };
        let found = matching(&route, &by_kind, &since, 10).unwrap();
        assert_eq!(found, (paid[1..].to_vec(), false));
        let by_type = TenantContracts::new(Policy::default(), []);
        let found = matching(&route, &by_type, &m, 10).unwrap();
        assert_eq!(
            found,
            (Vec::new(), false),
            "the tenant's type field is kind"
        );
    }

    #[tokio::test]
    async fn delivered_ones_not_yet_redelivered_are_taken_by_when_they_were_delivered() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = SledStore::open(dir.path(), 16, false).unwrap();
        let shop = TenantId::try_from("shop").unwrap();
        let route = audit(store.tenant(&shop.route_scope("audit")).unwrap(), &shop);
        let first = settled(&route, "paid", 1_000, Next::Delivered).await;
        dead(&route, "paid", 2_000).await;
        let again = settled(&route, "paid", 3_000, Next::Delivered).await;
        let last = settled(&route, "paid", 4_000, Next::Delivered).await;
        route.data.redeliver(&again, 5_000, Resend::Any).unwrap();
        let contracts = TenantContracts::new(Policy::default(), []);
        let delivered = |since_ms| Matching {
            filter: DeadLetterFilter {
                since_ms,
                ..DeadLetterFilter::default()
            },
            status: DeliveryStatus::Delivered,
            event_type: None,
            dry_run: false,
        };
        let found = matching(&route, &contracts, &delivered(None), 10).unwrap();
        assert_eq!(found, (vec![first, last.clone()], false), "oldest first");
        let found = matching(&route, &contracts, &delivered(Some(2_000)), 10).unwrap();
        assert_eq!(found, (vec![last], false));
    }
}
