//! The spans of one delivery: `hookd.ingest` per request (a child of the
//! sender's `traceparent` when it sends one), `hookd.actor` and
//! `hookd.commit` under it, and `hookd.forward` per attempt, a child of the
//! ingest span however much later it runs, whose context travels to the
//! destination as `traceparent`. Span attributes carry ids, never secrets,
//! tokens, URLs with queries or bodies.

use actix_web::http::header::HeaderMap;
use hookd_sdk::signature::Scheme;
use opentelemetry::{
    propagation::{Extractor, Injector, TextMapPropagator},
    trace::{
        SpanContext, SpanId, SpanKind, Status, TraceContextExt, TraceFlags, TraceId, TraceState,
        Tracer as _, TracerProvider as _,
    },
    Context, InstrumentationScope, KeyValue,
};
use opentelemetry_sdk::{
    propagation::TraceContextPropagator,
    trace::{SdkTracer, SdkTracerProvider},
};

use crate::{
    error::{ApiError, ErrorCode},
    ids::{RequestId, TenantId},
    ingest::{IngestError, IngestOutcome},
    metrics::ForwardOutcome,
    store::records::EventMeta,
};

/// One per `POST /hooks/{tenant_id}` request.
pub const INGEST_SPAN: &str = "hookd.ingest";
/// The tenant actor's work: verify, replay cache, validation, rate limit.
pub const ACTOR_SPAN: &str = "hookd.actor";
/// The durable write, until the group commit is on disk.
pub const COMMIT_SPAN: &str = "hookd.commit";
/// One per forward attempt.
pub const FORWARD_SPAN: &str = "hookd.forward";

/// Starts and ends hookd's spans on one tracer provider.
#[derive(Clone, Debug)]
pub struct Spans {
    tracer: SdkTracer,
}

impl Spans {
    /// A tracer named `hookd` on `provider`.
    pub fn new(provider: &SdkTracerProvider) -> Self {
        let scope = InstrumentationScope::builder("hookd")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Spans {
            tracer: provider.tracer_with_scope(scope),
        }
    }

    /// Starts `hookd.ingest` as a child of the request's W3C `traceparent`
    /// when it carries a valid one (a new trace otherwise). The returned
    /// context holds the span; [`IngestRecord::end`] ends it.
    pub fn start_ingest(&self, headers: &HeaderMap) -> Context {
        let parent =
            TraceContextPropagator::new().extract_with_context(&Context::new(), &Headers(headers));
        let span = self
            .tracer
            .span_builder(INGEST_SPAN)
            .with_kind(SpanKind::Server)
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }

    /// Starts an internal span `name` under the span of `parent`.
    pub fn start_child(&self, parent: &Context, name: &'static str, tenant: &TenantId) -> Context {
        let span = self
            .tracer
            .span_builder(name)
            .with_attributes([KeyValue::new("tenant", tenant.to_string())])
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// Starts `hookd.forward` for attempt `attempt` of a stored event, as a
    /// child of the event's ingest span: one trace from the sender to every
    /// attempt, retries and redeliveries included.
    pub fn start_forward(
        &self,
        tenant: &TenantId,
        meta: &EventMeta,
        attempt: u32,
        destination_host: &str,
    ) -> Context {
        let trace_id = TraceId::from_hex(&meta.trace_id).unwrap_or(TraceId::INVALID);
        // Events stored before span ids were kept get a stand-in parent in
        // the same trace, so they stay findable by trace id.
        let span_id = SpanId::from_hex(&meta.span_id)
            .ok()
            .filter(|id| *id != SpanId::INVALID)
            .unwrap_or_else(|| SpanId::from(rand::random::<u64>() | 1));
        let flags = if meta.sampled {
            TraceFlags::SAMPLED
        } else {
            TraceFlags::default()
        };
        let ingest = SpanContext::new(trace_id, span_id, flags, true, TraceState::default());
        let parent = Context::new().with_remote_span_context(ingest);
        let span = self
            .tracer
            .span_builder(FORWARD_SPAN)
            .with_kind(SpanKind::Client)
            .with_attributes([
                KeyValue::new("tenant", tenant.to_string()),
                KeyValue::new("event_id", meta.event_id.to_string()),
                KeyValue::new("delivery_id", meta.delivery_id.to_string()),
                KeyValue::new("request_id", meta.request_id.to_string()),
                KeyValue::new("attempt", i64::from(attempt)),
                KeyValue::new("server.address", destination_host.to_owned()),
            ])
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }
}

/// The W3C headers (`traceparent`, and `tracestate` when there is one)
/// that carry the span of `cx` to a destination.
pub fn trace_headers(cx: &Context) -> Vec<(String, String)> {
    let mut headers = TraceHeaders(Vec::with_capacity(2));
    TraceContextPropagator::new().inject_context(cx, &mut headers);
    headers.0
}

/// The ids a stored event keeps of its ingest span: trace id (32 hex
/// digits), span id (16 hex digits), sampled flag.
pub fn span_ids(cx: &Context) -> (String, String, bool) {
    let span = cx.span();
    let sc = span.span_context();
    (
        sc.trace_id().to_string(),
        sc.span_id().to_string(),
        sc.is_sampled(),
    )
}

/// The 32-hex-digit trace id of the span in `cx`, for log lines.
pub fn trace_id(cx: &Context) -> String {
    cx.span().span_context().trace_id().to_string()
}

/// Ends the span of `cx`, marked failed with `error`'s plain words if any.
pub fn end_span(cx: &Context, error: Option<&ApiError>) {
    let span = cx.span();
    if let Some(e) = error {
        span.set_attribute(KeyValue::new("error.code", e.code.as_str()));
        span.set_status(Status::error(e.message.clone()));
    }
    span.end();
}

/// Ends a span of the tenant actor's part of an ingest, marked failed with
/// the code and words the sender gets for `error`, if any.
pub fn end_ingest_span(cx: &Context, error: Option<&IngestError>) {
    end_span(cx, error.map(ApiError::from).as_ref());
}

/// What the ingest span records when its request is answered.
pub struct IngestRecord<'a> {
    /// The tenant id from the path (possibly unknown).
    pub tenant: &'a str,
    /// The request's id.
    pub request_id: &'a RequestId,
    /// The tenant's scheme, when the tenant exists.
    pub scheme: Option<Scheme>,
    /// The answer.
    pub result: Result<&'a IngestOutcome, &'a ApiError>,
}

impl IngestRecord<'_> {
    /// Sets the ingest span's attributes and ends it.
    pub fn end(self, cx: &Context) {
        let span = cx.span();
        let mut attributes = vec![
            KeyValue::new("tenant", self.tenant.to_owned()),
            KeyValue::new("request_id", self.request_id.to_string()),
            KeyValue::new("verification", verification(&self.result)),
        ];
        if let Some(scheme) = self.scheme {
            attributes.push(KeyValue::new("scheme", scheme.as_str()));
        }
        let status = match self.result {
            Ok(outcome) => {
                attributes.extend([
                    KeyValue::new("event_id", outcome.event_id.to_string()),
                    KeyValue::new("delivery_id", outcome.delivery_id.to_string()),
                    KeyValue::new("duplicate", outcome.duplicate),
                ]);
                if outcome.duplicate {
                    200
                } else {
                    202
                }
            }
            Err(e) => {
                attributes.push(KeyValue::new("duplicate", false));
                e.code.status().as_u16()
            }
        };
        attributes.push(KeyValue::new(
            "http.response.status_code",
            i64::from(status),
        ));
        span.set_attributes(attributes);
        end_span(cx, self.result.err());
    }
}

/// Whether the signature was checked, and how it went: rejections before
/// the tenant's actor (unknown tenant, body too large) never got that far.
fn verification(result: &Result<&IngestOutcome, &ApiError>) -> &'static str {
    let Err(e) = result else {
        return "verified";
    };
    match e.code {
        ErrorCode::MissingSignature
        | ErrorCode::InvalidSignatureFormat
        | ErrorCode::BadSignature
        | ErrorCode::StaleTimestamp
        | ErrorCode::FutureTimestamp
        | ErrorCode::InvalidTimestamp => "failed",
        ErrorCode::InvalidJson
        | ErrorCode::MissingRequiredField
        | ErrorCode::InvalidField
        | ErrorCode::RateLimited
        | ErrorCode::StorageUnavailable => "verified",
        _ => "not_checked",
    }
}

/// What a forward span records when its attempt's outcome is known.
pub struct ForwardRecord<'a> {
    /// What follows the attempt.
    pub outcome: ForwardOutcome,
    /// The destination's HTTP status, if it answered.
    pub status_code: Option<u16>,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// Why it failed, in plain words.
    pub error: Option<&'a str>,
}

impl ForwardRecord<'_> {
    /// Sets the forward span's attributes and ends it.
    pub fn end(self, cx: &Context) {
        let span = cx.span();
        span.set_attribute(KeyValue::new("outcome", self.outcome.as_str()));
        span.set_attribute(KeyValue::new(
            "duration_ms",
            i64::try_from(self.duration_ms).unwrap_or(i64::MAX),
        ));
        if let Some(status) = self.status_code {
            span.set_attribute(KeyValue::new(
                "http.response.status_code",
                i64::from(status),
            ));
        }
        if let Some(error) = self.error {
            span.set_status(Status::error(error.to_owned()));
        }
        span.end();
    }
}

/// Read access to actix request headers for the propagator.
struct Headers<'a>(&'a HeaderMap);

impl Extractor for Headers<'_> {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key)?.to_str().ok()
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(|k| k.as_str()).collect()
    }
}

/// Collects the headers the propagator writes.
struct TraceHeaders(Vec<(String, String)>);

impl Injector for TraceHeaders {
    fn set(&mut self, key: &str, value: String) {
        self.0.push((key.to_owned(), value));
    }
}
