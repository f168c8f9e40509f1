//! The file's tenants as [`DesiredTenant`]s: defaults filled in, and what
//! serde cannot check refused with the path of the key at fault.

use std::collections::BTreeSet;

use anyhow::{bail, Context};
use hookd_proto::domain::AlertType;
use hookd_sdk::signature::Scheme;

use super::{
    alerts::{DesiredAlerts, Rule, Sink, FORMATS},
    file::{AlertsEntry, ContractEntry, HookdFile, RouteEntry, TenantEntry},
    secret::SecretRef,
    state::{
        json_value, Breaker, ContractBody, DesiredTenant, Rate, Retry, RouteSettings,
        TenantSettings, TenantState,
    },
};

/// The tenants the file wants, in its order.
///
/// The file's tenants as [`DesiredTenant`]s: defaults filled in, and what
/// serde cannot check refused with the path of the key at fault (a tenant
/// named twice, an unknown scheme, an inline secret without
/// `--allow-inline-secrets`, a `default` route with more than a filter).
pub fn desired(file: HookdFile, allow_inline_secrets: bool) -> anyhow::Result<Vec<DesiredTenant>> {
    let mut seen = BTreeSet::new();
    let mut tenants = Vec::new();
    for (n, entry) in file.tenants.into_iter().enumerate() {
        let path = format!("tenants[{n}]");
        if !seen.insert(entry.id.clone()) {
            bail!("{path}.id: tenant {:?} is named twice", entry.id);
        }
        let at = format!("tenants[{}]", entry.id);
        tenants.push(tenant(entry, allow_inline_secrets).with_context(|| at)?);
    }
    Ok(tenants)
}

fn tenant(entry: TenantEntry, allow_inline_secrets: bool) -> anyhow::Result<DesiredTenant> {
    for (key, secret) in [
        ("secret", &entry.secret),
        ("verify_token", &entry.verify_token),
    ] {
        if secret.as_ref().is_some_and(SecretRef::is_inline) && !allow_inline_secrets {
            bail!(
                "{key}: an inline value is refused; use {{file: PATH}} or {{env: NAME}}, \
                 or pass --allow-inline-secrets"
            );
        }
    }
    let alerts = entry
        .alerts
        .map(|a| alerts(a, allow_inline_secrets))
        .transpose()?;
    let scheme = match &entry.scheme {
        Some(name) => name
            .parse::<Scheme>()
            .map_err(|e| anyhow::anyhow!("scheme: {e}"))?
            .as_str()
            .to_owned(),
        None => TenantSettings::default().scheme,
    };
    let mut state = TenantState::default();
    let mut names = BTreeSet::new();
    for (n, route) in entry.routes.into_iter().enumerate() {
        let at = format!("routes[{n}]");
        if !names.insert(route.name.clone()) {
            bail!("{at}.name: route {:?} is named twice", route.name);
        }
        if route.name == "default" {
            let (filter, delay_ms) = default_route(route).with_context(|| at)?;
            state.settings.default_filter = filter;
            state.settings.default_delay_ms = delay_ms.unwrap_or_default();
        } else {
            let name = route.name.clone();
            state
                .routes
                .insert(name, route_settings(route).with_context(|| at)?);
        }
    }
    for (n, contract) in entry.contracts.into_iter().enumerate() {
        let at = format!("contracts[{n}]");
        let key = (contract.event_type.clone(), contract.version.clone());
        let body = contract_body(contract).with_context(|| at.clone())?;
        if state.contracts.insert(key, body).is_some() {
            bail!("{at}: the contract's type and version are named twice");
        }
    }
    let defaults = TenantSettings::default();
    state.settings = TenantSettings {
        scheme,
        tolerance_secs: entry.tolerance_secs.unwrap_or(defaults.tolerance_secs),
        destination_url: entry.destination_url,
        enabled: entry.enabled.unwrap_or(true),
        max_body_bytes: entry.max_body_bytes.unwrap_or(defaults.max_body_bytes),
        required_fields: entry.required_fields,
        event_id_field: entry.event_id_field,
        max_in_flight: entry.max_in_flight.unwrap_or(defaults.max_in_flight),
        rate_limit: entry.rate_limit.map(|r| Rate::new(r.per_sec, r.burst)),
        public_url: entry.public_url,
        hmac: entry.hmac,
        default_filter: state.settings.default_filter,
        default_delay_ms: state.settings.default_delay_ms,
    };
    Ok(DesiredTenant {
        id: entry.id,
        state,
        secret: entry.secret,
        verify_token: entry.verify_token,
        alerts,
    })
}

/// The tenant's `alerts:`, each rule's type checked against the catalogue
/// and named once.
fn alerts(entry: AlertsEntry, allow_inline_secrets: bool) -> anyhow::Result<DesiredAlerts> {
    let mut want = DesiredAlerts::default();
    if let Some(sink) = entry.sink {
        if sink.secret.as_ref().is_some_and(SecretRef::is_inline) && !allow_inline_secrets {
            bail!(
                "alerts.sink.secret: an inline value is refused; use {{file: PATH}} or \
                 {{env: NAME}}, or pass --allow-inline-secrets"
            );
        }
        let format = sink.format.unwrap_or_else(|| FORMATS[0].to_owned());
        if !FORMATS.contains(&format.as_str()) {
            bail!("alerts.sink.format: {format:?} is not one of standard, slack");
        }
        want.sink = Some(Sink {
            url: sink.url,
            format,
        });
        want.sink_secret = sink.secret;
    }
    for (n, rule) in entry.rules.into_iter().enumerate() {
        let kind: AlertType = rule
            .alert_type
            .parse()
            .map_err(|e| anyhow::anyhow!("alerts.rules[{n}].type: {e}"))?;
        let rule = Rule {
            enabled: rule.enabled.unwrap_or(true),
            threshold: rule.threshold,
            window_secs: rule.window_secs,
            mode: rule.mode,
        };
        if want.rules.insert(kind, rule).is_some() {
            bail!("alerts.rules[{n}].type: {kind} has a rule already");
        }
    }
    Ok(want)
}

/// The `default` route takes only a filter and a delay: its destination and
/// concurrency are the tenant's own.
fn default_route(route: RouteEntry) -> anyhow::Result<(Option<serde_json::Value>, Option<u64>)> {
    let RouteEntry {
        name: _,
        destination_url,
        max_in_flight,
        delivery_rate,
        retry,
        breaker,
        filter,
        transform,
        transform_cpu_ms,
        transform_memory_mib,
        adaptive_concurrency,
        min_in_flight,
        latency_target_ms,
        delay_ms,
    } = route;
    let others = destination_url.is_some()
        || max_in_flight.is_some()
        || delivery_rate.is_some()
        || retry.is_some()
        || breaker.is_some()
        || transform.is_some()
        || transform_cpu_ms.is_some()
        || transform_memory_mib.is_some()
        || adaptive_concurrency.is_some()
        || min_in_flight.is_some()
        || latency_target_ms.is_some();
    if others {
        bail!(
            "the default route takes only `filter` and `delay_ms`: its destination_url and \
             max_in_flight are the tenant's own keys"
        );
    }
    let filter = filter.map(json_value).transpose().context("filter")?;
    Ok((filter, delay_ms))
}

fn route_settings(route: RouteEntry) -> anyhow::Result<RouteSettings> {
    let defaults = RouteSettings::default();
    let retry = route.retry.unwrap_or_default();
    let breaker = route.breaker.unwrap_or_default();
    Ok(RouteSettings {
        destination_url: route.destination_url,
        max_in_flight: route.max_in_flight.unwrap_or(defaults.max_in_flight),
        delivery_rate: route.delivery_rate.map(|r| Rate::new(r.per_sec, r.burst)),
        retry: Retry {
            schedule_secs: retry.schedule_secs.unwrap_or(defaults.retry.schedule_secs),
            window_secs: retry.window_secs.unwrap_or(defaults.retry.window_secs),
            jitter: retry.jitter.unwrap_or(defaults.retry.jitter),
        },
        breaker: Breaker {
            failure_threshold: breaker
                .failure_threshold
                .unwrap_or(defaults.breaker.failure_threshold),
            cooldown_secs: breaker
                .cooldown_secs
                .unwrap_or(defaults.breaker.cooldown_secs),
        },
        filter: route.filter.map(json_value).transpose().context("filter")?,
        transform: route.transform,
        transform_cpu_ms: route.transform_cpu_ms.unwrap_or(defaults.transform_cpu_ms),
        transform_memory_mib: route
            .transform_memory_mib
            .unwrap_or(defaults.transform_memory_mib),
        adaptive_concurrency: route
            .adaptive_concurrency
            .unwrap_or(defaults.adaptive_concurrency),
        min_in_flight: route.min_in_flight.unwrap_or(defaults.min_in_flight),
        latency_target_ms: route
            .latency_target_ms
            .unwrap_or(defaults.latency_target_ms),
        delay_ms: route.delay_ms.unwrap_or(defaults.delay_ms),
    })
}

fn contract_body(contract: ContractEntry) -> anyhow::Result<ContractBody> {
    Ok(ContractBody {
        schema: json_value(contract.schema).context("schema")?,
        example: json_value(contract.example).context("example")?,
    })
}
