//! One forward attempt: POST the original body, signed in Standard Webhooks
//! form with the tenant's destination secret, and classify the answer.

use std::time::{Duration, Instant};

use hookd_sdk::signature::{sign, Scheme};

use super::policy::{parse_retry_after, verdict_for_status, Verdict};
use crate::routes::settings::ForwardSettings;
use crate::{
    egress::address::{denied_cause, DeniedAddress},
    ids::RequestId,
    routes::transform::apply::{self as transform, Rewritten, Transformed},
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
    /// The failure's class, `error.type` of the forward span: the status
    /// code ("503"), or what failed below HTTP ("timeout", "tls", ...).
    pub error_type: Option<String>,
    /// How long the attempt took, for the latency histogram.
    pub elapsed: Duration,
}

/// How long before the lease it was claimed under runs out an attempt ends
/// at the latest: what it leaves for closing the connection and for the
/// clocks of hookd and the database to drift apart.
pub const LEASE_MARGIN: Duration = Duration::from_secs(1);

/// When an attempt claimed under a lease that had `left` to run must have
/// ended: [`LEASE_MARGIN`] before `left` after `asked`, when the claim was
/// asked for (the database read its clock after that, so the lease ends no
/// sooner).
pub fn send_by(asked: Instant, left: Duration) -> Instant {
    asked + left.saturating_sub(LEASE_MARGIN)
}

/// The whole attempt's timeout: the destination's, cut to what is left
/// until `send_by`; `None` once nothing is left (it is not sent).
fn time_left(timeout: Duration, send_by: Option<Instant>, now: Instant) -> Option<Duration> {
    match send_by {
        None => Some(timeout),
        Some(by) => Some(by.checked_duration_since(now)?)
            .filter(|left| !left.is_zero())
            .map(|left| left.min(timeout)),
    }
}

/// Headers of a forwarded delivery, besides the signature.
pub const ATTEMPT_HEADER: &str = "hookd-attempt";
/// Carries hookd's delivery id to the destination.
pub const DELIVERY_ID_HEADER: &str = "hookd-delivery-id";

/// Sends attempt number `attempt` of `event` to the tenant's destination,
/// with `trace_headers` (the attempt's `traceparent`), ended by `send_by`
/// at the latest (the request's timeout cut to it). `None`: `send_by` came
/// before the request could leave (after a slow transform, or a stall),
/// so nothing was sent.
///
/// A request that cannot be built, or whose destination address the policy
/// denies, is never sent and never retried. An attempt claimed under a
/// forwarding lease ends before the lease does ([`send_by`]).
pub async fn send(
    client: &reqwest::Client,
    settings: &ForwardSettings,
    event: &StoredEvent,
    (attempt, now_ms): (u32, i64),
    trace_headers: &[(String, String)],
    send_by: Option<Instant>,
) -> Option<AttemptResult> {
    let request_id = RequestId::generate();
    let started = Instant::now();
    let version = settings.transform.as_ref().map(|t| t.transform.version());
    let rewrite = match &settings.transform {
        None => None,
        Some(route) => match transform::apply(route, &settings.url, event, (attempt, now_ms)).await
        {
            Transformed::Send(rewritten) => Some(rewritten),
            Transformed::Drop => {
                let note = b"dropped by the route's transform: nothing was sent".to_vec();
                let answer = (None, note, Verdict::Dropped, (String::new(), String::new()));
                return Some(result(
                    answer, attempt, now_ms, started, request_id, version,
                ));
            }
            Transformed::Failed(why) => {
                let error = format!("transform_failed: {why}");
                let answer = (
                    None,
                    Vec::new(),
                    Verdict::TransformFailed,
                    ("transform_failed".to_owned(), error),
                );
                return Some(result(
                    answer, attempt, now_ms, started, request_id, version,
                ));
            }
        },
    };
    let timeout = time_left(settings.timeout, send_by, Instant::now())?;
    let target = Target {
        event,
        attempt,
        now_ms,
        trace_headers,
        request_id: &request_id,
        rewrite: rewrite.as_ref(),
    };
    let answer = match build(client, settings, &target, timeout) {
        Ok(request) => execute(client, request, (settings, timeout), now_ms).await,
        Err(error) => (
            None,
            Vec::new(),
            Verdict::Unsendable,
            ("unsendable".to_owned(), error.to_string()),
        ),
    };
    Some(result(
        answer, attempt, now_ms, started, request_id, version,
    ))
}

/// What one attempt sends: the stored event, or what the route's
/// transform made of it.
struct Target<'a> {
    event: &'a StoredEvent,
    attempt: u32,
    now_ms: i64,
    trace_headers: &'a [(String, String)],
    request_id: &'a RequestId,
    rewrite: Option<&'a Rewritten>,
}

/// The attempt's result from its answer.
fn result(
    (status_code, response_body, verdict, (error_type, error)): Answer,
    attempt: u32,
    now_ms: i64,
    started: Instant,
    request_id: RequestId,
    transform_version: Option<u32>,
) -> AttemptResult {
    let success = matches!(verdict, Verdict::Success | Verdict::Dropped);
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
            transform_version,
        },
        verdict,
        error,
        error_type: (!success).then_some(error_type),
        elapsed,
    }
}

/// Why a forward cannot be sent at all; recorded as the attempt's error.
#[derive(Debug, thiserror::Error)]
enum Unsendable {
    /// A part is no valid URL or header value.
    #[error("request could not be built: {}", root_cause(.0))]
    Build(reqwest::Error),
    /// The destination is a literal address the policy denies.
    #[error(transparent)]
    Denied(#[from] DeniedAddress),
    /// The path a transform returned makes no valid URL.
    #[error("the transformed URL is not valid: {0}")]
    Url(String),
}

/// Builds the signed request, timed out after `timeout`, or says why it
/// cannot be sent: a part that is no valid URL or header value, or a
/// literal destination address the policy denies (names are checked when
/// they are resolved).
fn build(
    client: &reqwest::Client,
    settings: &ForwardSettings,
    target: &Target<'_>,
    timeout: Duration,
) -> Result<reqwest::Request, Unsendable> {
    let Target {
        event,
        attempt,
        now_ms,
        trace_headers,
        request_id,
        rewrite,
    } = *target;
    let meta = &event.meta;
    let url = match rewrite {
        Some(rewritten) => {
            let mut url =
                reqwest::Url::parse(&settings.url).map_err(|e| Unsendable::Url(e.to_string()))?;
            let joined = url
                .join(&rewritten.path_and_query)
                .map_err(|e| Unsendable::Url(e.to_string()))?;
            url.set_path(joined.path());
            url.set_query(joined.query());
            url.to_string()
        }
        None => settings.url.clone(),
    };
    let (headers, body) = match rewrite {
        Some(rewritten) => (&rewritten.headers, rewritten.body.clone()),
        None => (&meta.headers, event.body.clone()),
    };
    let mut request = client
        .post(url)
        .timeout(timeout)
        .header("x-request-id", request_id.as_str())
        .header(ATTEMPT_HEADER, attempt.to_string())
        .header(DELIVERY_ID_HEADER, meta.delivery_id.as_str());
    for (name, value) in trace_headers {
        request = request.header(name.as_str(), value.as_str());
    }
    let mut has_content_type = false;
    for (name, value) in headers {
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
        &body,
    ) {
        request = request.header(name, value);
    }
    let request = request.body(body).build().map_err(Unsendable::Build)?;
    if let Some(policy) = &settings.address_policy {
        policy.check_url(request.url())?;
    }
    Ok(request)
}

/// An answer: the status, the kept response bytes, the verdict and, for a
/// failure, its class and plain words.
type Answer = (Option<u16>, Vec<u8>, Verdict, (String, String));

/// Sends a built request (timed out after `timeout`) and classifies the
/// answer; the failure is given as its class and its plain words.
async fn execute(
    client: &reqwest::Client,
    request: reqwest::Request,
    (settings, timeout): (&ForwardSettings, Duration),
    now_ms: i64,
) -> Answer {
    match client.execute(request).await {
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
            (
                Some(status.as_u16()),
                kept,
                verdict,
                (status.as_u16().to_string(), format!("HTTP {status}")),
            )
        }
        Err(e) => match denied_cause(&e) {
            Some(denied) => {
                denied.log();
                (
                    None,
                    Vec::new(),
                    Verdict::Unsendable,
                    ("unsendable".to_owned(), denied.to_string()),
                )
            }
            None => {
                let error = describe(&e, settings, timeout);
                (
                    None,
                    Vec::new(),
                    Verdict::Retryable {
                        retry_after_ms: None,
                    },
                    (error_class(&error).to_owned(), error),
                )
            }
        },
    }
}

/// The class of a transport failure [`describe`] put in words, for
/// `error.type`: the words' first step, as one token.
fn error_class(described: &str) -> &'static str {
    const CLASSES: [(&str, &str); 7] = [
        ("connect timeout", "connect_timeout"),
        ("timeout", "timeout"),
        ("dns lookup failed", "dns"),
        ("tls handshake failed", "tls"),
        ("connection reset", "connection_reset"),
        ("response ended early", "incomplete_response"),
        ("could not connect", "connect"),
    ];
    CLASSES
        .iter()
        .find(|(prefix, _)| described.starts_with(prefix))
        .map_or("request_failed", |(_, class)| class)
}

/// The innermost error behind `e`.
fn root_cause(e: &reqwest::Error) -> &(dyn std::error::Error + 'static) {
    let mut root: &(dyn std::error::Error + 'static) = e;
    while let Some(next) = root.source() {
        root = next;
    }
    root
}

/// Plain words for a transport failure: what went wrong first ("dns lookup
/// failed", "tls handshake failed", "connection reset", "response ended
/// early", "could not connect"), then the innermost cause; a timeout says
/// when `timeout` (the whole attempt's) was cut short by the lease.
fn describe(e: &reqwest::Error, settings: &ForwardSettings, timeout: Duration) -> String {
    if e.is_timeout() {
        let cut = timeout < settings.timeout;
        if e.is_connect() && !(cut && timeout <= settings.connect_timeout) {
            return format!(
                "connect timeout after {:.1} s",
                settings.connect_timeout.as_secs_f64()
            );
        }
        if cut {
            return format!(
                "timeout after {:.1} s, before the forwarding lease it was sent under ends",
                timeout.as_secs_f64()
            );
        }
        return format!("timeout after {:.1} s", timeout.as_secs_f64());
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

#[cfg(test)]
mod tests;
