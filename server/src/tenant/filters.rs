//! A tenant's route filters on an accepted event, under their step budget:
//! inline on the HTTP worker, then on a filter thread if that is not enough.

use std::{borrow::Cow, sync::Arc};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use hookd_proto::domain::DEFAULT_ROUTE;

use crate::tenant::TenantSettings;
use crate::{
    ids::EventId,
    ingest::Ingest,
    routes::filter::{
        FilterInput, OverBudget, Passes, RouteFilter, Steps, INLINE_STEPS, MAX_EVENT_FILTER_STEPS,
        MAX_FILTER_STEPS,
    },
};

/// What the filters read of an event, owned, for a filter thread.
pub(super) struct FilterWork {
    settings: Arc<TenantSettings>,
    event_id: EventId,
    body: Bytes,
    headers: Vec<(String, String)>,
    query: String,
}

/// The filters' verdicts within [`INLINE_STEPS`] each on the calling
/// thread, or what a filter thread needs to decide them. `read` is the
/// headers and the body as filters see it (a form's JSON view); both are
/// read only when one of the routes has a filter.
///
/// A tenant's route filters on an accepted event, under their step budget:
/// each filter first gets [`INLINE_STEPS`] on the HTTP worker that holds
/// the request (what nearly every filter needs); if one runs out there,
/// every filter is evaluated again on a filter thread with
/// [`MAX_FILTER_STEPS`] each and [`MAX_EVENT_FILTER_STEPS`] in all, so a
/// costly filter never holds the worker (and the requests of other tenants
/// it serves). A filter out of its steps there does not pass the event,
/// and says so in the log.
pub(super) fn filter_inline(
    settings: &Arc<TenantSettings>,
    msg: &Ingest,
    (headers, body): (&HeaderMap, Cow<'_, Bytes>),
    event_id: &EventId,
) -> Result<Passes, FilterWork> {
    if filters(settings).all(Option::is_none) {
        return Ok(Passes {
            default: true,
            routes: vec![true; settings.routes.len()],
        });
    }
    let pairs: Vec<(&str, &str)> = headers
        .iter()
        .filter_map(|(name, value)| Some((name.as_str(), value.to_str().ok()?)))
        .collect();
    let verdicts = verdicts(
        settings,
        (&body, &pairs, msg.query),
        (INLINE_STEPS, u64::MAX),
    );
    if verdicts.iter().all(|(_, verdict)| verdict.is_ok()) {
        return Ok(passes(verdicts.into_iter().map(|(_, v)| v == Ok(true))));
    }
    Err(FilterWork {
        settings: settings.clone(),
        event_id: event_id.clone(),
        body: body.into_owned(),
        headers: pairs
            .iter()
            .map(|&(name, value)| (name.to_owned(), value.to_owned()))
            .collect(),
        query: msg.query.to_owned(),
    })
}

impl FilterWork {
    /// The verdicts with [`MAX_FILTER_STEPS`] each and
    /// [`MAX_EVENT_FILTER_STEPS`] in all; a filter out of them does not
    /// pass the event.
    pub(super) fn finish(self) -> Passes {
        let pairs: Vec<(&str, &str)> = self
            .headers
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let settings = &self.settings;
        let steps = (MAX_FILTER_STEPS, MAX_EVENT_FILTER_STEPS);
        let verdicts = verdicts(settings, (&self.body, &pairs, &self.query), steps);
        passes(verdicts.into_iter().map(|(route, verdict)| {
            verdict.unwrap_or_else(|OverBudget| {
                tracing::warn!(tenant = %settings.id, route, event_id = %self.event_id, steps = MAX_FILTER_STEPS, "the route's filter ran out of its step budget on this event; the route does not get it");
                false
            })
        }))
    }
}

/// The default route's verdict first, then each other route's.
fn passes(mut verdicts: impl Iterator<Item = bool>) -> Passes {
    Passes {
        default: verdicts.next().unwrap_or(true),
        routes: verdicts.collect(),
    }
}

/// The default route's filter, then each other route's.
fn filters(settings: &TenantSettings) -> impl Iterator<Item = &Option<RouteFilter>> + Clone {
    std::iter::once(&settings.filter).chain(settings.routes.iter().map(|r| &r.filter))
}

/// Each route's name and its filter's verdict with `each` steps, at most
/// `all` for every filter together (a route without a filter passes), the
/// default route first.
fn verdicts<'s>(
    settings: &'s TenantSettings,
    (body, headers, query): (&[u8], &[(&str, &str)], &str),
    (each, mut all): (u64, u64),
) -> Vec<(&'s str, Result<bool, OverBudget>)> {
    let body: serde_json::Value = serde_json::from_slice(body).unwrap_or_default();
    let query: Vec<(Cow<'_, str>, Cow<'_, str>)> =
        form_urlencoded::parse(query.as_bytes()).collect();
    let query: Vec<(&str, &str)> = query
        .iter()
        .map(|(k, v)| (k.as_ref(), v.as_ref()))
        .collect();
    let path = format!("/hooks/{}", settings.id);
    let input = FilterInput {
        body: &body,
        headers,
        path: &path,
        query: &query,
    };
    let names =
        std::iter::once(DEFAULT_ROUTE).chain(settings.routes.iter().map(|r| r.name.as_str()));
    names
        .zip(filters(settings))
        .map(|(name, filter)| {
            let Some(filter) = filter else {
                return (name, Ok(true));
            };
            let given = each.min(all);
            let steps = Steps::new(given);
            let verdict = filter.matches(&input, &steps);
            all -= given - steps.left();
            (name, verdict)
        })
        .collect()
}
