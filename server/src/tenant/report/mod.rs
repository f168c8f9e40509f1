//! What became of each request to `/hooks`, reported once.

mod handshake;

pub(crate) use handshake::handshake;
mod rejection;

use std::{sync::Arc, time::Instant};

use actix_web::{web::Bytes, HttpRequest};
use hookd_proto::domain::AlertType;

use super::{Services, TenantHandle};
use crate::{
    error::{ApiError, ErrorCode},
    ids::RequestId,
    ingest::{BodyError, IngestError, IngestOutcome},
    metrics::{window::Counted, IngestResult, TenantMetrics},
    telemetry::spans::{self, IngestRecord},
};

/// Why a request to `/hooks` was not accepted.
pub(crate) enum Refusal {
    /// Refused at the edge (unknown tenant, body unreadable, a handshake
    /// refused): nothing of the tenant's to report but the answer.
    Edge(ApiError),
    /// Refused by the tenant's gate, with the body it refused.
    Gate { error: IngestError, body: Bytes },
}

impl Refusal {
    /// The answer the sender gets.
    pub(crate) fn answer(&self) -> ApiError {
        match self {
            Refusal::Edge(answer) => answer.clone(),
            Refusal::Gate { error, .. } => ApiError::from(error),
        }
    }
}

impl From<ApiError> for Refusal {
    fn from(answer: ApiError) -> Self {
        Refusal::Edge(answer)
    }
}

/// The report of one request to `/hooks`, started as it arrives.
///
/// What became of each request to `/hooks`, reported once: its
/// `hookd.ingest` span, its log line, its label's counters and last-day
/// windows, its latency, the alert signal a refusal counts toward and the
/// budgeted record of a refused body ([`rejection`]).
pub(crate) struct IngestReport<'a> {
    services: &'a Services,
    tenant: &'a str,
    handle: Option<&'a TenantHandle>,
    request_id: &'a RequestId,
    trace: opentelemetry::Context,
    started: Instant,
}

impl<'a> IngestReport<'a> {
    /// Starts the request's `hookd.ingest` span (a child of the sender's
    /// trace, if it sent one).
    pub(crate) fn start(
        services: &'a Services,
        req: &HttpRequest,
        (tenant, handle): (&'a str, Option<&'a TenantHandle>),
        request_id: &'a RequestId,
    ) -> Self {
        IngestReport {
            trace: services.telemetry.spans().start_ingest(req),
            services,
            tenant,
            handle,
            request_id,
            started: Instant::now(),
        }
    }

    /// The request's trace, which the gate's spans join.
    pub(crate) fn trace(&self) -> &opentelemetry::Context {
        &self.trace
    }

    /// Reports what the request became: its outcome, or its refusal with
    /// the answer its sender is told; returns once a refused body's record
    /// is durable.
    pub(crate) async fn finish(self, result: Result<&IngestOutcome, (&Refusal, &ApiError)>) {
        if let (Err((Refusal::Gate { error, body }, answer)), Some(handle)) = (result, self.handle)
        {
            if let Some(kind) = alert_of(error) {
                handle.state().signals.bump(kind);
            }
            rejection::record(self.services, handle, self.request_id, error, answer, body).await;
        }
        let answered = result.map_err(|(_, answer)| answer);
        IngestRecord {
            tenant: self.tenant,
            request_id: self.request_id,
            scheme: self.handle.map(|h| h.settings().scheme),
            result: answered,
        }
        .end(&self.trace);
        let trace_id = spans::trace_id(&self.trace);
        let (kind, counted) = match answered {
            Ok(outcome) => {
                tracing::info!(
                    tenant = %self.tenant,
                    event_id = %outcome.event_id,
                    delivery_id = %outcome.delivery_id,
                    request_id = %self.request_id,
                    trace_id = %trace_id,
                    duplicate = outcome.duplicate,
                    "delivery accepted"
                );
                match outcome.duplicate {
                    true => (IngestResult::Duplicate, Counted::Duplicate),
                    false => (IngestResult::Accepted, Counted::Accepted),
                }
            }
            Err(e) => {
                tracing::warn!(
                    tenant = %self.tenant,
                    request_id = %self.request_id,
                    trace_id = %trace_id,
                    code = e.code.as_str(),
                    reason = %e.message,
                    "delivery rejected"
                );
                (IngestResult::Rejected, Counted::Rejected(e.code))
            }
        };
        self.count(counted);
        let sampled = spans::sampled_trace_id(&self.trace);
        let metrics = self.services.telemetry.metrics();
        metrics.ingest_latency(kind, self.started.elapsed(), sampled);
    }

    /// Counts the request in its label's counters and, for a running
    /// tenant, in its last-day windows at the services' clock.
    fn count(&self, counted: Counted) {
        let metrics = self.services.telemetry.metrics();
        let counters = self.handle.map_or(metrics.other(), |h| &h.state().metrics);
        match counted {
            Counted::Accepted => counters.accepted(),
            Counted::Duplicate => counters.duplicate(),
            Counted::Rejected(code) => counters.rejected(code),
        }
        if let Some(handle) = self.handle {
            let now_ms = self.services.clock.now_ms();
            metrics
                .windows()
                .record(handle.state().id(), now_ms, counted);
        }
    }
}

/// The alert a refused delivery counts toward, if any.
fn alert_of(rejection: &IngestError) -> Option<AlertType> {
    match rejection {
        IngestError::Verify { .. } => Some(AlertType::VerificationFailureSpike),
        IngestError::RateLimited { .. } => Some(AlertType::IngestRateLimited),
        IngestError::Body(
            BodyError::ContractViolation { .. }
            | BodyError::ContractCheckTooCostly { .. }
            | BodyError::UnknownEventType { .. },
        ) => Some(AlertType::ContractRejectionSpike),
        _ => None,
    }
}

/// The counters of requests refused before any tenant is looked up (a
/// request head too large), under the `other` label.
#[derive(Clone)]
pub(crate) struct EdgeReport(Arc<TenantMetrics>);

impl EdgeReport {
    /// The report of refusals at the edge of `services`' process.
    pub(crate) fn of(services: &Services) -> Self {
        EdgeReport(services.telemetry.metrics().other().clone())
    }

    /// Counts one request refused with `code`.
    pub(crate) fn refused(&self, code: ErrorCode) {
        self.0.rejected(code);
    }
}
