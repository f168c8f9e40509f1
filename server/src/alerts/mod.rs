//! Operational alerts (docs/alerts.md): their signals, evaluation, records and
//! notification through the tenant's and the operator's sinks.

#[cfg(test)]
mod conformance;
mod debounce;
mod evaluate;
mod event;
mod operator;
mod records;
mod rules;
mod signals;
mod sinks;

use std::{
    collections::HashMap,
    sync::{Arc, Mutex},
    time::Duration,
};

use hookd_control::model::{AlertSettingsView, AlertSinkFormat, AlertSinkView};
use secrecy::{ExposeSecret, SecretString};

pub use self::{
    evaluate::run,
    records::{AlertRecord, AlertRows, StoredSettings, StoredSink, StoredState, SINK_KID},
    rules::{RuleOverride, Rules},
    signals::{Signals, Touched},
    sinks::SINK_NAMES,
};
use self::{
    evaluate::Book,
    operator::OperatorBudget,
    sinks::{Sink, SinkDelivery, SinkHandle, OPERATOR_SINK, TENANT_SINK},
};
use crate::{
    config::{AlertsConfig, SinkConfig, SinkFormat, TenantAlertsConfig},
    egress::AddressPolicy,
    error::Result,
    ids::TenantId,
    keyring::{Binding, MasterKey},
    tenant::{Registry, Services},
};

pub use crate::config::sink_secret;

/// The alerts of every tenant of this process. Cheap to clone.
///
/// Operational alerts (docs/alerts.md): conditions counted where they arise
/// ([`Signals`], cheap on the ingest path), evaluated off the path on the
/// server's clock ([`run`]), each (tenant, type, subject) transition-gated
/// and debounced ([`debounce`]), stored on every engine ([`records`]) and
/// notified, signed, through the tenant's and the operator's sinks, each a
/// durable queue with a dispatcher of its own ([`sinks`]), the operator's
/// held to a budget across tenants ([`operator`]); resolved alerts are
/// kept `alerts.retention_secs`.
#[derive(Clone)]
pub struct Alerts {
    inner: Arc<Inner>,
}

struct Inner {
    registry: Registry,
    services: Arc<Services>,
    rows: AlertRows,
    key: MasterKey,
    defaults: Rules,
    delivery: SinkDelivery,
    every_ms: i64,
    operator: Option<Sink>,
    /// What the operator's sink may still get in its window (taken after
    /// `tenants` when both are held).
    operator_budget: Mutex<OperatorBudget>,
    /// How long a resolved alert is kept, ms.
    retention_ms: i64,
    config_tenants: HashMap<String, TenantAlertsConfig>,
    policy: Arc<AddressPolicy>,
    tenants: Mutex<Book>,
}

/// A tenant's alert settings as they run.
pub(crate) struct Resolved {
    rules: Rules,
    view: Option<AlertSinkView>,
    sinks: Vec<SinkHandle>,
}

impl Alerts {
    /// The alerts of `registry`'s tenants under `config` (validated), the
    /// config file's tenants' `[tenants.alerts]` in `config_tenants`; sinks
    /// set over the API are held to `policy`, their secrets sealed by `key`.
    pub fn new(
        (registry, services): (Registry, Arc<Services>),
        config: &AlertsConfig,
        config_tenants: HashMap<String, TenantAlertsConfig>,
        (key, policy): (MasterKey, Arc<AddressPolicy>),
    ) -> Result<Alerts> {
        let ms = |secs: f64| (secs * 1000.0).round() as i64;
        let rows = AlertRows::new(services.store.catalog_rows()?);
        let operator = config
            .sink
            .as_ref()
            .map(|sink| config_sink(OPERATOR_SINK, sink));
        Ok(Alerts {
            inner: Arc::new(Inner {
                registry,
                services,
                rows,
                key,
                defaults: Rules::defaults(config),
                delivery: SinkDelivery {
                    max_in_flight: config.sink_max_in_flight,
                    schedule_ms: config
                        .sink_retry_schedule_secs
                        .iter()
                        .map(|s| ms(*s))
                        .collect(),
                    window_ms: ms(config.sink_retry_window_secs),
                    timeout: Duration::from_secs_f64(config.sink_timeout_secs),
                },
                every_ms: ms(config.evaluate_every_secs).max(1),
                operator,
                operator_budget: Mutex::new(OperatorBudget::new(
                    config.operator_max_per_window,
                    ms(config.operator_window_secs),
                )),
                retention_ms: i64::try_from(config.retention_secs.saturating_mul(1000))
                    .unwrap_or(i64::MAX),
                config_tenants,
                policy,
                tenants: Mutex::default(),
            }),
        })
    }

    /// Stops every sink's dispatcher (at shutdown, with the routes'):
    /// notifications in flight stay queued and are sent after a restart.
    pub fn stop_sinks(&self) {
        *self.inner.tenants.lock().expect("alerts lock") = Book::default();
    }

    /// The stored alerts.
    pub fn rows(&self) -> &AlertRows {
        &self.inner.rows
    }

    /// The operator's default rules.
    pub fn defaults(&self) -> &Rules {
        &self.inner.defaults
    }

    /// The address policy a sink set over the API is held to.
    pub fn policy(&self) -> &Arc<AddressPolicy> {
        &self.inner.policy
    }

    /// Seals a sink's secret for `tenant`.
    pub fn seal(&self, tenant: &str, secret: &SecretString) -> Vec<u8> {
        self.inner.key.seal(
            secret.expose_secret().as_bytes(),
            Binding {
                tenant,
                kid: SINK_KID,
            },
        )
    }

    /// The tenant's settings as they run (or would, once it runs).
    pub fn settings_view(&self, tenant: &TenantId) -> Result<AlertSettingsView> {
        let resolved = self.resolve(tenant, false)?;
        Ok(AlertSettingsView {
            sink: resolved.view,
            rules: resolved.rules.views(),
        })
    }

    /// Puts the tenant's stored settings in force now (its sinks restart).
    pub fn reload(&self, tenant: &TenantId) -> Result<()> {
        let resolved = self.resolve(tenant, true)?;
        self.inner
            .tenants
            .lock()
            .expect("alerts lock")
            .reload(tenant, resolved);
        Ok(())
    }

    /// The settings `tenant` runs with; its sinks started when `start`.
    fn resolve(&self, tenant: &TenantId, start: bool) -> Result<Resolved> {
        let inner = &self.inner;
        let (own, overrides) = match inner.config_tenants.get(tenant.as_str()) {
            Some(config) => (
                config.sink.as_ref().map(|s| config_sink(TENANT_SINK, s)),
                config.rules.iter().map(RuleOverride::from).collect(),
            ),
            None => {
                let stored = inner.rows.settings(tenant.as_str())?;
                let sink = stored
                    .sink
                    .as_ref()
                    .map(|s| self.stored_sink(tenant, s))
                    .transpose()?;
                (sink, stored.rules)
            }
        };
        let rules = inner.defaults.overridden(&overrides).unwrap_or_else(|e| {
            tracing::error!(tenant = %tenant, error = %e, "stored alert rules are invalid; the defaults apply");
            inner.defaults.clone()
        });
        let view = own.as_ref().map(|s| AlertSinkView {
            url: s.url.clone(),
            format: match s.format {
                SinkFormat::Standard => AlertSinkFormat::Standard,
                SinkFormat::Slack => AlertSinkFormat::Slack,
            },
            has_secret: true,
        });
        let mut sinks = Vec::new();
        if start {
            for sink in own.iter().chain(&inner.operator) {
                sinks.push(SinkHandle::start(
                    &inner.services,
                    tenant,
                    sink,
                    &inner.delivery,
                )?);
            }
        }
        Ok(Resolved { rules, view, sinks })
    }

    fn stored_sink(&self, tenant: &TenantId, sink: &StoredSink) -> Result<Sink> {
        let binding = Binding {
            tenant: tenant.as_str(),
            kid: SINK_KID,
        };
        let raw = self.inner.key.open(&sink.sealed_secret, binding)?;
        let raw = String::from_utf8_lossy(&raw).into_owned();
        let secret = sink_secret(&SecretString::from(raw))
            .map_err(|e| crate::error::Error::Corrupt(format!("alert sink secret: {e}")))?;
        Ok(Sink {
            name: TENANT_SINK,
            url: sink.url.clone(),
            format: sink.format,
            secret,
            policy: Some(self.inner.policy.clone()),
        })
    }
}

/// A sink written in the config file (validated at start).
fn config_sink(name: &'static str, sink: &SinkConfig) -> Sink {
    Sink {
        name,
        url: sink.url.clone(),
        format: sink.format,
        secret: sink_secret(&sink.secret).expect("validated at start"),
        policy: None,
    }
}
