//! A handshake's report: its log line, its counters and, when refused, the
//! tenant's `handshake_failed` signal.

use hookd_proto::domain::AlertType;
use hookd_sdk::signature::handshake::{Handshake, Reply};

use super::super::TenantHandle;
use crate::{error::ApiError, ids::RequestId};

/// Reports the handshake `handle`'s tenant answered with `result` at
/// `now_ms`, a refusal as its answer.
pub(crate) fn handshake(
    handle: &TenantHandle,
    request_id: &RequestId,
    now_ms: i64,
    result: Result<&Reply, &ApiError>,
) {
    let state = handle.state();
    let tenant = state.metrics.label();
    let kind = Handshake::of(handle.settings().scheme)
        .expect("a tenant that answered a handshake expects one");
    match result {
        Ok(reply) => {
            tracing::info!(
                tenant = %tenant,
                handshake = reply.handshake.as_str(),
                request_id = %request_id,
                "handshake answered"
            );
            state.metrics.handshakes().answered(kind, now_ms);
        }
        Err(refusal) => {
            state.signals.bump(AlertType::HandshakeFailed);
            tracing::warn!(
                tenant = %tenant,
                handshake = kind.as_str(),
                request_id = %request_id,
                code = refusal.code.as_str(),
                reason = %refusal.message,
                "handshake refused"
            );
            let code = refusal.code.as_str();
            state.metrics.handshakes().refused(kind, now_ms, code);
        }
    }
}
