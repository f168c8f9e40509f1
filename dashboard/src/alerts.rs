//! A tenant's issues: its alerts, newest first, filtered by state, each open
//! one with an Acknowledge button.

use actix_web::{web, HttpResponse};
use hookd_control::model::{AlertFilter, AlertState, PageRequest};
use maud::html;
use serde::Deserialize;

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

/// Alerts per page.
const PAGE_SIZE: u32 = 50;

/// The listing's filter, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Query {
    /// Empty: every state.
    #[serde(default)]
    state: String,
    #[serde(default)]
    page: String,
}

/// The states the filter offers, with their names.
const STATES: [(AlertState, &str); 3] = [
    (AlertState::Open, "open"),
    (AlertState::Acknowledged, "acknowledged"),
    (AlertState::Resolved, "resolved"),
];

fn name(state: AlertState) -> &'static str {
    STATES
        .iter()
        .find(|(s, _)| *s == state)
        .map_or("open", |(_, n)| n)
}

/// `GET /t/{tenant}/alerts`: newest first.
///
/// A tenant's issues: its alerts (open, acknowledged, resolved), newest
/// first, filtered by state, each open one with an Acknowledge button
/// (a form carrying the page's CSRF token).
pub(super) async fn list(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    query: web::Query<Query>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let states = match query.state.as_str() {
        "" => Vec::new(),
        wanted => match STATES.iter().find(|(_, n)| *n == wanted) {
            Some((state, _)) => vec![*state],
            None => {
                return Err(DashError::BadInput(format!(
                    "state: {wanted:?} is not open, acknowledged or resolved"
                )))
            }
        },
    };
    let page = PageRequest {
        size: PAGE_SIZE,
        token: Some(query.page.clone()).filter(|t| !t.is_empty()),
    };
    let listed = dash
        .backend
        .list_alerts(&tenant, AlertFilter { states }, page)
        .await?;
    let body = html! {
        p { "Conditions hookd watches for this tenant (docs/alerts.md). An alert opens when one starts and resolves when it clears; acknowledging says someone is on it." }
        form.filters method="get" action={ "/t/" (tenant) "/alerts" } {
            div {
                label for="state" { "State" }
                select #state name="state" {
                    option value="" selected[query.state.is_empty()] { "any" }
                    @for (_, n) in STATES {
                        option value=(n) selected[n == query.state] { (n) }
                    }
                }
            }
            button type="submit" { "Filter" }
        }
        @if listed.items.is_empty() {
            p role="status" { "No alert matches." }
        } @else {
            div.scroll { table {
                caption { "Alerts, newest first" }
                thead { tr {
                    th scope="col" { "Alert" } th scope="col" { "Type" } th scope="col" { "Subject" }
                    th scope="col" { "State" } th scope="col" { "Summary" } th scope="col" { "Opened" }
                    th scope="col" { "Last seen" } th scope="col" { "Resolved" } th scope="col" { "Action" }
                } }
                tbody { @for a in &listed.items { tr {
                    th scope="row" { code { (a.id) } }
                    td { code { (a.alert_type) } }
                    td { (a.subject) }
                    td.state { (name(a.state)) }
                    td {
                        (a.summary)
                        @if !a.delivery_ids.is_empty() {
                            ul.links.alert-deliveries { @for id in &a.delivery_ids {
                                li { a href={ "/t/" (tenant) "/deliveries/" (id) } { code { (id) } } }
                            } }
                        }
                    }
                    td { (layout::at(a.opened_at_unix_ms)) }
                    td { (layout::at(a.last_seen_at_unix_ms)) }
                    td { (a.resolved_at_unix_ms.map(layout::at).unwrap_or_else(|| "-".into())) }
                    td { @if a.state == AlertState::Open {
                        form method="post" action={ "/t/" (tenant) "/alerts/" (a.id) "/acknowledge" } {
                            (layout::csrf(signed.csrf()))
                            button type="submit" aria-label={ "Acknowledge " (a.id) } { "Acknowledge" }
                        }
                    } }
                } } }
            } }
            @if let Some(next) = &listed.next_token {
                p { a rel="next" href={ "/t/" (tenant) "/alerts" (layout::query(&[("state", &query.state), ("page", next)])) } { "Older alerts" } }
            }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Alerts",
        body,
    )))
}

/// `POST /t/{tenant}/alerts/{id}/acknowledge`.
pub(super) async fn acknowledge(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<(String, String)>,
    body: web::Bytes,
) -> Result<HttpResponse, DashError> {
    let (tenant, id) = path.into_inner();
    let tenant = tenant_in_path(&signed, &tenant)?;
    signed.form(&body)?;
    let alert = dash.backend.acknowledge_alert(&tenant, &id).await?;
    let body = html! {
        p role="status" { "Alert " code { (alert.id) } " (" (alert.alert_type) ") is acknowledged." }
        p { a href={ "/t/" (tenant) "/alerts" } { "Back to the alerts" } }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Acknowledged",
        body,
    )))
}
