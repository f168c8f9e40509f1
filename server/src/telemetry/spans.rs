//! The spans of one delivery, from `hookd.ingest` to each attempt's
//! `hookd.forward`, and the trace context they carry.

use actix_web::{http::header::HeaderMap, HttpRequest};
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
    trace::{IdGenerator, RandomIdGenerator, SdkTracer, SdkTracerProvider},
};
use opentelemetry_semantic_conventions::attribute as semconv;

use super::attrs::{self, HookdAttr};
use crate::{
    error::{ApiError, ErrorCode},
    ids::{RequestId, TenantId},
    ingest::{Answer, IngestError, IngestOutcome},
    store::{lifecycle::Next, records::EventMeta},
};

/// One per `POST /hooks/{tenant_id}` request.
pub const INGEST_SPAN: &str = "hookd.ingest";
/// The tenant's checks: verify, replay cache, validation, rate limit (run
/// on the HTTP worker against the tenant's gate; the name is a contract).
pub const ACTOR_SPAN: &str = "hookd.actor";
/// The durable write, until the group commit is on disk.
pub const COMMIT_SPAN: &str = "hookd.commit";
/// One per forward attempt.
pub const FORWARD_SPAN: &str = "hookd.forward";
/// The `http.route` of the ingest span.
pub const INGEST_ROUTE: &str = "/hooks/{tenant_id}";

/// Longest `user_agent.original` kept, in bytes.
const USER_AGENT_MAX: usize = 256;

/// Where a tenant's forwards go, as its forward spans name it: the URL
/// without credentials and with every query value redacted, host and port.
#[derive(Clone, Debug, Default)]
pub struct ForwardTarget {
    url: String,
    host: String,
    port: Option<u16>,
}

impl ForwardTarget {
    /// The target of `url` (a destination URL, which may carry a token).
    pub fn of(url: &str) -> ForwardTarget {
        let Ok(mut url) = reqwest::Url::parse(url) else {
            return ForwardTarget::default();
        };
        let _ = url.set_username("");
        let _ = url.set_password(None);
        url.set_fragment(None);
        let keys: Vec<String> = url.query_pairs().map(|(k, _)| k.into_owned()).collect();
        if !keys.is_empty() {
            url.query_pairs_mut()
                .clear()
                .extend_pairs(keys.iter().map(|k| (k.as_str(), "REDACTED")));
        }
        ForwardTarget {
            host: url.host_str().unwrap_or_default().to_owned(),
            port: url.port_or_known_default(),
            url: url.to_string(),
        }
    }

    /// The host, for logs.
    pub fn host(&self) -> &str {
        &self.host
    }
}

/// Starts and ends hookd's spans on one tracer provider.
///
/// The spans of one delivery: `hookd.ingest` per request (a server span, a
/// child of the sender's `traceparent` when it sends one), `hookd.actor`
/// and `hookd.commit` under it, and `hookd.forward` per attempt (a client
/// span), a child of the ingest span however much later it runs, whose
/// context travels to the destination as `traceparent`. HTTP attributes
/// follow the OpenTelemetry semantic conventions; hookd's own are in the
/// `hookd.` namespace (`super::attrs`). Span attributes carry ids,
/// never secrets, tokens, URL queries or bodies.
#[derive(Clone, Debug)]
pub struct Spans {
    tracer: SdkTracer,
    /// False when nothing exports the spans: each is then its ids alone.
    recording: bool,
}

impl Spans {
    /// A tracer named `hookd` on `provider`.
    pub fn new(provider: &SdkTracerProvider) -> Self {
        let scope = InstrumentationScope::builder("hookd")
            .with_version(env!("CARGO_PKG_VERSION"))
            .build();
        Spans {
            tracer: provider.tracer_with_scope(scope),
            recording: true,
        }
    }

    /// Spans for a server that exports none: each is its ids alone, with
    /// no attributes, times or status recorded. What leaves hookd is the
    /// same as with [`Spans::new`] and the default sampler
    /// (`parentbased_always_on`): the trace of the sender's `traceparent`
    /// with its sampled flag (a new, sampled trace without one), new span
    /// ids under it, the trace ids in the log lines and the `traceparent`
    /// of every forward. `provider` serves the control plane's RPC spans.
    pub fn ids_only(provider: &SdkTracerProvider) -> Self {
        Spans {
            recording: false,
            ..Spans::new(provider)
        }
    }

    /// The tracer, for the control plane's RPC spans.
    pub fn tracer(&self) -> &SdkTracer {
        &self.tracer
    }

    /// Starts `hookd.ingest` as a child of the request's W3C `traceparent`
    /// when it carries a valid one (a new trace otherwise), with the
    /// request's HTTP attributes. The returned context holds the span;
    /// [`IngestRecord::end`] ends it.
    pub fn start_ingest(&self, req: &HttpRequest) -> Context {
        let parent = TraceContextPropagator::new()
            .extract_with_context(&Context::new(), &RequestHeaders(req.headers()));
        if !self.recording {
            return with_ids_only(parent);
        }
        let config = req.app_config();
        let mut attributes = vec![
            KeyValue::new(semconv::HTTP_REQUEST_METHOD, req.method().to_string()),
            KeyValue::new(semconv::URL_PATH, req.path().to_owned()),
            KeyValue::new(
                semconv::URL_SCHEME,
                if config.secure() { "https" } else { "http" },
            ),
            KeyValue::new(semconv::HTTP_ROUTE, INGEST_ROUTE),
            KeyValue::new(semconv::SERVER_PORT, i64::from(config.local_addr().port())),
        ];
        if let Some(peer) = req.peer_addr() {
            attributes.push(KeyValue::new(
                semconv::CLIENT_ADDRESS,
                peer.ip().to_string(),
            ));
        }
        if let Some(agent) = req
            .headers()
            .get(actix_web::http::header::USER_AGENT)
            .and_then(|v| v.to_str().ok())
        {
            attributes.push(KeyValue::new(
                semconv::USER_AGENT_ORIGINAL,
                truncate(agent, USER_AGENT_MAX).to_owned(),
            ));
        }
        let span = self
            .tracer
            .span_builder(INGEST_SPAN)
            .with_kind(SpanKind::Server)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }

    /// Starts an internal span `name` under the span of `parent`.
    pub fn start_child(&self, parent: &Context, name: &'static str, tenant: &TenantId) -> Context {
        if !self.recording {
            return with_ids_only(parent.clone());
        }
        let span = self
            .tracer
            .span_builder(name)
            .with_attributes(attrs::TENANT.kv(tenant.to_string()))
            .start_with_context(&self.tracer, parent);
        parent.with_span(span)
    }

    /// Starts `hookd.forward` for attempt `attempt` of a stored event of
    /// `tenant`'s route `route` to `target`, as a child of the event's
    /// ingest span: one trace from the sender to every attempt, retries and
    /// redeliveries included.
    pub fn start_forward(
        &self,
        (tenant, route): (&TenantId, &str),
        meta: &EventMeta,
        attempt: u32,
        target: &ForwardTarget,
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
        if !self.recording {
            return with_ids_only(parent);
        }
        let mut attributes: Vec<KeyValue> = [
            attrs::TENANT.kv(tenant.to_string()),
            attrs::EVENT_ID.kv(meta.event_id.to_string()),
            attrs::DELIVERY_ID.kv(meta.delivery_id.to_string()),
            attrs::REQUEST_ID.kv(meta.request_id.to_string()),
            attrs::ATTEMPT.kv(i64::from(attempt)),
        ]
        .into_iter()
        .flatten()
        .collect();
        attributes.extend([
            KeyValue::new(attrs::ROUTE, route.to_owned()),
            KeyValue::new(semconv::HTTP_REQUEST_METHOD, "POST"),
            KeyValue::new(semconv::URL_FULL, target.url.clone()),
            KeyValue::new(semconv::SERVER_ADDRESS, target.host.clone()),
        ]);
        if let Some(port) = target.port {
            attributes.push(KeyValue::new(semconv::SERVER_PORT, i64::from(port)));
        }
        if attempt > 1 {
            attributes.push(KeyValue::new(
                semconv::HTTP_REQUEST_RESEND_COUNT,
                i64::from(attempt - 1),
            ));
        }
        let span = self
            .tracer
            .span_builder(FORWARD_SPAN)
            .with_kind(SpanKind::Client)
            .with_attributes(attributes)
            .start_with_context(&self.tracer, &parent);
        parent.with_span(span)
    }
}

/// `parent` with a span of ids alone under its span, as the SDK's default
/// sampler (`parentbased_always_on`) makes it: the parent's trace and trace
/// state, sampled as the parent is (a new, sampled trace without a valid
/// parent), and a new span id.
fn with_ids_only(parent: Context) -> Context {
    let ids = RandomIdGenerator::default();
    let span = parent.span();
    let sc = span.span_context();
    let child = if sc.is_valid() {
        let flags = if sc.is_sampled() {
            sc.trace_flags()
        } else {
            TraceFlags::default()
        };
        SpanContext::new(
            sc.trace_id(),
            ids.new_span_id(),
            flags,
            false,
            sc.trace_state().clone(),
        )
    } else {
        SpanContext::new(
            ids.new_trace_id(),
            ids.new_span_id(),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )
    };
    parent.with_remote_span_context(child)
}

/// At most `max` bytes of `s`, cut on a character boundary.
fn truncate(s: &str, max: usize) -> &str {
    let mut end = s.len().min(max);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    &s[..end]
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

/// The trace id of the span in `cx` when it is sampled (its trace will be
/// exported), for the exemplars of latency histograms.
pub fn sampled_trace_id(cx: &Context) -> Option<String> {
    let span = cx.span();
    let sc = span.span_context();
    (sc.is_valid() && sc.is_sampled()).then(|| sc.trace_id().to_string())
}

/// Ends an internal span of `cx`, marked failed with `error`'s code and
/// plain words if any.
pub fn end_span(cx: &Context, error: Option<&ApiError>) {
    let span = cx.span();
    if !span.is_recording() {
        return;
    }
    if let Some(e) = error {
        span.set_attributes(attrs::ERROR_CODE.kv(e.code.as_str()));
        span.set_status(Status::error(e.message.clone()));
    }
    span.end();
}

/// A span of the tenant's part of one ingest (`hookd.actor`, `hookd.commit`),
/// ended exactly once: by [`IngestSpan::end`] with the answer, marked failed
/// with the code and words the sender gets for its error, or, when it is
/// dropped first (the sender went away mid-answer), unmarked.
pub struct IngestSpan(Option<Context>);

impl IngestSpan {
    /// The guard of the span started as `cx`.
    pub fn new(cx: Context) -> IngestSpan {
        IngestSpan(Some(cx))
    }

    /// The span's context, the parent of spans under it.
    pub fn context(&self) -> &Context {
        self.0.as_ref().expect("an ingest span is ended only once")
    }

    /// Ends the span with the answer's error, if any.
    pub fn end(mut self, error: Option<&IngestError>) {
        if let Some(cx) = self.0.take() {
            end_span(&cx, error.map(ApiError::from).as_ref());
        }
    }

    /// `answer`, which ends this span when it is answered.
    pub fn around(self, answer: Answer) -> Answer {
        Answer::later(async move {
            let outcome = answer.await;
            self.end(outcome.as_ref().err());
            outcome
        })
    }
}

impl Drop for IngestSpan {
    fn drop(&mut self) {
        if let Some(cx) = self.0.take() {
            end_span(&cx, None);
        }
    }
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
    /// Sets the ingest span's attributes and ends it. As the conventions
    /// ask of a server span, its status stays unset for a 4xx answer (the
    /// sender's error) and is Error, with `error.type`, for a 5xx.
    pub fn end(self, cx: &Context) {
        let span = cx.span();
        if !span.is_recording() {
            return;
        }
        let mut attributes: Vec<KeyValue> = Vec::with_capacity(16);
        let mut add = |attr: HookdAttr, value: opentelemetry::Value| {
            attributes.extend(attr.kv(value));
        };
        add(attrs::TENANT, self.tenant.to_owned().into());
        add(attrs::REQUEST_ID, self.request_id.to_string().into());
        add(attrs::VERIFICATION, verification(&self.result).into());
        if let Some(scheme) = self.scheme {
            add(attrs::SCHEME, scheme.as_str().into());
        }
        let status = match self.result {
            Ok(outcome) => {
                add(attrs::EVENT_ID, outcome.event_id.to_string().into());
                add(attrs::DELIVERY_ID, outcome.delivery_id.to_string().into());
                add(attrs::DUPLICATE, outcome.duplicate.into());
                if outcome.duplicate {
                    200
                } else {
                    202
                }
            }
            Err(e) => {
                add(attrs::DUPLICATE, false.into());
                add(attrs::ERROR_CODE, e.code.as_str().into());
                e.code.status().as_u16()
            }
        };
        attributes.push(KeyValue::new(
            semconv::HTTP_RESPONSE_STATUS_CODE,
            i64::from(status),
        ));
        if let (Err(e), 500..) = (self.result, status) {
            attributes.push(KeyValue::new(semconv::ERROR_TYPE, e.code.as_str()));
            span.set_status(Status::error(e.message.clone()));
        }
        span.set_attributes(attributes);
        span.end();
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
        | ErrorCode::InvalidForm
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
    pub outcome: &'a Next,
    /// The destination's HTTP status, if it answered.
    pub status_code: Option<u16>,
    /// How long the attempt took.
    pub duration_ms: u64,
    /// Why it failed, in plain words.
    pub error: Option<&'a str>,
    /// The failure's class for `error.type`: the status code, or what
    /// failed below HTTP (`timeout`, `tls`, ...).
    pub error_type: Option<&'a str>,
}

impl ForwardRecord<'_> {
    /// Sets the forward span's attributes and ends it; a failed attempt
    /// (any status but 2xx, or no answer) is an Error with `error.type`.
    pub fn end(self, cx: &Context) {
        let span = cx.span();
        if !span.is_recording() {
            return;
        }
        span.set_attributes(attrs::OUTCOME.kv(self.outcome.label()));
        span.set_attributes(
            attrs::DURATION_MS.kv(i64::try_from(self.duration_ms).unwrap_or(i64::MAX)),
        );
        if let Some(status) = self.status_code {
            span.set_attribute(KeyValue::new(
                semconv::HTTP_RESPONSE_STATUS_CODE,
                i64::from(status),
            ));
        }
        if let Some(error) = self.error {
            let error_type = self.error_type.unwrap_or("_OTHER");
            span.set_attribute(KeyValue::new(semconv::ERROR_TYPE, error_type.to_owned()));
            span.set_status(Status::error(error.to_owned()));
        }
        span.end();
    }
}

/// Read access to actix request headers for the propagator.
struct RequestHeaders<'a>(&'a HeaderMap);

impl Extractor for RequestHeaders<'_> {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn forward_target_drops_credentials_and_redacts_query_values() {
        let t = ForwardTarget::of("https://user:pw@hooks.example:8443/in?token=s3cret&v=2#frag");
        assert_eq!(
            t.url,
            "https://hooks.example:8443/in?token=REDACTED&v=REDACTED"
        );
        assert_eq!((t.host(), t.port), ("hooks.example", Some(8443)));
        let plain = ForwardTarget::of("http://10.0.0.1/hooks");
        assert_eq!(
            (plain.url.as_str(), plain.port),
            ("http://10.0.0.1/hooks", Some(80))
        );
        assert_eq!(truncate("é", 1), "");
    }
}
