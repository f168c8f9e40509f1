//! Handshakes at the HTTP edge: the checks Slack, Zoom, Meta, Twitch, Discord
//! and Okta make of `/hooks/{tenant_id}` before they send events.

use actix_web::{web, HttpRequest, HttpResponse};
use hookd_sdk::signature::handshake::{HandshakeError, Reply};

use super::{method_not_allowed, request_id_of, AppState};
use crate::{
    error::http::{ApiError, ErrorCode},
    ids::RequestId,
    ingest::IngestError,
    tenant::{report, HandshakeRequest, Services, TenantHandle},
};

/// `GET /hooks/{tenant_id}`: Meta's and Okta's handshakes; any other `GET`
/// is not allowed, as before.
pub async fn get(req: HttpRequest, tenant: &str, state: web::Data<AppState>) -> HttpResponse {
    let handle = state
        .registry
        .get(tenant)
        .filter(|handle| handle.settings().enabled);
    let answered =
        handle.and_then(|handle| answer(&handle, &state.services, &req, b"", &request_id_of(&req)));
    match answered {
        Some(Ok(reply)) => respond(reply),
        Some(Err(refusal)) => refusal.to_response(&request_id_of(&req)),
        None => method_not_allowed(req).await,
    }
}

/// The handshake answer to `req` with `body`, or its refusal, when it is
/// the handshake `handle`'s scheme expects; `None` otherwise.
///
/// Handshakes at the HTTP edge: the checks Slack, Zoom, Meta, Twitch, Discord
/// and Okta make of `/hooks/{tenant_id}` before they send events. Answered
/// only for a tenant whose scheme expects that handshake and, where the
/// provider signs it, only once the signature verifies; logged and counted
/// (`hookd_handshakes_total`), never stored or forwarded as an event.
pub(super) fn answer(
    handle: &TenantHandle,
    services: &Services,
    req: &HttpRequest,
    body: &[u8],
    request_id: &RequestId,
) -> Option<Result<Reply, ApiError>> {
    let request = HandshakeRequest {
        method: req.method().as_str(),
        headers: req.headers(),
        query: req.query_string(),
        body,
    };
    let now_ms = services.clock.now_ms();
    let result = handle
        .handshake(&request, now_ms)?
        .map_err(|error| refusal(&error, handle.settings().tolerance_secs));
    report::handshake(handle, request_id, now_ms, result.as_ref());
    Some(result)
}

/// The provider's expected answer: 200 with its body.
pub(super) fn respond(reply: Reply) -> HttpResponse {
    HttpResponse::Ok()
        .content_type(reply.content_type)
        .body(reply.body)
}

fn refusal(error: &HandshakeError, tolerance_secs: u64) -> ApiError {
    match error {
        HandshakeError::Verify(error) => ApiError::from(&IngestError::Verify {
            error: error.clone(),
            tolerance_secs,
        }),
        HandshakeError::BadVerifyToken => {
            ApiError::new(ErrorCode::BadVerifyToken, error.to_string())
        }
        HandshakeError::Malformed(_) => {
            ApiError::new(ErrorCode::InvalidHandshake, error.to_string())
        }
    }
}
