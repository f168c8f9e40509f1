//! The HTTP surface: routes, the request-id middleware and the answers for
//! unknown routes. Handlers stay thin; the work happens in tenant actors.

mod body;
mod edge;
mod encoding;
mod handshake;
mod health;
mod hooks;

use std::sync::Arc;

use actix_web::{
    body::MessageBody,
    dev::{ServiceRequest, ServiceResponse},
    http::header::{HeaderName, HeaderValue, X_CONTENT_TYPE_OPTIONS},
    middleware::Next,
    web, HttpMessage, HttpRequest, HttpResponse,
};

use crate::{
    error::http::{ApiError, ErrorCode},
    ids::RequestId,
    tenant::{Registry, Services},
};

pub use edge::{close_unread_body, header_limit, EdgeLimits};

/// Shared state of every HTTP worker.
#[derive(Clone)]
pub struct AppState {
    /// Running tenants.
    pub registry: Registry,
    /// What the tenants share: storage, clock, feed, telemetry.
    pub services: Arc<Services>,
    /// Head size and body deadline.
    pub limits: EdgeLimits,
}

/// Registers every route on an actix-web app.
pub fn configure(state: AppState) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.app_data(web::Data::new(state))
            .service(web::scope("/hooks").default_service(web::to(hooks::route)))
            .route("/healthz", web::get().to(health::healthz))
            .route("/readyz", web::get().to(health::readyz))
            .default_service(web::to(route_not_found));
    }
}

/// Gives every request an id, stores it for handlers and echoes it in
/// `X-Request-Id` on every answer; marks every answer
/// `X-Content-Type-Options: nosniff`, so a browser never reads what a
/// sender chose to be echoed (Meta's `hub.challenge`, an error's message)
/// as anything but the content type it is answered with.
pub async fn answer_headers(
    req: ServiceRequest,
    next: Next<impl MessageBody>,
) -> Result<ServiceResponse<impl MessageBody>, actix_web::Error> {
    let id = RequestId::generate();
    req.extensions_mut().insert(id.clone());
    let mut res = next.call(req).await?;
    let headers = res.headers_mut();
    headers.insert(X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    if let Ok(value) = HeaderValue::from_str(id.as_str()) {
        headers.insert(HeaderName::from_static("x-request-id"), value);
    }
    Ok(res)
}

/// The request id the middleware assigned.
pub fn request_id_of(req: &HttpRequest) -> RequestId {
    req.extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(RequestId::generate)
}

pub(crate) async fn route_not_found(req: HttpRequest) -> HttpResponse {
    ApiError::new(
        ErrorCode::RouteNotFound,
        format!(
            "no route for {} {}; webhooks go to POST /hooks/{{tenant_id}}",
            req.method(),
            req.path()
        ),
    )
    .to_response(&request_id_of(&req))
}

pub(super) async fn method_not_allowed(req: HttpRequest) -> HttpResponse {
    ApiError::new(
        ErrorCode::MethodNotAllowed,
        format!(
            "{} is not allowed here; webhooks are delivered with POST",
            req.method()
        ),
    )
    .to_response(&request_id_of(&req))
}
