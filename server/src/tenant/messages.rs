//! Messages a tenant actor answers.

use actix::Message;
use actix_web::{http::header::HeaderMap, web::Bytes};

use crate::{
    error::ApiError,
    ids::{DeliveryId, EventId, RequestId},
};

/// One inbound delivery, body already read within the tenant's limit.
#[derive(Message)]
#[rtype(result = "Result<IngestOutcome, ApiError>")]
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

/// What the sender is told after a successful ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// The event id as the scheme found it.
    pub event_id: EventId,
    /// The new delivery, or the first one for a duplicate.
    pub delivery_id: DeliveryId,
    /// True when the event had been accepted before.
    pub duplicate: bool,
}

/// New settings for a running tenant (a rotated or revoked secret): the
/// actor keeps its replay cache and rate-limit state.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Reconfigure(pub std::sync::Arc<crate::config::TenantSettings>);
