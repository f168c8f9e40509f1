//! Limits of the public edge that actix does not enforce the way hookd
//! needs.

use std::{
    cell::{Cell, RefCell},
    pin::Pin,
    rc::Rc,
    task::{Context, Poll},
    time::Duration,
};

use actix_web::{
    body::{BodySize, BoxBody, EitherBody, MessageBody},
    dev::{Payload, ServiceRequest, ServiceResponse},
    error::PayloadError,
    http::header::{CONTENT_LENGTH, TRANSFER_ENCODING},
    middleware::Next,
    web::Bytes,
    HttpMessage,
};
use futures_util::{stream, Stream};

use crate::{
    config::{HttpConfig, LimitsConfig},
    error::http::{ApiError, ErrorCode},
    ids::RequestId,
    tenant::report::EdgeReport,
};

/// The per-request limits of the HTTP edge.
///
/// Limits of the public edge that actix does not enforce the way hookd
/// needs: the size of the request head, answered with the standard error
/// body, the deadline for the rest of a request once its head is in, and
/// closing a connection whose request body was answered before it was read.
#[derive(Debug, Clone, Copy)]
pub struct EdgeLimits {
    /// Time the body gets once the head is in.
    pub body_timeout: Duration,
    /// The whole-request deadline, as configured (for the error details).
    pub request_timeout_secs: u64,
    /// `limits.max_decompression_ratio`.
    pub max_decompression_ratio: u64,
}

impl EdgeLimits {
    /// The limits `[http]` and `[limits]` configure.
    pub fn new(http: &HttpConfig, limits: &LimitsConfig) -> Self {
        EdgeLimits {
            body_timeout: http.body_timeout(),
            request_timeout_secs: http.request_timeout_secs,
            max_decompression_ratio: limits.max_decompression_ratio,
        }
    }

    /// The answer to a request whose body missed its deadline.
    pub fn timed_out(&self) -> ApiError {
        ApiError::new(
            ErrorCode::RequestTimeout,
            format!(
                "the request was not received within {} s; send it again without pauses",
                self.request_timeout_secs
            ),
        )
        .detail("timeout_secs", self.request_timeout_secs)
    }
}

/// The size of a request head as sent: the request line and, per header
/// line, name, value, `": "` and CRLF.
pub fn head_bytes(req: &ServiceRequest) -> usize {
    let line = req.method().as_str().len()
        + req.uri().path_and_query().map_or(1, |p| p.as_str().len())
        + " HTTP/1.1\r\n ".len();
    req.headers()
        .iter()
        .map(|(name, value)| name.as_str().len() + value.len() + 4)
        .sum::<usize>()
        + line
}

/// Refuses a request whose head is larger than `limit` with
/// `HEADERS_TOO_LARGE`, before any handler (or body read) runs, and counts
/// it in `edge` (the `other` label: no tenant is looked up for it).
pub async fn header_limit(
    limit: usize,
    edge: EdgeReport,
    req: ServiceRequest,
    next: Next<BoxBody>,
) -> Result<ServiceResponse<EitherBody<BoxBody>>, actix_web::Error> {
    let size = head_bytes(&req);
    if size <= limit {
        return Ok(next.call(req).await?.map_into_left_body());
    }
    let request_id = req
        .extensions()
        .get::<RequestId>()
        .cloned()
        .unwrap_or_else(RequestId::generate);
    tracing::warn!(request_id = %request_id, head_bytes = size, limit_bytes = limit, "request head too large");
    edge.refused(ErrorCode::HeadersTooLarge);
    let answer = ApiError::new(
        ErrorCode::HeadersTooLarge,
        format!("the request head is {size} bytes; at most {limit} are accepted"),
    )
    .detail("limit_bytes", limit)
    .to_response(&request_id);
    Ok(req.into_response(answer).map_into_right_body())
}

/// An answer's body, holding the request body it was sent before reading
/// (if any) until the answer has been written.
pub struct HeldBody {
    body: BoxBody,
    _unread: Option<Rc<RefCell<Payload>>>,
}

impl MessageBody for HeldBody {
    type Error = Box<dyn std::error::Error>;

    fn size(&self) -> BodySize {
        self.body.size()
    }

    fn poll_next(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Bytes, Self::Error>>> {
        Pin::new(&mut self.get_mut().body).poll_next(cx)
    }
}

/// Closes the connection after the answer when the request had a body that
/// was not read to its end (rejected early, timed out, or never wanted).
/// actix drains the rest of a chunked body whose reader is gone, for as long
/// as the sender keeps trickling it, holding a connection slot; a request
/// body still held when the answer is written makes it close the connection
/// instead. So the body is shared between the handler and this middleware,
/// and an unfinished one is held by the answer's body.
pub async fn close_unread_body(
    mut req: ServiceRequest,
    next: Next<impl MessageBody + 'static>,
) -> Result<ServiceResponse<HeldBody>, actix_web::Error> {
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.trim() != "0");
    if !(declared || req.headers().contains_key(TRANSFER_ENCODING)) {
        let res = next.call(req).await?;
        return Ok(res.map_body(|_, body| HeldBody {
            body: body.boxed(),
            _unread: None,
        }));
    }
    let shared = Rc::new(RefCell::new(req.take_payload()));
    let ended = Rc::new(Cell::new(false));
    let (reader, seen_end) = (shared.clone(), ended.clone());
    let body: Pin<Box<dyn Stream<Item = Result<Bytes, PayloadError>>>> =
        Box::pin(stream::poll_fn(move |cx| {
            let next = Pin::new(&mut *reader.borrow_mut()).poll_next(cx);
            if let Poll::Ready(None) = next {
                seen_end.set(true);
            }
            next
        }));
    req.set_payload(Payload::from(body));
    let res = next.call(req).await?;
    let unread = (!ended.get()).then_some(shared);
    Ok(res.map_body(|_, body| HeldBody {
        body: body.boxed(),
        _unread: unread,
    }))
}
