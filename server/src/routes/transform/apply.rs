//! A route's transform at forward time: the request hookd would send goes
//! through the route's JavaScript, and what comes back is sent instead.

use std::sync::Arc;

use crate::{
    ids::TenantId,
    routes::transform::{
        backoff::is_overrun, pool::RouteShare, Transform, TransformBody, TransformContext,
        TransformError, TransformLimits, TransformOutcome, TransformRequest,
    },
    store::records::StoredEvent,
};

/// A route's transform with what its handler is told of the route.
///
/// A route's transform at forward time: the request hookd would send (the
/// destination's path and query, the kept headers, the stored body) goes
/// through the route's JavaScript in a transform worker, within its memory
/// and CPU budget; what comes back is sent instead, signed as sent. The
/// stored event is never changed, so a fixed transform can be redelivered.
/// Each run's end is counted in the route's back-off
/// (`routes::transform::backoff`), which the dispatcher asks before it
/// starts an attempt ([`admit`]).
#[derive(Debug)]
pub struct RouteTransform {
    /// The compiled code and its version.
    pub transform: Transform,
    /// Its memory and CPU budget.
    pub limits: TransformLimits,
    /// The tenant the route belongs to.
    pub tenant: TenantId,
    /// The route's name.
    pub route: String,
    /// Its share of the transform threads and its back-off
    /// (`routes::transform::pool`).
    pub share: Arc<RouteShare>,
}

/// Headers a transform may not set: hookd's own, the signature's and the
/// framing ones the client computes.
const CONTROLLED: [&str; 9] = [
    "content-length",
    "host",
    "transfer-encoding",
    "connection",
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "hookd-attempt",
    "hookd-delivery-id",
];

/// The request a transform returned.
pub(crate) struct Rewritten {
    /// The path and query to send to, on the destination's origin.
    pub(crate) path_and_query: String,
    /// Headers to send instead of the stored ones.
    pub(crate) headers: Vec<(String, String)>,
    /// The body to send (and sign).
    pub(crate) body: Vec<u8>,
}

/// What the transform made of one attempt.
pub(crate) enum Transformed {
    /// Send this.
    Send(Rewritten),
    /// The handler dropped the event for this route.
    Drop,
    /// It threw, overran its budget or returned something unusable.
    Failed(String),
}

/// Whether an attempt through `route` may start at `now_ms`: `Err` with
/// when to ask again while the route backs off from a transform that keeps
/// overrunning its limits (one start per interval gets through).
pub(crate) fn admit(route: &RouteTransform, now_ms: i64) -> Result<(), i64> {
    route.share.backoff.admit(now_ms, &route.limits)
}

/// Whether `route` backs off from a transform that keeps overrunning its
/// limits: then one attempt per interval starts.
pub(crate) fn backing_off(route: &RouteTransform) -> bool {
    route.share.backoff.backing_off()
}

/// When the next attempt through `route` may start, if the route backs off
/// until after `now_ms`.
pub(crate) fn paused_until(route: &RouteTransform, now_ms: i64) -> Option<i64> {
    route.share.backoff.paused_until(now_ms)
}

/// Runs `route`'s transform on attempt `attempt` of `event` to `url`,
/// without telling the route's back-off (a test run of the route).
pub(crate) async fn preview(
    route: &Arc<RouteTransform>,
    url: &str,
    event: &StoredEvent,
    attempt: u32,
) -> Transformed {
    run(route, url, event, attempt).await.0
}

/// The dispatcher's run of attempt `attempt`, started at `now_ms`: as
/// [`preview`], and counted in the route's back-off.
pub(crate) async fn apply(
    route: &Arc<RouteTransform>,
    url: &str,
    event: &StoredEvent,
    (attempt, now_ms): (u32, i64),
) -> Transformed {
    let (transformed, overran) = run(route, url, event, attempt).await;
    route.share.backoff.record(overran, now_ms, &route.limits);
    transformed
}

/// What the run made of the attempt, and whether it overran a limit.
async fn run(
    route: &Arc<RouteTransform>,
    url: &str,
    event: &StoredEvent,
    attempt: u32,
) -> (Transformed, bool) {
    let Ok(parsed) = reqwest::Url::parse(url) else {
        let why = format!("the destination URL {url:?} does not parse");
        return (Transformed::Failed(why), false);
    };
    let body = match TransformBody::from_bytes(&event.body) {
        Ok(body) => body,
        Err(e) => return (Transformed::Failed(e.to_string()), false),
    };
    let request = TransformRequest {
        method: "POST".into(),
        path: parsed.path().to_owned(),
        query: parsed.query().unwrap_or_default().to_owned(),
        headers: event.meta.headers.clone(),
        body,
    };
    let context = TransformContext {
        tenant: route.tenant.clone(),
        route: route.route.clone(),
        event_id: event.meta.event_id.clone(),
        delivery_id: event.meta.delivery_id.clone(),
        attempt,
    };
    let ran = route
        .transform
        .run(&route.share, &request, &context, &route.limits)
        .await;
    let overran = matches!(&ran, Err(e) if is_overrun(e));
    (rewritten(ran), overran)
}

/// A run's result as what to send.
fn rewritten(ran: Result<TransformOutcome, TransformError>) -> Transformed {
    match ran {
        Err(e) => Transformed::Failed(e.to_string()),
        Ok(TransformOutcome::Drop) => Transformed::Drop,
        Ok(TransformOutcome::Send(sent)) => {
            let path_and_query = match sent.query.is_empty() {
                true => sent.path,
                false => format!("{}?{}", sent.path, sent.query),
            };
            let headers = sent
                .headers
                .into_iter()
                .filter(|(name, _)| !CONTROLLED.contains(&name.to_ascii_lowercase().as_str()))
                .collect();
            Transformed::Send(Rewritten {
                path_and_query,
                headers,
                body: sent.body.to_bytes(),
            })
        }
    }
}
