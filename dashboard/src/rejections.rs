//! Rejected requests of a tenant, findable by request id.

use actix_web::{web, HttpResponse};
use hookd_control::model::{PageRequest, RejectionFilter};
use maud::html;
use serde::Deserialize;

use super::{error::DashError, layout, session::Signed, tenant_in_path, Dashboard};

/// Rejections per page.
const PAGE_SIZE: u32 = 50;

/// The listing's filters, from the query string.
#[derive(Debug, Default, Deserialize)]
pub(super) struct Query {
    #[serde(default)]
    request_id: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    page: String,
}

/// `GET /t/{tenant}/rejections`: newest first.
///
/// Rejected requests of a tenant: content rejected after a valid signature
/// (with the first 4 KiB of the body) and bad or missing signatures
/// (without), findable by request id.
pub(super) async fn list(
    dash: web::Data<Dashboard>,
    signed: Signed,
    path: web::Path<String>,
    query: web::Query<Query>,
) -> Result<HttpResponse, DashError> {
    let tenant = tenant_in_path(&signed, &path)?;
    let signature_valid = match query.kind.as_str() {
        "" => None,
        "content" => Some(true),
        "signature" => Some(false),
        other => {
            return Err(DashError::BadInput(format!(
                "kind: {other:?} is not content or signature"
            )))
        }
    };
    let request_id = query.request_id.trim();
    let filter = RejectionFilter {
        request_id: Some(request_id.to_owned()).filter(|id| !id.is_empty()),
        signature_valid,
    };
    let page = PageRequest {
        size: PAGE_SIZE,
        token: Some(query.page.clone()).filter(|t| !t.is_empty()),
    };
    let listed = dash.backend.list_rejections(&tenant, filter, page).await?;
    let one = !request_id.is_empty();
    let body = html! {
        p { "Requests this tenant rejected. Content rejected after a valid signature keeps its first 4 KiB; a bad or missing signature keeps no body." }
        form.filters method="get" action={ "/t/" (tenant) "/rejections" } {
            div { label for="request_id" { "Request id" } input #request_id type="search" name="request_id" value=(request_id) placeholder="req_…"; }
            div {
                label for="kind" { "Kind" }
                select #kind name="kind" {
                    @for (value, text) in [("", "any"), ("content", "content rejected"), ("signature", "bad signature")] {
                        option value=(value) selected[value == query.kind] { (text) }
                    }
                }
            }
            button type="submit" { "Find" }
        }
        @if listed.items.is_empty() {
            p role="status" { "No rejected request matches." }
        } @else {
            ol.rejections { @for r in &listed.items { li {
                dl.facts {
                    dt { "Request id" } dd { code.request-id { (r.request_id) } }
                    dt { "Rejected at" } dd { (layout::at(r.at_ms)) }
                    dt { "Kind" } dd { @if r.signature_valid { "content rejected (signature valid)" } @else { "bad or missing signature" } }
                    dt { "Code" } dd { code.code { (r.code) } }
                    dt { "Reason" } dd.reason { (r.reason) }
                    dt { "Body size" } dd { (layout::size(r.body_bytes as usize)) }
                }
                @if !r.body.is_empty() {
                    details open[one] {
                        summary { "Body (first " (layout::size(r.body.len())) ")" }
                        pre.body tabindex="0" aria-label="Rejected body" { (String::from_utf8_lossy(&r.body)) }
                    }
                }
            } } }
            @if let Some(next) = &listed.next_token {
                p { a rel="next" href={ "/t/" (tenant) "/rejections" (layout::query(&[("kind", &query.kind), ("page", next)])) } { "Older rejections" } }
            }
        }
    };
    Ok(layout::html(layout::page(
        Some(signed.csrf()),
        Some(&tenant),
        "Rejected requests",
        body,
    )))
}
