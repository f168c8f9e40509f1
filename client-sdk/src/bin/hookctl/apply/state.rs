//! What apply compares: a tenant's settings, routes and contracts, every
//! default filled in; [`Field`] lists are what diff prints and updates send.

use std::collections::BTreeMap;

use hookd_proto::domain::defaults;
use hookd_sdk::signature::HmacFields;
use serde_json::{json, Value};

use super::{
    alerts::{CurrentAlerts, DesiredAlerts},
    secret::SecretRef,
};

pub use super::field::Field;

/// A token bucket, burst resolved.
#[derive(Debug, Clone, PartialEq)]
pub struct Rate {
    /// Sustained per second.
    pub per_sec: f64,
    /// Bucket size, never 0.
    pub burst: u32,
}

impl Rate {
    /// `burst` as hookd resolves an unset one: `per_sec` rounded up, at least 1.
    pub fn new(per_sec: f64, burst: Option<u32>) -> Rate {
        let burst = burst
            .filter(|b| *b > 0)
            .unwrap_or_else(|| (per_sec.ceil() as u32).max(1));
        Rate { per_sec, burst }
    }

    fn json(rate: &Option<Rate>) -> Value {
        rate.as_ref().map_or(
            Value::Null,
            |r| json!({"per_sec": r.per_sec, "burst": r.burst}),
        )
    }
}

/// A tenant's own settings (TenantService), and its default route's filter.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantSettings {
    /// Signature scheme, by its name.
    pub scheme: String,
    /// Allowed clock distance of a signed timestamp.
    pub tolerance_secs: u64,
    /// Where events are forwarded; `None`: pull mode.
    pub destination_url: Option<String>,
    /// A disabled tenant refuses new deliveries.
    pub enabled: bool,
    /// Largest body accepted.
    pub max_body_bytes: u64,
    /// Body fields required besides the event id.
    pub required_fields: Vec<String>,
    /// Where the event id is read; set at creation only.
    pub event_id_field: Option<String>,
    /// Forwards in flight at once (the default route's).
    pub max_in_flight: u32,
    /// Ingest rate limit; `None`: none.
    pub rate_limit: Option<Rate>,
    /// The URL the provider signs, for schemes that sign it.
    pub public_url: Option<String>,
    /// Scheme `hmac`'s spec, as written.
    pub hmac: Option<HmacFields>,
    /// The `default` route's filter; `None`: every event.
    pub default_filter: Option<Value>,
    /// The `default` route's delay before each delivery's first attempt, ms.
    pub default_delay_ms: u64,
}

impl Default for TenantSettings {
    fn default() -> Self {
        TenantSettings {
            scheme: defaults::SCHEME.as_str().to_owned(),
            tolerance_secs: defaults::TOLERANCE_SECS,
            destination_url: None,
            enabled: true,
            max_body_bytes: defaults::MAX_BODY_BYTES,
            required_fields: Vec::new(),
            event_id_field: None,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            rate_limit: None,
            public_url: None,
            hmac: None,
            default_filter: None,
            default_delay_ms: 0,
        }
    }
}

impl TenantSettings {
    /// Every field, in the order diff prints them.
    pub fn fields(&self) -> Vec<Field> {
        vec![
            ("scheme", json!(self.scheme)),
            ("tolerance_secs", json!(self.tolerance_secs)),
            ("destination_url", json!(self.destination_url)),
            ("enabled", json!(self.enabled)),
            ("max_body_bytes", json!(self.max_body_bytes)),
            ("required_fields", json!(self.required_fields)),
            ("event_id_field", json!(self.event_id_field)),
            ("max_in_flight", json!(self.max_in_flight)),
            ("rate_limit", Rate::json(&self.rate_limit)),
            ("public_url", json!(self.public_url)),
            (
                "hmac",
                self.hmac
                    .clone()
                    .map_or(Value::Null, |f| hmac_json(&normalize(f))),
            ),
            ("default_route_filter", json!(self.default_filter)),
            (
                "default_route_delay_ms",
                json!((self.default_delay_ms > 0).then_some(self.default_delay_ms)),
            ),
        ]
    }
}

/// The hmac spec with hookd's defaults written out, so an unset key and its
/// default compare equal (for comparing only: hookd refuses some defaults
/// written out, e.g. a `timestamp_unit` without a `timestamp`).
fn normalize(mut fields: HmacFields) -> HmacFields {
    let fill = |value: &mut Option<String>, default: &str| {
        if value.as_deref().is_none_or(str::is_empty) {
            *value = Some(default.to_owned());
        }
    };
    fill(&mut fields.mode, "hmac");
    fill(&mut fields.algorithm, "sha256");
    fill(&mut fields.encoding, "hex");
    fill(&mut fields.signed, "{body}");
    fill(&mut fields.timestamp_unit, "seconds");
    for value in [&mut fields.prefix, &mut fields.timestamp] {
        if value.as_deref() == Some("") {
            *value = None;
        }
    }
    fields
}

fn hmac_json(fields: &HmacFields) -> Value {
    serde_json::to_value(fields).unwrap_or(Value::Null)
}

/// A route's retries, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Retry {
    /// Delays between attempts.
    pub schedule_secs: Vec<f64>,
    /// How long a failing delivery is retried.
    pub window_secs: f64,
    /// Spread of each delay.
    pub jitter: f64,
}

/// A route's breaker, defaults filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct Breaker {
    /// Failed attempts that open it.
    pub failure_threshold: u32,
    /// Seconds it stays open.
    pub cooldown_secs: f64,
}

/// A route besides `default` (RouteService).
#[derive(Debug, Clone, PartialEq)]
pub struct RouteSettings {
    /// Where it forwards; `None`: pulled.
    pub destination_url: Option<String>,
    /// Forwards in flight at once.
    pub max_in_flight: u32,
    /// Forwarding rate limit; `None`: none.
    pub delivery_rate: Option<Rate>,
    /// Its retries.
    pub retry: Retry,
    /// Its circuit breaker.
    pub breaker: Breaker,
    /// Its filter; `None`: every event.
    pub filter: Option<Value>,
    /// Its JavaScript transform; `None`: none.
    pub transform: Option<String>,
    /// The transform's CPU budget per run.
    pub transform_cpu_ms: u32,
    /// The transform's memory cap per run.
    pub transform_memory_mib: u32,
    /// Its concurrency limit adapts between `min_in_flight` and
    /// `max_in_flight`.
    pub adaptive_concurrency: bool,
    /// The adaptive limit's floor.
    pub min_in_flight: u32,
    /// Answers slower than this cut the adaptive limit; 0: no target.
    pub latency_target_ms: u32,
    /// Each delivery's wait before its first attempt, in ms; 0: none.
    pub delay_ms: u64,
}

impl Default for RouteSettings {
    fn default() -> Self {
        RouteSettings {
            destination_url: None,
            max_in_flight: defaults::MAX_IN_FLIGHT,
            delivery_rate: None,
            retry: Retry {
                schedule_secs: defaults::RETRY_SCHEDULE_SECS.to_vec(),
                window_secs: defaults::RETRY_WINDOW_SECS,
                jitter: defaults::RETRY_JITTER,
            },
            breaker: Breaker {
                failure_threshold: defaults::BREAKER_FAILURE_THRESHOLD,
                cooldown_secs: defaults::BREAKER_COOLDOWN_SECS,
            },
            filter: None,
            transform: None,
            transform_cpu_ms: defaults::TRANSFORM_CPU_MS,
            transform_memory_mib: defaults::TRANSFORM_MEMORY_MIB,
            adaptive_concurrency: false,
            min_in_flight: 1,
            latency_target_ms: 0,
            delay_ms: 0,
        }
    }
}

impl RouteSettings {
    /// Every field, in the order diff prints them.
    pub fn fields(&self) -> Vec<Field> {
        vec![
            ("destination_url", json!(self.destination_url)),
            ("max_in_flight", json!(self.max_in_flight)),
            ("delivery_rate", Rate::json(&self.delivery_rate)),
            (
                "retry",
                json!({
                    "schedule_secs": self.retry.schedule_secs,
                    "window_secs": self.retry.window_secs,
                    "jitter": self.retry.jitter,
                }),
            ),
            (
                "breaker",
                json!({
                    "failure_threshold": self.breaker.failure_threshold,
                    "cooldown_secs": self.breaker.cooldown_secs,
                }),
            ),
            ("filter", json!(self.filter)),
            ("transform", json!(self.transform)),
            ("transform_cpu_ms", json!(self.transform_cpu_ms)),
            ("transform_memory_mib", json!(self.transform_memory_mib)),
            ("adaptive_concurrency", json!(self.adaptive_concurrency)),
            ("min_in_flight", json!(self.min_in_flight)),
            ("latency_target_ms", json!(self.latency_target_ms)),
            ("delay_ms", json!(self.delay_ms)),
        ]
    }
}

/// A contract's type and version (`None`: every version without its own).
pub type ContractKey = (String, Option<String>);

/// `order.paid` or `order.paid@2`.
pub fn contract_name(key: &ContractKey) -> String {
    match &key.1 {
        Some(version) => format!("{}@{version}", key.0),
        None => key.0.clone(),
    }
}

/// A contract's content, compared as JSON values (not as text).
#[derive(Debug, Clone, PartialEq)]
pub struct ContractBody {
    /// The JSON Schema.
    pub schema: Value,
    /// The example payload.
    pub example: Value,
}

impl ContractBody {
    /// Every field, in the order diff prints them.
    pub fn fields(&self) -> Vec<Field> {
        vec![
            ("schema", self.schema.clone()),
            ("example", self.example.clone()),
        ]
    }
}

/// A tenant with everything apply manages under it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantState {
    /// The tenant's own settings.
    pub settings: TenantSettings,
    /// Its routes besides `default`, by name.
    pub routes: BTreeMap<String, RouteSettings>,
    /// Its API-saved contracts.
    pub contracts: BTreeMap<ContractKey, ContractBody>,
}

/// A tenant as the file wants it.
#[derive(Debug, Clone, Default)]
pub struct DesiredTenant {
    /// The tenant id.
    pub id: String,
    /// What it should be.
    pub state: TenantState,
    /// Its signing secret, sent on create (or `--rotate-secrets`).
    pub secret: Option<SecretRef>,
    /// Its verify token (scheme `meta`).
    pub verify_token: Option<SecretRef>,
    /// Its alert settings; `None`: left as they are.
    pub alerts: Option<DesiredAlerts>,
}

/// A tenant as hookd has it.
#[derive(Debug, Clone, Default)]
pub struct CurrentTenant {
    /// The tenant id.
    pub id: String,
    /// What it is.
    pub state: TenantState,
    /// Declared in hookd's config file: read-only over the API.
    pub from_config: bool,
    /// Whether it holds a verify token (hookd never shows it).
    pub has_verify_token: bool,
    /// Config-file routes and contracts: never changed or deleted.
    pub read_only_routes: Vec<String>,
    pub read_only_contracts: Vec<ContractKey>,
    /// Its alert settings (not read for a config-file tenant).
    pub alerts: Option<CurrentAlerts>,
}

/// JSON given as a mapping, or as JSON text in a string.
pub fn json_value(value: Value) -> Result<Value, serde_json::Error> {
    match value {
        Value::String(text) => serde_json::from_str(&text),
        other => Ok(other),
    }
}

/// JSON text as hookd stores it, read back as a value (text that is not
/// JSON stays a string, so it still compares).
pub fn stored_json(text: &str) -> Option<Value> {
    if text.is_empty() {
        return None;
    }
    Some(serde_json::from_str(text).unwrap_or_else(|_| Value::String(text.to_owned())))
}
