//! Messages a tenant actor answers.

use std::{
    future::{Future, IntoFuture},
    pin::Pin,
};

use actix::Message;
use actix_web::http::header::HeaderMap;
use bytes::Bytes;

pub use crate::ingest::IngestOutcome;
use crate::{ids::RequestId, ingest::IngestError};

/// One inbound delivery, body already read within the tenant's limit.
#[derive(Message)]
#[rtype(result = "Answer")]
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

/// The tenant actor's answer to an [`Ingest`]: what it decided on its own
/// thread (a refusal, a duplicate from the replay cache), or the durable
/// write it prepared, which the caller awaits on its own thread. So the
/// committer's answer wakes the HTTP worker that holds the request, not the
/// actor's arbiter first and the worker after it.
pub struct Answer(Pin<Box<dyn Future<Output = Result<IngestOutcome, IngestError>> + Send>>);

impl Answer {
    /// An answer already known.
    pub fn now(outcome: Result<IngestOutcome, IngestError>) -> Answer {
        Answer(Box::pin(std::future::ready(outcome)))
    }

    /// An answer the caller gets by running `rest`.
    pub fn later(
        rest: impl Future<Output = Result<IngestOutcome, IngestError>> + Send + 'static,
    ) -> Answer {
        Answer(Box::pin(rest))
    }
}

impl IntoFuture for Answer {
    type Output = Result<IngestOutcome, IngestError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        self.0
    }
}
