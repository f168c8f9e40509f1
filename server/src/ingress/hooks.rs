//! `POST /hooks/{tenant_id}`: route to the tenant, read the raw body within
//! its limit, hand it to the tenant's actor, answer.

use actix_web::{
    http::header::CONTENT_LENGTH,
    web::{self, BytesMut},
    HttpRequest, HttpResponse,
};
use futures_util::StreamExt;
use serde_json::json;

use super::{request_id_of, AppState};
use crate::{
    error::{ApiError, ErrorCode},
    ids::RequestId,
    tenant::messages::{Ingest, IngestOutcome},
};

/// The ingest handler.
pub async fn ingest(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let request_id = request_id_of(&req);
    let tenant = req
        .match_info()
        .get("tenant_id")
        .unwrap_or_default()
        .to_owned();
    match accept(&req, payload, &state, &tenant, &request_id).await {
        Ok(outcome) => {
            tracing::info!(
                tenant = %tenant,
                event_id = %outcome.event_id,
                delivery_id = %outcome.delivery_id,
                request_id = %request_id,
                duplicate = outcome.duplicate,
                "delivery accepted"
            );
            let mut body = json!({
                "event_id": outcome.event_id,
                "delivery_id": outcome.delivery_id,
                "request_id": request_id,
            });
            if outcome.duplicate {
                body["duplicate"] = json!(true);
                HttpResponse::Ok().json(body)
            } else {
                HttpResponse::Accepted().json(body)
            }
        }
        Err(e) => {
            tracing::warn!(
                tenant = %tenant,
                request_id = %request_id,
                code = e.code.as_str(),
                reason = %e.message,
                "delivery rejected"
            );
            e.to_response(&request_id)
        }
    }
}

async fn accept(
    req: &HttpRequest,
    payload: web::Payload,
    state: &AppState,
    tenant: &str,
    request_id: &RequestId,
) -> Result<IngestOutcome, ApiError> {
    let handle = state.registry.get(tenant).ok_or_else(|| {
        ApiError::new(ErrorCode::TenantNotFound, format!("no tenant {tenant:?}"))
            .detail("tenant_id", tenant)
    })?;
    if !handle.settings.enabled {
        return Err(ApiError::new(
            ErrorCode::TenantDisabled,
            format!("tenant {tenant:?} is disabled"),
        ));
    }
    let body = read_body(req, payload, handle.settings.max_body_bytes).await?;
    handle
        .addr
        .send(Ingest {
            request_id: request_id.clone(),
            headers: req.headers().clone(),
            body,
        })
        .await
        .map_err(|e| {
            tracing::error!(tenant = %tenant, error = %e, "tenant actor unreachable");
            ApiError::new(
                ErrorCode::InternalError,
                "the tenant is not running; retry later",
            )
            .retry_after(5)
        })?
}

/// Reads the body as raw bytes, refusing it as soon as it is known to be
/// over `limit`: a declared `Content-Length` is refused before any byte is
/// read, a chunked body as soon as it crosses the limit.
async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    limit: usize,
) -> Result<web::Bytes, ApiError> {
    let too_large = || {
        ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!("body is larger than this tenant's limit of {limit} bytes"),
        )
        .detail("limit_bytes", limit)
    };
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large());
    }
    let mut body = BytesMut::with_capacity(declared.unwrap_or(8 * 1024).min(limit));
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::BodyIncomplete,
                format!("the body could not be read: {e}"),
            )
        })?;
        if body.len() + chunk.len() > limit {
            return Err(too_large());
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body.freeze())
}
