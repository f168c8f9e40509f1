//! The ingest path's own vocabulary, free of HTTP routing: [`Ingest`], the
//! gate's [`Answer`], [`IngestOutcome`] and [`IngestError`].

mod answer;

use std::{
    future::{Future, IntoFuture},
    pin::Pin,
};

use actix_web::http::header::{HeaderMap, HeaderName, HeaderValue};
use bytes::Bytes;
use hookd_sdk::signature::VerifyError;

use crate::ids::{DeliveryId, EventId, RequestId, TenantId};
pub use crate::store::api::Receipt;

/// One inbound delivery, body already read within the tenant's limit.
pub struct Ingest<'a> {
    /// The request's id, for the answer and the logs.
    pub request_id: RequestId,
    /// The request headers as received.
    pub headers: &'a HeaderMap,
    /// The body as sent, or decoded when it was sent compressed
    /// (`Content-Encoding`); never re-encoded. What is stored and forwarded.
    pub body: Bytes,
    /// The compressed bytes as sent, kept only when the tenant's signature
    /// covers them (`signed_body = "wire"`).
    pub wire: Option<Bytes>,
    /// The request's raw query string (for route filters and the schemes
    /// that sign the URL).
    pub query: &'a str,
    /// The request method as received.
    pub method: &'a str,
    /// Holds the request's `hookd.ingest` span: the gate's spans are its
    /// children and the stored event keeps its ids for the forwards.
    pub trace: opentelemetry::Context,
}

impl<'a> Ingest<'a> {
    /// A `POST` with `headers` and `body`, no query and no trace, under a
    /// fresh request id: a delivery as the benchmarks and tests hand it to
    /// the gate.
    pub fn post(headers: &'a HeaderMap, body: &Bytes) -> Ingest<'a> {
        Ingest {
            request_id: RequestId::generate(),
            headers,
            body: body.clone(),
            wire: None,
            query: "",
            method: "POST",
            trace: opentelemetry::Context::new(),
        }
    }

    /// The headers a signer made (name, value), as the gate reads them:
    /// the request headers of [`Ingest::post`] in the benchmarks and tests.
    pub fn headers(signed: Vec<(String, String)>) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in signed {
            headers.insert(
                HeaderName::from_bytes(name.as_bytes()).expect("a signer's header name"),
                HeaderValue::from_str(&value).expect("a signer's header value"),
            );
        }
        headers
    }
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

/// What the sender is told after a successful ingest.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IngestOutcome {
    /// The event id as the scheme found it.
    pub event_id: EventId,
    /// The new delivery, or the first one for a duplicate.
    pub delivery_id: DeliveryId,
    /// True when the event had been accepted before.
    pub duplicate: bool,
    /// The deliveries the tenant's other routes got, as (route, delivery
    /// id) (new events only).
    pub routes: Vec<(String, DeliveryId)>,
    /// How the default route's delivery was written (new events only;
    /// [`Receipt::Queued`] for a duplicate).
    pub receipt: Receipt,
}

/// Why a delivery was not accepted; nothing was stored or acknowledged.
///
/// `error.rs` turns an [`IngestError`] into the sender's answer; telemetry
/// and the ingress read these types without reaching into the tenant
/// module.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IngestError {
    /// The signature or its timestamp did not check out.
    #[error("{error}")]
    Verify {
        /// The verifier's verdict.
        error: VerifyError,
        /// The tenant's tolerance, for the sender's answer.
        tolerance_secs: u64,
    },
    /// The (authentic) body broke a rule of its shape.
    #[error(transparent)]
    Body(#[from] BodyError),
    /// The tenant is over its rate limit.
    #[error("tenant is over its rate limit; retry in {retry_after_secs} s")]
    RateLimited {
        /// Whole seconds until a token is free.
        retry_after_secs: u64,
    },
    /// The write could not be made durable (or storage failed earlier).
    #[error("storage is unavailable; the event was not accepted, retry later")]
    StorageUnavailable,
    /// The tenant was deleted while its write waited.
    #[error("tenant {0:?} was deleted; the event was not accepted")]
    TenantDeleted(TenantId),
    /// The tenant's checks panicked on this delivery; its actor's supervisor
    /// restarts them.
    #[error("hookd failed while handling this delivery; it was not accepted, retry later")]
    ChecksPanicked,
}

/// Why an authentic body was refused by the body checks.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BodyError {
    /// Valid JSON, but not an object (nor an array where one is accepted).
    #[error("body must be a JSON object")]
    NotAnObject,
    /// Sent as `application/x-www-form-urlencoded` but not a valid form;
    /// the reason names the field (by position) and the problem.
    #[error("body is not a valid application/x-www-form-urlencoded form ({0})")]
    InvalidForm(String),
    /// Not JSON at all; the parser's words say where.
    #[error("body is not valid JSON ({0})")]
    NotJson(String),
    /// A required field (or the event id field) is absent or null.
    #[error("required field {0:?} is missing")]
    MissingField(String),
    /// A field is present with the wrong type or shape.
    #[error("field {field:?} must be {expected}")]
    InvalidField {
        /// The field's name.
        field: String,
        /// What it must be, in plain words.
        expected: &'static str,
    },
    /// The body breaks the JSON Schema of its event type's contract.
    #[error("event {event_type:?}{} breaks its contract in {total} place(s); details.violations lists them", version.as_ref().map(|v| format!(" version {v:?}")).unwrap_or_default())]
    ContractViolation {
        /// The contract's event type.
        event_type: String,
        /// The contract's version, when it has one.
        version: Option<String>,
        /// The first violations, each bounded in size.
        violations: Vec<Violation>,
        /// How many violations there are in all.
        total: usize,
    },
    /// Checking the body against its contract would take more than
    /// `max_steps` steps: the check stopped there.
    #[error("event {event_type:?}{}: checking it against its contract takes more than {max_steps} steps; send a smaller body or ask the receiver for a simpler contract", version.as_ref().map(|v| format!(" version {v:?}")).unwrap_or_default())]
    ContractCheckTooCostly {
        /// The contract's event type.
        event_type: String,
        /// The contract's version, when it has one.
        version: Option<String>,
        /// The check budget.
        max_steps: u64,
    },
    /// The tenant refuses event types (and versions) without a contract.
    /// The type and version echoed are cut to [`crate::contracts::MAX_TYPE_LEN`]
    /// and [`crate::contracts::MAX_VERSION_LEN`] bytes, ending in `…` when cut.
    #[error("{}: this tenant accepts only event types it has a contract for", match event_type { Some(t) => format!("event type {t:?}{} has no contract", version.as_ref().map(|v| format!(" version {v:?}")).unwrap_or_default()), None => format!("field {field:?} names no event type") })]
    UnknownEventType {
        /// The body field the type is read from.
        field: String,
        /// The type the body names, if any.
        event_type: Option<String>,
        /// The version the body names, if any.
        version: Option<String>,
    },
    /// The event id is empty, too long or not visible ASCII.
    #[error("event id in {field:?} must be 1 to {max_bytes} bytes of visible ASCII (no spaces or control characters)")]
    InvalidEventId {
        /// The header or body field it came from.
        field: String,
        /// The longest id accepted.
        max_bytes: usize,
    },
}

/// One way a body breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// JSON pointer (RFC 6901) of the value that failed; for a missing
    /// field, where it should be.
    pub pointer: String,
    /// The schema keyword that failed (`required`, `enum`, `format`, ...).
    pub keyword: String,
    /// What was expected, without the body's own values.
    pub expected: String,
}
