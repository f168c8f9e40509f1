//! One tenant's configuration as written (file or control plane) and as it
//! runs once validated: scheme, limits, secrets, forwarding and retries.
//! Secret values are [`SecretString`]s: `{:?}` prints them redacted, they are
//! never serialized, and their memory is zeroed when dropped.

use std::{
    path::{Path, PathBuf},
    sync::Arc,
    time::Duration,
};

pub use hookd_proto::domain::SecretState;
use hookd_proto::domain::{defaults, Scheme};
use hookd_sdk::signature::Secret;
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::{
    bounds,
    route::{resolve_routes, Forwarding, RouteConfig, RouteSettings},
};
use crate::{
    contracts::{
        ConfigContracts, ContractConfig, Policy, UnknownEventTypes, DEFAULT_TYPE_FIELD,
        DEFAULT_VERSION_FIELD,
    },
    egress::AddressPolicy,
    error::InvalidSetting,
    ids::TenantId,
    routes::transform::{Transform, TransformLimits},
};

/// One tenant, as declared in the config file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// The tenant id used in `/hooks/{tenant_id}`.
    pub id: String,
    /// Signature scheme name.
    #[serde(default = "default_scheme")]
    pub scheme: String,
    /// A disabled tenant answers 403 and stores nothing.
    #[serde(default = "yes")]
    pub enabled: bool,
    /// Allowed distance of the signed timestamp from now, both directions.
    #[serde(default = "default_tolerance")]
    pub tolerance_secs: u64,
    /// Largest body accepted, in bytes.
    #[serde(default = "default_max_body")]
    pub max_body_bytes: usize,
    /// Body fields that must be present besides the event id.
    #[serde(default)]
    pub required_fields: Vec<String>,
    /// Body field carrying the event id, instead of the scheme's default.
    #[serde(default)]
    pub event_id_field: Option<String>,
    /// Entries in the replay cache; older ones fall back to the idempotency log.
    #[serde(default = "default_replay_capacity")]
    pub replay_cache_capacity: u64,
    /// Optional limit on accepted deliveries.
    #[serde(default)]
    pub rate_limit: Option<RateLimitConfig>,
    /// Signing secrets: at most one current and one previous.
    #[serde(default)]
    pub secrets: Vec<SecretConfig>,
    /// Where accepted events are forwarded.
    #[serde(default)]
    pub destination: Option<DestinationConfig>,
    /// Forwarding retry policy.
    #[serde(default)]
    pub retry: RetryConfig,
    /// Most forwards of this tenant in flight at once, so one slow
    /// destination cannot take every connection.
    #[serde(default = "default_max_in_flight")]
    pub max_in_flight: usize,
    /// Optional limit on forwards per second to the destination.
    #[serde(default)]
    pub delivery_rate: Option<RateLimitConfig>,
    /// Circuit breaker in front of the destination.
    #[serde(default)]
    pub breaker: BreakerConfig,
    /// Event types (and versions) without a contract: `accept` or `reject`.
    #[serde(default, skip_serializing_if = "is_default")]
    pub unknown_event_types: UnknownEventTypes,
    /// Top-level body field naming the event type, for contracts.
    #[serde(default = "default_type_field", skip_serializing_if = "is_type_field")]
    pub type_field: String,
    /// Top-level body field naming the version, for contracts.
    #[serde(
        default = "default_version_field",
        skip_serializing_if = "is_version_field"
    )]
    pub version_field: String,
    /// JSON Schema contracts per event type and optional version.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub contracts: Vec<ContractConfig>,
    /// Routes besides the default one (the tenant's own `destination`):
    /// each forwards (or queues for pulling) every accepted event again.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteConfig>,
}

/// When to stop hammering a failing destination.
#[derive(Debug, Clone, Copy, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct BreakerConfig {
    /// Consecutive failed attempts that open the breaker.
    #[serde(default = "default_failure_threshold")]
    pub failure_threshold: u32,
    /// How long it stays open before one probe is let through.
    #[serde(default = "default_cooldown")]
    pub cooldown_secs: f64,
}

impl Default for BreakerConfig {
    fn default() -> Self {
        BreakerConfig {
            failure_threshold: default_failure_threshold(),
            cooldown_secs: default_cooldown(),
        }
    }
}

/// Token-bucket rate limit of one tenant.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RateLimitConfig {
    /// Sustained deliveries per second.
    pub per_sec: f64,
    /// Burst size.
    pub burst: u32,
}

/// One signing secret, inline or read from the environment or a file.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct SecretConfig {
    /// Key id; a `kid` in a signature header selects it.
    pub kid: String,
    /// The secret itself (prefer `secret_env` or `secret_file`).
    #[serde(default, skip_serializing)]
    pub secret: Option<SecretString>,
    /// Name of an environment variable holding the secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// Path of a file holding the secret (trailing newline ignored).
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// `current` or `previous`.
    #[serde(default)]
    pub state: Option<SecretState>,
    /// Unix seconds after which a previous secret is no longer accepted.
    #[serde(default)]
    pub expires_at: Option<i64>,
}

/// A tenant's destination for forwarded events.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DestinationConfig {
    /// URL hookd POSTs each event to.
    pub url: String,
    /// Standard Webhooks secret hookd signs forwarded deliveries with.
    #[serde(default, skip_serializing)]
    pub secret: Option<SecretString>,
    /// Environment variable holding the destination secret.
    #[serde(default)]
    pub secret_env: Option<String>,
    /// File holding the destination secret.
    #[serde(default)]
    pub secret_file: Option<PathBuf>,
    /// Whole-request timeout, connect included.
    #[serde(default = "default_forward_timeout")]
    pub timeout_secs: f64,
    /// Connect timeout.
    #[serde(default = "default_connect_timeout")]
    pub connect_timeout_secs: f64,
    /// PEM bundle of private CAs this destination's certificate may chain
    /// to, trusted on top of the system's and the public roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// When failed forwards are retried.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetryConfig {
    /// Delays between attempts; the last one repeats until the window ends.
    #[serde(default = "default_schedule")]
    pub schedule_secs: Vec<f64>,
    /// After this long since acceptance a failing delivery is dead-lettered.
    #[serde(default = "default_window")]
    pub window_secs: f64,
    /// Random spread of each delay, as a fraction (0.1 = ±10 %).
    #[serde(default = "default_jitter")]
    pub jitter: f64,
}

impl Default for RetryConfig {
    fn default() -> Self {
        RetryConfig {
            schedule_secs: default_schedule(),
            window_secs: default_window(),
            jitter: default_jitter(),
        }
    }
}

fn default_type_field() -> String {
    DEFAULT_TYPE_FIELD.into()
}
fn default_version_field() -> String {
    DEFAULT_VERSION_FIELD.into()
}
fn is_type_field(field: &str) -> bool {
    field == DEFAULT_TYPE_FIELD
}
fn is_version_field(field: &str) -> bool {
    field == DEFAULT_VERSION_FIELD
}
fn is_default<T: Default + PartialEq>(value: &T) -> bool {
    *value == T::default()
}
fn default_scheme() -> String {
    defaults::SCHEME.as_str().into()
}
fn yes() -> bool {
    true
}
fn default_tolerance() -> u64 {
    defaults::TOLERANCE_SECS
}
fn default_max_body() -> usize {
    defaults::MAX_BODY_BYTES as usize
}
fn default_replay_capacity() -> u64 {
    TenantConfig::DEFAULT_REPLAY_CACHE_CAPACITY
}
fn default_forward_timeout() -> f64 {
    30.0
}
fn default_connect_timeout() -> f64 {
    10.0
}
fn default_schedule() -> Vec<f64> {
    vec![30.0, 120.0, 600.0, 3600.0, 21600.0]
}
/// The retry window of a tenant that sets none, as every tenant created
/// over the control plane does.
pub(super) fn default_window() -> f64 {
    86_400.0
}
fn default_jitter() -> f64 {
    0.1
}
fn default_max_in_flight() -> usize {
    defaults::MAX_IN_FLIGHT as usize
}
fn default_failure_threshold() -> u32 {
    5
}
fn default_cooldown() -> f64 {
    30.0
}

/// A tenant's settings after validation, with secrets loaded.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// The tenant id.
    pub id: TenantId,
    /// Signature scheme.
    pub scheme: Scheme,
    /// Disabled tenants answer 403.
    pub enabled: bool,
    /// Timestamp tolerance in seconds.
    pub tolerance_secs: u64,
    /// Body limit in bytes.
    pub max_body_bytes: usize,
    /// Required body fields besides the event id.
    pub required_fields: Vec<String>,
    /// Body field overriding the scheme's event id source.
    pub event_id_field: Option<String>,
    /// Replay cache entries.
    pub replay_cache_capacity: u64,
    /// Optional rate limit.
    pub rate_limit: Option<RateLimitConfig>,
    /// The current secret.
    pub current: Secret,
    /// The previous secret and when it stops being accepted (None = until removed).
    pub previous: Option<(Secret, Option<i64>)>,
    /// Forwarding, when the tenant has a destination (pull mode otherwise).
    pub forward: Option<ForwardSettings>,
    /// How long an unacknowledged delivery is retried (pull mode: pulled).
    pub retry_window_ms: i64,
    /// The contract policy and the config file's contracts, compiled.
    pub contracts: Arc<ConfigContracts>,
    /// Its routes besides the default one.
    pub routes: Vec<RouteSettings>,
}

impl DestinationConfig {
    /// A destination at `url` with the config file's default timeouts and
    /// no secret of its own (the control plane generates one).
    pub fn with_defaults(url: String) -> DestinationConfig {
        DestinationConfig {
            url,
            secret: None,
            secret_env: None,
            secret_file: None,
            timeout_secs: default_forward_timeout(),
            connect_timeout_secs: default_connect_timeout(),
            ca_file: None,
        }
    }
}

impl TenantConfig {
    /// Replay-cache entries a tenant gets when it names none.
    pub const DEFAULT_REPLAY_CACHE_CAPACITY: u64 = 100_000;

    /// [`resolve`](Self::resolve), with `max_body_bytes` also under the
    /// operator's cap (`limits.tenant_max_body_bytes`): how the config file,
    /// the control plane and the boot of stored tenants all validate.
    pub fn resolve_under(&self, body_cap: usize) -> Result<TenantSettings, InvalidSetting> {
        bounds::check_body_under_cap(body_cap, self.max_body_bytes)?;
        self.resolve()
    }

    /// Every number of this tenant against [`bounds`], naming the key that
    /// is out of range. Checked the same for the config file and the API.
    fn check_bounds(&self) -> Result<(), InvalidSetting> {
        bounds::TOLERANCE_SECS.check("tolerance_secs", self.tolerance_secs)?;
        bounds::check_usize(
            bounds::MAX_BODY_BYTES,
            "max_body_bytes",
            self.max_body_bytes,
        )?;
        bounds::REPLAY_CACHE_CAPACITY.check("replay_cache_capacity", self.replay_cache_capacity)?;
        if let Some(rate) = &self.rate_limit {
            bounds::RATE_PER_SEC.check("rate_limit.per_sec", rate.per_sec)?;
            bounds::RATE_BURST.check("rate_limit.burst", u64::from(rate.burst))?;
        }
        self.forwarding().check_bounds()
    }

    /// The default route's forwarding: the tenant's own fields.
    fn forwarding(&self) -> Forwarding<'_> {
        Forwarding {
            key: String::new(),
            destination: self.destination.as_ref(),
            retry: &self.retry,
            max_in_flight: self.max_in_flight,
            delivery_rate: self.delivery_rate,
            breaker: &self.breaker,
        }
    }

    /// Validates this tenant and loads its secrets.
    pub fn resolve(&self) -> Result<TenantSettings, InvalidSetting> {
        let Ok(id) = TenantId::try_from(self.id.as_str()) else {
            return Err(InvalidSetting::new(
                "id",
                "must be 1-64 characters of a-z, 0-9, '-' or '_'",
            ));
        };
        let scheme: Scheme = self
            .scheme
            .parse()
            .map_err(|e| InvalidSetting::new("scheme", e))?;
        self.check_bounds()?;
        let mut current = None;
        let mut previous = None;
        for (i, s) in self.secrets.iter().enumerate() {
            let key = || format!("secrets[{i}] ({})", s.kid);
            let raw = load_secret(
                s.secret.as_ref(),
                s.secret_env.as_deref(),
                s.secret_file.as_deref(),
            )
            .map_err(|e| InvalidSetting::new(key(), e))?;
            let secret = Secret::from_provider(scheme, s.kid.clone(), raw.expose_secret())
                .map_err(|e| InvalidSetting::new(key(), e))?;
            let state = s.state.unwrap_or(if i == 0 {
                SecretState::Current
            } else {
                SecretState::Previous
            });
            let slot = match state {
                SecretState::Current => &mut current,
                SecretState::Previous => &mut previous,
            };
            if slot.is_some() {
                return Err(InvalidSetting::new(
                    format!("secrets[{i}]"),
                    "at most one current and one previous secret",
                ));
            }
            *slot = Some((secret, s.expires_at));
        }
        let (current, _) = current
            .ok_or_else(|| InvalidSetting::new("secrets", "a current secret is required"))?;
        let policy = Policy {
            type_field: self.type_field.clone(),
            version_field: self.version_field.clone(),
            unknown: self.unknown_event_types,
        };
        let contracts = Arc::new(ConfigContracts::compile(policy, &self.contracts)?);
        let forward = self.forwarding().settings()?;
        let routes = resolve_routes(&id, &self.routes)?;
        Ok(TenantSettings {
            id,
            scheme,
            enabled: self.enabled,
            tolerance_secs: self.tolerance_secs,
            max_body_bytes: self.max_body_bytes,
            required_fields: self.required_fields.clone(),
            event_id_field: self.event_id_field.clone(),
            replay_cache_capacity: self.replay_cache_capacity,
            rate_limit: self.rate_limit,
            current,
            previous,
            forward,
            retry_window_ms: (self.retry.window_secs * 1000.0).round() as i64,
            contracts,
            routes,
        })
    }
}

impl Forwarding<'_> {
    /// Every number of these forwarding fields against [`bounds`].
    pub(super) fn check_bounds(&self) -> Result<(), InvalidSetting> {
        let key = |name: &str| format!("{}{name}", self.key);
        bounds::check_usize(
            bounds::MAX_IN_FLIGHT,
            &key("max_in_flight"),
            self.max_in_flight,
        )?;
        if let Some(rate) = &self.delivery_rate {
            bounds::RATE_PER_SEC.check(&key("delivery_rate.per_sec"), rate.per_sec)?;
            bounds::RATE_BURST.check(&key("delivery_rate.burst"), u64::from(rate.burst))?;
        }
        let retry = self.retry;
        bounds::check_usize(
            bounds::RETRY_STEPS,
            &key("retry.schedule_secs (number of delays)"),
            retry.schedule_secs.len(),
        )?;
        for (i, delay) in retry.schedule_secs.iter().enumerate() {
            bounds::RETRY_DELAY_SECS.check(&key(&format!("retry.schedule_secs[{i}]")), *delay)?;
        }
        bounds::RETRY_WINDOW_SECS.check(&key("retry.window_secs"), retry.window_secs)?;
        bounds::RETRY_JITTER.check(&key("retry.jitter"), retry.jitter)?;
        bounds::BREAKER_THRESHOLD.check(
            &key("breaker.failure_threshold"),
            u64::from(self.breaker.failure_threshold),
        )?;
        bounds::BREAKER_COOLDOWN_SECS
            .check(&key("breaker.cooldown_secs"), self.breaker.cooldown_secs)?;
        if let Some(dest) = self.destination {
            bounds::FORWARD_TIMEOUT_SECS
                .check(&key("destination.timeout_secs"), dest.timeout_secs)?;
            bounds::CONNECT_TIMEOUT_SECS.check(
                &key("destination.connect_timeout_secs"),
                dest.connect_timeout_secs,
            )?;
        }
        Ok(())
    }

    /// The forward settings of these fields (`None`: pull mode).
    pub(super) fn settings(&self) -> Result<Option<ForwardSettings>, InvalidSetting> {
        self.destination
            .map(|d| self.forward_settings(d))
            .transpose()
    }

    fn forward_settings(
        &self,
        dest: &DestinationConfig,
    ) -> Result<ForwardSettings, InvalidSetting> {
        let key = |name: &str| format!("{}{name}", self.key);
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
            schedule_ms: self.retry.schedule_secs.iter().map(|s| ms(*s)).collect(),
            window_ms: ms(self.retry.window_secs),
            jitter: self.retry.jitter,
            max_in_flight: self.max_in_flight,
            delivery_rate: self.delivery_rate,
            breaker_threshold: self.breaker.failure_threshold,
            breaker_cooldown_ms: ms(self.breaker.cooldown_secs),
            address_policy: None,
            ca_certs,
            transform: None,
        })
    }
}

impl TenantSettings {
    /// Puts the destination under `policy`: for tenants whose destination
    /// was set over the control plane (the config file's are trusted).
    pub fn with_address_policy(mut self, policy: &Arc<AddressPolicy>) -> Self {
        let routes = self.routes.iter_mut().filter_map(|r| r.forward.as_mut());
        for forward in self.forward.iter_mut().chain(routes) {
            forward.address_policy = Some(policy.clone());
        }
        self
    }
}

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
    /// The addresses the destination may reach; `None` for a destination
    /// written in the operator's config file, which is trusted as written.
    pub address_policy: Option<Arc<AddressPolicy>>,
    /// The destination's own private CAs (`destination.ca_file`).
    pub ca_certs: Vec<reqwest::Certificate>,
    /// The route's transform, run on each request before it is signed.
    pub transform: Option<Arc<RouteTransform>>,
}

/// A route's transform with what its handler is told of the route.
#[derive(Debug)]
pub struct RouteTransform {
    /// The compiled code and its version.
    pub transform: Transform,
    /// Its memory and CPU budget.
    pub limits: TransformLimits,
    /// The tenant the route belongs to.
    pub tenant: TenantId,
    /// The route's name.
    pub route: String,
}

/// Why a secret could not be had; the caller names the key it was under.
#[derive(Debug, thiserror::Error)]
pub enum SecretSourceError {
    /// `secret_env` names a variable that is not set.
    #[error("environment variable {0} is not set")]
    EnvNotSet(String),
    /// `secret_file` cannot be read.
    #[error("cannot read secret file {path}: {source}", path = .path.display())]
    Unreadable {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// None of the three is given.
    #[error("one of secret, secret_env or secret_file is required")]
    Missing,
    /// More than one is given.
    #[error("give only one of secret, secret_env or secret_file")]
    Ambiguous,
}

/// Reads a secret given inline, by env var name or by file path (exactly one).
pub fn load_secret(
    inline: Option<&SecretString>,
    env: Option<&str>,
    file: Option<&Path>,
) -> Result<SecretString, SecretSourceError> {
    match (inline, env, file) {
        (Some(s), None, None) => Ok(s.clone()),
        (None, Some(name), None) => std::env::var(name)
            .map(SecretString::from)
            .map_err(|_| SecretSourceError::EnvNotSet(name.to_owned())),
        (None, None, Some(path)) => std::fs::read_to_string(path)
            .map(|s| {
                let s = Zeroizing::new(s);
                SecretString::from(s.trim_end_matches(['\r', '\n']))
            })
            .map_err(|source| SecretSourceError::Unreadable {
                path: path.to_owned(),
                source,
            }),
        (None, None, None) => Err(SecretSourceError::Missing),
        _ => Err(SecretSourceError::Ambiguous),
    }
}
