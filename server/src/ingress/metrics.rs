//! `GET /metrics`: every metric in the Prometheus text format, rendered on
//! actix's blocking pool, never on an HTTP worker. Served on the public
//! address, or on `metrics.addr` alone when that is set.

use actix_web::{web, HttpRequest, HttpResponse};

use super::{request_id_of, AppState};
use crate::error::{ApiError, ErrorCode};

/// The scrape handler.
pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let registry = state.registry.clone();
    let scraped = web::block(move || {
        crate::metrics::scrape(
            registry.telemetry().metrics(),
            &registry
                .handles()
                .into_iter()
                .map(|h| crate::metrics::TenantSource {
                    metrics: h.metrics,
                    data: h.data,
                })
                .collect::<Vec<_>>(),
            registry.store().commit_figures(),
            registry.clock().now_ms(),
        )
    })
    .await;
    match scraped {
        Ok(text) => HttpResponse::Ok()
            .content_type("text/plain; version=0.0.4; charset=utf-8")
            .body(text),
        Err(e) => {
            tracing::error!(error = %e, "metrics scrape failed");
            ApiError::new(ErrorCode::InternalError, "metrics could not be collected")
                .to_response(&request_id_of(&req))
        }
    }
}
