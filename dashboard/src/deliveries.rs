//! A tenant's deliveries, one delivery with its content, attempts and
//! redirects, and Redirect of one delivery to a typed URL.

use actix_web::{web, HttpResponse};
use hookd_control::model::{
    AttemptView, DeliveryQuery, DeliveryStatus, DeliveryView, PageRequest, RedirectView,
};
use maud::{html, Markup};
use serde::Deserialize;

use super::{
    error::DashError, layout, route_param, routes::selector, session::Signed, tenant_in_path,
    Dashboard,
};

/// Deliveries per page.
const PAGE_SIZE: u32 = 50;
/// The listing's filters, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Filters {
    /// Empty: the default route.
    #[serde(default)]
    route: String,
    #[serde(default)]
    status: String,
    #[serde(default)]
    event_id: String,
    #[serde(default)]
    event_type: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    page: String,
}

/// A typed time bound, if any.
fn bound(field: &str, value: &str) -> Result<Option<i64>, DashError> {
    let value = value.trim();
    (!value.is_empty())
        .then(|| layout::parse_at(field, value))
        .transpose()
        .map_err(|e| DashError::BadInput(e.to_string()))
}

/// The statuses the listing filters by, in the order the form offers them.
const STATUSES: [DeliveryStatus; 9] = [
    DeliveryStatus::Pending,
    DeliveryStatus::Held,
    DeliveryStatus::Delivered,
    DeliveryStatus::Dead,
    DeliveryStatus::TransformFailed,
    DeliveryStatus::Dropped,
    DeliveryStatus::Filtered,
    DeliveryStatus::Unrouted,
    DeliveryStatus::Redelivered,
];

fn status(value: &str) -> Result<Option<DeliveryStatus>, DashError> {
    if value.is_empty() {
        return Ok(None);
    }
    match STATUSES.iter().find(|s| s.as_str() == value) {
        Some(status) => Ok(Some(*status)),
        None => {
            let names: Vec<&str> = STATUSES.iter().map(|s| s.as_str()).collect();
            Err(DashError::BadInput(format!(
                "status: {value:?} is not one of {}",
                names.join(", ")
            )))
        }
    }
}

/// The filters as the listing applies them.
struct Wanted<'a> {
    route: &'a str,
    status: Option<DeliveryStatus>,
    event_id: &'a str,
    event_type: Option<&'a str>,
    since: Option<i64>,
    until: Option<i64>,
}

impl Wanted<'_> {
    /// What the backend is asked for.
    fn query(&self) -> DeliveryQuery {
        DeliveryQuery {
            route: self.route.to_owned(),
            status: self.status,
            event_id: Some(self.event_id.to_owned()).filter(|id| !id.is_empty()),
            event_type: self.event_type.map(str::to_owned),
            since_ms: self.since,
            until_ms: self.until,
            body: None,
        }
    }
}

/// `GET /t/{tenant}/deliveries`: newest first.
pub(super) async fn list(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    filters: web::Query<Filters>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let wanted = Wanted {
        route: route_param(&filters.route)?,
        status: status(&filters.status)?,
        event_id: filters.event_id.trim(),
        event_type: Some(filters.event_type.trim()).filter(|t| !t.is_empty()),
        since: bound("since", &filters.since)?,
        until: bound("until", &filters.until)?,
    };
    let page = PageRequest {
        size: PAGE_SIZE,
        token: (!filters.page.is_empty()).then(|| filters.page.clone()),
    };
    let listed = dash
        .backend
        .list_deliveries(&tenant, wanted.query(), page)
        .await?;
    let (shown, next) = (listed.items, listed.next_token);
    let routes = selector(&dash, &tenant, wanted.route).await?;
    let event_id = wanted.event_id;
    let body = html! {
        form.filters method="get" action={ "/t/" (tenant) "/deliveries" } {
            (routes)
            div {
                label for="status" { "Status" }
                select #status name="status" {
                    @for s in std::iter::once("").chain(STATUSES.iter().map(|s| s.as_str())) {
                        option value=(s) selected[s == filters.status] { @if s.is_empty() { "any" } @else { (s) } }
                    }
                }
            }
            div {
                label for="event_id" { "Event id" }
                input #event_id type="search" name="event_id" value=(event_id);
            }
            div {
                label for="event_type" { "Event type" }
                input #event_type type="search" name="event_type" value=(wanted.event_type.unwrap_or("")) placeholder="order.paid";
            }
            div {
                label for="since" { "Received since (UTC)" }
                input #since type="text" name="since" value=(filters.since) placeholder="2026-11-30T00:00:00Z";
            }
            div {
                label for="until" { "Received before (UTC)" }
                input #until type="text" name="until" value=(filters.until) placeholder="2026-12-01T00:00:00Z";
            }
            button type="submit" { "Filter" }
        }
        (table(&tenant, &shown))
        @if let Some(next) = &next {
            p { a rel="next" href={ "/t/" (tenant) "/deliveries" (layout::query(&[("route", wanted.route), ("status", &filters.status), ("event_id", event_id), ("event_type", &filters.event_type), ("since", &filters.since), ("until", &filters.until), ("page", next)])) } { "Older deliveries" } }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Deliveries",
        body,
    )))
}

fn table(tenant: &str, deliveries: &[DeliveryView]) -> Markup {
    html! {
        @if deliveries.is_empty() {
            p.empty role="status" { "No deliveries match." }
        } @else {
            div.scroll { table {
                caption { "Deliveries, newest first" }
                thead { tr {
                    th scope="col" { "Delivery" } th scope="col" { "Event id" }
                    th scope="col" { "Status" } th scope="col" { "Received" }
                    th scope="col" { "Attempts" } th scope="col" { "Next attempt" }
                    th scope="col" { "Last error" }
                } }
                tbody { @for d in deliveries { tr {
                    th scope="row" { a href={ "/t/" (tenant) "/deliveries/" (d.delivery_id) } { code { (d.delivery_id) } } }
                    td { code { (d.event_id) } }
                    td { span class={ "status " (d.status.as_str()) } { (d.status.as_str()) } }
                    td { (layout::at(d.received_at_ms)) }
                    td { (d.attempt_count) }
                    td { (d.next_attempt_at_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
                    td { (d.last_error.as_deref().unwrap_or("")) }
                } } }
            } }
        }
    }
}

/// `GET /t/{tenant}/deliveries/{id}`.
pub(super) async fn one(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
) -> Result<HttpResponse, DashError> {
    let (tenant, id) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    let body = detail(&dash, &signed, &tenant, &id, None).await?;
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Delivery",
        body,
    )))
}

/// The delivery page's body; `redirected` is a Redirect's outcome to show
/// above it.
async fn detail(
    dash: &Dashboard,
    signed: &Signed,
    tenant: &str,
    id: &str,
    redirected: Option<(String, AttemptView)>,
) -> Result<Markup, DashError> {
    let d = dash.backend.get_delivery(tenant, id).await?;
    let content = dash.backend.get_delivery_content(tenant, id).await?;
    Ok(html! {
        @if let Some((url, outcome)) = &redirected {
            section.outcome aria-labelledby="redirect-result" role="status" {
                h2 #redirect-result { "Redirect result" }
                p { "Sent once to " code { (url) } "; the tenant's destination is unchanged." }
                (attempt_list(None, std::slice::from_ref(outcome)))
            }
        }
        dl.facts {
            dt { "Delivery" } dd { code #delivery-id { (d.delivery_id) } }
            dt { "Event id" } dd { code { (d.event_id) } }
            dt { "Event type" } dd { code #event-type { (content.event_type.as_deref().unwrap_or("-")) } }
            dt { "Status" } dd { span #delivery-status class={ "status " (d.status.as_str()) } { (d.status.as_str()) } }
            dt { "Received" } dd { (layout::at(d.received_at_ms)) }
            dt { "Request id" } dd { code { (content.request_id) } }
            dt { "Attempts" } dd { (d.attempt_count) }
            dt { "Next attempt" } dd { (d.next_attempt_at_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
            @if let Some(of) = &d.redelivery_of {
                dt { "Redelivers" } dd { a href={ "/t/" (tenant) "/deliveries/" (of) } { code { (of) } } }
            }
            @if let Some(as_) = &d.redelivered_as {
                dt { "Redelivered as" } dd { a href={ "/t/" (tenant) "/deliveries/" (as_) } { code { (as_) } } }
            }
            @for r in &d.routes {
                dt { "Route " (r.route) }
                dd.route-outcome {
                    @if r.filtered { span.status.filtered { "filtered" } " " }
                    @if let Some(id) = r.delivery_id.as_deref().filter(|id| *id != d.delivery_id) {
                        a href={ "/t/" (tenant) "/deliveries/" (id) } { code { (id) } }
                    }
                }
            }
        }
        (try_on(tenant, &d))
        h2 { "Headers" }
        dl.headers { @for (name, value) in &content.headers { dt { (name) } dd { code { (value) } } } }
        h2 { "Body " small { "(" (layout::size(content.body.len())) ")" } }
        pre.body tabindex="0" aria-label="Body" { (layout::pretty(&content.body)) }
        h2 { "Attempts" }
        @if d.attempts.is_empty() { p { "No attempt yet." } } @else { (attempt_list(Some("attempts"), &d.attempts)) }
        (redirect_list(&d.redirects))
        h2 { "Redirect" }
        p { "Send this delivery once to another URL, for instance a test endpoint, signed as hookd signs forwards. The tenant's destination and this delivery stay as they are." }
        form.stack method="post" action={ "/t/" (tenant) "/deliveries/" (d.delivery_id) "/redirect" } {
            (layout::csrf(signed.csrf()))
            label for="redirect-url" { "URL" }
            input #redirect-url type="url" name="url" required placeholder="https://test.example.com/hook";
            button type="submit" { "Redirect" }
        }
    })
}

/// Links to try each route of the event (or the delivery's own) on it.
fn try_on(tenant: &str, d: &DeliveryView) -> Markup {
    let routes: Vec<&str> = if d.routes.is_empty() {
        vec![d.route.as_str()]
    } else {
        d.routes.iter().map(|r| r.route.as_str()).collect()
    };
    let on = layout::query(&[("delivery_id", &d.delivery_id)]);
    html! {
        ul.links.try-on { @for route in routes {
            li { a href={ "/t/" (tenant) "/routes/" (route) "/test" (on) } { "Try on route " (route) } }
        } }
    }
}

fn attempt_list(id: Option<&str>, attempts: &[AttemptView]) -> Markup {
    html! {
        ol.attempts id=[id] { @for a in attempts { li {
            dl.facts {
                dt { "Attempt" } dd { (a.attempt) }
                dt { "Started" } dd { (layout::at(a.started_at_ms)) }
                dt { "HTTP status" } dd.attempt-status { (a.status_code.map(|s| s.to_string()).unwrap_or_else(|| "no answer".into())) }
                dt { "Duration" } dd { (a.duration_ms) " ms" }
                dt { "Request id" } dd { code { (a.request_id) } }
                @if let Some(e) = &a.error { dt { "Error" } dd { (e) } }
                @if let Some(at) = a.next_retry_at_ms { dt { "Next retry" } dd { (layout::at(at)) } }
            }
            @if !a.response_body.is_empty() {
                details { summary { "Answer (first 4 KB)" } pre tabindex="0" { (String::from_utf8_lossy(&a.response_body)) } }
            }
        } } }
    }
}

/// The recorded redirects of a delivery, oldest first.
fn redirect_list(redirects: &[RedirectView]) -> Markup {
    html! {
        section #redirects aria-labelledby="redirects-title" {
            h2 #redirects-title { "Redirects" }
            @if redirects.is_empty() {
                p { "Never redirected." }
            } @else {
                ol.attempts { @for r in redirects { li {
                    dl.facts {
                        dt { "Sent" } dd { (layout::at(r.started_at_ms)) }
                        dt { "By" } dd.redirect-by { (r.by) }
                        dt { "To" } dd { code { (r.url) } }
                        dt { "HTTP status" } dd.attempt-status { (r.status_code.map(|s| s.to_string()).unwrap_or_else(|| "no answer".into())) }
                        dt { "Duration" } dd { (r.duration_ms) " ms" }
                        dt { "Request id" } dd { code { (r.request_id) } }
                        @if let Some(e) = &r.error { dt { "Error" } dd { (e) } }
                    }
                } } }
            }
        }
    }
}

/// `POST /t/{tenant}/deliveries/{id}/redirect`: sends it once and shows
/// what happened.
pub(super) async fn redirect(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, id) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    let form = signed.form(&body)?;
    let url = form
        .get("url")
        .ok_or_else(|| DashError::BadInput("url: type the URL to send the delivery to".into()))?
        .to_owned();
    let outcome = dash
        .backend
        .redirect(signed.session.principal(), &tenant, &id, &url)
        .await?;
    let body = detail(&dash, &signed, &tenant, &id, Some((url, outcome))).await?;
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Delivery",
        body,
    )))
}
