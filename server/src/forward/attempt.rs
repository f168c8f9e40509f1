//! One forward attempt: POST the original body, signed in Standard Webhooks
//! form with the tenant's destination secret, and classify the answer.

use std::time::{Duration, Instant};

use hookd_sdk::signature::{sign, Scheme};

use super::policy::{parse_retry_after, verdict_for_status, Verdict};
use crate::{
    config::ForwardSettings,
    ids::RequestId,
    store::records::{AttemptRecord, StoredEvent},
};

/// Most response bytes kept with an attempt.
pub const RESPONSE_KEEP_BYTES: usize = 4096;

/// What one attempt produced.
#[derive(Debug)]
pub struct AttemptResult {
    /// The record to store (its `next_retry_at_ms` is filled in later).
    pub record: AttemptRecord,
    /// Retry classification.
    pub verdict: Verdict,
    /// Why it failed, in plain words ("HTTP 503 Service Unavailable").
    pub error: String,
    /// How long the attempt took, for the latency histogram.
    pub elapsed: Duration,
}

/// Headers of a forwarded delivery, besides the signature.
pub const ATTEMPT_HEADER: &str = "hookd-attempt";
/// Carries hookd's delivery id to the destination.
pub const DELIVERY_ID_HEADER: &str = "hookd-delivery-id";

/// Sends attempt number `attempt` of `event` to the tenant's destination,
/// with `trace_headers` (the attempt's `traceparent`).
pub async fn send(
    client: &reqwest::Client,
    settings: &ForwardSettings,
    event: &StoredEvent,
    attempt: u32,
    now_ms: i64,
    trace_headers: &[(String, String)],
) -> AttemptResult {
    let request_id = RequestId::generate();
    let meta = &event.meta;
    let mut request = client
        .post(&settings.url)
        .timeout(settings.timeout)
        .header("x-request-id", request_id.as_str())
        .header(ATTEMPT_HEADER, attempt.to_string())
        .header(DELIVERY_ID_HEADER, meta.delivery_id.as_str());
    for (name, value) in trace_headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let mut has_content_type = false;
    for (name, value) in &meta.headers {
        has_content_type |= name == "content-type";
        request = request.header(name.as_str(), value.as_str());
    }
    if !has_content_type {
        request = request.header("content-type", "application/json");
    }
    for (name, value) in sign(
        Scheme::Standard,
        &settings.secret,
        meta.event_id.as_str(),
        now_ms.div_euclid(1000),
        &event.body,
    ) {
        request = request.header(name, value);
    }

    let started = Instant::now();
    let outcome = request.body(event.body.clone()).send().await;
    let (status_code, response_body, verdict, error) = match outcome {
        Ok(mut response) => {
            let status = response.status();
            let retry_after = response
                .headers()
                .get("retry-after")
                .and_then(|v| v.to_str().ok())
                .and_then(|v| parse_retry_after(v, now_ms));
            let mut kept = Vec::new();
            while kept.len() < RESPONSE_KEEP_BYTES {
                match response.chunk().await {
                    Ok(Some(chunk)) => kept.extend_from_slice(
                        &chunk[..chunk.len().min(RESPONSE_KEEP_BYTES - kept.len())],
                    ),
                    Ok(None) | Err(_) => break,
                }
            }
            let verdict = verdict_for_status(status.as_u16(), retry_after);
            let error = format!("HTTP {status}");
            (Some(status.as_u16()), kept, verdict, error)
        }
        Err(e) => {
            let error = describe(&e, settings);
            (
                None,
                Vec::new(),
                Verdict::Retryable {
                    retry_after_ms: None,
                },
                error,
            )
        }
    };
    let success = verdict == Verdict::Success;
    let elapsed = started.elapsed();
    AttemptResult {
        record: AttemptRecord {
            attempt,
            started_at_ms: now_ms,
            duration_ms: elapsed.as_millis() as u64,
            status_code,
            error: (!success).then(|| error.clone()),
            response_body,
            next_retry_at_ms: None,
            request_id,
        },
        verdict,
        error,
        elapsed,
    }
}

/// Plain words for a transport failure: what went wrong first ("dns lookup
/// failed", "tls handshake failed", "connection reset", "response ended
/// early", "could not connect"), then the innermost cause.
fn describe(e: &reqwest::Error, settings: &ForwardSettings) -> String {
    if e.is_timeout() {
        if e.is_connect() {
            return format!(
                "connect timeout after {:.1} s",
                settings.connect_timeout.as_secs_f64()
            );
        }
        return format!("timeout after {:.1} s", settings.timeout.as_secs_f64());
    }
    let chain: Vec<&(dyn std::error::Error + 'static)> =
        std::iter::successors(Some(e as &(dyn std::error::Error + 'static)), |e| {
            e.source()
        })
        .collect();
    let root = chain.last().copied().unwrap_or(e);
    let io = || {
        chain
            .iter()
            .filter_map(|e| e.downcast_ref::<std::io::Error>())
    };
    // hyper-util names the step that failed: "dns error", "tcp connect error".
    if chain.iter().any(|e| e.to_string().starts_with("dns error")) {
        return format!("dns lookup failed: {root}");
    }
    if let Some(tls) = io().find_map(rustls_error) {
        return format!("tls handshake failed: {tls}");
    }
    if io().any(|io| io.kind() == std::io::ErrorKind::ConnectionReset) {
        return format!("connection reset: {root}");
    }
    if chain
        .iter()
        .filter_map(|e| e.downcast_ref::<hyper::Error>())
        .any(|h| h.is_incomplete_message())
    {
        return format!("response ended early: {root}");
    }
    if e.is_connect() {
        format!("could not connect: {root}")
    } else {
        format!("request failed: {root}")
    }
}

/// The rustls error inside (possibly nested) io errors: `source()` skips
/// the error an io::Error wraps, so unwrap them by hand.
fn rustls_error(io: &std::io::Error) -> Option<&rustls::Error> {
    let inner = io.get_ref()?;
    inner
        .downcast_ref::<rustls::Error>()
        .or_else(|| rustls_error(inner.downcast_ref::<std::io::Error>()?))
}
