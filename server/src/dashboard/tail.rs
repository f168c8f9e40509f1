//! The live tail: a page listing delivery events as they happen, fed by
//! server-sent events from the control plane's watch: one tenant's, or at
//! `/tail` every tenant's for the admin token (each line naming its tenant)
//! and the own tenant's for a tenant token.

use actix_web::{web, HttpResponse};
use bytes::Bytes;
use futures_util::{future, stream, StreamExt};
use hookd_control::model::{DeliveryEventKind, DeliveryEventView, Principal};
use maud::{html, Markup};

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

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
        Some(&signed),
        Some(&tenant),
        "Live tail",
        body,
    )))
}

/// `GET /tail`: every tenant's events for the admin token, the own
/// tenant's for a tenant token.
pub(super) async fn page_all(signed: Signed) -> Result<HttpResponse, DashError> {
    let (tenant, intro) = match &signed.session.principal {
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
        Some(&signed),
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
pub(super) async fn events(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    stream_events(&dash, Some(&tenant)).await
}

/// `GET /events`: every tenant's events for the admin token, the own
/// tenant's for a tenant token.
pub(super) async fn events_all(
    dash: web::Data<Dashboard>,
    signed: Signed,
) -> Result<HttpResponse, DashError> {
    let only = match &signed.session.principal {
        Principal::Admin => None,
        Principal::Tenant(own) => Some(own.as_str()),
    };
    stream_events(&dash, only).await
}

/// The watch of one tenant (or of all) as `text/event-stream`.
async fn stream_events(dash: &Dashboard, tenant: Option<&str>) -> Result<HttpResponse, DashError> {
    let feed = dash.backend.watch(tenant).await?;
    let messages = feed
        .take_while(|event| future::ready(event.is_ok()))
        .filter_map(|event| future::ready(event.ok()))
        .map(|event| Ok::<_, actix_web::Error>(message(&event)));
    let opened = stream::once(future::ready(Ok(Bytes::from_static(b": watching\n\n"))));
    Ok(HttpResponse::Ok()
        .content_type("text/event-stream")
        .insert_header(("cache-control", "no-store"))
        .streaming(opened.chain(messages)))
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
