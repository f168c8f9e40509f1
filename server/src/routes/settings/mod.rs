//! A route resolved: its forwarding, filter and transform checked and
//! compiled from what the config file or the control plane declared.

use std::{sync::Arc, time::Duration};

use hookd_proto::domain::{Scheme, DEFAULT_ROUTE};
use hookd_sdk::signature::Secret;
use secrecy::ExposeSecret;
use sha2::{Digest, Sha256};

use crate::{
    config::{
        load_secret, ConcurrencySettings, DestinationConfig, Forwarding, RateLimitConfig,
        RouteConfig, MAX_ROUTES,
    },
    egress::AddressPolicy,
    error::InvalidSetting,
    ids::TenantId,
    routes::{
        filter::RouteFilter,
        transform::{
            apply::RouteTransform, pool::TransformPool, InvalidLimits, Transform, TransformLimits,
        },
    },
};

/// How one tenant's events are forwarded, validated.
#[derive(Debug, Clone)]
pub struct ForwardSettings {
    /// Destination URL.
    pub url: String,
    /// Standard Webhooks secret hookd signs with.
    pub secret: Secret,
    /// Whole-request timeout.
    pub timeout: Duration,
    /// Connect timeout.
    pub connect_timeout: Duration,
    /// Delays between attempts (ms); the last repeats.
    pub schedule_ms: Vec<i64>,
    /// Retry window from acceptance (ms).
    pub window_ms: i64,
    /// Jitter fraction.
    pub jitter: f64,
    /// Concurrency limit.
    pub max_in_flight: usize,
    /// Optional forward rate limit.
    pub delivery_rate: Option<RateLimitConfig>,
    /// Consecutive failures that open the breaker.
    pub breaker_threshold: u32,
    /// Breaker cooldown (ms).
    pub breaker_cooldown_ms: i64,
    /// Whether and how the concurrency limit adapts.
    pub concurrency: ConcurrencySettings,
    /// The addresses the destination may reach; `None` for a destination
    /// written in the operator's config file, which is trusted as written.
    pub address_policy: Option<Arc<AddressPolicy>>,
    /// The destination's own private CAs (`destination.ca_file`).
    pub ca_certs: Vec<reqwest::Certificate>,
    /// The route's transform, run on each request before it is signed.
    pub transform: Option<Arc<RouteTransform>>,
}

/// The same forwarding: a dispatcher started for one needs no restart for
/// the other. Private CAs cannot be compared: a destination with any is
/// never the same.
impl PartialEq for ForwardSettings {
    fn eq(&self, other: &ForwardSettings) -> bool {
        self.url == other.url
            && self.secret == other.secret
            && self.timeout == other.timeout
            && self.connect_timeout == other.connect_timeout
            && self.schedule_ms == other.schedule_ms
            && self.window_ms == other.window_ms
            && self.jitter == other.jitter
            && self.max_in_flight == other.max_in_flight
            && self.delivery_rate == other.delivery_rate
            && self.breaker_threshold == other.breaker_threshold
            && self.breaker_cooldown_ms == other.breaker_cooldown_ms
            && self.concurrency == other.concurrency
            && self.address_policy == other.address_policy
            && self.ca_certs.is_empty()
            && other.ca_certs.is_empty()
            && match (&self.transform, &other.transform) {
                (None, None) => true,
                (Some(a), Some(b)) => a.transform == b.transform && a.limits == b.limits,
                _ => false,
            }
    }
}

/// The forward settings of the forwarding fields `fields` (`None`: pull
/// mode); their bounds are the caller's to check.
pub fn forward_settings(fields: &Forwarding) -> Result<Option<ForwardSettings>, InvalidSetting> {
    fields
        .destination
        .map(|d| destination_settings(fields, d))
        .transpose()
}

fn destination_settings(
    fields: &Forwarding,
    dest: &DestinationConfig,
) -> Result<ForwardSettings, InvalidSetting> {
    let key = |name: &str| format!("{}{name}", fields.key);
    if !(dest.url.starts_with("http://") || dest.url.starts_with("https://")) {
        return Err(InvalidSetting::new(
            key("destination.url"),
            format!("{:?} must be an http:// or https:// URL", dest.url),
        ));
    }
    let raw = load_secret(
        dest.secret.as_ref(),
        dest.secret_env.as_deref(),
        dest.secret_file.as_deref(),
    )
    .map_err(|e| InvalidSetting::new(key("destination"), e))?;
    let secret =
        Secret::from_provider(Scheme::Standard, "dest", raw.expose_secret()).map_err(|e| {
            InvalidSetting::new(
                key("destination.secret"),
                format!("{e} (a Standard Webhooks whsec_ secret)"),
            )
        })?;
    let ca_certs = match &dest.ca_file {
        Some(path) => crate::egress::load_ca_file(&key("destination.ca_file"), path)?,
        None => Vec::new(),
    };
    let ms = |secs: f64| (secs * 1000.0).round() as i64;
    Ok(ForwardSettings {
        url: dest.url.clone(),
        secret,
        timeout: Duration::from_secs_f64(dest.timeout_secs),
        connect_timeout: Duration::from_secs_f64(dest.connect_timeout_secs),
        schedule_ms: fields.retry.schedule_secs.iter().map(|s| ms(*s)).collect(),
        window_ms: ms(fields.retry.window_secs),
        jitter: fields.retry.jitter,
        max_in_flight: fields.max_in_flight,
        delivery_rate: fields.delivery_rate,
        breaker_threshold: fields.breaker.failure_threshold,
        breaker_cooldown_ms: ms(fields.breaker.cooldown_secs),
        concurrency: fields.concurrency,
        address_policy: None,
        ca_certs,
        transform: None,
    })
}

/// One extra route, validated.
#[derive(Debug, Clone)]
pub struct RouteSettings {
    /// Its name.
    pub name: String,
    /// Where its deliveries are stored ([`TenantId::route_scope`]).
    pub scope: TenantId,
    /// How it forwards (`None`: pull mode).
    pub forward: Option<ForwardSettings>,
    /// Which events it gets (`None`: every event).
    pub filter: Option<RouteFilter>,
    /// How long after acceptance its first attempt is due (ms; 0: at once).
    pub delay_ms: i64,
}

/// The longest a route may hold a delivery before its first attempt: 24 h.
pub const MAX_DELAY_MS: u64 = 86_400_000;

/// Validates `routes` of tenant `tenant`: names valid and unique, at most
/// [`MAX_ROUTES`] with the default one, every number in bounds.
pub fn resolve_routes(
    tenant: &TenantId,
    routes: &[RouteConfig],
) -> Result<Vec<RouteSettings>, InvalidSetting> {
    if routes.len() + 1 > MAX_ROUTES {
        return Err(InvalidSetting::new(
            "routes",
            format!("at most {MAX_ROUTES} routes, the default one included"),
        ));
    }
    let mut names = vec![DEFAULT_ROUTE];
    routes
        .iter()
        .enumerate()
        .map(|(i, route)| {
            let key = format!("routes[{i}]");
            if !TenantId::is_valid(&route.name) {
                return Err(InvalidSetting::new(
                    format!("{key}.name"),
                    "must be 1-64 characters of a-z, 0-9, '-' or '_'",
                ));
            }
            if names.contains(&route.name.as_str()) {
                return Err(InvalidSetting::new(
                    format!("{key}.name"),
                    format!(
                        "{:?} is taken (`default` is the tenant's own destination)",
                        route.name
                    ),
                ));
            }
            names.push(&route.name);
            resolve_route(tenant, &key, route)
        })
        .collect()
}

/// Resolves route `route`, declared at `key`: its forwarding, filter and
/// transform checked and compiled (its name is checked by the caller).
fn resolve_route(
    tenant: &TenantId,
    key: &str,
    route: &RouteConfig,
) -> Result<RouteSettings, InvalidSetting> {
    let forwarding = route.forwarding(key);
    forwarding.check_bounds()?;
    let filter = route
        .filter
        .as_ref()
        .map(RouteFilter::compile)
        .transpose()
        .map_err(|e| InvalidSetting::new(format!("{key}.filter{}", e.pointer), e.reason))?;
    let mut forward = forward_settings(&forwarding)?;
    if let Some(code) = &route.transform {
        let Some(forward) = forward.as_mut() else {
            return Err(InvalidSetting::new(
                format!("{key}.transform"),
                "a transform needs a destination (a pulled route sends nothing)",
            ));
        };
        forward.transform = Some(route_transform(tenant, key, route, code)?);
    }
    if route.delay_ms > MAX_DELAY_MS {
        return Err(InvalidSetting::new(
            format!("{key}.delay_ms"),
            format!("at most {MAX_DELAY_MS} (24 h)"),
        ));
    }
    Ok(RouteSettings {
        name: route.name.clone(),
        scope: tenant.route_scope(&route.name),
        forward,
        filter,
        delay_ms: route.delay_ms as i64,
    })
}

/// Compiles the transform `code` of route `route`, declared at `key`, with
/// its CPU and memory limits.
fn route_transform(
    tenant: &TenantId,
    key: &str,
    route: &RouteConfig,
    code: &str,
) -> Result<Arc<RouteTransform>, InvalidSetting> {
    let limits = TransformLimits::new(
        route.transform_memory_mib.saturating_mul(1 << 20),
        Duration::from_millis(route.transform_cpu_ms),
    )
    .map_err(|e| {
        let field = match e {
            InvalidLimits::Memory => "transform_memory_mib",
            InvalidLimits::Cpu => "transform_cpu_ms",
        };
        InvalidSetting::new(format!("{key}.{field}"), e)
    })?;
    let transform = Transform::new(code, version_of(code))
        .map_err(|e| InvalidSetting::new(format!("{key}.transform"), e))?;
    Ok(Arc::new(RouteTransform {
        transform,
        limits,
        tenant: tenant.clone(),
        route: route.name.clone(),
        share: TransformPool::shared().route_share(),
    }))
}

/// A transform's version: the first four bytes of the SHA-256 of its code,
/// so it changes exactly when the code does, and every attempt records the
/// code that ran.
pub fn version_of(code: &str) -> u32 {
    let digest = Sha256::digest(code.as_bytes());
    u32::from_be_bytes([digest[0], digest[1], digest[2], digest[3]])
}

#[cfg(test)]
mod tests;
