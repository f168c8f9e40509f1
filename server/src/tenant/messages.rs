//! Messages a tenant actor answers.

use actix::Message;
use actix_web::http::header::HeaderMap;
use bytes::Bytes;

pub use crate::ingest::IngestOutcome;
use crate::{ids::RequestId, ingest::IngestError};

/// One inbound delivery, body already read within the tenant's limit.
#[derive(Message)]
#[rtype(result = "Result<IngestOutcome, IngestError>")]
pub struct Ingest {
    /// The request's id, for the answer and the logs.
    pub request_id: RequestId,
    /// The request headers as received.
    pub headers: HeaderMap,
    /// The raw body, never re-encoded.
    pub body: Bytes,
    /// Holds the request's `hookd.ingest` span: the actor's spans are its
    /// children and the stored event keeps its ids for the forwards.
    pub trace: opentelemetry::Context,
}

/// New settings for a running tenant (a rotated or revoked secret): the
/// actor keeps its replay cache and rate-limit state.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconfigure(pub std::sync::Arc<crate::config::TenantSettings>);
