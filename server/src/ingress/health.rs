//! Liveness and readiness probes.

use actix_web::{web, HttpRequest, HttpResponse};
use serde_json::json;

use super::{request_id_of, AppState};
use crate::error::http::{ApiError, ErrorCode};

/// Alive: the process answers HTTP and its storage can take writes again
/// without a restart. A poisoned sled store refuses every write until
/// hookd restarts and recovers from what is on disk, so liveness fails
/// then: the supervisor's restart is the recovery (and, while the disk is
/// still full, a start that fails and is retried).
pub async fn healthz(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    if state.services.store.needs_restart() {
        return ApiError::new(
            ErrorCode::StorageUnavailable,
            "storage: a write or fsync failed; hookd takes no writes until it is restarted",
        )
        .to_response(&request_id_of(&req));
    }
    HttpResponse::Ok().json(json!({"status": "ok"}))
}

/// Ready: storage accepts durable writes and every tenant actor runs.
pub async fn readyz(req: HttpRequest, state: web::Data<AppState>) -> HttpResponse {
    let mut problems = Vec::new();
    if !state.services.store.is_healthy() {
        problems.push(
            "storage: unavailable (sled: a write or fsync failed, restart hookd once the disk \
             is sound; postgres: the database does not answer, hookd resumes once it does)",
        );
    }
    if !state.registry.all_running() {
        problems.push("tenants: an actor has stopped");
    }
    if problems.is_empty() {
        return HttpResponse::Ok().json(json!({"status": "ready"}));
    }
    ApiError::new(ErrorCode::NotReady, problems.join("; "))
        .detail("problems", problems)
        .to_response(&request_id_of(&req))
}
