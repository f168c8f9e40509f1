//! The live tail: a page listing delivery events as they happen, fed by
//! server-sent events from the control plane's watch.

use actix_web::{web, HttpResponse};
use bytes::Bytes;
use futures_util::{future, stream, Stream, StreamExt};
use hookd_control::model::{DeliveryEventKind, DeliveryEventView, Principal};
use maud::{html, Markup};

use super::{
    error::DashError,
    layout,
    session::{Place, Signed},
    tenant_in_path, Dashboard,
};
use crate::clock::SharedClock;

/// How often an idle live tail sends a keep-alive comment: 15 s.
const KEEPALIVE_MS: i64 = 15_000;

/// `GET /t/{tenant}/tail`.
pub(super) async fn page(
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let body = tail_list(
        "Events of this tenant's deliveries from now on, newest at the top. ",
        &format!("/t/{tenant}/events"),
    );
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Live tail",
        body,
    )))
}

/// `GET /tail`: every tenant's events for the admin token, the own
/// tenant's for a tenant token.
pub(super) async fn page_all(signed: Signed) -> Result<HttpResponse, DashError> {
    let (tenant, intro) = match signed.session.principal() {
        Principal::Admin => (
            None,
            "Events of every tenant's deliveries from now on, newest at the top, each with its tenant. ",
        ),
        Principal::Tenant(own) => (
            Some(own.clone()),
            "Events of this tenant's deliveries from now on, newest at the top. ",
        ),
    };
    let body = tail_list(intro, "/events");
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        tenant.as_deref(),
        "Live tail",
        body,
    )))
}

fn tail_list(intro: &str, src: &str) -> Markup {
    html! {
        p { (intro) "The list needs script; without it, reload the deliveries page." }
        p #tail-state role="status" { "Connecting…" }
        ol #tail aria-live="polite" data-src=(src) {}
        script src="/assets/tail.js" defer {}
    }
}

/// `GET /t/{tenant}/events`: `text/event-stream`, one JSON event per
/// message; ends when the watcher falls behind or hookd stops (the browser
/// then reconnects).
///
/// The live tail: a page listing delivery events as they happen, fed by
/// server-sent events from the control plane's watch: one tenant's, or at
/// `/tail` every tenant's for the admin token (each line naming its tenant)
/// and the own tenant's for a tenant token. A session holds at most
/// `dashboard.tail_streams_per_session` tails open, all sessions together
/// at most `dashboard.tail_streams_total`; a tail ends when its session's
/// token is revoked or its tenant deleted.
pub(super) async fn events(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    stream_events(&dash, &signed, Some(&tenant)).await
}

/// `GET /events`: every tenant's events for the admin token, the own
/// tenant's for a tenant token.
pub(super) async fn events_all(
    dash: web::Data<Dashboard>,
    signed: Signed,
) -> Result<HttpResponse, DashError> {
    let only = match signed.session.principal() {
        Principal::Admin => None,
        Principal::Tenant(own) => Some(own.as_str()),
    };
    stream_events(&dash, &signed, only).await
}

/// Places for one more live tail of `signed`'s session and of all, or why
/// not.
fn places(dash: &Dashboard, signed: &Signed) -> Result<(Place, Place), DashError> {
    let caps = dash.tail_caps;
    let own = Place::take(signed.session.tails(), caps.per_session).ok_or_else(|| {
        DashError::TooMany(format!(
            "this session already has {} live tails open, the most one session may; close one (or its tab) first",
            caps.per_session
        ))
    })?;
    let all = Place::take(&dash.tails, caps.total).ok_or_else(|| {
        DashError::TooMany(format!(
            "the dashboard already serves {} live tails, the most it serves at once; try again later",
            caps.total
        ))
    })?;
    Ok((own, all))
}

/// The watch of one tenant (or of all) as `text/event-stream`, holding its
/// places until it ends.
async fn stream_events(
    dash: &Dashboard,
    signed: &Signed,
    tenant: Option<&str>,
) -> Result<HttpResponse, DashError> {
    let held = places(dash, signed)?;
    let feed = dash.backend.watch(signed.session.grant(), tenant).await?;
    let messages = feed
        .take_while(|event| future::ready(event.is_ok()))
        .filter_map(|event| future::ready(event.ok()))
        .map(move |event| {
            let _held = &held;
            Ok::<_, actix_web::Error>(message(&event))
        });
    let opened = stream::once(future::ready(Ok(Bytes::from_static(b": watching\n\n"))));
    let alive = keepalive(dash.clock.clone()).map(|line| Some(Ok(line)));
    let messages = stream::select(
        messages.map(Some).chain(stream::once(future::ready(None))),
        alive,
    )
    .take_while(|item| future::ready(item.is_some()))
    .filter_map(future::ready);
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-store"))
        .streaming(opened.chain(messages)))
}

/// A comment line every [`KEEPALIVE_MS`] on the server's clock, so a tail
/// whose browser went away is noticed (the write fails) and its places are
/// given back.
fn keepalive(clock: SharedClock) -> impl Stream<Item = Bytes> {
    stream::unfold(clock, |clock| async move {
        clock.sleep_until(clock.now_ms() + KEEPALIVE_MS).await;
        Some((Bytes::from_static(b": keepalive\n\n"), clock))
    })
}

fn kind(kind: DeliveryEventKind) -> &'static str {
    match kind {
        DeliveryEventKind::Accepted => "accepted",
        DeliveryEventKind::Delivered => "delivered",
        DeliveryEventKind::RetryScheduled => "retry scheduled",
        DeliveryEventKind::DeadLettered => "dead-lettered",
        DeliveryEventKind::Redelivered => "redelivered",
    }
}

/// One SSE message.
fn message(e: &DeliveryEventView) -> Bytes {
    let json = serde_json::json!({
        "kind": kind(e.kind),
        "tenant_id": e.tenant_id,
        "delivery_id": e.delivery_id,
        "event_id": e.event_id,
        "at": layout::at(e.at_ms),
        "attempt": e.attempt,
        "status_code": e.status_code,
        "reason": e.reason,
        "redelivered_as": e.redelivered_as,
    });
    Bytes::from(format!("data: {json}\n\n"))
}
