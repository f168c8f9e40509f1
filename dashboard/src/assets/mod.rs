//! The embedded stylesheet and the live tail's script.

use actix_web::{web, HttpResponse};

use super::error::DashError;

const STYLE: &str = include_str!("style.css");
const TAIL: &str = include_str!("tail.js");

/// `GET /assets/{name}`.
pub(super) async fn asset(name: web::Path<String>) -> Result<HttpResponse, DashError> {
    let (body, kind) = match name.as_str() {
        "style.css" => (STYLE, "text/css; charset=utf-8"),
        "tail.js" => (TAIL, "text/javascript; charset=utf-8"),
        other => return Err(DashError::NotFound(format!("no asset \"{other}\""))),
    };
    Ok(HttpResponse::Ok()
        .content_type(kind)
        .insert_header(("cache-control", "max-age=300"))
        .body(body))
}
