//! The one place a tenant's rejection is recorded for the dashboard and
//! `ListRejections`.

use super::super::{Services, TenantHandle};
use crate::{
    error::ApiError,
    ids::RequestId,
    ingest::IngestError,
    store::{
        api::blocking,
        api::{Rejection, KEPT_BODY_BYTES},
    },
};

/// Records `rejection` (answered as `answer`) of `body` sent to `tenant`,
/// when it is one the dashboard lists, and returns once the record is
/// durable; a storage failure is logged, never passed to the sender.
///
/// The one place a tenant's rejection is recorded for the dashboard and
/// `ListRejections`: content rejected after a valid signature (any answer
/// the sender can fix in the body: 400 or 422 other than a signature
/// verdict, so content codes added later are recorded too) with the first
/// 4 KiB of the body, and bad or missing signatures without any body.
/// Overload and storage answers (429, 5xx) are not rejections of content.
/// The record is written on the blocking pool, off the HTTP worker, and is
/// durable before the rejection is answered: it waits for the store's next
/// group commit (shared with the deliveries and rejections of the same
/// moment), never for an fsync of its own. Each tenant records at most its
/// budget (`[limits.rejection_records]`, one bucket per kind) before any
/// write; rejections beyond it are answered the same and only counted, in
/// `hookd_rejections_unrecorded_total`.
pub(super) async fn record(
    services: &Services,
    handle: &TenantHandle,
    request_id: &RequestId,
    rejection: &IngestError,
    answer: &ApiError,
    body: &[u8],
) {
    let signature_valid = match rejection {
        IngestError::Verify { .. } => false,
        _ if matches!(answer.code.status().as_u16(), 400 | 422) => true,
        _ => return,
    };
    let at_ms = services.clock.now_ms();
    if !handle
        .state()
        .rejection_budget
        .try_take(signature_valid, at_ms)
    {
        handle.state().metrics.unrecorded(signature_valid);
        return;
    }
    let settings = handle.settings();
    let tenant = settings.id.as_str();
    let rejection = Rejection {
        tenant_id: tenant.to_owned(),
        at_ms,
        request_id: request_id.to_string(),
        code: answer.code.as_str().to_owned(),
        reason: answer.message.clone(),
        signature_valid,
        body_bytes: body.len() as u64,
        body: if signature_valid {
            body[..body.len().min(KEPT_BODY_BYTES)].to_vec()
        } else {
            Vec::new()
        },
    };
    let store = services.store.clone();
    let writer = store.clone();
    let written = blocking(move || writer.rejections()?.record(rejection)).await;
    let durable = match written {
        Ok(()) => store.durable_barrier().await,
        Err(e) => Err(e),
    };
    if let Err(e) = durable {
        tracing::error!(tenant = %tenant, request_id = %request_id, error = %e, "rejected request could not be recorded");
    }
}
