//! One tenant's configuration as written (file or control plane): scheme,
//! limits, secrets, forwarding and retries, and their bounds.

use std::{path::PathBuf, sync::Arc};

pub use hookd_proto::domain::SecretState;
use hookd_proto::domain::{defaults, Scheme};
use hookd_sdk::signature::{HmacFields, HmacSpec};
use secrecy::SecretString;
use serde::{Deserialize, Serialize};

pub(super) use super::forwarding::default_window;
pub use super::forwarding::{
    BreakerConfig, ConcurrencySettings, DestinationConfig, Forwarding, RateLimitConfig, RetryConfig,
};
pub use super::secrets::{load_secret, SecretSourceError};
use super::{
    bounds,
    forwarding::{default_adaptive_concurrency, default_min_in_flight},
    route::RouteConfig,
};
use crate::{
    contracts::{ContractConfig, UnknownEventTypes, DEFAULT_TYPE_FIELD, DEFAULT_VERSION_FIELD},
    error::InvalidSetting,
};

/// One tenant, as declared in the config file.
///
/// Secret values are [`SecretString`]s: `{:?}` prints them redacted, they are
/// never serialized, and their memory is zeroed when dropped.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct TenantConfig {
    /// The tenant id used in `/hooks/{tenant_id}`.
    pub id: String,
    /// Signature scheme name.
    #[serde(default = "default_scheme")]
    pub scheme: String,
    /// The verifier of `scheme = "hmac"`, built from configuration alone
    /// (docs/providers.md); refused with any other scheme.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hmac: Option<HmacFields>,
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
    /// Where the event id is read, instead of the scheme's default: a
    /// top-level field, a JSON pointer (`/data/id`), `header:Name`,
    /// `form:Name`, or a template of those (`{/eventCode}:{/pspReference}`).
    #[serde(default)]
    pub event_id_field: Option<String>,
    /// The public URL the provider calls (what hookd cannot see behind a
    /// load balancer), for the schemes that sign the URL: absolute http(s),
    /// no query, no fragment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub public_url: Option<String>,
    /// Meta's `hub.verify_token`, which its subscription handshake must
    /// present (prefer `verify_token_env` or `verify_token_file`).
    #[serde(default, skip_serializing)]
    pub verify_token: Option<SecretString>,
    /// Name of an environment variable holding the verify token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_token_env: Option<String>,
    /// Path of a file holding the verify token (trailing newline ignored).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub verify_token_file: Option<PathBuf>,
    /// Which bytes of a compressed body the signature covers, instead of
    /// the default, the decoded body ([`SignedBody::Decoded`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_body: Option<SignedBody>,
    /// Accepted, bounds checked and ignored: each tenant once had a replay
    /// cache of this many keys; every tenant now shares one, of `[limits]
    /// replay_cache_keys` keys. Kept so that config files and stored
    /// tenants that set it still load.
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
    /// Whether the default route's concurrency limit adapts to its destination
    /// (AIMD between `min_in_flight` and `max_in_flight`).
    #[serde(default = "default_adaptive_concurrency")]
    pub adaptive_concurrency: bool,
    /// The lowest an adaptive limit goes (1..=`max_in_flight`).
    #[serde(default = "default_min_in_flight")]
    pub min_in_flight: usize,
    /// Answers slower than this many ms cut an adaptive limit; none:
    /// latency is no signal.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_target_ms: Option<u64>,
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
    /// The tenant's alert sink and rule overrides (docs/alerts.md); only in
    /// the config file, the control plane keeps its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub alerts: Option<super::TenantAlertsConfig>,
    /// The default route's filter (docs/routes.md), the same syntax as a
    /// route's: an event it does not pass is still stored, its default
    /// delivery `filtered` (or `unrouted` when no route passes it); none:
    /// every event.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filter: Option<serde_json::Value>,
    /// How long after acceptance the default route holds each delivery
    /// before its first attempt (or before it may be pulled), in ms
    /// (0..=86400000); other routes have their own.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub delay_ms: u64,
}

fn is_zero(ms: &u64) -> bool {
    *ms == 0
}

/// Which bytes of a body sent with `Content-Encoding: gzip` or `deflate`
/// its signature covers. The default, `Decoded`, is what every preset's
/// provider does (it signs its payload before any compression on the way;
/// none documents signing compressed bytes); `hmac` tenants and others say
/// otherwise with `signed_body`.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SignedBody {
    /// The body decoded: the provider signs, then compresses.
    #[default]
    Decoded,
    /// The bytes as sent: the provider compresses, then signs.
    Wire,
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
fn default_max_in_flight() -> usize {
    defaults::MAX_IN_FLIGHT as usize
}

impl TenantConfig {
    /// The default of the unused `replay_cache_capacity`.
    pub const DEFAULT_REPLAY_CACHE_CAPACITY: u64 = 100_000;

    /// The warning to log at start when this tenant sets
    /// `replay_cache_capacity` to anything but its default: it no longer
    /// does anything.
    pub fn replay_cache_capacity_warning(&self) -> Option<String> {
        (self.replay_cache_capacity != Self::DEFAULT_REPLAY_CACHE_CAPACITY).then(|| {
            format!(
                "tenant {}: replay_cache_capacity = {} is deprecated and ignored: every tenant \
                 shares one replay cache, bounded by [limits] replay_cache_keys; remove the key",
                self.id, self.replay_cache_capacity
            )
        })
    }

    /// Every number of this tenant against [`bounds`], naming the key that
    /// is out of range. Checked the same for the config file and the API.
    pub fn check_bounds(&self) -> Result<(), InvalidSetting> {
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
    pub fn forwarding(&self) -> Forwarding<'_> {
        Forwarding {
            key: String::new(),
            destination: self.destination.as_ref(),
            retry: &self.retry,
            max_in_flight: self.max_in_flight,
            delivery_rate: self.delivery_rate,
            breaker: &self.breaker,
            concurrency: ConcurrencySettings {
                adaptive: self.adaptive_concurrency,
                min_in_flight: self.min_in_flight,
                latency_target_ms: self.latency_target_ms,
            },
        }
    }

    /// The validated `[hmac]` table: required by `scheme = "hmac"`, refused
    /// with any other scheme.
    pub fn hmac_spec(&self, scheme: Scheme) -> Result<Option<Arc<HmacSpec>>, InvalidSetting> {
        match (scheme, &self.hmac) {
            (Scheme::Hmac, Some(fields)) => HmacSpec::new(fields.clone())
                .map(|spec| Some(Arc::new(spec)))
                .map_err(|e| InvalidSetting::new(format!("hmac.{}", e.field), e.reason)),
            (Scheme::Hmac, None) => Err(InvalidSetting::new(
                "hmac",
                "scheme \"hmac\" needs its spec (the [hmac] table; over the API, hmac) saying where the signature is",
            )),
            (_, Some(_)) => Err(InvalidSetting::new(
                "hmac",
                format!(
                    "only scheme \"hmac\" reads an [hmac] table, not {scheme:?}",
                    scheme = scheme.as_str()
                ),
            )),
            (_, None) => Ok(None),
        }
    }
}

/// A `public_url` must be an absolute http(s) URL without query or fragment
/// (the query of each delivery is added as received), at most
/// [`bounds::MAX_PUBLIC_URL_LEN`] bytes; a scheme that signs the URL needs one.
pub fn check_public_url(scheme: Scheme, url: Option<&str>) -> Result<(), InvalidSetting> {
    let invalid = |reason: String| InvalidSetting::new("public_url", reason);
    let Some(url) = url else {
        return match scheme.signs_url() {
            true => Err(invalid(format!(
                "scheme {scheme} signs the URL the provider calls, so the tenant needs its public URL (e.g. https://hooks.example.com/hooks/<tenant>)"
            ))),
            false => Ok(()),
        };
    };
    if url.len() > bounds::MAX_PUBLIC_URL_LEN {
        return Err(invalid(format!(
            "is longer than {} bytes",
            bounds::MAX_PUBLIC_URL_LEN
        )));
    }
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| invalid(format!("{url:?} is not an absolute URL: {e}")))?;
    if !matches!(parsed.scheme(), "http" | "https") || parsed.host_str().is_none() {
        return Err(invalid(format!(
            "{url:?} is not an http(s) URL with a host"
        )));
    }
    if url.contains('?') || url.contains('#') {
        return Err(invalid(format!(
            "{url:?} has a query or a fragment; give the URL without them (each delivery's query is added as received)"
        )));
    }
    Ok(())
}
