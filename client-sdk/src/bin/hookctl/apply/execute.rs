//! Makes a [`Plan`]'s changes over the control plane, in the plan's order.

use std::path::Path;

use anyhow::Context;
use hookd_sdk::client::{
    proto::{
        AlertRule, AlertSettings, AlertSink, AlertSinkFormat, Contract, CreateRouteRequest,
        CreateTenantRequest, CreateTenantResponse, HmacSpec, RequiredFields, RouteBreaker,
        RouteRate, RouteRetry, UpdateRouteRequest, UpdateTenantRequest,
    },
    HookdClient,
};

use super::{
    alerts::DesiredAlerts,
    plan::{Op, Plan, Step},
    render,
    secret::SecretRef,
    state::{RouteSettings, TenantSettings},
};

/// What apply reports of a step it made: the step, and the secrets hookd
/// generated for a new tenant or a new alert sink (shown this once).
pub struct Done<'a> {
    /// The step made.
    pub step: &'a Step,
    /// A new tenant's answer.
    pub created: Option<CreateTenantResponse>,
    /// The secret hookd generated for a new alert sink given without one.
    pub sink_secret: Option<String>,
}

/// What one call answered that apply shows.
#[derive(Default)]
struct Made {
    created: Option<CreateTenantResponse>,
    sink_secret: Option<String>,
}

/// Makes every change of `plan`, reporting each as it is made; secret file
/// paths are relative to `base`.
///
/// Makes a [`Plan`]'s changes over the control plane, in the plan's order.
/// Every secret the plan sends is read first, so a missing file or variable
/// stops apply before it changes anything.
pub async fn execute<'a>(
    client: &HookdClient,
    plan: &'a Plan,
    base: &Path,
    mut report: impl FnMut(Done<'a>) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let secrets = Secrets::read(plan, base)?;
    for step in &plan.changes {
        let mut done = Made::default();
        for op in &step.ops {
            let made = run(client, op, &secrets)
                .await
                .with_context(|| format!("{} {}", render::verb(step.action).1, step.resource))?;
            done.created = done.created.or(made.created);
            done.sink_secret = done.sink_secret.or(made.sink_secret);
        }
        report(Done {
            step,
            created: done.created,
            sink_secret: done.sink_secret,
        })?;
    }
    Ok(())
}

/// The secrets a plan sends, read up front.
struct Secrets(Vec<(SecretRef, String)>);

impl Secrets {
    fn read(plan: &Plan, base: &Path) -> anyhow::Result<Secrets> {
        let mut read = Vec::new();
        let ops = plan
            .changes
            .iter()
            .flat_map(|step| step.ops.iter().map(move |op| (step, op)));
        for (step, op) in ops {
            let refs = match op {
                Op::CreateTenant {
                    secret,
                    verify_token,
                    ..
                } => vec![secret.as_ref(), verify_token.as_ref()],
                Op::UpdateTenant { verify_token, .. } => {
                    vec![verify_token.as_ref().and_then(Option::as_ref)]
                }
                Op::RotateSecret { secret, .. } => vec![Some(secret)],
                Op::SetAlerts {
                    alerts,
                    send_secret: true,
                    ..
                } => vec![alerts.sink_secret.as_ref()],
                _ => vec![],
            };
            for secret in refs.into_iter().flatten() {
                let value = secret
                    .resolve(base)
                    .with_context(|| format!("a secret of {}", step.resource))?;
                read.push((secret.clone(), value));
            }
        }
        Ok(Secrets(read))
    }

    fn get(&self, secret: Option<&SecretRef>) -> String {
        secret
            .and_then(|wanted| self.0.iter().find(|(r, _)| r == wanted))
            .map(|(_, value)| value.clone())
            .unwrap_or_default()
    }
}

async fn run(client: &HookdClient, op: &Op, secrets: &Secrets) -> anyhow::Result<Made> {
    match op {
        Op::CreateTenant {
            id,
            settings,
            secret,
            verify_token,
        } => {
            let refs = (secret.as_ref(), verify_token.as_ref());
            return create(client, (id, settings), refs, secrets).await;
        }
        Op::UpdateTenant {
            id,
            settings,
            fields,
            verify_token,
        } => {
            let request = update_tenant(id, settings, fields, verify_token.as_ref(), secrets);
            client.update_tenant(request).await?;
            let filter = fields.contains(&"default_route_filter");
            let delay = fields.contains(&"default_route_delay_ms");
            if filter || delay {
                client
                    .update_route(default_route(id, settings, (filter, delay)))
                    .await?;
            }
        }
        Op::RotateSecret { id, secret } => {
            client
                .rotate_secret_to(id.as_str(), 0, secrets.get(Some(secret)))
                .await?;
        }
        Op::CreateRoute {
            tenant,
            name,
            settings,
        } => {
            client
                .create_route(create_route(tenant, name, settings))
                .await?;
        }
        Op::UpdateRoute {
            tenant,
            name,
            settings,
            fields,
        } => {
            client
                .update_route(update_route(tenant, name, settings, fields))
                .await?;
        }
        Op::DeleteRoute { tenant, name } => {
            client
                .delete_route(tenant.as_str(), name.as_str(), false)
                .await?;
        }
        Op::PutContract { tenant, key, body } => {
            let contract = Contract {
                r#type: key.0.clone(),
                version: key.1.clone().unwrap_or_default(),
                schema: body.schema.to_string(),
                example: body.example.to_string(),
            };
            client.put_contract(tenant.as_str(), contract).await?;
        }
        Op::DeleteContract { tenant, key } => {
            let version = key.1.clone().unwrap_or_default();
            client
                .delete_contract(tenant.as_str(), key.0.as_str(), version)
                .await?;
        }
        Op::SetAlerts {
            tenant,
            alerts,
            send_secret,
        } => return set_alerts(client, tenant, alerts, *send_secret, secrets).await,
        Op::DeleteTenant { id } => client.delete_tenant(id.as_str()).await?,
    }
    Ok(Made::default())
}

/// Creates tenant `id` with its first secret and verify token read from
/// `secrets`, then disables it and sets its default route's filter when
/// `settings` say so.
async fn create(
    client: &HookdClient,
    (id, settings): (&str, &TenantSettings),
    (secret, verify_token): (Option<&SecretRef>, Option<&SecretRef>),
    secrets: &Secrets,
) -> anyhow::Result<Made> {
    let request = create_tenant(id, settings, secrets.get(secret), secrets.get(verify_token));
    let created = client.create_tenant(request).await?;
    if !settings.enabled {
        let disable = update_tenant(id, settings, &["enabled"], None, secrets);
        client.update_tenant(disable).await?;
    }
    let filter = settings.default_filter.is_some();
    let delay = settings.default_delay_ms > 0;
    if filter || delay {
        client
            .update_route(default_route(id, settings, (filter, delay)))
            .await?;
    }
    Ok(Made {
        created: Some(created),
        sink_secret: None,
    })
}

/// Replaces `tenant`'s alert settings with `alerts` (the sink's secret sent
/// when `send_secret`); the secret hookd generated for the sink, if any.
async fn set_alerts(
    client: &HookdClient,
    tenant: &str,
    alerts: &DesiredAlerts,
    send_secret: bool,
    secrets: &Secrets,
) -> anyhow::Result<Made> {
    let secret = match send_secret {
        true => secrets.get(alerts.sink_secret.as_ref()),
        false => String::new(),
    };
    let answer = client
        .set_alert_settings(tenant, alert_settings(alerts, secret))
        .await?;
    let generated = answer.generated_secret;
    Ok(Made {
        created: None,
        sink_secret: (!generated.is_empty()).then_some(generated),
    })
}

/// The settings SetAlertSettings replaces the tenant's with: the file's sink
/// (`secret` empty: hookd keeps the sink's, or generates one for a new
/// sink) and its rules, a key left out sent as 0 or empty (the default).
fn alert_settings(alerts: &DesiredAlerts, secret: String) -> AlertSettings {
    let sink = alerts.sink.as_ref().map(|sink| AlertSink {
        url: sink.url.clone(),
        format: match sink.format.as_str() {
            "slack" => AlertSinkFormat::Slack,
            _ => AlertSinkFormat::Standard,
        }
        .into(),
        secret,
        has_secret: false,
    });
    let rules = alerts
        .rules
        .iter()
        .map(|(kind, rule)| AlertRule {
            r#type: kind.as_str().to_owned(),
            enabled: rule.enabled,
            threshold: rule.threshold.unwrap_or(0),
            window_secs: rule.window_secs.unwrap_or(0.0),
            mode: rule.mode.clone().unwrap_or_default(),
            overridden: false,
        })
        .collect();
    AlertSettings { sink, rules }
}

fn create_tenant(
    id: &str,
    s: &TenantSettings,
    secret: String,
    verify_token: String,
) -> CreateTenantRequest {
    CreateTenantRequest {
        tenant_id: id.to_owned(),
        scheme: s.scheme.clone(),
        tolerance_secs: s.tolerance_secs,
        destination_url: s.destination_url.clone().unwrap_or_default(),
        max_body_bytes: s.max_body_bytes,
        required_fields: s.required_fields.clone(),
        event_id_field: s.event_id_field.clone().unwrap_or_default(),
        max_in_flight: s.max_in_flight,
        rate_limit_per_sec: s.rate_limit.as_ref().map_or(0.0, |r| r.per_sec),
        rate_limit_burst: s.rate_limit.as_ref().map_or(0, |r| r.burst),
        public_url: s.public_url.clone().unwrap_or_default(),
        secret,
        hmac: s.hmac.clone().map(HmacSpec::from),
        verify_token,
    }
}

/// UpdateTenant of the fields named; `verify_token` `Some(None)` removes it.
fn update_tenant(
    id: &str,
    s: &TenantSettings,
    fields: &[&str],
    verify_token: Option<&Option<SecretRef>>,
    secrets: &Secrets,
) -> UpdateTenantRequest {
    let mut request = UpdateTenantRequest {
        tenant_id: id.to_owned(),
        verify_token: verify_token.map(|token| secrets.get(token.as_ref())),
        ..Default::default()
    };
    for field in fields {
        match *field {
            "scheme" => request.scheme = Some(s.scheme.clone()),
            "tolerance_secs" => request.tolerance_secs = Some(s.tolerance_secs),
            "destination_url" => {
                request.destination_url = Some(s.destination_url.clone().unwrap_or_default())
            }
            "enabled" => request.enabled = Some(s.enabled),
            "max_body_bytes" => request.max_body_bytes = Some(s.max_body_bytes),
            "required_fields" => {
                request.required_fields = Some(RequiredFields {
                    fields: s.required_fields.clone(),
                })
            }
            "max_in_flight" => request.max_in_flight = Some(s.max_in_flight),
            "rate_limit" => {
                request.rate_limit_per_sec = Some(s.rate_limit.as_ref().map_or(0.0, |r| r.per_sec));
                request.rate_limit_burst = Some(s.rate_limit.as_ref().map_or(0, |r| r.burst));
            }
            "public_url" => request.public_url = Some(s.public_url.clone().unwrap_or_default()),
            "hmac" => request.hmac = s.hmac.clone().map(HmacSpec::from),
            _ => {}
        }
    }
    request
}

/// The update of the `default` route's filter and delay, each only if
/// asked (`(filter, delay)`).
fn default_route(
    id: &str,
    s: &TenantSettings,
    (filter, delay): (bool, bool),
) -> UpdateRouteRequest {
    let filter_json = s
        .default_filter
        .as_ref()
        .map(|f| f.to_string())
        .unwrap_or_default();
    UpdateRouteRequest {
        tenant_id: id.to_owned(),
        name: "default".to_owned(),
        filter_json: filter.then_some(filter_json),
        delay_ms: delay.then_some(s.default_delay_ms),
        ..Default::default()
    }
}

fn rate(rate: &Option<super::state::Rate>) -> Option<RouteRate> {
    rate.as_ref().map(|r| RouteRate {
        per_sec: r.per_sec,
        burst: r.burst,
    })
}

fn retry(s: &RouteSettings) -> RouteRetry {
    RouteRetry {
        schedule_secs: s.retry.schedule_secs.clone(),
        window_secs: s.retry.window_secs,
        jitter: s.retry.jitter,
    }
}

fn breaker(s: &RouteSettings) -> RouteBreaker {
    RouteBreaker {
        failure_threshold: s.breaker.failure_threshold,
        cooldown_secs: s.breaker.cooldown_secs,
    }
}

fn create_route(tenant: &str, name: &str, s: &RouteSettings) -> CreateRouteRequest {
    CreateRouteRequest {
        tenant_id: tenant.to_owned(),
        name: name.to_owned(),
        destination_url: s.destination_url.clone().unwrap_or_default(),
        max_in_flight: s.max_in_flight,
        delivery_rate: rate(&s.delivery_rate),
        retry: Some(retry(s)),
        breaker: Some(breaker(s)),
        filter_json: s.filter.as_ref().map(|f| f.to_string()).unwrap_or_default(),
        transform: s.transform.clone().unwrap_or_default(),
        transform_cpu_ms: s.transform_cpu_ms,
        transform_memory_mib: s.transform_memory_mib,
        adaptive_concurrency: s.adaptive_concurrency,
        min_in_flight: s.min_in_flight,
        latency_target_ms: s.latency_target_ms,
        delay_ms: s.delay_ms,
    }
}

/// UpdateRoute of the fields named.
fn update_route(
    tenant: &str,
    name: &str,
    s: &RouteSettings,
    fields: &[&str],
) -> UpdateRouteRequest {
    let mut request = UpdateRouteRequest {
        tenant_id: tenant.to_owned(),
        name: name.to_owned(),
        ..Default::default()
    };
    for field in fields {
        match *field {
            "destination_url" => {
                request.destination_url = Some(s.destination_url.clone().unwrap_or_default())
            }
            "max_in_flight" => request.max_in_flight = Some(s.max_in_flight),
            "delivery_rate" => {
                request.delivery_rate = Some(rate(&s.delivery_rate).unwrap_or(RouteRate {
                    per_sec: 0.0,
                    burst: 0,
                }))
            }
            "retry" => request.retry = Some(retry(s)),
            "breaker" => request.breaker = Some(breaker(s)),
            "filter" => {
                request.filter_json =
                    Some(s.filter.as_ref().map(|f| f.to_string()).unwrap_or_default())
            }
            "transform" => request.transform = Some(s.transform.clone().unwrap_or_default()),
            "transform_cpu_ms" => request.transform_cpu_ms = Some(s.transform_cpu_ms),
            "transform_memory_mib" => request.transform_memory_mib = Some(s.transform_memory_mib),
            "adaptive_concurrency" => request.adaptive_concurrency = Some(s.adaptive_concurrency),
            "min_in_flight" => request.min_in_flight = Some(s.min_in_flight),
            "latency_target_ms" => request.latency_target_ms = Some(s.latency_target_ms),
            "delay_ms" => request.delay_ms = Some(s.delay_ms),
            _ => {}
        }
    }
    request
}
