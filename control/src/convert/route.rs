//! RouteService requests to the domain and back, names and URLs checked for
//! shape.

use hookd_proto::{
    domain::{RateLimit, TenantId},
    v1 as pb,
};

use super::{
    non_empty,
    tenant::{destination_url, rate},
};
use crate::{
    error::Error,
    model::{
        MetricsQuery, NewRoute, PastedEvent, RouteBreaker, RouteConcurrency, RouteMetricsView,
        RoutePatch, RouteRetry, RouteTest, RouteTestResult, RouteUnderTest, RouteView, TestEvent,
        TestedRequest, DEFAULT_RAMP_SECS, MAX_RAMP_SECS,
    },
    Result,
};

/// A well-formed route name (the rule of tenant ids), owned.
///
/// RouteService requests to the domain and back. Names and URLs are checked
/// for shape here; a filter's syntax and a transform's code are the
/// backend's to check, since compiling them is the server's.
pub(crate) fn route_name(value: &str) -> Result<String> {
    if value.is_empty() {
        return Err(Error::InvalidArgument("name is required".into()));
    }
    if !TenantId::is_valid(value) {
        return Err(Error::InvalidArgument(format!(
            "name {value:?} must be 1-64 characters of a-z, 0-9, '-' or '_'"
        )));
    }
    Ok(value.to_owned())
}

fn delivery_rate(rate_limit: pb::RouteRate) -> Result<Option<RateLimit>> {
    let per_sec = rate("delivery_rate.per_sec", rate_limit.per_sec)?;
    Ok(RateLimit::from_api(per_sec, rate_limit.burst))
}

/// A number where 0 means the default.
fn in_flight(max: u32) -> Option<u32> {
    (max != 0).then_some(max)
}

impl From<pb::RouteRetry> for RouteRetry {
    fn from(r: pb::RouteRetry) -> Self {
        RouteRetry {
            schedule_secs: r.schedule_secs,
            window_secs: r.window_secs,
            jitter: r.jitter,
        }
    }
}

impl From<pb::RouteBreaker> for RouteBreaker {
    fn from(b: pb::RouteBreaker) -> Self {
        RouteBreaker {
            failure_threshold: b.failure_threshold,
            cooldown_secs: b.cooldown_secs,
        }
    }
}

impl TryFrom<pb::CreateRouteRequest> for NewRoute {
    type Error = Error;

    fn try_from(r: pb::CreateRouteRequest) -> Result<Self> {
        Ok(NewRoute {
            name: route_name(&r.name)?,
            destination_url: destination_url(r.destination_url)?,
            max_in_flight: in_flight(r.max_in_flight),
            delivery_rate: r.delivery_rate.map(delivery_rate).transpose()?.flatten(),
            retry: r.retry.map(Into::into),
            breaker: r.breaker.map(Into::into),
            filter_json: non_empty(r.filter_json),
            transform: non_empty(r.transform),
            transform_cpu_ms: in_flight(r.transform_cpu_ms),
            transform_memory_mib: in_flight(r.transform_memory_mib),
            concurrency: RouteConcurrency {
                adaptive: r.adaptive_concurrency,
                min_in_flight: in_flight(r.min_in_flight),
                latency_target_ms: in_flight(r.latency_target_ms),
            },
            delay_ms: (r.delay_ms != 0).then_some(r.delay_ms),
        })
    }
}

impl TryFrom<pb::UpdateRouteRequest> for RoutePatch {
    type Error = Error;

    fn try_from(r: pb::UpdateRouteRequest) -> Result<Self> {
        Ok(RoutePatch {
            destination_url: r.destination_url.map(destination_url).transpose()?,
            max_in_flight: r.max_in_flight.map(in_flight),
            delivery_rate: r.delivery_rate.map(delivery_rate).transpose()?,
            retry: r.retry.map(Into::into),
            breaker: r.breaker.map(Into::into),
            filter_json: r.filter_json.map(non_empty),
            transform: r.transform.map(non_empty),
            transform_cpu_ms: r.transform_cpu_ms.map(in_flight),
            transform_memory_mib: r.transform_memory_mib.map(in_flight),
            adaptive_concurrency: r.adaptive_concurrency,
            min_in_flight: r.min_in_flight.map(in_flight),
            latency_target_ms: r.latency_target_ms.map(in_flight),
            delay_ms: r.delay_ms.map(|ms| (ms != 0).then_some(ms)),
        })
    }
}

/// A TestRoute request: which route, on which event; both are required.
pub(crate) fn route_test(r: pb::TestRouteRequest) -> Result<RouteTest> {
    use pb::test_route_request::{Event, Route};
    let route = match r.route {
        Some(Route::Name(name)) => RouteUnderTest::Saved(route_name(&name)?),
        Some(Route::Inline(inline)) => RouteUnderTest::Inline {
            filter_json: non_empty(inline.filter_json),
            transform: non_empty(inline.transform),
            destination_url: destination_url(inline.destination_url)?,
        },
        None => {
            return Err(Error::InvalidArgument(
                "route is required: a saved route's name or an inline route".into(),
            ))
        }
    };
    let event = match r.event {
        Some(Event::DeliveryId(id)) if !id.is_empty() => TestEvent::Delivery(id),
        Some(Event::Pasted(p)) => TestEvent::Pasted(PastedEvent {
            body: p.body,
            headers: p.headers.into_iter().map(|h| (h.name, h.value)).collect(),
            path: non_empty(p.path),
            query: p.query,
        }),
        _ => {
            return Err(Error::InvalidArgument(
                "event is required: a delivery_id or a pasted event".into(),
            ))
        }
    };
    Ok(RouteTest { route, event })
}

fn headers(pairs: Vec<(String, String)>) -> Vec<pb::RouteHeader> {
    pairs
        .into_iter()
        .map(|(name, value)| pb::RouteHeader { name, value })
        .collect()
}

/// A transform version as the API shows it: 8 hex digits.
fn version(v: Option<u32>) -> String {
    v.map(|v| format!("{v:08x}")).unwrap_or_default()
}

impl From<RouteView> for pb::Route {
    fn from(r: RouteView) -> Self {
        pb::Route {
            tenant_id: r.tenant_id,
            name: r.name,
            destination_url: r.destination_url.unwrap_or_default(),
            max_in_flight: r.max_in_flight,
            delivery_rate: r.delivery_rate.map(|d| pb::RouteRate {
                per_sec: d.per_sec,
                burst: d.burst,
            }),
            retry: Some(pb::RouteRetry {
                schedule_secs: r.retry.schedule_secs,
                window_secs: r.retry.window_secs,
                jitter: r.retry.jitter,
            }),
            breaker: Some(pb::RouteBreaker {
                failure_threshold: r.breaker.failure_threshold,
                cooldown_secs: r.breaker.cooldown_secs,
            }),
            filter_json: r.filter_json.unwrap_or_default(),
            transform: r.transform.unwrap_or_default(),
            transform_version: version(r.transform_version),
            from_config: r.from_config,
            transform_cpu_ms: r.transform_cpu_ms,
            transform_memory_mib: r.transform_memory_mib,
            concurrency_limit: r.concurrency_limit.unwrap_or_default(),
            adaptive_concurrency: r.concurrency.adaptive,
            min_in_flight: r.concurrency.min_in_flight.unwrap_or(1),
            latency_target_ms: r.concurrency.latency_target_ms.unwrap_or_default(),
            paused: r.hold.paused,
            hold_changed_at_ms: r.hold.changed_at_ms.unwrap_or_default(),
            ramp_ends_at_ms: r.hold.ramp_ends_at_ms.unwrap_or_default(),
            delay_ms: r.delay_ms,
        }
    }
}

/// A metrics query: points of a minute (the default) or an hour, over at
/// most a day (0: an hour).
pub(crate) fn metrics_query(step_secs: u32, span_secs: u32) -> Result<MetricsQuery> {
    let step_ms = match step_secs {
        0 | 60 => 60_000,
        3600 => 3_600_000,
        other => {
            return Err(Error::InvalidArgument(format!(
                "step_secs: {other} is neither 60 nor 3600"
            )))
        }
    };
    let span_ms = match span_secs {
        0 => 3_600_000,
        secs if secs <= 86_400 => i64::from(secs) * 1000,
        other => {
            return Err(Error::InvalidArgument(format!(
                "span_secs: {other} is more than 86400 (a day)"
            )))
        }
    };
    Ok(MetricsQuery { step_ms, span_ms })
}

impl From<RouteMetricsView> for pb::RouteMetrics {
    fn from(m: RouteMetricsView) -> Self {
        pb::RouteMetrics {
            tenant_id: m.tenant_id,
            name: m.name,
            points: m
                .points
                .into_iter()
                .map(|p| pb::RouteMetricsPoint {
                    start_unix_ms: p.start_ms,
                    accepted: p.accepted,
                    duplicates: p.duplicates,
                    rejected: p.rejected,
                    delivered: p.delivered,
                    failed: p.failed,
                    dead_lettered: p.dead_lettered,
                    latency_p50_ms: p.latency_p50_ms.unwrap_or_default(),
                    latency_p99_ms: p.latency_p99_ms.unwrap_or_default(),
                    held: p.held,
                })
                .collect(),
            queue_depth: m.queue_depth,
            held: m.held,
            dead_letters: m.dead_letters,
            oldest_pending_age_ms: m.oldest_pending_age_ms.unwrap_or_default(),
        }
    }
}

/// A resume's ramp in seconds: `DEFAULT_RAMP_SECS` when absent, at most
/// `MAX_RAMP_SECS`.
pub(crate) fn ramp_secs(asked: Option<u32>) -> Result<u32> {
    match asked {
        None => Ok(DEFAULT_RAMP_SECS),
        Some(secs) if secs <= MAX_RAMP_SECS => Ok(secs),
        Some(secs) => Err(Error::InvalidArgument(format!(
            "ramp_secs: {secs} is more than {MAX_RAMP_SECS}"
        ))),
    }
}

impl From<TestedRequest> for pb::TestedRequest {
    fn from(r: TestedRequest) -> Self {
        pb::TestedRequest {
            method: r.method,
            path: r.path,
            query: r.query,
            headers: headers(r.headers),
            body: r.body,
        }
    }
}

impl From<RouteTestResult> for pb::TestRouteResponse {
    fn from(r: RouteTestResult) -> Self {
        pb::TestRouteResponse {
            matched: r.matched,
            filter_result: r.filter_result,
            dropped: r.dropped,
            transform_error: r.transform_error.unwrap_or_default(),
            request: r.request.map(Into::into),
            transform_version: version(r.transform_version),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zero_values_mean_the_default_and_empty_strings_none() {
        let new = NewRoute::try_from(pb::CreateRouteRequest {
            name: "audit".into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            new,
            NewRoute {
                name: "audit".into(),
                ..Default::default()
            }
        );
        let patch = RoutePatch::try_from(pb::UpdateRouteRequest {
            filter_json: Some(String::new()),
            delivery_rate: Some(pb::RouteRate::default()),
            max_in_flight: Some(0),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(patch.filter_json, Some(None), "\"\" removes the filter");
        assert_eq!(
            patch.delivery_rate,
            Some(None),
            "per_sec 0 removes the rate"
        );
        assert_eq!(patch.max_in_flight, Some(None), "0 is the default");
    }

    #[test]
    fn bad_names_urls_and_rates_are_refused_naming_the_field() {
        let refused = |r: pb::CreateRouteRequest| NewRoute::try_from(r).unwrap_err().to_string();
        let named = |name: &str| pb::CreateRouteRequest {
            name: name.into(),
            ..Default::default()
        };
        assert!(refused(named("")).contains("name is required"));
        assert!(refused(named("Bad Name")).contains("name \"Bad Name\""));
        let url = pb::CreateRouteRequest {
            destination_url: "ftp://x".into(),
            ..named("a")
        };
        assert!(refused(url).contains("destination_url"));
        let rate = pb::CreateRouteRequest {
            delivery_rate: Some(pb::RouteRate {
                per_sec: f64::NAN,
                burst: 0,
            }),
            ..named("a")
        };
        assert!(refused(rate).contains("delivery_rate.per_sec"));
    }

    #[test]
    fn a_test_needs_a_route_and_an_event() {
        let missing = route_test(pb::TestRouteRequest::default()).unwrap_err();
        assert!(missing.to_string().contains("route is required"));
        let no_event = route_test(pb::TestRouteRequest {
            route: Some(pb::test_route_request::Route::Name("a".into())),
            ..Default::default()
        })
        .unwrap_err();
        assert!(no_event.to_string().contains("event is required"));
    }

    #[test]
    fn a_transform_version_shows_as_eight_hex_digits() {
        assert_eq!(version(Some(0xab)), "000000ab");
        assert_eq!(version(None), "");
    }
}
