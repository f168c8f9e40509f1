//! The tenants overview, and a tenant's secrets with Rotate.

use actix_web::{web, HttpResponse};
use hookd_control::model::{
    HandshakeActivity, PageRequest, Principal, SecretState, TenantActivity, TenantView,
};
use maud::{html, Markup};

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

/// Most tenants the overview lists.
const MAX_TENANTS: u32 = 1000;
/// Longest overlap a rotation may give the old secret: 30 days.
const MAX_OVERLAP_SECS: u64 = 30 * 86_400;

/// `GET /tenants`: every tenant the token may see, with what it is doing.
pub(super) async fn overview(
    dash: web::Data<Dashboard>,
    signed: Signed,
) -> Result<HttpResponse, DashError> {
    let tenants = match signed.session.principal() {
        Principal::Admin => {
            let page = PageRequest {
                size: MAX_TENANTS,
                token: None,
            };
            dash.backend.list_tenants(page).await?.items
        }
        Principal::Tenant(own) => vec![dash.backend.get_tenant(own).await?],
    };
    let mut rows: Vec<(TenantView, TenantActivity)> = Vec::with_capacity(tenants.len());
    for tenant in tenants {
        let activity = dash.backend.tenant_activity(&tenant.tenant_id).await?;
        rows.push((tenant, activity));
    }
    let body = html! {
        @if rows.is_empty() {
            p { "No tenants yet." }
        } @else {
            div.scroll {
                table.overview {
                    caption { "Tenants now; ingest counts over the last hour and day on hookd's clock (duplicates and rejections counted since hookd last started)" }
                    thead { tr {
                        th scope="col" { "Tenant" }
                        th scope="col" { "Scheme" }
                        th scope="col" { "Handshake" }
                        th scope="col" { "Destination" }
                        th scope="col" { "Public URL" }
                        th scope="col" { "Breaker" }
                        th scope="col" { "Queue" }
                        th scope="col" { "Oldest pending" }
                        th scope="col" { "Dead letters" }
                        th scope="col" { "Accepted / duplicates last hour" }
                        th scope="col" { "Accepted / duplicates last day" }
                        th scope="col" { "Rejected last hour" }
                        th scope="col" { "Rejected last day" }
                        th scope="col" { "Rejected and recorded last hour" }
                        th scope="col" { "Rejected and recorded last day" }
                        th scope="col" { "Sender clock (median skew)" }
                    } }
                    tbody { @for (tenant, a) in &rows { (overview_row(tenant, a)) } }
                }
            }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        None,
        "Tenants",
        body,
    )))
}

/// How many in all.
fn total(counts: &[(String, u64)]) -> u64 {
    counts.iter().map(|(_, n)| n).sum()
}

/// Counts by code: `total: CODE n, CODE n`, or `0`.
fn by_code(counts: &[(String, u64)]) -> String {
    if counts.is_empty() {
        return "0".into();
    }
    let codes: Vec<String> = counts
        .iter()
        .map(|(code, n)| format!("{code} {n}"))
        .collect();
    format!("{}: {}", total(counts), codes.join(", "))
}

/// One tenant's row of the overview.
fn overview_row(tenant: &TenantView, a: &TenantActivity) -> Markup {
    let id = &tenant.tenant_id;
    html! {
        tr {
            th scope="row" {
                a href={ "/t/" (id) "/deliveries" } { (id) }
                @if !tenant.enabled { " " span.status.dead { "(disabled)" } }
            }
            td.scheme { (tenant.scheme.as_str()) }
            td.handshake { (handshake(a.handshake.as_ref())) }
            td { (tenant.destination_url.as_deref().unwrap_or("pull mode")) }
            td.public-url { (tenant.public_url.as_deref().unwrap_or("-")) }
            td { @match a.breaker_open {
                Some(true) => span.status.dead { "open" },
                Some(false) => "closed",
                None => "-",
            } }
            td { (a.queue_depth) }
            td { (a.oldest_pending_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
            td { a href={ "/t/" (id) "/dead-letters" } { (a.dead_letters) } }
            td.ingest-hour { (a.last_hour.accepted) " / " (a.last_hour.duplicates) }
            td.ingest-day { (a.last_day.accepted) " / " (a.last_day.duplicates) }
            td.rejected-hour { (by_code(&a.last_hour.rejected)) }
            td.rejected-day { (by_code(&a.last_day.rejected)) }
            td.recorded-hour { a href={ "/t/" (id) "/rejections" } { (total(&a.refused_last_hour)) } }
            td.recorded-day { (by_code(&a.refused_last_day)) }
            td { (skew(a.median_clock_skew_secs)) }
        }
    }
}

/// The handshake the scheme expects and what it came to: `-` for schemes
/// without one, `never seen` before the first, else the counts with when.
fn handshake(activity: Option<&HandshakeActivity>) -> Markup {
    let Some(h) = activity else {
        return html! { "-" };
    };
    html! {
        (h.handshake) ": "
        @if h.answered + h.refused == 0 {
            "never seen since hookd started"
        } @else {
            (h.answered) " answered"
            @if let Some(at) = h.last_answered_ms { " (last " (layout::at(at)) ")" }
            @if h.refused > 0 {
                ", " span.status.dead { (h.refused) " refused" }
                @if let (Some(at), Some(code)) = (h.last_refused_ms, &h.last_refusal) {
                    " (last " (layout::at(at)) ", " (code) ")"
                }
            }
        }
    }
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
            (layout::csrf(signed.csrf()))
            label for="overlap" { "Overlap for the old secret (hours, 0 to 720)" }
            input #overlap type="number" name="overlap_hours" min="0" max="720" value="24" required;
            button type="submit" { "Rotate secret" }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
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
    let rotated = dash
        .backend
        .rotate_secret(&tenant, overlap_secs, None)
        .await?;
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
        Some(signed.csrf()),
        Some(&tenant),
        "Secret rotated",
        body,
    )))
}

/// A median clock skew in words: how far behind or ahead the sender's clock is.
fn skew(median_secs: Option<f64>) -> String {
    match median_secs {
        None => "-".into(),
        Some(s) if s < 0.0 => format!("{:.0} s ahead", -s),
        Some(s) => format!("{s:.0} s behind"),
    }
}

#[cfg(test)]
mod tests {
    use super::skew;

    #[test]
    fn a_median_skew_says_which_way_the_sender_clock_is_off() {
        assert_eq!(skew(None), "-");
        assert_eq!(skew(Some(200.0)), "200 s behind");
        assert_eq!(skew(Some(-25.4)), "25 s ahead");
    }
}
