//! `hookctl export`: hookd's API-created tenants in the file format, secrets
//! as `{env: ...}` references to fill in.

use super::{
    alerts::CurrentAlerts,
    file::{
        AlertRuleEntry, AlertsEntry, BreakerEntry, ContractEntry, HookdFile, RateEntry, RetryEntry,
        RouteEntry, SinkEntry, TenantEntry, VERSION,
    },
    secret::SecretRef,
    state::{CurrentTenant, Rate, RouteSettings},
};

/// Environment variables export names the secrets after.
pub const SECRET_ENV: &str = "HOOKD_SECRET";
/// ... and the verify tokens.
pub const VERIFY_TOKEN_ENV: &str = "HOOKD_VERIFY_TOKEN";
/// ... and the alert sinks' secrets.
pub const SINK_SECRET_ENV: &str = "HOOKD_ALERT_SECRET";

/// The file for `tenants` (config-file tenants are left out: they are
/// read-only over the API).
///
/// `hookctl export`: hookd's API-created tenants in the file format, every
/// value written out (every alert type's rule among them) and secrets as `{env: ...}` references to fill in, so
/// applying the export changes nothing.
pub fn export(tenants: &[CurrentTenant]) -> HookdFile {
    HookdFile {
        version: Some(VERSION),
        tenants: tenants
            .iter()
            .filter(|t| !t.from_config)
            .map(tenant)
            .collect(),
    }
}

fn rate(rate: &Option<Rate>) -> Option<RateEntry> {
    rate.as_ref().map(|r| RateEntry {
        per_sec: r.per_sec,
        burst: Some(r.burst),
    })
}

fn tenant(have: &CurrentTenant) -> TenantEntry {
    let s = &have.state.settings;
    let mut routes: Vec<RouteEntry> = Vec::new();
    if s.default_filter.is_some() || s.default_delay_ms > 0 {
        routes.push(RouteEntry {
            name: "default".into(),
            filter: s.default_filter.clone(),
            delay_ms: (s.default_delay_ms > 0).then_some(s.default_delay_ms),
            ..Default::default()
        });
    }
    routes.extend(have.state.routes.iter().map(|(name, r)| route(name, r)));
    TenantEntry {
        id: have.id.clone(),
        scheme: Some(s.scheme.clone()),
        tolerance_secs: Some(s.tolerance_secs),
        destination_url: s.destination_url.clone(),
        enabled: Some(s.enabled),
        max_body_bytes: Some(s.max_body_bytes),
        required_fields: s.required_fields.clone(),
        event_id_field: s.event_id_field.clone(),
        max_in_flight: Some(s.max_in_flight),
        rate_limit: rate(&s.rate_limit),
        public_url: s.public_url.clone(),
        hmac: s.hmac.clone(),
        secret: Some(SecretRef::placeholder(SECRET_ENV, &have.id)),
        verify_token: have
            .has_verify_token
            .then(|| SecretRef::placeholder(VERIFY_TOKEN_ENV, &have.id)),
        routes,
        contracts: have
            .state
            .contracts
            .iter()
            .map(|((event_type, version), body)| ContractEntry {
                event_type: event_type.clone(),
                version: version.clone(),
                schema: body.schema.clone(),
                example: body.example.clone(),
            })
            .collect(),
        alerts: have.alerts.as_ref().map(|a| alerts(&have.id, a)),
    }
}

/// The sink, and the rule of each type the tenant overrides, as hookd runs
/// it, so applying it changes nothing (and another hookd's defaults stay
/// its own).
fn alerts(tenant: &str, have: &CurrentAlerts) -> AlertsEntry {
    AlertsEntry {
        sink: have.sink.as_ref().map(|sink| SinkEntry {
            url: sink.url.clone(),
            format: Some(sink.format.clone()),
            secret: have
                .sink_has_secret
                .then(|| SecretRef::placeholder(SINK_SECRET_ENV, tenant)),
        }),
        rules: have
            .rules
            .iter()
            .filter(|(kind, _)| have.overridden.contains(kind))
            .map(|(kind, rule)| AlertRuleEntry {
                alert_type: kind.as_str().to_owned(),
                enabled: Some(rule.enabled),
                threshold: rule.threshold,
                window_secs: rule.window_secs,
                mode: rule.mode.clone(),
            })
            .collect(),
    }
}

fn route(name: &str, r: &RouteSettings) -> RouteEntry {
    RouteEntry {
        name: name.to_owned(),
        destination_url: r.destination_url.clone(),
        max_in_flight: Some(r.max_in_flight),
        delivery_rate: rate(&r.delivery_rate),
        retry: Some(RetryEntry {
            schedule_secs: Some(r.retry.schedule_secs.clone()),
            window_secs: Some(r.retry.window_secs),
            jitter: Some(r.retry.jitter),
        }),
        breaker: Some(BreakerEntry {
            failure_threshold: Some(r.breaker.failure_threshold),
            cooldown_secs: Some(r.breaker.cooldown_secs),
        }),
        filter: r.filter.clone(),
        transform: r.transform.clone(),
        transform_cpu_ms: Some(r.transform_cpu_ms),
        transform_memory_mib: Some(r.transform_memory_mib),
        adaptive_concurrency: Some(r.adaptive_concurrency),
        min_in_flight: Some(r.min_in_flight),
        latency_target_ms: Some(r.latency_target_ms),
        delay_ms: Some(r.delay_ms),
    }
}
