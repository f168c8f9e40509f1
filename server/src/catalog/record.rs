//! What the catalog keeps of a tenant created over the control plane: the
//! settings the API can set, in a record of their own.

use hookd_proto::domain::{defaults, Scheme};
use hookd_sdk::signature::HmacFields;
use serde::{Deserialize, Serialize};

use crate::{
    config::{
        BreakerConfig, DestinationConfig, RateLimitConfig, RetryConfig, RouteConfig, TenantConfig,
    },
    contracts::{UnknownEventTypes, DEFAULT_TYPE_FIELD, DEFAULT_VERSION_FIELD},
    error::{Error, Result},
    ids::TenantId,
    store::records::{decode, encode},
};

/// The settings of a tenant created over the API.
///
/// What the catalog keeps of a tenant created over the control plane: the
/// settings the API can set, in a record of their own (not the config
/// file's schema), with the tenant defaults applied once, when it is made.
/// Records written by older versions held the config file's `TenantConfig`
/// under `config`; they still load, and the catalog rewrites them in this
/// form when it opens. Records written before routes could be made over the
/// API have no `routes`; they load with none.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredTenant {
    /// The tenant.
    pub id: TenantId,
    /// Its senders' signature scheme.
    pub scheme: Scheme,
    /// The verifier of `scheme = "hmac"`; records made before it have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac: Option<HmacFields>,
    /// False: deliveries are refused with 403.
    pub enabled: bool,
    /// Signed-timestamp tolerance, both directions.
    pub tolerance_secs: u64,
    /// Largest body accepted.
    pub max_body_bytes: usize,
    /// Top-level JSON fields every delivery must carry.
    pub required_fields: Vec<String>,
    /// Where the event id is read (`event_id_field`'s grammar), instead of
    /// the scheme's rule.
    pub event_id_field: Option<String>,
    /// The public URL the provider calls, for schemes that sign the URL;
    /// records written before it existed have none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Ingest rate limit.
    pub rate_limit: Option<RateLimitConfig>,
    /// Where deliveries are forwarded; none: pull mode.
    pub destination_url: Option<String>,
    /// Most forwards in flight at once.
    pub max_in_flight: usize,
    /// The default route's filter, as given; none: every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<serde_json::Value>,
    /// The default route's delay before each first attempt, in ms.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
    /// Its routes besides `default`, in the order they were made.
    #[serde(default)]
    pub routes: Vec<StoredRoute>,
}

/// A route of a tenant created over the API, as RouteService set it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StoredRoute {
    /// Its name, unique within the tenant, never `default`.
    pub name: String,
    /// Where it forwards; none: pulled.
    pub destination_url: Option<String>,
    /// Most forwards in flight at once.
    pub max_in_flight: usize,
    /// Its forwarding rate limit.
    pub delivery_rate: Option<RateLimitConfig>,
    /// Its retries.
    pub retry: RetryConfig,
    /// Its breaker.
    pub breaker: BreakerConfig,
    /// Its filter, as given.
    pub filter: Option<serde_json::Value>,
    /// Its transform's source.
    pub transform: Option<String>,
    /// Its transform's CPU budget per run, in ms.
    #[serde(default = "default_transform_cpu_ms")]
    pub transform_cpu_ms: u64,
    /// Its transform's memory cap per run, in MiB.
    #[serde(default = "default_transform_memory_mib")]
    pub transform_memory_mib: usize,
    /// Its limit adapts; records written before it existed have a fixed one.
    #[serde(default)]
    pub adaptive_concurrency: bool,
    /// The floor of an adaptive limit.
    #[serde(default = "default_min_in_flight")]
    pub min_in_flight: usize,
    /// Slower answers (ms) cut an adaptive limit; none: no target.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_ms: Option<u64>,
    /// Each delivery's wait before its first attempt, in ms.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

fn default_min_in_flight() -> usize {
    RouteConfig::named("").min_in_flight
}

fn default_transform_cpu_ms() -> u64 {
    RouteConfig::named("").transform_cpu_ms
}

fn default_transform_memory_mib() -> usize {
    RouteConfig::named("").transform_memory_mib
}

impl StoredRoute {
    /// The route in the config file's form (its destination's secret is
    /// the tenant's destination secret, filled in with the others').
    fn to_config(&self) -> RouteConfig {
        RouteConfig {
            destination: self
                .destination_url
                .clone()
                .map(DestinationConfig::with_defaults),
            retry: self.retry.clone(),
            max_in_flight: self.max_in_flight,
            delivery_rate: self.delivery_rate,
            breaker: self.breaker,
            filter: self.filter.clone(),
            transform: self.transform.clone(),
            transform_cpu_ms: self.transform_cpu_ms,
            transform_memory_mib: self.transform_memory_mib,
            adaptive_concurrency: self.adaptive_concurrency,
            min_in_flight: self.min_in_flight,
            latency_target_ms: self.latency_target_ms,
            delay_ms: self.delay_ms,
            ..RouteConfig::named(&self.name)
        }
    }
}

impl StoredTenant {
    /// A new tenant of `scheme` with every other setting at its default.
    pub fn new(id: TenantId, scheme: Scheme) -> StoredTenant {
        StoredTenant {
            id,
            scheme,
            hmac: None,
            enabled: true,
            tolerance_secs: defaults::TOLERANCE_SECS,
            max_body_bytes: defaults::MAX_BODY_BYTES as usize,
            required_fields: Vec::new(),
            event_id_field: None,
            public_url: None,
            rate_limit: None,
            destination_url: None,
            max_in_flight: defaults::MAX_IN_FLIGHT as usize,
            routes: Vec::new(),
            filter: None,
            delay_ms: 0,
        }
    }

    /// The settings in the config file's form (without secrets), for the
    /// one resolution path every tenant goes through.
    pub fn to_config(&self) -> TenantConfig {
        TenantConfig {
            id: self.id.to_string(),
            scheme: self.scheme.as_str().to_owned(),
            hmac: self.hmac.clone(),
            enabled: self.enabled,
            tolerance_secs: self.tolerance_secs,
            max_body_bytes: self.max_body_bytes,
            required_fields: self.required_fields.clone(),
            event_id_field: self.event_id_field.clone(),
            public_url: self.public_url.clone(),
            verify_token: None,
            verify_token_env: None,
            verify_token_file: None,
            signed_body: None,
            replay_cache_capacity: TenantConfig::DEFAULT_REPLAY_CACHE_CAPACITY,
            rate_limit: self.rate_limit,
            secrets: Vec::new(),
            destination: self
                .destination_url
                .clone()
                .map(DestinationConfig::with_defaults),
            retry: Default::default(),
            max_in_flight: self.max_in_flight,
            adaptive_concurrency: false,
            min_in_flight: 1,
            latency_target_ms: None,
            delivery_rate: None,
            breaker: Default::default(),
            unknown_event_types: UnknownEventTypes::default(),
            type_field: DEFAULT_TYPE_FIELD.to_owned(),
            version_field: DEFAULT_VERSION_FIELD.to_owned(),
            contracts: Vec::new(),
            routes: self.routes.iter().map(StoredRoute::to_config).collect(),
            filter: self.filter.clone(),
            alerts: None,
            delay_ms: self.delay_ms,
        }
    }

    /// What an older record's config-file settings amount to.
    fn from_config(config: &TenantConfig) -> Result<StoredTenant> {
        let invalid = |what: String| Error::Corrupt(format!("stored tenant {}: {what}", config.id));
        Ok(StoredTenant {
            id: TenantId::try_from(config.id.as_str()).map_err(|e| invalid(e.to_string()))?,
            scheme: config.scheme.parse().map_err(|e| invalid(format!("{e}")))?,
            hmac: config.hmac.clone(),
            enabled: config.enabled,
            tolerance_secs: config.tolerance_secs,
            max_body_bytes: config.max_body_bytes,
            required_fields: config.required_fields.clone(),
            event_id_field: config.event_id_field.clone(),
            public_url: config.public_url.clone(),
            rate_limit: config.rate_limit,
            destination_url: config.destination.as_ref().map(|d| d.url.clone()),
            max_in_flight: config.max_in_flight,
            routes: Vec::new(),
            filter: config.filter.clone(),
            delay_ms: config.delay_ms,
        })
    }
}

/// A tenant as the control plane stores it; secrets live apart, sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenantRecord {
    /// Its settings.
    pub tenant: StoredTenant,
    /// Creation time (Unix ms).
    pub created_at_ms: i64,
    /// Fresh at each creation; tokens are bound to it.
    pub incarnation: String,
}

/// The form older versions wrote.
#[derive(Deserialize)]
struct LegacyRecord {
    config: TenantConfig,
    created_at_ms: i64,
    #[serde(default)]
    incarnation: String,
}

impl TenantRecord {
    /// A new tenant's record, with a fresh incarnation.
    pub fn new(tenant: StoredTenant, created_at_ms: i64) -> TenantRecord {
        TenantRecord {
            tenant,
            created_at_ms,
            incarnation: ulid::Ulid::new().to_string(),
        }
    }

    /// Encodes the current form.
    pub fn encode(&self) -> Vec<u8> {
        encode(self)
    }

    /// Decodes either form; the flag says whether it was the older one (to
    /// be rewritten). An older record without an incarnation gets a fresh one.
    pub fn decode(bytes: &[u8]) -> Result<(TenantRecord, bool)> {
        if let Ok(record) = decode::<TenantRecord>(bytes) {
            return Ok((record, false));
        }
        let legacy: LegacyRecord = decode(bytes)?;
        let incarnation = match legacy.incarnation.is_empty() {
            true => ulid::Ulid::new().to_string(),
            false => legacy.incarnation,
        };
        Ok((
            TenantRecord {
                tenant: StoredTenant::from_config(&legacy.config)?,
                created_at_ms: legacy.created_at_ms,
                incarnation,
            },
            true,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A record an older hookd wrote (the config file's schema, no
    /// incarnation) loads with the same settings and a fresh incarnation.
    #[test]
    fn records_of_the_config_file_schema_still_load() {
        let old = br#"{"config":{"id":"acme","scheme":"GitHub","enabled":false,"tolerance_secs":60,"max_body_bytes":1024,"required_fields":["type"],"event_id_field":"id","replay_cache_capacity":100000,"rate_limit":{"per_sec":5.0,"burst":10},"secrets":[],"destination":{"url":"https://example.com/in","timeout_secs":10.0,"connect_timeout_secs":5.0},"max_in_flight":8},"created_at_ms":7}"#;
        let (record, legacy) = TenantRecord::decode(old).unwrap();
        assert!(legacy);
        assert!(!record.incarnation.is_empty());
        let t = &record.tenant;
        assert_eq!(
            (t.id.as_str(), t.scheme, t.enabled, t.tolerance_secs),
            ("acme", Scheme::Github, false, 60)
        );
        assert_eq!(t.destination_url.as_deref(), Some("https://example.com/in"));
        assert_eq!((t.max_body_bytes, t.max_in_flight), (1024, 8));
        assert_eq!(t.required_fields, ["type"]);
        assert_eq!(t.rate_limit.map(|r| r.burst), Some(10));

        let again = record.encode();
        let (reread, legacy) = TenantRecord::decode(&again).unwrap();
        assert!(!legacy);
        assert_eq!(reread.tenant, record.tenant);
    }

    /// A record written before routes could be made over the API loads
    /// with none, as it is (not as a legacy record to rewrite).
    #[test]
    fn records_without_routes_still_load() {
        let old = br#"{"tenant":{"id":"acme","scheme":"Standard","enabled":true,"tolerance_secs":300,"max_body_bytes":1048576,"required_fields":[],"event_id_field":null,"rate_limit":null,"destination_url":"https://example.com/in","max_in_flight":8},"created_at_ms":7,"incarnation":"01J"}"#;
        let (record, legacy) = TenantRecord::decode(old).unwrap();
        assert!(!legacy, "the current form, without routes");
        assert!(record.tenant.routes.is_empty());
        assert!(record.tenant.to_config().routes.is_empty());
        assert_eq!(record.tenant.public_url, None, "nor a public URL");
    }

    /// A route stored before adaptive concurrency loads with a fixed limit.
    #[test]
    fn routes_stored_before_adaptive_concurrency_load_with_a_fixed_limit() {
        let old = br#"{"name":"audit","destination_url":null,"max_in_flight":3,"delivery_rate":null,"retry":{},"breaker":{},"filter":null,"transform":null}"#;
        let route: StoredRoute = serde_json::from_slice(old).unwrap();
        assert_eq!(
            (
                route.adaptive_concurrency,
                route.min_in_flight,
                route.latency_target_ms
            ),
            (false, 1, None)
        );
    }

    /// A public URL is kept, reaches the config form, and a record
    /// without one is written without the key.
    #[test]
    fn a_public_url_round_trips() {
        let mut tenant = StoredTenant::new(TenantId::try_from("acme").unwrap(), Scheme::Standard);
        let bare = TenantRecord::new(tenant.clone(), 1).encode();
        assert!(!String::from_utf8_lossy(&bare).contains("public_url"));
        tenant.public_url = Some("https://hooks.example.com/hooks/acme".into());
        let (again, legacy) = TenantRecord::decode(&TenantRecord::new(tenant, 1).encode()).unwrap();
        assert!(!legacy);
        assert_eq!(
            again.tenant.to_config().public_url.as_deref(),
            Some("https://hooks.example.com/hooks/acme")
        );
    }

    /// A stored route reaches the config form every tenant resolves from.
    #[test]
    fn stored_routes_resolve_through_the_config_form() {
        let mut tenant = StoredTenant::new(TenantId::try_from("acme").unwrap(), Scheme::Standard);
        tenant.routes.push(StoredRoute {
            name: "audit".into(),
            destination_url: None,
            max_in_flight: 3,
            delivery_rate: None,
            retry: RetryConfig::default(),
            breaker: BreakerConfig::default(),
            filter: Some(serde_json::json!({ "body": { "type": "a" } })),
            transform: None,
            transform_cpu_ms: 200,
            transform_memory_mib: 32,
            adaptive_concurrency: true,
            min_in_flight: 2,
            latency_target_ms: Some(250),
            delay_ms: 0,
        });
        let (again, _) = TenantRecord::decode(&TenantRecord::new(tenant, 1).encode()).unwrap();
        let config = again.tenant.to_config();
        assert_eq!(config.routes.len(), 1);
        assert_eq!(config.routes[0].name, "audit");
        assert_eq!(config.routes[0].max_in_flight, 3);
        assert!(config.routes[0].filter.is_some());
        assert_eq!(
            (
                config.routes[0].transform_cpu_ms,
                config.routes[0].transform_memory_mib
            ),
            (200, 32)
        );
        let route = &config.routes[0];
        assert_eq!(
            (
                route.adaptive_concurrency,
                route.min_in_flight,
                route.latency_target_ms
            ),
            (true, 2, Some(250))
        );
    }

    /// An hmac tenant's spec is kept with it and reaches the config form;
    /// records without one (every record before it) load with none.
    #[test]
    fn an_hmac_spec_round_trips_through_the_record() {
        let mut tenant = StoredTenant::new(TenantId::try_from("mg").unwrap(), Scheme::Hmac);
        tenant.hmac = Some(HmacFields {
            signature: "/signature/signature".into(),
            signed: Some("{/signature/timestamp}{/signature/token}".into()),
            timestamp: Some("/signature/timestamp".into()),
            ..HmacFields::default()
        });
        let (again, _) =
            TenantRecord::decode(&TenantRecord::new(tenant.clone(), 1).encode()).unwrap();
        assert_eq!(again.tenant, tenant);
        assert_eq!(again.tenant.to_config().hmac, tenant.hmac);
        let plain = TenantRecord::new(
            StoredTenant::new(TenantId::try_from("gh").unwrap(), Scheme::Github),
            1,
        );
        let text = String::from_utf8(plain.encode()).unwrap();
        assert!(!text.contains("hmac"), "{text}");
    }
}
