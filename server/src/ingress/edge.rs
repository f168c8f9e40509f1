//! Limits of the public edge that actix does not enforce the way hookd
//! needs: the size of the request head, answered with the standard error
//! body, and the deadline for the rest of a request once its head is in.

use std::{sync::Arc, time::Duration};

use actix_web::{
    body::{BoxBody, EitherBody},
    dev::{ServiceRequest, ServiceResponse},
    middleware::Next,
    HttpMessage,
};

use crate::{
    config::HttpConfig,
    error::{ApiError, ErrorCode},
    ids::RequestId,
    metrics::TenantMetrics,
};

/// The per-request limits of the HTTP edge.
#[derive(Debug, Clone, Copy)]
pub struct EdgeLimits {
    /// Largest request head accepted.
    pub max_header_bytes: usize,
    /// Time the body gets once the head is in.
    pub body_timeout: Duration,
    /// The whole-request deadline, as configured (for the error details).
    pub request_timeout_secs: u64,
}

impl EdgeLimits {
    /// The limits `[http]` configures.
    pub fn new(http: &HttpConfig) -> Self {
        EdgeLimits {
            max_header_bytes: http.max_header_bytes,
            body_timeout: http.body_timeout(),
            request_timeout_secs: http.request_timeout_secs,
        }
    }

    /// The answer to a request whose body missed its deadline.
    pub fn timed_out(&self) -> ApiError {
        ApiError::new(
            ErrorCode::RequestTimeout,
            format!(
                "the request was not received within {} s; send it again without pauses",
                self.request_timeout_secs
            ),
        )
        .detail("timeout_secs", self.request_timeout_secs)
    }
}

/// The size of a request head as sent: the request line and, per header
/// line, name, value, `": "` and CRLF.
pub fn head_bytes(req: &ServiceRequest) -> usize {
    let line = req.method().as_str().len()
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n ".len();
    req.headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + line
}

/// Refuses a request whose head is larger than `limit` with
/// `HEADERS_TOO_LARGE`, before any handler (or body read) runs, and counts
/// it in `counters` (the `other` label: no tenant is looked up for it).
pub async fn header_limit(
    limit: usize,
    counters: Arc<TenantMetrics>,
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<EitherBody<BoxBody>>, actix_web::Error> {
    let size = head_bytes(&req);
    if size <= limit {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(RequestId::generate);
    tracing::warn!(request_id = %request_id, head_bytes = size, limit_bytes = limit, "request head too large");
    counters.rejected(ErrorCode::HeadersTooLarge);
    let answer = ApiError::new(
        ErrorCode::HeadersTooLarge,
        format!("the request head is {size} bytes; at most {limit} are accepted"),
    )
    .detail("limit_bytes", limit)
    .to_response(&request_id);
    Ok(req.into_response(answer).map_into_right_body())
}
