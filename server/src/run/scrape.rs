//! `GET /metrics`: every metric in the Prometheus text format, or in
//! OpenMetrics (with exemplars) when the scraper's `Accept` asks for it.

use actix_web::{http::header::ACCEPT, web, HttpRequest, HttpResponse};

use crate::{
    error::{ApiError, ErrorCode},
    ingress::{request_id_of, route_not_found, AppState},
    metrics::{read_storage, scrape, Format, TenantSource},
};

/// Registers the routes of the separate metrics address (`metrics.addr`):
/// `GET /metrics` and nothing else.
pub(crate) fn configure_metrics(state: AppState) -> impl FnOnce(&mut web::ServiceConfig) {
    move |cfg| {
        cfg.app_data(web::Data::new(state))
            .route("/metrics", web::get().to(metrics))
            .default_service(web::to(route_not_found));
    }
}

/// The scrape handler.
///
/// `GET /metrics`: every metric in the Prometheus text format, or in
/// OpenMetrics (with exemplars) when the scraper's `Accept` asks for it,
/// rendered on actix's blocking pool, never on an HTTP worker. Served on
/// the public address, or on `metrics.addr` alone when that is set.
pub async fn metrics(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let format = Format::negotiate(req.headers().get(ACCEPT).and_then(|v| v.to_str().ok()));
    let (registry, services) = (state.registry.clone(), state.services.clone());
    let scraped = web::block(move || {
        let tenants: Vec<TenantSource> = registry
            .handles()
            .iter()
            .flat_map(|h| h.routes().to_vec())
            .map(|route| TenantSource {
                data: route.data.clone(),
                metrics: route.metrics.clone(),
            })
            .collect();
        let storage = read_storage(&tenants, &*services.store, services.clock.now_ms());
        scrape(services.telemetry.metrics(), &storage, format)
    })
    .await;
    match scraped {
        Ok(Ok(text)) => HttpResponse::Ok()
            .content_type(format.content_type())
            .body(text),
        Ok(Err(e)) => failed(&req, &e),
        Err(e) => failed(&req, &e),
    }
}

fn failed(req: &HttpRequest, e: &dyn std::fmt::Display) -> HttpResponse {
    tracing::error!(error = %e, "metrics scrape failed");
    ApiError::new(ErrorCode::InternalError, "metrics could not be collected")
        .to_response(&request_id_of(req))
}
