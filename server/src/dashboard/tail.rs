//! The live tail: a page listing a tenant's delivery events as they happen,
//! fed by server-sent events from the control plane's watch.

use actix_web::{web, HttpResponse};
use bytes::Bytes;
use futures_util::{future, stream, StreamExt};
use hookd_control::model::{DeliveryEventKind, DeliveryEventView};
use maud::html;

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

/// `GET /t/{tenant}/tail`.
pub(super) async fn page(
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let body = html! {
        p { "Events of this tenant's deliveries from now on, newest at the top. "
            "The list needs script; without it, reload the deliveries page." }
        p #tail-state role="status" { "Connecting…" }
        ol #tail aria-live="polite" data-src={ "/t/" (tenant) "/events" } data-tenant=(tenant) {}
        script src="/assets/tail.js" defer {}
    };
    Ok(layout::html(layout::page(
        Some(&signed),
        Some(&tenant),
        "Live tail",
        body,
    )))
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
    let feed = dash.backend.watch(Some(&tenant)).await?;
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
