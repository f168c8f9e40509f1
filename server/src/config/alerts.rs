//! The `[alerts]` section as written and a config-file tenant's
//! `[tenants.alerts]`, checked here.

use std::collections::BTreeMap;

use hookd_proto::domain::AlertType;
use hookd_proto::domain::Scheme;
use hookd_sdk::signature::Secret;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::bounds;
use crate::error::InvalidSetting;

/// The `[alerts]` section.
///
/// The `[alerts]` section as written (how often conditions are evaluated,
/// how sinks are delivered to, the operator's sink and each alert type's
/// default rule) and a config-file tenant's `[tenants.alerts]` (its own
/// sink and rule overrides); checked here, against [`super::bounds`].
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsConfig {
    /// Seconds between two evaluations of every tenant's conditions.
    pub evaluate_every_secs: f64,
    /// Most notifications in flight at once to one sink of one tenant.
    pub sink_max_in_flight: usize,
    /// Delays between a notification's attempts; the last one repeats.
    pub sink_retry_schedule_secs: Vec<f64>,
    /// How long a notification is retried before it is dead-lettered.
    pub sink_retry_window_secs: f64,
    /// Timeout of one attempt to a sink.
    pub sink_timeout_secs: f64,
    /// Most notifications the operator's sink gets in one
    /// `operator_window_secs`, of every tenant together; the rest are held
    /// back and named in one digest when the window ends.
    pub operator_max_per_window: u64,
    /// The operator's sink's window.
    pub operator_window_secs: f64,
    /// How long a resolved alert is kept after it resolved, seconds; open
    /// and acknowledged alerts are kept while they hold.
    pub retention_secs: u64,
    /// The operator's sink: every tenant's events go there too.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<SinkConfig>,
    /// The default rule of each alert type, by its name.
    pub rules: BTreeMap<String, RuleConfig>,
}

/// How a sink's events are written.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SinkFormat {
    /// The JSON operational event.
    #[default]
    Standard,
    /// A Slack-compatible `{"text": ...}` body.
    Slack,
}

/// A sink written in the config file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SinkConfig {
    /// Absolute http(s) URL; trusted as written, like a destination in
    /// this file.
    pub url: String,
    /// The Standard Webhooks `whsec_` secret events are signed with.
    #[serde(skip_serializing)]
    pub secret: SecretString,
    /// How events are written.
    #[serde(default)]
    pub format: SinkFormat,
}

/// One alert type's rule as written.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RuleConfig {
    /// `false`: the type never opens.
    pub enabled: bool,
    /// Occurrences in the window (a depth, or seconds, for some types).
    pub threshold: u64,
    /// The counting window and the debounce.
    pub window_secs: f64,
    /// `route.failing` only: `consecutive`, `first_failure` or `last_attempt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// A config-file tenant's `[tenants.alerts]`.
#[derive(Debug, Clone, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TenantAlertsConfig {
    /// The tenant's own sink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<SinkConfig>,
    /// Overrides of the operator's default rules.
    #[serde(default)]
    pub rules: Vec<TenantRuleConfig>,
}

/// One override in `[[tenants.alerts.rules]]`; an unset number keeps the
/// default's.
#[derive(Debug, Clone, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TenantRuleConfig {
    /// The alert type it overrides.
    #[serde(rename = "type")]
    pub alert_type: String,
    /// `false`: the type never opens for the tenant.
    #[serde(default = "enabled")]
    pub enabled: bool,
    /// 0: the default's.
    #[serde(default)]
    pub threshold: u64,
    /// 0: the default's.
    #[serde(default)]
    pub window_secs: f64,
    /// `route.failing` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

fn enabled() -> bool {
    true
}

/// The modes `route.failing` runs in.
pub const FAILING_MODES: [&str; 3] = ["consecutive", "first_failure", "last_attempt"];

impl AlertsConfig {
    /// Checks every key of the section, naming it.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        bounds::ALERT_EVALUATE_SECS
            .check("alerts.evaluate_every_secs", self.evaluate_every_secs)?;
        bounds::ALERT_SINK_IN_FLIGHT
            .check("alerts.sink_max_in_flight", self.sink_max_in_flight as u64)?;
        if self.sink_retry_schedule_secs.is_empty() {
            return Err(InvalidSetting::new(
                "alerts.sink_retry_schedule_secs",
                "needs at least one delay",
            ));
        }
        for (i, delay) in self.sink_retry_schedule_secs.iter().enumerate() {
            bounds::RETRY_DELAY_SECS
                .check(&format!("alerts.sink_retry_schedule_secs[{i}]"), *delay)?;
        }
        bounds::RETRY_WINDOW_SECS
            .check("alerts.sink_retry_window_secs", self.sink_retry_window_secs)?;
        bounds::FORWARD_TIMEOUT_SECS.check("alerts.sink_timeout_secs", self.sink_timeout_secs)?;
        bounds::ALERT_OPERATOR_MAX.check(
            "alerts.operator_max_per_window",
            self.operator_max_per_window,
        )?;
        bounds::ALERT_WINDOW_SECS
            .check("alerts.operator_window_secs", self.operator_window_secs)?;
        bounds::ALERT_RETENTION_SECS.check("alerts.retention_secs", self.retention_secs)?;
        if let Some(sink) = &self.sink {
            sink.validate("alerts.sink")?;
        }
        for kind in AlertType::ALL {
            if !self.rules.contains_key(kind.as_str()) {
                return Err(InvalidSetting::new(
                    format!("alerts.rules.\"{kind}\""),
                    "every alert type needs its default rule",
                ));
            }
        }
        for (name, rule) in &self.rules {
            let key = format!("alerts.rules.\"{name}\"");
            let kind: AlertType =
                name.parse()
                    .map_err(|e: hookd_proto::domain::UnknownAlertType| {
                        InvalidSetting::new(&key, e.to_string())
                    })?;
            check_rule(
                &key,
                kind,
                rule.threshold,
                rule.window_secs,
                rule.mode.as_deref(),
            )?;
        }
        Ok(())
    }
}

impl SinkConfig {
    /// Checks the URL and the secret, naming `key`.
    pub fn validate(&self, key: &str) -> Result<(), InvalidSetting> {
        if !(self.url.starts_with("http://") || self.url.starts_with("https://")) {
            return Err(InvalidSetting::new(
                format!("{key}.url"),
                format!("{:?} must be an http:// or https:// URL", self.url),
            ));
        }
        sink_secret(&self.secret)
            .map(|_| ())
            .map_err(|e| InvalidSetting::new(format!("{key}.secret"), e))
    }
}

impl TenantAlertsConfig {
    /// Checks the tenant's sink and overrides, naming the key under `alerts.`.
    pub fn validate(&self) -> Result<(), InvalidSetting> {
        if let Some(sink) = &self.sink {
            sink.validate("alerts.sink")?;
        }
        for (i, rule) in self.rules.iter().enumerate() {
            let key = format!("alerts.rules[{i}]");
            let kind: AlertType =
                rule.alert_type
                    .parse()
                    .map_err(|e: hookd_proto::domain::UnknownAlertType| {
                        InvalidSetting::new(format!("{key}.type"), e.to_string())
                    })?;
            let threshold = rule.threshold.max(1);
            let window = if rule.window_secs == 0.0 {
                1.0
            } else {
                rule.window_secs
            };
            check_rule(&key, kind, threshold, window, rule.mode.as_deref())?;
        }
        Ok(())
    }
}

/// Checks one rule's numbers and mode, naming `key`.
pub fn check_rule(
    key: &str,
    kind: AlertType,
    threshold: u64,
    window_secs: f64,
    mode: Option<&str>,
) -> Result<(), InvalidSetting> {
    bounds::ALERT_THRESHOLD.check(&format!("{key}.threshold"), threshold)?;
    bounds::ALERT_WINDOW_SECS.check(&format!("{key}.window_secs"), window_secs)?;
    match mode {
        None | Some("") => Ok(()),
        Some(mode) if kind == AlertType::RouteFailing && FAILING_MODES.contains(&mode) => Ok(()),
        Some(mode) if kind == AlertType::RouteFailing => Err(InvalidSetting::new(
            format!("{key}.mode"),
            format!("{mode:?} is no mode; use consecutive, first_failure or last_attempt"),
        )),
        Some(_) => Err(InvalidSetting::new(
            format!("{key}.mode"),
            "only route.failing has a mode",
        )),
    }
}

/// A sink's secret as configured: a Standard Webhooks `whsec_` secret.
pub fn sink_secret(secret: &SecretString) -> std::result::Result<Secret, String> {
    let raw = secret.expose_secret();
    if !raw.starts_with("whsec_") {
        return Err("must be a Standard Webhooks secret, whsec_ and base64".to_owned());
    }
    Secret::from_provider(Scheme::Standard, SINK_KID, raw).map_err(|e| e.to_string())
}

/// The binding a sink's secret is sealed under.
pub const SINK_KID: &str = "alert-sink";
