//! What the HTTP worker hands a tenant's ingest gate, and its answer.

use std::{
    future::{Future, IntoFuture},
    pin::Pin,
};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;

pub use crate::ingest::IngestOutcome;
use crate::{ids::RequestId, ingest::IngestError};

/// One inbound delivery, body already read within the tenant's limit.
pub struct Ingest<'a> {
    /// The request's id, for the answer and the logs.
    pub request_id: RequestId,
    /// The request headers as received.
    pub headers: &'a HeaderMap,
    /// The raw body, never re-encoded.
    pub body: Bytes,
    /// Holds the request's `hookd.ingest` span: the gate's spans are its
    /// children and the stored event keeps its ids for the forwards.
    pub trace: opentelemetry::Context,
}

/// The gate's answer to an [`Ingest`]: what the checks decided at once (a
/// refusal, a duplicate from the replay cache), or the durable write they
/// prepared, which the caller awaits.
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
