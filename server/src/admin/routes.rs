//! A tenant's routes for the control plane: an API tenant's kept in its catalog
//! record and put in force as an update; a config-file tenant's read-only.

use std::{sync::Arc, time::Duration};

use hookd_control::{
    model::{
        NewRoute, RouteBreaker, RouteConcurrency, RoutePatch, RouteRetry, RouteView, TenantPatch,
    },
    Error as ApiError, Result as ApiResult,
};
use hookd_proto::domain::{defaults, RateLimit, DEFAULT_ROUTE};

use super::{api, hold::hold_view, tenants::Changed, Backend};
use crate::routes::hold::HoldRecord;
use crate::routes::replay::ReplayOrder;
use crate::routes::settings::ForwardSettings;
use crate::store::api::{RowChange, Table};
use crate::tenant::TenantSettings;
use crate::{
    catalog::{SecretSet, StoredRoute, TenantRecord},
    config::{BreakerConfig, RateLimitConfig, RetryConfig},
    ids::TenantId,
    routes::transform::{pool::RouteShare, Transform, TransformLimits},
};

/// Concurrency of a route when the caller gives none.
const DEFAULT_MAX_IN_FLIGHT: usize = defaults::MAX_IN_FLIGHT as usize;
/// A route's transform CPU budget unless it sets one, in ms.
const DEFAULT_TRANSFORM_CPU_MS: u64 = defaults::TRANSFORM_CPU_MS as u64;
/// A route's transform memory cap unless it sets one, in MiB.
const DEFAULT_TRANSFORM_MEMORY_MIB: usize = defaults::TRANSFORM_MEMORY_MIB as usize;

impl Backend {
    /// The share of the transform workers a tenant's control-plane runs
    /// take, or `NotFound`.
    pub(super) fn tenant_transform_share(&self, tenant_id: &str) -> ApiResult<Arc<RouteShare>> {
        self.registry
            .get(tenant_id)
            .map(|handle| handle.state().transform_share.clone())
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    /// The check a transform gets when it is saved: its top level runs in a
    /// worker, within the route's limits (`cpu_ms`, `memory_mib`; the
    /// defaults where `None`), on the tenant's share, and must register a
    /// handler. A failure is `INVALID_ARGUMENT` naming `transform`. Limits
    /// out of bounds are left to the route's resolution, which names them.
    pub(super) async fn check_transform(
        &self,
        tenant_id: &str,
        code: &str,
        (cpu_ms, memory_mib): (Option<u32>, Option<u32>),
    ) -> ApiResult<()> {
        let share = self.tenant_transform_share(tenant_id)?;
        let refused = |e| ApiError::InvalidArgument(format!("transform: {e}"));
        let transform = Transform::new(code, 0).map_err(refused)?;
        let cpu = cpu_ms.map_or(DEFAULT_TRANSFORM_CPU_MS, u64::from);
        let memory = memory_mib.map_or(DEFAULT_TRANSFORM_MEMORY_MIB, |m| m as usize);
        let Ok(limits) = TransformLimits::new(memory << 20, Duration::from_millis(cpu)) else {
            return Ok(());
        };
        transform.check(&share, &limits).await.map_err(refused)
    }

    /// The limits, as [`Backend::check_transform`] takes them, that route
    /// `name` runs its transform with after `patch`.
    pub(super) fn patched_limits(
        &self,
        tenant_id: &str,
        name: &str,
        patch: &RoutePatch,
    ) -> (Option<u32>, Option<u32>) {
        let now = self.running_settings(tenant_id).ok().and_then(|settings| {
            let route = settings.routes.iter().find(|r| r.name == name)?;
            let limits = route.forward.as_ref()?.transform.as_ref()?.limits;
            Some((
                limits.cpu().as_millis() as u32,
                (limits.memory_bytes() >> 20) as u32,
            ))
        });
        (
            patch.transform_cpu_ms.unwrap_or(now.map(|n| n.0)),
            patch.transform_memory_mib.unwrap_or(now.map(|n| n.1)),
        )
    }

    /// The settings a tenant runs with now, or `NotFound`.
    pub(super) fn running_settings(
        &self,
        tenant_id: &str,
    ) -> ApiResult<std::sync::Arc<TenantSettings>> {
        self.registry
            .get(tenant_id)
            .map(|handle| handle.settings())
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    /// Every route of a running tenant, each with the concurrency limit
    /// its dispatcher runs with now.
    pub(super) fn routes_of(&self, tenant_id: &str) -> ApiResult<Vec<RouteView>> {
        let handle = self
            .registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))?;
        let mut views = views_of(&handle.settings(), self.config_tenants.contains(tenant_id));
        let now_ms = self.now_ms();
        for view in &mut views {
            let routes = handle.routes();
            let Some(route) = routes.iter().find(|route| route.name == view.name) else {
                continue;
            };
            view.concurrency_limit = route.metrics.concurrency_limit().map(|limit| limit as u32);
            view.hold = hold_view(route.hold.record(), now_ms);
        }
        Ok(views)
    }

    pub(super) fn route(&self, tenant_id: &str, name: &str) -> ApiResult<RouteView> {
        self.routes_of(tenant_id)?
            .into_iter()
            .find(|r| r.name == name)
            .ok_or_else(|| no_route(tenant_id, name))
    }

    /// Stores a new route in the tenant's record and puts it in force; it
    /// starts without data, whatever a route of its name left before.
    ///
    /// A tenant's routes for the control plane. Those of an API tenant are kept
    /// in its catalog record and resolved with it (so a filter, a transform or
    /// a number is checked as a config-file route's is), then put in force
    /// through the registry as an update; those of a config-file tenant are
    /// read-only here. The `default` route is the tenant's own destination.
    pub(super) fn add_route(&self, tenant_id: &str, new: NewRoute) -> ApiResult<RouteView> {
        let (mut record, secrets) = self.stored(tenant_id)?;
        let taken =
            new.name == DEFAULT_ROUTE || record.tenant.routes.iter().any(|r| r.name == new.name);
        if taken {
            return Err(ApiError::AlreadyExists(format!(
                "tenant {tenant_id} already has a route {}",
                new.name
            )));
        }
        if let Some(url) = &new.destination_url {
            self.check_destination(url)?;
        }
        let route = StoredRoute {
            name: new.name.clone(),
            destination_url: new.destination_url,
            max_in_flight: in_flight(new.max_in_flight),
            delivery_rate: new.delivery_rate.map(rate_config),
            retry: new.retry.map_or_else(RetryConfig::default, retry_config),
            breaker: new
                .breaker
                .map_or_else(BreakerConfig::default, breaker_config),
            filter: new.filter_json.as_deref().map(filter_value).transpose()?,
            transform: new.transform,
            transform_cpu_ms: new
                .transform_cpu_ms
                .map_or(DEFAULT_TRANSFORM_CPU_MS, u64::from),
            transform_memory_mib: new
                .transform_memory_mib
                .map_or(DEFAULT_TRANSFORM_MEMORY_MIB, |m| m as usize),
            adaptive_concurrency: new.concurrency.adaptive,
            min_in_flight: floor(new.concurrency.min_in_flight),
            latency_target_ms: new.concurrency.latency_target_ms.map(u64::from),
            delay_ms: new.delay_ms.unwrap_or_default(),
        };
        record.tenant.routes.push(route);
        let scope = record.tenant.id.route_scope(&new.name);
        self.services.store.clear_tenant(&scope).map_err(api)?;
        let settings = self.apply_routes(&record, &secrets)?;
        tracing::info!(tenant = %tenant_id, route = %new.name, "route created");
        view_named(&settings, &new.name)
    }

    /// Changes a route; on `default`, the tenant's destination and
    /// concurrency, as UpdateTenant does.
    pub(super) fn change_route(
        &self,
        tenant_id: &str,
        name: &str,
        patch: RoutePatch,
    ) -> ApiResult<RouteView> {
        if name == DEFAULT_ROUTE {
            return self.change_default_route(tenant_id, patch);
        }
        let (mut record, secrets) = self.stored(tenant_id)?;
        let route = record
            .tenant
            .routes
            .iter_mut()
            .find(|r| r.name == name)
            .ok_or_else(|| no_route(tenant_id, name))?;
        if let Some(url) = patch.destination_url {
            if let Some(url) = &url {
                self.check_destination(url)?;
            }
            route.destination_url = url;
        }
        if let Some(max) = patch.max_in_flight {
            route.max_in_flight = in_flight(max);
        }
        if let Some(adaptive) = patch.adaptive_concurrency {
            route.adaptive_concurrency = adaptive;
        }
        if let Some(min) = patch.min_in_flight {
            route.min_in_flight = floor(min);
        }
        if let Some(target) = patch.latency_target_ms {
            route.latency_target_ms = target.map(u64::from);
        }
        if let Some(delay) = patch.delay_ms {
            route.delay_ms = delay.unwrap_or_default();
        }
        if let Some(rate) = patch.delivery_rate {
            route.delivery_rate = rate.map(rate_config);
        }
        if let Some(retry) = patch.retry {
            route.retry = retry_config(retry);
        }
        if let Some(breaker) = patch.breaker {
            route.breaker = breaker_config(breaker);
        }
        if let Some(filter) = patch.filter_json {
            route.filter = filter.as_deref().map(filter_value).transpose()?;
        }
        if let Some(code) = patch.transform {
            route.transform = code;
        }
        if let Some(cpu) = patch.transform_cpu_ms {
            route.transform_cpu_ms = cpu.map_or(DEFAULT_TRANSFORM_CPU_MS, u64::from);
        }
        if let Some(memory) = patch.transform_memory_mib {
            route.transform_memory_mib =
                memory.map_or(DEFAULT_TRANSFORM_MEMORY_MIB, |m| m as usize);
        }
        let settings = self.apply_routes(&record, &secrets)?;
        tracing::info!(tenant = %tenant_id, route = %name, "route updated");
        view_named(&settings, name)
    }

    fn change_default_route(&self, tenant_id: &str, patch: RoutePatch) -> ApiResult<RouteView> {
        if patch.touches_more_than_the_default_takes() {
            return Err(ApiError::InvalidArgument(
                "the default route is the tenant's own destination: only destination_url, max_in_flight, filter_json and delay_ms may be set on it".into(),
            ));
        }
        if patch.filter_json.is_some() || patch.delay_ms.is_some() {
            let (mut record, secrets) = self.stored(tenant_id)?;
            if let Some(filter) = patch.filter_json {
                record.tenant.filter = filter.as_deref().map(filter_value).transpose()?;
            }
            if let Some(delay) = patch.delay_ms {
                record.tenant.delay_ms = delay.unwrap_or_default();
            }
            self.apply_routes(&record, &secrets)?;
            tracing::info!(tenant = %tenant_id, route = DEFAULT_ROUTE, "route filter or delay updated");
        }
        if patch.destination_url.is_some() || patch.max_in_flight.is_some() {
            let tenant = TenantPatch {
                destination_url: patch.destination_url,
                max_in_flight: patch.max_in_flight.map(|max| max.unwrap_or(0)),
                ..TenantPatch::default()
            };
            self.update(tenant_id, tenant)?;
        }
        self.route(tenant_id, DEFAULT_ROUTE)
    }

    /// Takes a route out of the tenant's record and its dispatcher out of
    /// the registry; returns its storage scope, whose data the caller drops.
    /// Refused while deliveries are queued on it, unless `force`.
    pub(super) fn take_route(
        &self,
        tenant_id: &str,
        name: &str,
        force: bool,
    ) -> ApiResult<TenantId> {
        if name == DEFAULT_ROUTE {
            return Err(ApiError::FailedPrecondition(
                "the default route is the tenant's own destination and cannot be deleted; delete the tenant instead".into(),
            ));
        }
        let (mut record, secrets) = self.stored(tenant_id)?;
        let before = record.tenant.routes.len();
        record.tenant.routes.retain(|r| r.name != name);
        if record.tenant.routes.len() == before {
            return Err(no_route(tenant_id, name));
        }
        let scope = record.tenant.id.route_scope(name);
        let queued = self
            .services
            .store
            .tenant(&scope)
            .and_then(|data| data.counts());
        let queued = queued.map_err(api)?.depth;
        if queued > 0 && !force {
            return Err(ApiError::FailedPrecondition(format!(
                "route {name} of tenant {tenant_id} has {queued} deliveries queued; delete it with force to drop them unsent"
            )));
        }
        self.apply_routes(&record, &secrets)?;
        let rows = self.services.store.catalog_rows().map_err(api)?;
        let mut forgotten = vec![RowChange::Remove(
            Table::Holds,
            HoldRecord::key(tenant_id, name),
        )];
        forgotten.extend(ReplayOrder::forget(&*rows, tenant_id, Some(name)).map_err(api)?);
        rows.apply(&forgotten).map_err(api)?;
        tracing::info!(tenant = %tenant_id, route = %name, queued, "route deleted");
        Ok(scope)
    }

    /// [`Backend::apply`] for a change of routes, with a setting's error in
    /// the route's own terms (`filter/body/amount/$gte: ...`).
    fn apply_routes(
        &self,
        record: &TenantRecord,
        secrets: &SecretSet,
    ) -> ApiResult<TenantSettings> {
        self.apply(record, secrets, Changed::Settings)
            .map_err(|e| match e {
                ApiError::InvalidArgument(why) => ApiError::InvalidArgument(route_terms(&why)),
                other => other,
            })
    }
}

fn no_route(tenant_id: &str, name: &str) -> ApiError {
    ApiError::NotFound(format!("route {name} of tenant {tenant_id}"))
}

/// A resolution error about `routes[2] (audit).max_in_flight` or
/// `routes[2].filter/body/x` as RouteService names it: `max_in_flight`,
/// `filter/body/x`.
fn route_terms(message: &str) -> String {
    let Some(rest) = message.strip_prefix("routes[") else {
        return message.to_owned();
    };
    match rest
        .split_once(']')
        .and_then(|(_, after)| after.split_once('.'))
    {
        Some((_, field)) => field.to_owned(),
        None => message.to_owned(),
    }
}

/// A filter given as JSON text.
fn filter_value(json: &str) -> ApiResult<serde_json::Value> {
    serde_json::from_str(json)
        .map_err(|e| ApiError::InvalidArgument(format!("filter_json: not JSON: {e}")))
}

fn in_flight(max: Option<u32>) -> usize {
    max.map_or(DEFAULT_MAX_IN_FLIGHT, |max| max as usize)
}

/// The floor of an adaptive limit: `None` is the default, 1.
fn floor(min: Option<u32>) -> usize {
    min.map_or(1, |min| min as usize)
}

fn rate_config(rate: RateLimit) -> RateLimitConfig {
    RateLimitConfig {
        per_sec: rate.per_sec,
        burst: rate.burst,
    }
}

/// Retries as given, where an empty schedule, a 0 window and a negative
/// jitter mean the default.
fn retry_config(retry: RouteRetry) -> RetryConfig {
    let defaults = RetryConfig::default();
    RetryConfig {
        schedule_secs: match retry.schedule_secs.is_empty() {
            true => defaults.schedule_secs,
            false => retry.schedule_secs,
        },
        window_secs: match retry.window_secs == 0.0 {
            true => defaults.window_secs,
            false => retry.window_secs,
        },
        jitter: match retry.jitter < 0.0 {
            true => defaults.jitter,
            false => retry.jitter,
        },
    }
}

/// A breaker as given, where 0 means the default.
fn breaker_config(breaker: RouteBreaker) -> BreakerConfig {
    let defaults = BreakerConfig::default();
    BreakerConfig {
        failure_threshold: match breaker.failure_threshold {
            0 => defaults.failure_threshold,
            n => n,
        },
        cooldown_secs: match breaker.cooldown_secs == 0.0 {
            true => defaults.cooldown_secs,
            false => breaker.cooldown_secs,
        },
    }
}

fn view_named(settings: &TenantSettings, name: &str) -> ApiResult<RouteView> {
    views_of(settings, false)
        .into_iter()
        .find(|r| r.name == name)
        .ok_or_else(|| ApiError::Internal(format!("route {name} is not in force")))
}

/// Every route of a running tenant, `default` first.
fn views_of(settings: &TenantSettings, from_config: bool) -> Vec<RouteView> {
    let tenant = settings.id.to_string();
    let default = RouteView {
        delay_ms: settings.delay_ms as u64,
        ..view(
            &tenant,
            DEFAULT_ROUTE,
            settings.forward.as_ref(),
            settings.filter.as_ref().map(|f| f.spec().to_string()),
            from_config,
        )
    };
    let others = settings.routes.iter().map(|r| {
        let filter = r.filter.as_ref().map(|f| f.spec().to_string());
        RouteView {
            delay_ms: r.delay_ms as u64,
            ..view(&tenant, &r.name, r.forward.as_ref(), filter, from_config)
        }
    });
    std::iter::once(default).chain(others).collect()
}

fn view(
    tenant: &str,
    name: &str,
    forward: Option<&ForwardSettings>,
    filter_json: Option<String>,
    from_config: bool,
) -> RouteView {
    let defaults = (RetryConfig::default(), BreakerConfig::default());
    let secs = |ms: i64| ms as f64 / 1000.0;
    let transform = forward.and_then(|f| f.transform.as_ref());
    let limits = transform.map_or_else(TransformLimits::default, |t| t.limits);
    RouteView {
        tenant_id: tenant.to_owned(),
        name: name.to_owned(),
        destination_url: forward.map(|f| f.url.clone()),
        max_in_flight: forward.map_or(DEFAULT_MAX_IN_FLIGHT, |f| f.max_in_flight) as u32,
        delivery_rate: forward.and_then(|f| f.delivery_rate).map(|r| RateLimit {
            per_sec: r.per_sec,
            burst: r.burst,
        }),
        retry: match forward {
            Some(f) => RouteRetry {
                schedule_secs: f.schedule_ms.iter().copied().map(secs).collect(),
                window_secs: secs(f.window_ms),
                jitter: f.jitter,
            },
            None => RouteRetry {
                schedule_secs: defaults.0.schedule_secs,
                window_secs: defaults.0.window_secs,
                jitter: defaults.0.jitter,
            },
        },
        breaker: match forward {
            Some(f) => RouteBreaker {
                failure_threshold: f.breaker_threshold,
                cooldown_secs: secs(f.breaker_cooldown_ms),
            },
            None => RouteBreaker {
                failure_threshold: defaults.1.failure_threshold,
                cooldown_secs: defaults.1.cooldown_secs,
            },
        },
        filter_json,
        transform: transform.map(|t| t.transform.code().to_owned()),
        transform_version: transform.map(|t| t.transform.version()),
        from_config,
        transform_cpu_ms: limits.cpu().as_millis() as u32,
        transform_memory_mib: (limits.memory_bytes() >> 20) as u32,
        // The limit the route starts with; `routes_of` puts the one its
        // dispatcher runs with now over it.
        concurrency_limit: forward.map(|f| f.concurrency.starting_limit(f.max_in_flight) as u32),
        concurrency: forward.map_or(
            RouteConcurrency {
                adaptive: false,
                min_in_flight: Some(1),
                latency_target_ms: None,
            },
            |f| RouteConcurrency {
                adaptive: f.concurrency.adaptive,
                min_in_flight: Some(f.concurrency.min_in_flight as u32),
                latency_target_ms: f.concurrency.latency_target_ms.map(|ms| ms as u32),
            },
        ),
        hold: Default::default(),
        delay_ms: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolution_errors_are_named_as_the_route_api_names_them() {
        assert_eq!(
            route_terms("routes[0].filter/body/amount/$gte: expects a number or a string"),
            "filter/body/amount/$gte: expects a number or a string"
        );
        assert_eq!(
            route_terms("routes[3] (audit).max_in_flight: must be 1 or more"),
            "max_in_flight: must be 1 or more"
        );
        assert_eq!(route_terms("routes: at most 16"), "routes: at most 16");
    }

    #[test]
    fn zero_retry_and_breaker_values_mean_the_defaults() {
        let retry = retry_config(RouteRetry {
            schedule_secs: vec![],
            window_secs: 0.0,
            jitter: -1.0,
        });
        assert_eq!(retry, RetryConfig::default());
        let breaker = breaker_config(RouteBreaker {
            failure_threshold: 0,
            cooldown_secs: 0.0,
        });
        assert_eq!(breaker, BreakerConfig::default());
        let given = retry_config(RouteRetry {
            schedule_secs: vec![1.0],
            window_secs: 60.0,
            jitter: 0.0,
        });
        assert_eq!(
            (given.schedule_secs, given.window_secs, given.jitter),
            (vec![1.0], 60.0, 0.0)
        );
    }
}
