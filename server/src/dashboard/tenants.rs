//! The tenants overview, and a tenant's secrets with Rotate.

use actix_web::{web, HttpResponse};
use hookd_control::model::{
    DeadLetterFilter, DeliveryStatus, PageRequest, Principal, SecretState, TenantView,
};
use maud::html;

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

/// Most items one overview count reads; more shows as "1000+".
const COUNT_CAP: u32 = 1000;
/// Longest overlap a rotation may give the old secret: 30 days.
const MAX_OVERLAP_SECS: u64 = 30 * 86_400;

/// What the overview shows of one tenant.
struct Row {
    tenant: TenantView,
    pending: (usize, bool),
    oldest_pending_ms: Option<i64>,
    dead: (usize, bool),
}

/// `GET /tenants`: every tenant the token may see, with its queue and dead
/// letters.
pub(super) async fn overview(
    dash: web::Data<Dashboard>,
    signed: Signed,
) -> Result<HttpResponse, DashError> {
    let tenants = match &signed.session.principal {
        Principal::Admin => {
            let page = PageRequest {
                size: COUNT_CAP,
                token: None,
            };
            dash.backend.list_tenants(page).await?.items
        }
        Principal::Tenant(own) => vec![dash.backend.get_tenant(own).await?],
    };
    let mut rows = Vec::with_capacity(tenants.len());
    for tenant in tenants {
        let first = || PageRequest {
            size: COUNT_CAP,
            token: None,
        };
        let pending = dash
            .backend
            .list_deliveries(&tenant.tenant_id, Some(DeliveryStatus::Pending), first())
            .await?;
        let dead = dash
            .backend
            .list_dead_letters(&tenant.tenant_id, DeadLetterFilter::default(), first())
            .await?;
        rows.push(Row {
            oldest_pending_ms: pending.items.last().map(|d| d.received_at_ms),
            pending: (pending.items.len(), pending.next_token.is_some()),
            dead: (dead.items.len(), dead.next_token.is_some()),
            tenant,
        });
    }
    let count = |(n, more): (usize, bool)| if more { format!("{n}+") } else { n.to_string() };
    let body = html! {
        @if rows.is_empty() {
            p { "No tenants yet." }
        } @else {
            div.scroll {
                table {
                    caption { "Tenants, their queue and their dead letters" }
                    thead { tr {
                        th scope="col" { "Tenant" }
                        th scope="col" { "Destination" }
                        th scope="col" { "State" }
                        th scope="col" { "Pending" }
                        th scope="col" { "Oldest pending" }
                        th scope="col" { "Dead letters" }
                    } }
                    tbody {
                        @for row in &rows {
                            @let id = &row.tenant.tenant_id;
                            tr {
                                th scope="row" { a href={ "/t/" (id) "/deliveries" } { (id) } }
                                td { (row.tenant.destination_url.as_deref().unwrap_or("pull mode")) }
                                td { @if row.tenant.enabled { "enabled" } @else { "disabled" } }
                                td { (count(row.pending)) }
                                td { (row.oldest_pending_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
                                td {
                                    a href={ "/t/" (id) "/dead-letters" } { (count(row.dead)) }
                                }
                            }
                        }
                    }
                }
            }
        }
    };
    Ok(layout::html(layout::page(
        Some(&signed),
        None,
        "Tenants",
        body,
    )))
}

/// `GET /t/{tenant}/secrets`: the live secrets without their values.
pub(super) async fn secrets(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let secrets = dash.backend.list_secrets(&tenant).await?;
    let body = html! {
        div.scroll { table {
            caption { "Signing secrets, current first (values are never shown again)" }
            thead { tr {
                th scope="col" { "Key id" } th scope="col" { "State" }
                th scope="col" { "Created" } th scope="col" { "Expires" }
            } }
            tbody { @for s in &secrets { tr {
                th scope="row" { code { (s.kid) } }
                td { @match s.state { SecretState::Current => "current", SecretState::Previous => "previous" } }
                td { (layout::at(s.created_at_ms)) }
                td { (s.expires_at_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
            } } }
        } }
        h2 { "Rotate" }
        p { "Makes a new current secret and shows it once. Senders keep working with the old one for the overlap." }
        form.stack method="post" action={ "/t/" (tenant) "/secrets/rotate" } {
            (layout::csrf(&signed))
            label for="overlap" { "Overlap for the old secret (hours, 0 to 720)" }
            input #overlap type="number" name="overlap_hours" min="0" max="720" value="24" required;
            button type="submit" { "Rotate secret" }
        }
    };
    Ok(layout::html(layout::page(
        Some(&signed),
        Some(&tenant),
        "Secrets",
        body,
    )))
}

/// `POST /t/{tenant}/secrets/rotate`: shows the new secret, once.
pub(super) async fn rotate(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let form = signed.form(&body)?;
    let hours = form.get("overlap_hours").unwrap_or("24");
    let overlap_secs = hours
        .parse::<u64>()
        .ok()
        .map(|h| h * 3600)
        .filter(|s| *s <= MAX_OVERLAP_SECS)
        .ok_or_else(|| {
            DashError::BadInput(format!(
                "overlap_hours: {hours:?} is not a number from 0 to 720"
            ))
        })?;
    let rotated = dash.backend.rotate_secret(&tenant, overlap_secs).await?;
    let body = html! {
        p role="status" { "The secret was rotated. Copy the new secret now: hookd never shows it again." }
        dl {
            dt { "New key id" } dd { code { (rotated.kid) } }
            dt { "New secret" } dd { code #new-secret { (rotated.secret) } }
            dt { "Previous key id" } dd { code { (rotated.previous_kid) } }
            dt { "Previous secret accepted until" } dd { (layout::at(rotated.previous_expires_at_ms)) }
        }
        p { a href={ "/t/" (tenant) "/secrets" } { "Back to the secrets" } }
    };
    Ok(layout::html(layout::page(
        Some(&signed),
        Some(&tenant),
        "Secret rotated",
        body,
    )))
}
