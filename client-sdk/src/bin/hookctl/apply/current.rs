//! hookd's tenants as [`CurrentTenant`]s, read over the control plane.

use hookd_proto::domain::AlertType;
use hookd_sdk::client::{
    proto::{AlertSettings, AlertSinkFormat, ContractInfo, Route, Tenant},
    HookdClient,
};

use super::{
    alerts::{CurrentAlerts, Rule, Sink, FORMATS},
    state::{
        stored_json, Breaker, ContractBody, CurrentTenant, Rate, Retry, RouteSettings,
        TenantSettings, TenantState,
    },
};

/// Every tenant the token may see, in id order.
///
/// hookd's tenants as [`CurrentTenant`]s, read over the control plane: the
/// tenants, then each API-created one's routes, contracts and alert
/// settings.
pub async fn current(client: &HookdClient) -> anyhow::Result<Vec<CurrentTenant>> {
    let mut tenants = Vec::new();
    for tenant in client.list_all_tenants().await? {
        tenants.push(read(client, tenant).await?);
    }
    Ok(tenants)
}

/// The tenants named, in that order; one hookd does not have is NOT_FOUND.
pub async fn named(client: &HookdClient, ids: &[String]) -> anyhow::Result<Vec<CurrentTenant>> {
    let mut tenants = Vec::new();
    for id in ids {
        let tenant = client.get_tenant(id.as_str()).await?;
        tenants.push(read(client, tenant).await?);
    }
    Ok(tenants)
}

/// One tenant with its routes, contracts and alert settings (a config-file
/// tenant's are not read: apply never changes them).
async fn read(client: &HookdClient, tenant: Tenant) -> anyhow::Result<CurrentTenant> {
    let mut current = CurrentTenant {
        id: tenant.tenant_id.clone(),
        from_config: tenant.from_config,
        has_verify_token: tenant.has_verify_token,
        state: TenantState {
            settings: settings(&tenant),
            ..Default::default()
        },
        ..Default::default()
    };
    if tenant.from_config {
        return Ok(current);
    }
    for route in client.list_routes(tenant.tenant_id.as_str()).await? {
        if route.name == "default" {
            current.state.settings.default_filter = stored_json(&route.filter_json);
            current.state.settings.default_delay_ms = route.delay_ms;
        } else if route.from_config {
            current.read_only_routes.push(route.name);
        } else {
            let name = route.name.clone();
            current.state.routes.insert(name, route_settings(route));
        }
    }
    let contracts = client.list_contracts(tenant.tenant_id.as_str()).await?;
    for info in contracts.contracts {
        let (key, body, from_config) = contract(info);
        if from_config {
            current.read_only_contracts.push(key);
        } else {
            current.state.contracts.insert(key, body);
        }
    }
    let settings = client.get_alert_settings(tenant.tenant_id.as_str()).await?;
    current.alerts = Some(alerts(settings));
    Ok(current)
}

/// GetAlertSettings' answer; a type this hookctl does not know is left out
/// (the file cannot name it).
fn alerts(settings: AlertSettings) -> CurrentAlerts {
    let sink_has_secret = settings.sink.as_ref().is_some_and(|s| s.has_secret);
    let sink = settings.sink.map(|sink| {
        let format = match AlertSinkFormat::try_from(sink.format) {
            Ok(AlertSinkFormat::Slack) => FORMATS[1],
            _ => FORMATS[0],
        };
        Sink {
            url: sink.url,
            format: format.to_owned(),
        }
    });
    let overridden = settings
        .rules
        .iter()
        .filter(|rule| rule.overridden)
        .filter_map(|rule| rule.r#type.parse().ok())
        .collect();
    let rules = settings
        .rules
        .into_iter()
        .filter_map(|rule| {
            let kind: AlertType = rule.r#type.parse().ok()?;
            let rule = Rule {
                enabled: rule.enabled,
                threshold: Some(rule.threshold),
                window_secs: Some(rule.window_secs),
                mode: some(&rule.mode),
            };
            Some((kind, rule))
        })
        .collect();
    CurrentAlerts {
        sink,
        sink_has_secret,
        rules,
        overridden,
    }
}

fn some(text: &str) -> Option<String> {
    (!text.is_empty()).then(|| text.to_owned())
}

fn settings(tenant: &Tenant) -> TenantSettings {
    TenantSettings {
        scheme: tenant.scheme.clone(),
        tolerance_secs: tenant.tolerance_secs,
        destination_url: some(&tenant.destination_url),
        enabled: tenant.enabled,
        max_body_bytes: tenant.max_body_bytes,
        required_fields: tenant.required_fields.clone(),
        event_id_field: some(&tenant.event_id_field),
        max_in_flight: tenant.max_in_flight,
        rate_limit: (tenant.rate_limit_per_sec > 0.0)
            .then(|| Rate::new(tenant.rate_limit_per_sec, Some(tenant.rate_limit_burst))),
        public_url: some(&tenant.public_url),
        hmac: tenant.hmac.clone().map(Into::into),
        default_filter: None,
        default_delay_ms: 0,
    }
}

fn route_settings(route: Route) -> RouteSettings {
    let defaults = RouteSettings::default();
    RouteSettings {
        destination_url: some(&route.destination_url),
        max_in_flight: route.max_in_flight,
        delivery_rate: route
            .delivery_rate
            .filter(|r| r.per_sec > 0.0)
            .map(|r| Rate::new(r.per_sec, Some(r.burst))),
        retry: route.retry.map_or(defaults.retry, |r| Retry {
            schedule_secs: r.schedule_secs,
            window_secs: r.window_secs,
            jitter: r.jitter,
        }),
        breaker: route.breaker.map_or(defaults.breaker, |b| Breaker {
            failure_threshold: b.failure_threshold,
            cooldown_secs: b.cooldown_secs,
        }),
        filter: stored_json(&route.filter_json),
        transform: some(&route.transform),
        transform_cpu_ms: route.transform_cpu_ms,
        transform_memory_mib: route.transform_memory_mib,
        adaptive_concurrency: route.adaptive_concurrency,
        min_in_flight: route.min_in_flight.max(1),
        latency_target_ms: route.latency_target_ms,
        delay_ms: route.delay_ms,
    }
}

fn contract(info: ContractInfo) -> (super::state::ContractKey, ContractBody, bool) {
    let contract = info.contract.unwrap_or_default();
    let key = (contract.r#type, some(&contract.version));
    let body = ContractBody {
        schema: stored_json(&contract.schema).unwrap_or_default(),
        example: stored_json(&contract.example).unwrap_or_default(),
    };
    (key, body, info.from_config)
}
