//! The fake's routes: kept per tenant in memory, with the refusals
//! RouteService documents and no compiling.

use std::{collections::BTreeMap, sync::Mutex};

use crate::{
    error::{Error, Result},
    model::{
        MetricsPoint, MetricsQuery, NewRoute, RouteBreaker, RouteConcurrency, RouteHold,
        RouteMetricsView, RoutePatch, RouteRetry, RouteTest, RouteTestResult, RouteView,
        TenantView,
    },
};

/// Routes besides `default`, of every tenant, in creation order, and the
/// filters of the `default` routes that have one.
///
/// The fake's routes: kept per tenant in memory, `default` made from the
/// tenant's own destination (and its own filter), with the refusals
/// RouteService documents (a taken name, the `default` route's limits, a
/// filter that is not JSON) and no compiling.
#[derive(Default)]
pub(super) struct FakeRoutes {
    named: Mutex<Vec<RouteView>>,
    default_filters: Mutex<BTreeMap<String, String>>,
    /// Paused and resumed routes, by tenant and name.
    holds: Mutex<BTreeMap<(String, String), RouteHold>>,
}

/// When the fake says a route was paused or resumed (Unix ms).
const HELD_AT_MS: i64 = 1_700_000_000_000;

/// `filter` if it is JSON; hookd compiles it too, the fake only parses it.
fn filter(filter: Option<String>) -> Result<Option<String>> {
    match filter {
        Some(json) => match serde_json::from_str::<serde_json::Value>(&json) {
            Ok(_) => Ok(Some(json)),
            Err(e) => Err(Error::InvalidArgument(format!("filter_json: {e}"))),
        },
        None => Ok(None),
    }
}

/// A route of `tenant_id` with the default retries and breaker.
fn view(tenant_id: &str, name: &str, url: Option<String>, max_in_flight: u32) -> RouteView {
    RouteView {
        tenant_id: tenant_id.into(),
        name: name.into(),
        destination_url: url,
        max_in_flight,
        delivery_rate: None,
        retry: RouteRetry {
            schedule_secs: vec![30.0, 120.0, 600.0, 3600.0, 21600.0],
            window_secs: 86_400.0,
            jitter: 0.1,
        },
        breaker: RouteBreaker {
            failure_threshold: 5,
            cooldown_secs: 30.0,
        },
        filter_json: None,
        transform: None,
        transform_version: None,
        from_config: false,
        transform_cpu_ms: 50,
        transform_memory_mib: 16,
        concurrency_limit: None,
        concurrency: RouteConcurrency {
            adaptive: false,
            min_in_flight: Some(1),
            latency_target_ms: None,
        },
        hold: RouteHold::default(),
        delay_ms: 0,
    }
}

/// `concurrency` with its floor filled in, refused as RouteService refuses
/// a floor over `max_in_flight`.
fn concurrency(concurrency: RouteConcurrency, max_in_flight: u32) -> Result<RouteConcurrency> {
    let min_in_flight = concurrency.min_in_flight.unwrap_or(1);
    if min_in_flight > max_in_flight {
        return Err(Error::InvalidArgument(format!(
            "min_in_flight: must be at most max_in_flight ({max_in_flight})"
        )));
    }
    Ok(RouteConcurrency {
        min_in_flight: Some(min_in_flight),
        ..concurrency
    })
}

impl FakeRoutes {
    pub(super) fn list(&self, tenant: &TenantView) -> Vec<RouteView> {
        let mut default = view(
            &tenant.tenant_id,
            "default",
            tenant.destination_url.clone(),
            tenant.max_in_flight,
        );
        default.filter_json = self
            .default_filters
            .lock()
            .unwrap()
            .get(&tenant.tenant_id)
            .cloned();
        let routes = self.named.lock().unwrap();
        let own = routes.iter().filter(|r| r.tenant_id == tenant.tenant_id);
        let holds = self.holds.lock().unwrap();
        std::iter::once(default)
            .chain(own.cloned())
            .map(|mut route| {
                let key = (route.tenant_id.clone(), route.name.clone());
                route.hold = holds.get(&key).copied().unwrap_or_default();
                route
            })
            .collect()
    }

    /// Pauses route `name` (`ramp_secs` `None`), or resumes it with that
    /// ramp; a pulled route cannot be paused.
    pub(super) fn hold(
        &self,
        tenant: &TenantView,
        name: &str,
        ramp_secs: Option<u32>,
    ) -> Result<RouteView> {
        let route = self.get(tenant, name)?;
        let key = (tenant.tenant_id.clone(), name.to_owned());
        let mut holds = self.holds.lock().unwrap();
        match ramp_secs {
            None if route.destination_url.is_none() => {
                return Err(Error::FailedPrecondition(format!(
                    "route {name} of tenant {} is pulled: stop pulling instead",
                    tenant.tenant_id
                )))
            }
            None if route.hold.paused => {}
            None => {
                holds.insert(
                    key,
                    RouteHold {
                        paused: true,
                        changed_at_ms: Some(HELD_AT_MS),
                        ramp_ends_at_ms: None,
                    },
                );
            }
            Some(secs) if route.hold.paused => {
                let resumed = HELD_AT_MS + 1_000;
                holds.insert(
                    key,
                    RouteHold {
                        paused: false,
                        changed_at_ms: Some(resumed),
                        ramp_ends_at_ms: (secs > 0).then_some(resumed + i64::from(secs) * 1000),
                    },
                );
            }
            Some(_) => {}
        }
        drop(holds);
        self.get(tenant, name)
    }

    pub(super) fn get(&self, tenant: &TenantView, name: &str) -> Result<RouteView> {
        self.list(tenant)
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| Error::NotFound(format!("route {name} of tenant {}", tenant.tenant_id)))
    }

    pub(super) fn create(&self, tenant: &TenantView, new: NewRoute) -> Result<RouteView> {
        if self.get(tenant, &new.name).is_ok() {
            return Err(Error::AlreadyExists(format!("route {} exists", new.name)));
        }
        let mut route = view(
            &tenant.tenant_id,
            &new.name,
            new.destination_url,
            new.max_in_flight.unwrap_or(8),
        );
        route.concurrency = concurrency(new.concurrency, route.max_in_flight)?;
        route.filter_json = filter(new.filter_json)?;
        route.transform_version = new.transform.as_ref().map(|code| code.len() as u32);
        route.transform = new.transform;
        route.delay_ms = new.delay_ms.unwrap_or_default();
        self.named.lock().unwrap().push(route.clone());
        Ok(route)
    }

    pub(super) fn update(
        &self,
        tenant: &TenantView,
        name: &str,
        patch: RoutePatch,
    ) -> Result<RouteView> {
        let mut route = self.get(tenant, name)?;
        if name == "default" && patch.touches_more_than_the_default_takes() {
            return Err(Error::InvalidArgument(
                "the default route has only destination_url, max_in_flight, filter_json and delay_ms"
                    .into(),
            ));
        }
        if let Some(url) = patch.destination_url {
            route.destination_url = url;
        }
        if let Some(max_in_flight) = patch.max_in_flight {
            route.max_in_flight = max_in_flight.unwrap_or(8);
        }
        if let Some(json) = patch.filter_json {
            route.filter_json = filter(json)?;
        }
        let asked = RouteConcurrency {
            adaptive: patch
                .adaptive_concurrency
                .unwrap_or(route.concurrency.adaptive),
            min_in_flight: patch
                .min_in_flight
                .unwrap_or(route.concurrency.min_in_flight),
            latency_target_ms: patch
                .latency_target_ms
                .unwrap_or(route.concurrency.latency_target_ms),
        };
        route.concurrency = concurrency(asked, route.max_in_flight)?;
        if let Some(code) = patch.transform {
            route.transform_version = code.as_ref().map(|c| c.len() as u32);
            route.transform = code;
        }
        if let Some(delay) = patch.delay_ms {
            route.delay_ms = delay.unwrap_or_default();
        }
        if name == "default" {
            let mut filters = self.default_filters.lock().unwrap();
            match &route.filter_json {
                Some(json) => filters.insert(tenant.tenant_id.clone(), json.clone()),
                None => filters.remove(&tenant.tenant_id),
            };
        }
        let mut routes = self.named.lock().unwrap();
        if let Some(stored) = routes
            .iter_mut()
            .find(|r| r.tenant_id == tenant.tenant_id && r.name == name)
        {
            *stored = route.clone();
        }
        Ok(route)
    }

    pub(super) fn delete(&self, tenant: &TenantView, name: &str) -> Result<()> {
        if name == "default" {
            return Err(Error::FailedPrecondition(
                "the default route is the tenant's own destination".into(),
            ));
        }
        self.get(tenant, name)?;
        self.named
            .lock()
            .unwrap()
            .retain(|r| !(r.tenant_id == tenant.tenant_id && r.name == name));
        let key = (tenant.tenant_id.clone(), name.to_owned());
        self.holds.lock().unwrap().remove(&key);
        Ok(())
    }

    /// Empty points over the span asked, and an empty queue.
    pub(super) fn metrics(
        &self,
        tenant: &TenantView,
        name: &str,
        query: MetricsQuery,
    ) -> Result<RouteMetricsView> {
        let route = self.get(tenant, name)?;
        let points = (0..query.span_ms / query.step_ms)
            .map(|i| MetricsPoint {
                start_ms: i * query.step_ms,
                ..MetricsPoint::default()
            })
            .collect();
        Ok(RouteMetricsView {
            tenant_id: route.tenant_id,
            name: route.name,
            points,
            ..RouteMetricsView::default()
        })
    }

    /// Every test matches and shows no request.
    pub(super) fn test(&self, _tenant: &TenantView, _test: RouteTest) -> RouteTestResult {
        RouteTestResult {
            matched: true,
            filter_result: "the route has no filter".into(),
            ..Default::default()
        }
    }
}
