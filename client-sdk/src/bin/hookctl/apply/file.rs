//! The file `apply`, `diff` and `export` speak (docs/apply.md), every key
//! checked.

use std::{io::Read, path::Path};

use anyhow::{bail, Context};
use hookd_sdk::signature::HmacFields;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::secret::SecretRef;

/// The one version of the format so far; a file may say so with `version: 1`.
pub const VERSION: u32 = 1;

/// A whole file.
///
/// The file `apply`, `diff` and `export` speak (docs/apply.md): tenants with
/// their routes, contracts and alert settings, every key checked (`deny_unknown_fields`), so a
/// typo is an error naming where it is.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HookdFile {
    /// The format's version; absent means [`VERSION`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u32>,
    /// The tenants, each once.
    #[serde(default)]
    pub tenants: Vec<TenantEntry>,
}

/// One tenant as written. A key left out means hookd's default for it.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TenantEntry {
    /// `[a-z0-9_-]{1,64}`.
    pub id: String,
    /// Signature scheme (docs/providers.md); default `standard`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scheme: Option<String>,
    /// Default 300.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tolerance_secs: Option<u64>,
    /// Absent: pull mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_url: Option<String>,
    /// Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Default 1048576.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_body_bytes: Option<u64>,
    /// Default none.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_fields: Vec<String>,
    /// Set at creation only; absent: the scheme's default.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub event_id_field: Option<String>,
    /// Default 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Absent: no ingest rate limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateEntry>,
    /// Absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Scheme `hmac` only: the config file's `[tenants.hmac]` keys.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac: Option<HmacFields>,
    /// The first signing secret, by reference; absent: hookd generates one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretRef>,
    /// Scheme `meta` only: the subscription handshake's verify token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_token: Option<SecretRef>,
    /// Routes besides the tenant's own destination; `default` may appear with
    /// only a `filter`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteEntry>,
    /// Event contracts saved over the API.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contracts: Vec<ContractEntry>,
    /// The tenant's alert sink and rules (AlertService); absent: left as
    /// they are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerts: Option<AlertsEntry>,
}

/// A tenant's alert settings as written (docs/alerts.md); `{}`: no sink of
/// its own and no overrides.
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlertsEntry {
    /// Absent: the tenant's events go to the operator's sink only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sink: Option<SinkEntry>,
    /// The tenant's complete list of overrides, at most one per type.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<AlertRuleEntry>,
}

/// The tenant's own alert sink.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SinkEntry {
    /// Absolute http(s) URL.
    pub url: String,
    /// `standard` (default) or `slack`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub format: Option<String>,
    /// Its Standard Webhooks secret, by reference; absent: hookd generates
    /// one for a new sink.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<SecretRef>,
}

/// One alert type's override; a key left out runs with the operator's
/// default.
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct AlertRuleEntry {
    /// An alert type of the catalogue, e.g. `route.failing`.
    #[serde(rename = "type")]
    pub alert_type: String,
    /// Default true.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// Above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub threshold: Option<u64>,
    /// Above 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_secs: Option<f64>,
    /// `route.failing` only: `consecutive`, `first_failure` or `last_attempt`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
}

/// A token bucket: `per_sec` sustained, `burst` at once (default: `per_sec`
/// rounded up, at least 1).
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateEntry {
    /// Sustained rate per second, above 0.
    pub per_sec: f64,
    /// Bucket size.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub burst: Option<u32>,
}

/// One route as written (RouteService; docs/routes.md).
#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// `[a-z0-9_-]{1,64}`, unique within the tenant.
    pub name: String,
    /// Absent: the route's deliveries wait to be pulled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination_url: Option<String>,
    /// Default 8.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_in_flight: Option<u32>,
    /// Absent: no forwarding rate limit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery_rate: Option<RateEntry>,
    /// Absent keys: the default schedule, window and jitter.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<RetryEntry>,
    /// Absent keys: the default threshold and cooldown.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub breaker: Option<BreakerEntry>,
    /// The filter (a mapping, or its JSON as a string); absent: every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<Value>,
    /// JavaScript source; absent: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform: Option<String>,
    /// Default 50.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform_cpu_ms: Option<u32>,
    /// Default 16.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transform_memory_mib: Option<u32>,
    /// Default false: the limit stays at `max_in_flight`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub adaptive_concurrency: Option<bool>,
    /// The adaptive limit's floor; default 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_in_flight: Option<u32>,
    /// Answers slower than this cut the adaptive limit; absent or 0: none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_ms: Option<u32>,
    /// Each delivery's wait before its first attempt, in ms; absent or 0:
    /// none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delay_ms: Option<u64>,
}

/// A route's retries.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryEntry {
    /// Default 30, 120, 600, 3600, 21600.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule_secs: Option<Vec<f64>>,
    /// Default 86400.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub window_secs: Option<f64>,
    /// Default 0.1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub jitter: Option<f64>,
}

/// A route's circuit breaker.
#[derive(Debug, Default, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerEntry {
    /// Default 5.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failure_threshold: Option<u32>,
    /// Default 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cooldown_secs: Option<f64>,
}

/// One contract as written (ContractService; docs/contracts.md).
#[derive(Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ContractEntry {
    /// The event type.
    #[serde(rename = "type")]
    pub event_type: String,
    /// Absent: every version without a contract of its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<String>,
    /// The JSON Schema (a mapping, or its JSON as a string).
    pub schema: Value,
    /// One real payload (a mapping, or its JSON as a string).
    pub example: Value,
}

/// Reads and parses `path` (`-`: stdin).
pub fn load(path: &Path) -> anyhow::Result<HookdFile> {
    let mut text = String::new();
    if path == Path::new("-") {
        std::io::stdin()
            .read_to_string(&mut text)
            .context("reading the file from stdin")?;
    } else {
        text =
            std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    }
    parse(&text).with_context(|| format!("in {}", path.display()))
}

/// Parses a file's text; an unknown key or a wrong type is an error naming
/// its path (`tenants[0].tolerance_sec`).
pub fn parse(text: &str) -> anyhow::Result<HookdFile> {
    if text.trim().is_empty() {
        return Ok(HookdFile::default());
    }
    let file: HookdFile = serde_norway::from_str(text).map_err(|err| anyhow::anyhow!("{err}"))?;
    if let Some(version) = file.version.filter(|v| *v != VERSION) {
        bail!("version: {version} is not a version this hookctl reads (it reads {VERSION})");
    }
    Ok(file)
}

/// The file as YAML text.
pub fn to_yaml(file: &HookdFile) -> anyhow::Result<String> {
    Ok(serde_norway::to_string(file)?)
}
