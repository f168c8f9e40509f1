//! Deliveries, dead letters and delivery events between `hookd.v1` and the
//! domain (the selections of Redeliver and PurgeDeadLetters: `selection.rs`).

use hookd_proto::v1 as pb;

use super::{listed_route, non_empty, status_code, time_bound};
use crate::{
    error::Error,
    model::{
        AttemptView, BodyField, DeadLetterView, DeliveryEventView, DeliveryQuery, DeliveryStatus,
        DeliveryView, RedirectView, RouteOutcomeView, MAX_BODY_WINDOW_MS,
    },
    Result,
};

impl TryFrom<&pb::ListDeliveriesRequest> for DeliveryQuery {
    type Error = Error;

    /// A listing's filters, checked: a well-formed route, a known status,
    /// a window that is not upside down, a body field with a JSON value
    /// and a window of at most 24 h.
    fn try_from(r: &pb::ListDeliveriesRequest) -> Result<Self> {
        let since_ms = time_bound("since_unix_ms", r.since_unix_ms)?;
        let until_ms = time_bound("until_unix_ms", r.until_unix_ms)?;
        if let (Some(since), Some(until)) = (since_ms, until_ms) {
            if since > until {
                return Err(Error::InvalidArgument(
                    "since_unix_ms is after until_unix_ms".into(),
                ));
            }
        }
        let body = body_field(&r.body_pointer, &r.body_value_json)?;
        if body.is_some() {
            read_window(since_ms, until_ms)?;
        }
        Ok(DeliveryQuery {
            route: listed_route(&r.route)?,
            status: status_filter(r.status)?,
            event_id: non_empty(r.event_id.clone()),
            event_type: non_empty(r.event_type.clone()),
            since_ms,
            until_ms,
            body,
        })
    }
}

/// A body field filter: a JSON pointer and a JSON value; none when both
/// are empty.
pub(crate) fn body_field(pointer: &str, value: &str) -> Result<Option<BodyField>> {
    match (pointer, value) {
        ("", "") => return Ok(None),
        ("", _) => {
            return Err(Error::InvalidArgument(
                "body_value_json needs body_pointer".into(),
            ))
        }
        _ => {}
    }
    if !pointer.starts_with('/') {
        return Err(Error::InvalidArgument(format!(
            "body_pointer {pointer:?} is not a JSON pointer: it starts with '/' (/data/object/customer)"
        )));
    }
    let value = serde_json::from_str(value).map_err(|e| {
        Error::InvalidArgument(format!(
            "body_value_json is not JSON ({e}); a string is quoted: \"cus_123\""
        ))
    })?;
    Ok(Some(BodyField {
        pointer: pointer.to_owned(),
        value,
    }))
}

/// A listing that reads bodies needs a window of at most
/// [`MAX_BODY_WINDOW_MS`].
fn read_window(since_ms: Option<i64>, until_ms: Option<i64>) -> Result<()> {
    match (since_ms, until_ms) {
        (Some(since), Some(until)) if until - since <= MAX_BODY_WINDOW_MS => Ok(()),
        _ => Err(Error::InvalidArgument(
            "body_pointer reads bodies: set since_unix_ms and until_unix_ms at most 24 h apart"
                .into(),
        )),
    }
}

/// ListDeliveries' status filter: UNSPECIFIED means any status.
pub(crate) fn status_filter(value: i32) -> Result<Option<DeliveryStatus>> {
    match pb::DeliveryStatus::try_from(value) {
        Ok(pb::DeliveryStatus::Unspecified) => Ok(None),
        Ok(status) => Ok(Some(DeliveryStatus::try_from(status).map_err(|e| {
            Error::InvalidArgument(format!("status: {e}; filter by another or by none"))
        })?)),
        Err(_) => Err(Error::InvalidArgument(format!(
            "status {value} is not a DeliveryStatus"
        ))),
    }
}

impl From<AttemptView> for pb::Attempt {
    fn from(a: AttemptView) -> Self {
        pb::Attempt {
            attempt: a.attempt,
            started_at_unix_ms: a.started_at_ms,
            duration_ms: a.duration_ms,
            status_code: a.status_code.map_or(0, u32::from),
            error: a.error.unwrap_or_default(),
            response_body: a.response_body,
            next_retry_at_unix_ms: a.next_retry_at_ms.unwrap_or(0),
            request_id: a.request_id,
        }
    }
}

impl TryFrom<pb::Attempt> for AttemptView {
    type Error = Error;

    fn try_from(a: pb::Attempt) -> Result<Self> {
        Ok(AttemptView {
            attempt: a.attempt,
            started_at_ms: a.started_at_unix_ms,
            duration_ms: a.duration_ms,
            status_code: status_code("status_code", a.status_code)?,
            error: non_empty(a.error),
            response_body: a.response_body,
            next_retry_at_ms: (a.next_retry_at_unix_ms != 0).then_some(a.next_retry_at_unix_ms),
            request_id: a.request_id,
        })
    }
}

impl From<RedirectView> for pb::Redirect {
    fn from(r: RedirectView) -> Self {
        pb::Redirect {
            by: r.by,
            url: r.url,
            started_at_unix_ms: r.started_at_ms,
            duration_ms: r.duration_ms,
            status_code: r.status_code.map_or(0, u32::from),
            error: r.error.unwrap_or_default(),
            request_id: r.request_id,
        }
    }
}

impl TryFrom<pb::Redirect> for RedirectView {
    type Error = Error;

    fn try_from(r: pb::Redirect) -> Result<Self> {
        Ok(RedirectView {
            by: r.by,
            url: r.url,
            started_at_ms: r.started_at_unix_ms,
            duration_ms: r.duration_ms,
            status_code: status_code("status_code", r.status_code)?,
            error: non_empty(r.error),
            request_id: r.request_id,
        })
    }
}

impl From<DeliveryView> for pb::Delivery {
    fn from(d: DeliveryView) -> Self {
        pb::Delivery {
            tenant_id: d.tenant_id,
            delivery_id: d.delivery_id,
            event_id: d.event_id,
            status: pb::DeliveryStatus::from(d.status).into(),
            received_at_unix_ms: d.received_at_ms,
            attempt_count: d.attempt_count,
            next_attempt_at_unix_ms: d.next_attempt_at_ms.unwrap_or(0),
            last_error: d.last_error.unwrap_or_default(),
            redelivery_of: d.redelivery_of.unwrap_or_default(),
            redelivered_as: d.redelivered_as.unwrap_or_default(),
            attempts: d.attempts.into_iter().map(Into::into).collect(),
            redirects: d.redirects.into_iter().map(Into::into).collect(),
            route: d.route,
            routes: d.routes.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<RouteOutcomeView> for pb::RouteOutcome {
    fn from(r: RouteOutcomeView) -> Self {
        pb::RouteOutcome {
            route: r.route,
            delivery_id: r.delivery_id.unwrap_or_default(),
            filtered: r.filtered,
        }
    }
}

impl From<pb::RouteOutcome> for RouteOutcomeView {
    fn from(r: pb::RouteOutcome) -> Self {
        RouteOutcomeView {
            route: r.route,
            delivery_id: non_empty(r.delivery_id),
            filtered: r.filtered,
        }
    }
}

impl TryFrom<pb::Delivery> for DeliveryView {
    type Error = Error;

    fn try_from(d: pb::Delivery) -> Result<Self> {
        let status = pb::DeliveryStatus::try_from(d.status)
            .map_err(|_| Error::InvalidArgument(format!("status {} is unknown", d.status)))?;
        Ok(DeliveryView {
            tenant_id: d.tenant_id,
            delivery_id: d.delivery_id,
            event_id: d.event_id,
            status: DeliveryStatus::try_from(status)
                .map_err(|e| Error::InvalidArgument(format!("status: {e}")))?,
            received_at_ms: d.received_at_unix_ms,
            attempt_count: d.attempt_count,
            next_attempt_at_ms: (d.next_attempt_at_unix_ms != 0)
                .then_some(d.next_attempt_at_unix_ms),
            last_error: non_empty(d.last_error),
            redelivery_of: non_empty(d.redelivery_of),
            redelivered_as: non_empty(d.redelivered_as),
            attempts: d
                .attempts
                .into_iter()
                .map(AttemptView::try_from)
                .collect::<Result<_>>()?,
            redirects: d
                .redirects
                .into_iter()
                .map(RedirectView::try_from)
                .collect::<Result<_>>()?,
            route: d.route,
            routes: d.routes.into_iter().map(Into::into).collect(),
        })
    }
}

impl From<DeadLetterView> for pb::DeadLetter {
    fn from(d: DeadLetterView) -> Self {
        pb::DeadLetter {
            tenant_id: d.tenant_id,
            delivery_id: d.delivery_id,
            event_id: d.event_id,
            reason: d.reason,
            dead_at_unix_ms: d.dead_at_ms,
            attempt_count: d.attempt_count,
            last_status_code: d.last_status_code.map_or(0, u32::from),
            route: d.route,
        }
    }
}

impl From<DeliveryEventView> for pb::DeliveryEvent {
    fn from(e: DeliveryEventView) -> Self {
        pb::DeliveryEvent {
            kind: pb::DeliveryEventKind::from(e.kind).into(),
            tenant_id: e.tenant_id,
            delivery_id: e.delivery_id,
            event_id: e.event_id,
            at_unix_ms: e.at_ms,
            attempt: e.attempt.unwrap_or(0),
            status_code: e.status_code.map_or(0, u32::from),
            reason: e.reason.unwrap_or_default(),
            redelivered_as: e.redelivered_as.unwrap_or_default(),
            next_attempt_at_unix_ms: e.next_attempt_at_ms.unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// hookd never reports a delivery as in flight, so a filter by it is
    /// refused instead of always answering an empty page.
    #[test]
    fn a_filter_by_in_flight_is_refused() {
        assert_eq!(
            status_filter(pb::DeliveryStatus::Pending as i32).unwrap(),
            Some(DeliveryStatus::Pending)
        );
        assert_eq!(status_filter(0).unwrap(), None);
        match status_filter(pb::DeliveryStatus::InFlight as i32) {
            Err(Error::InvalidArgument(m)) => {
                assert!(m.contains("DELIVERY_STATUS_IN_FLIGHT"), "{m}")
            }
            other => panic!("a filter by in-flight gave {other:?}"),
        }
    }

    fn delivery_with_attempts() -> DeliveryView {
        DeliveryView {
            tenant_id: "acme".into(),
            delivery_id: "dlv_01J".into(),
            event_id: "evt_1".into(),
            status: DeliveryStatus::Redelivered,
            received_at_ms: 1_700_000_000_000,
            attempt_count: 2,
            next_attempt_at_ms: None,
            last_error: Some("503 Service Unavailable".into()),
            redelivery_of: None,
            redelivered_as: Some("dlv_01K".into()),
            attempts: vec![
                AttemptView {
                    attempt: 1,
                    started_at_ms: 1_700_000_000_100,
                    duration_ms: 30_000,
                    status_code: None,
                    error: Some("timeout after 30 s".into()),
                    response_body: vec![],
                    next_retry_at_ms: Some(1_700_000_030_100),
                    request_id: "req_1".into(),
                },
                AttemptView {
                    attempt: 2,
                    started_at_ms: 1_700_000_030_100,
                    duration_ms: 12,
                    status_code: Some(503),
                    error: Some("503 Service Unavailable".into()),
                    response_body: b"busy\xff".to_vec(),
                    next_retry_at_ms: None,
                    request_id: "req_2".into(),
                },
            ],
            redirects: vec![RedirectView {
                by: "tenant".into(),
                url: "https://test.example.com/hook?token=redacted".into(),
                started_at_ms: 1_700_000_040_000,
                duration_ms: 7,
                status_code: None,
                error: Some("connection refused".into()),
                request_id: "req_3".into(),
            }],
            route: "audit".into(),
            routes: vec![
                RouteOutcomeView {
                    route: "default".into(),
                    delivery_id: Some("dlv_01J".into()),
                    filtered: false,
                },
                RouteOutcomeView {
                    route: "audit".into(),
                    delivery_id: None,
                    filtered: true,
                },
            ],
        }
    }

    #[test]
    fn delivery_with_attempts_survives_a_round_trip() {
        let original = delivery_with_attempts();
        let wire = pb::Delivery::from(original.clone());
        assert_eq!(wire.status(), pb::DeliveryStatus::Redelivered);
        assert_eq!(wire.attempts[0].status_code, 0);
        assert_eq!(wire.attempts[1].next_retry_at_unix_ms, 0);
        assert_eq!(wire.redelivery_of, "");
        assert_eq!(wire.redirects[0].status_code, 0);
        assert_eq!(DeliveryView::try_from(wire).unwrap(), original);
    }

    #[test]
    fn a_delivery_without_status_does_not_convert() {
        let mut wire = pb::Delivery::from(delivery_with_attempts());
        wire.status = 0;
        assert!(DeliveryView::try_from(wire.clone()).is_err());
        wire.status = 99;
        assert!(DeliveryView::try_from(wire).is_err());
    }
}
