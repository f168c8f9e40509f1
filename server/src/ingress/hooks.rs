//! `POST /hooks/{tenant_id}`: route to the tenant, read the body, and answer it
//! as a handshake or through the tenant's ingest gate.

use actix_web::{
    http::{header::CONTENT_LENGTH, Method},
    web, HttpRequest, HttpResponse,
};
use futures_util::StreamExt;
use hookd_proto::domain::{DeliveryStatus, DEFAULT_ROUTE};
use serde::Serialize;

use hookd_sdk::signature::handshake::Reply;

use super::{
    body::BodyBuffer,
    encoding::{DecodeError, Encoding, Inflater, Unsupported},
    handshake, request_id_of, AppState,
};
use crate::tenant::TenantSettings;
use crate::{
    config::SignedBody,
    error::http::{ApiError, ErrorCode},
    ids::{DeliveryId, EventId, RequestId},
    ingest::{Ingest, IngestOutcome},
    store::api::Receipt,
    tenant::{
        report::{IngestReport, Refusal},
        TenantHandle,
    },
};

/// Everything under `/hooks`: `POST /hooks/{tenant_id}` is a delivery,
/// `GET` a handshake, any other method `METHOD_NOT_ALLOWED`, any other path
/// `ROUTE_NOT_FOUND`. The tenant id is the one segment after the scope's
/// static prefix, taken without a pattern: a route with a `{tenant_id}`
/// segment is matched by a regular expression on every request, about a
/// twentieth of a duplicate's CPU.
///
/// `POST /hooks/{tenant_id}`: route to the tenant, read the body within its
/// limit (decoding a compressed one), answer it as a handshake if it is the
/// one the tenant's scheme expects (`super::handshake`), else run it
/// through the tenant's ingest gate, answer.
pub async fn route(
    req: HttpRequest,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let Some(tenant) = tenant_of(&req).map(str::to_owned) else {
        return super::route_not_found(req).await;
    };
    match *req.method() {
        Method::POST => ingest(req, tenant, payload, state).await,
        Method::GET => handshake::get(req, &tenant, state).await,
        _ => super::method_not_allowed(req).await,
    }
}

/// The tenant id of a path under `/hooks`: its one non-empty segment.
fn tenant_of(req: &HttpRequest) -> Option<&str> {
    let rest = req.match_info().unprocessed().strip_prefix('/')?;
    (!rest.is_empty() && !rest.contains('/')).then_some(rest)
}

/// The ingest handler: reads the request, hands it to the tenant's gate
/// and answers; what it became is reported once ([`crate::report`]).
async fn ingest(
    req: HttpRequest,
    tenant: String,
    payload: web::Payload,
    state: web::Data<AppState>,
) -> HttpResponse {
    let request_id = request_id_of(&req);
    let handle = state.registry.get(&tenant);
    let report = IngestReport::start(
        &state.services,
        &req,
        (&tenant, handle.as_ref()),
        &request_id,
    );
    let admitted = accept(
        &req,
        payload,
        (handle.as_ref(), &state),
        &tenant,
        &request_id,
        report.trace(),
    )
    .await;
    let result = match admitted {
        Ok(Admitted::Handshake(reply)) => return handshake::respond(reply),
        Ok(Admitted::Event(outcome)) => Ok(outcome),
        Err(refusal) => {
            let answer = refusal.answer();
            Err((refusal, answer))
        }
    };
    let response = match &result {
        Ok(outcome) => {
            // A duplicate's answer names no routes: no settings to read.
            let settings = handle
                .as_ref()
                .filter(|_| !outcome.duplicate)
                .map(|h| h.settings());
            let body = Answered::of(outcome, &request_id, settings.as_deref());
            match outcome.duplicate {
                true => HttpResponse::Ok().json(body),
                false => HttpResponse::Accepted().json(body),
            }
        }
        Err((_, answer)) => answer.to_response(&request_id),
    };
    report
        .finish(result.as_ref().map_err(|(r, a)| (r, a)))
        .await;
    response
}

/// The answer to an accepted delivery or a duplicate, its fields in the
/// order the sender has always seen them. A new event's answer lists
/// `deliveries` (each route's delivery, the default route's unless its
/// filter did not pass the event), `filtered` (the routes whose filter did
/// not pass it) and, when none did, `status: "unrouted"`; a duplicate's
/// says `duplicate: true`.
#[derive(Serialize)]
struct Answered<'a> {
    #[serde(skip_serializing_if = "Option::is_none")]
    deliveries: Option<Vec<RouteDelivery<'a>>>,
    delivery_id: &'a DeliveryId,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    duplicate: bool,
    event_id: &'a EventId,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    filtered: Vec<&'a str>,
    request_id: &'a RequestId,
    #[serde(skip_serializing_if = "Option::is_none")]
    status: Option<&'static str>,
}

/// One route's delivery in a 202.
#[derive(Serialize)]
struct RouteDelivery<'a> {
    delivery_id: &'a DeliveryId,
    route: &'a str,
}

impl<'a> Answered<'a> {
    fn of(
        outcome: &'a IngestOutcome,
        request_id: &'a RequestId,
        settings: Option<&'a TenantSettings>,
    ) -> Answered<'a> {
        let mut answer = Answered {
            deliveries: None,
            delivery_id: &outcome.delivery_id,
            duplicate: outcome.duplicate,
            event_id: &outcome.event_id,
            filtered: Vec::new(),
            request_id,
            status: None,
        };
        if outcome.duplicate {
            return answer;
        }
        let queued = outcome.receipt == Receipt::Queued;
        let default = queued.then_some((DEFAULT_ROUTE, &outcome.delivery_id));
        let routes = default
            .into_iter()
            .chain(outcome.routes.iter().map(|(r, id)| (r.as_str(), id)));
        answer.deliveries = Some(
            routes
                .map(|(route, delivery_id)| RouteDelivery { delivery_id, route })
                .collect(),
        );
        let others = settings
            .iter()
            .flat_map(|s| s.routes.iter())
            .map(|r| r.name.as_str())
            .filter(|name| outcome.routes.iter().all(|(got, _)| got != name));
        answer.filtered = (!queued)
            .then_some(DEFAULT_ROUTE)
            .into_iter()
            .chain(others)
            .collect();
        if outcome.receipt == Receipt::Unrouted {
            answer.status = Some(DeliveryStatus::Unrouted.as_str());
        }
        answer
    }
}

/// What a request that passed became: an event, or a handshake's answer.
enum Admitted {
    Event(IngestOutcome),
    Handshake(Reply),
}

async fn accept(
    req: &HttpRequest,
    payload: web::Payload,
    (handle, state): (Option<&TenantHandle>, &AppState),
    tenant: &str,
    request_id: &RequestId,
    trace: &opentelemetry::Context,
) -> Result<Admitted, Refusal> {
    let limits = &state.limits;
    let Some(handle) = handle else {
        return Err(match state.registry.unavailable(tenant) {
            Some(_) => ApiError::new(
                ErrorCode::TenantUnavailable,
                format!("tenant {tenant:?} cannot run until an operator fixes its settings"),
            )
            .detail("tenant_id", tenant)
            .retry_after(60),
            None => ApiError::new(ErrorCode::TenantNotFound, format!("no tenant {tenant:?}"))
                .detail("tenant_id", tenant),
        }
        .into());
    };
    if !handle.settings().enabled {
        let disabled = format!("tenant {tenant:?} is disabled");
        return Err(ApiError::new(ErrorCode::TenantDisabled, disabled).into());
    }
    let settings = handle.settings();
    let reading = Reading {
        limit: settings.max_body_bytes,
        max_ratio: limits.max_decompression_ratio,
        keep_wire: settings.signed_body == SignedBody::Wire,
    };
    let read = read_body(req, payload, reading);
    let ReadBody { body, wire } = actix_rt::time::timeout(limits.body_timeout, read)
        .await
        .map_err(|_| limits.timed_out())??;
    if let Some(answer) = handshake::answer(handle, &state.services, req, &body, request_id) {
        return answer.map(Admitted::Handshake).map_err(Refusal::from);
    }
    let outcome = handle
        .ingest(Ingest {
            request_id: request_id.clone(),
            headers: req.headers(),
            query: req.query_string(),
            method: req.method().as_str(),
            body: body.clone(),
            wire,
            trace: trace.clone(),
        })
        .await;
    outcome
        .map(Admitted::Event)
        .map_err(|error| Refusal::Gate { error, body })
}

/// How one request's body is to be read: the tenant's limit (on the bytes
/// sent and, for a compressed body, on the decoded ones), the ratio a
/// compressed body may grow by, and whether its compressed bytes are signed.
struct Reading {
    limit: usize,
    max_ratio: u64,
    keep_wire: bool,
}

/// A body as read: decoded if it was compressed, with the compressed bytes
/// when the signature covers them.
struct ReadBody {
    body: web::Bytes,
    wire: Option<web::Bytes>,
}

/// Reads the body, rejecting it as soon as it is known to be over the
/// limit: a declared `Content-Length` is rejected before any byte is read,
/// a chunked body as soon as it crosses the limit, a compressed one as soon
/// as its decoded bytes cross the limit or the ratio (decoded chunk by
/// chunk as it arrives, never inflated whole first).
async fn read_body(
    req: &HttpRequest,
    mut payload: web::Payload,
    reading: Reading,
) -> Result<ReadBody, ApiError> {
    let limit = reading.limit;
    let encoding = Encoding::of(req.headers()).map_err(|Unsupported(sent)| {
        ApiError::new(
            ErrorCode::UnsupportedContentEncoding,
            format!("Content-Encoding {sent:?} is not decoded here; send the body plain, gzip or deflate"),
        )
        .detail("content_encoding", sent)
    })?;
    let declared = req
        .headers()
        .get(CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<usize>().ok());
    if declared.is_some_and(|len| len > limit) {
        return Err(too_large(limit));
    }
    let mut inflater = Inflater::new(encoding, limit, reading.max_ratio);
    let keep_wire = inflater.is_none() || reading.keep_wire;
    let mut body = BodyBuffer::new(declared, limit);
    while let Some(chunk) = payload.next().await {
        let chunk = chunk.map_err(|e| {
            ApiError::new(
                ErrorCode::BodyIncomplete,
                format!("the body could not be read: {e}"),
            )
        })?;
        if keep_wire {
            body.push(&chunk).map_err(|_| too_large(limit))?;
        }
        if let Some(inflater) = inflater.as_mut() {
            inflater
                .push(&chunk)
                .map_err(|e| undecodable(e, encoding, &reading))?;
        }
    }
    let wire = keep_wire.then(|| body.finish());
    match inflater {
        None => Ok(ReadBody {
            body: wire.unwrap_or_default(),
            wire: None,
        }),
        Some(inflater) => Ok(ReadBody {
            body: inflater
                .finish()
                .map_err(|e| undecodable(e, encoding, &reading))?,
            wire,
        }),
    }
}

fn too_large(limit: usize) -> ApiError {
    ApiError::new(
        ErrorCode::PayloadTooLarge,
        format!("body is larger than this tenant's limit of {limit} bytes"),
    )
    .detail("limit_bytes", limit)
}

/// The answer to a compressed body that could not be decoded within the caps.
fn undecodable(error: DecodeError, encoding: Encoding, reading: &Reading) -> ApiError {
    match error {
        DecodeError::TooLarge => ApiError::new(
            ErrorCode::PayloadTooLarge,
            format!(
                "the body decoded is larger than this tenant's limit of {} bytes",
                reading.limit
            ),
        )
        .detail("limit_bytes", reading.limit)
        .detail("decoded", true),
        DecodeError::Ratio => ApiError::new(
            ErrorCode::CompressionRatioTooHigh,
            format!(
                "the body decodes to more than {} times its compressed size",
                reading.max_ratio
            ),
        )
        .detail("max_ratio", reading.max_ratio),
        DecodeError::Invalid(reason) => ApiError::new(
            ErrorCode::InvalidCompressedBody,
            format!("the body is not valid {} data: {reason}", encoding.name()),
        ),
    }
}
