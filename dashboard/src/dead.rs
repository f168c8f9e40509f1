//! A tenant's dead letters of one route with filters, and Redeliver: of
//! the ticked ones, or of every one the filter matches on that route.

use actix_web::{web, HttpResponse};
use hookd_control::model::{DeadLetterFilter, Matching, PageRequest, Pick, Selection};
use maud::html;
use serde::Deserialize;

use super::{
    error::DashError,
    layout, route_param,
    routes::selector,
    session::{PostedForm, Signed},
    tenant_in_path, Dashboard,
};

/// Dead letters per page.
const PAGE_SIZE: u32 = 50;

/// The filter fields, from the query string or the form.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Query {
    /// Empty: the default route.
    #[serde(default)]
    route: String,
    #[serde(default)]
    reason: String,
    #[serde(default)]
    since: String,
    #[serde(default)]
    until: String,
    #[serde(default)]
    page: String,
}

fn filter(reason: &str, since: &str, until: &str) -> Result<DeadLetterFilter, DashError> {
    let time = |field: &str, value: &str| {
        let value = value.trim();
        (!value.is_empty())
            .then(|| layout::parse_at(field, value))
            .transpose()
            .map_err(|e| DashError::BadInput(e.to_string()))
    };
    let filter = DeadLetterFilter {
        since_ms: time("since", since)?,
        until_ms: time("until", until)?,
        reason_contains: Some(reason.trim().to_owned()).filter(|r| !r.is_empty()),
    };
    if let (Some(since), Some(until)) = (filter.since_ms, filter.until_ms) {
        if since > until {
            return Err(DashError::BadInput("since: must not be after until".into()));
        }
    }
    Ok(filter)
}

/// `GET /t/{tenant}/dead-letters`: most recently dead first.
pub(super) async fn list(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    query: web::Query<Query>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let route = route_param(&query.route)?;
    let filter = filter(&query.reason, &query.since, &query.until)?;
    let page = PageRequest {
        size: PAGE_SIZE,
        token: (!query.page.is_empty()).then(|| query.page.clone()),
    };
    let letters = dash
        .backend
        .list_dead_letters(&tenant, route, filter, page)
        .await?;
    let routes = selector(&dash, &tenant, route).await?;
    let action = format!("/t/{tenant}/dead-letters/redeliver");
    let body = html! {
        form.filters method="get" action={ "/t/" (tenant) "/dead-letters" } {
            (routes)
            div { label for="reason" { "Reason contains" } input #reason type="search" name="reason" value=(query.reason); }
            div { label for="since" { "Dead since (UTC)" } input #since type="text" name="since" value=(query.since) placeholder="2026-11-30T00:00:00Z"; }
            div { label for="until" { "Dead before (UTC)" } input #until type="text" name="until" value=(query.until) placeholder="2026-12-01T00:00:00Z"; }
            button type="submit" { "Filter" }
        }
        @if letters.items.is_empty() {
            p { "No dead letters match." }
        } @else {
            form method="post" action=(action) {
                (layout::csrf(signed.csrf()))
                input type="hidden" name="scope" value="ids";
                input type="hidden" name="route" value=(route);
                div.scroll { table {
                    caption { "Dead letters; tick the ones to redeliver" }
                    thead { tr {
                        th scope="col" { span.visually-hidden { "Select" } }
                        th scope="col" { "Delivery" } th scope="col" { "Event id" }
                        th scope="col" { "Reason" } th scope="col" { "Last status" }
                        th scope="col" { "Attempts" } th scope="col" { "Dead at" }
                    } }
                    tbody { @for l in &letters.items { tr {
                        td { input type="checkbox" name="ids" value=(l.delivery_id) id={ "pick-" (l.delivery_id) } aria-label={ "Select " (l.delivery_id) }; }
                        th scope="row" { a href={ "/t/" (tenant) "/deliveries/" (l.delivery_id) } { code { (l.delivery_id) } } }
                        td { code { (l.event_id) } }
                        td { (l.reason) }
                        td { (l.last_status_code.map(|s| s.to_string()).unwrap_or_else(|| "-".into())) }
                        td { (l.attempt_count) }
                        td { (layout::at(l.dead_at_ms)) }
                    } } }
                } }
                button type="submit" { "Redeliver selected" }
            }
            form.stack method="post" action=(action) {
                (layout::csrf(signed.csrf()))
                input type="hidden" name="scope" value="matching";
                input type="hidden" name="route" value=(route);
                input type="hidden" name="reason" value=(query.reason);
                input type="hidden" name="since" value=(query.since);
                input type="hidden" name="until" value=(query.until);
                button type="submit" { "Redeliver every dead letter matching the filter" }
            }
            @if let Some(next) = &letters.next_token {
                p { a rel="next" href={ "/t/" (tenant) "/dead-letters" (layout::query(&[("route", route), ("reason", &query.reason), ("since", &query.since), ("until", &query.until), ("page", next)])) } { "Older dead letters" } }
            }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Dead letters",
        body,
    )))
}

/// What the form picks, on the route it names (none: ids on any route,
/// a filter on the default route).
fn selection(form: &PostedForm) -> Result<Selection, DashError> {
    let route = match form.get("route").unwrap_or_default() {
        "" => None,
        named => Some(route_param(named)?.to_owned()),
    };
    match form.get("scope") {
        Some("ids") => {
            let ids = form.all("ids");
            if ids.is_empty() {
                return Err(DashError::BadInput(
                    "ids: tick at least one dead letter to redeliver".into(),
                ));
            }
            Ok(Pick::Ids(ids))
        }
        Some("matching") => Ok(Pick::Matching(Matching::dead(filter(
            form.get("reason").unwrap_or_default(),
            form.get("since").unwrap_or_default(),
            form.get("until").unwrap_or_default(),
        )?))),
        _ => Err(DashError::BadInput("scope: must be ids or matching".into())),
    }
    .map(|pick| Selection { route, pick })
}

/// `POST /t/{tenant}/dead-letters/redeliver`: all or nothing.
pub(super) async fn redeliver(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let form = signed.form(&body)?;
    let selection = selection(&form)?;
    let back = layout::query(&[("route", selection.route_or_default())]);
    let new_ids = dash
        .backend
        .redeliver(&tenant, selection)
        .await?
        .delivery_ids;
    let body = html! {
        p role="status" { "Queued " (new_ids.len()) " redelivery(ies), each a new delivery with a new request id." }
        @if !new_ids.is_empty() {
            ul.redelivered { @for id in &new_ids {
                li { a href={ "/t/" (tenant) "/deliveries/" (id) } { code { (id) } } }
            } }
        }
        p { a href={ "/t/" (tenant) "/dead-letters" (back) } { "Back to the dead letters" } }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Redelivered",
        body,
    )))
}
