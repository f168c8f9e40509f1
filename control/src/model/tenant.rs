//! Tenants, their signing secrets and their API tokens.

use std::fmt;

pub use hookd_proto::domain::{HmacFields, RateLimit, Scheme, SecretState};

/// A tenant as stored, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantView {
    /// `[a-z0-9_-]{1,64}`; also the ingest path `/hooks/{tenant_id}`.
    pub tenant_id: String,
    /// How the sender signs.
    pub scheme: Scheme,
    /// The verifier of scheme `hmac`; `None` for every other scheme.
    pub hmac: Option<HmacFields>,
    /// Allowed clock distance of a signed timestamp, both ways.
    pub tolerance_secs: u64,
    /// Where deliveries are forwarded; `None` is pull mode.
    pub destination_url: Option<String>,
    /// A disabled tenant refuses new deliveries.
    pub enabled: bool,
    /// Largest body accepted.
    pub max_body_bytes: u64,
    /// Body fields required besides the event id.
    pub required_fields: Vec<String>,
    /// Declared in the config file, hence read-only over the API.
    pub from_config: bool,
    /// Most forwards in flight at once; never 0.
    pub max_in_flight: u32,
    /// `None`: no rate limit.
    pub rate_limit: Option<RateLimit>,
    /// Where the event id is read; `None`: the scheme's default.
    pub event_id_field: Option<String>,
    /// The public URL the provider calls, for schemes that sign it.
    pub public_url: Option<String>,
    /// Whether it holds a verify token (scheme `meta`); never the token.
    pub has_verify_token: bool,
    /// Creation (or first load, for config-file tenants), Unix ms.
    pub created_at_ms: i64,
}

/// A tenant to create, validated and with the API's defaults applied
/// ([`hookd_proto::domain::defaults`]: scheme `standard`, 300 s tolerance,
/// 1 MiB bodies, 8 in flight).
#[derive(Debug, Clone, PartialEq)]
pub struct NewTenant {
    /// Well-formed (`[a-z0-9_-]{1,64}`); may still be taken.
    pub tenant_id: String,
    /// How the sender signs.
    pub scheme: Scheme,
    /// The verifier of scheme `hmac`, as given (the backend validates it).
    pub hmac: Option<HmacFields>,
    /// Allowed clock distance of a signed timestamp.
    pub tolerance_secs: u64,
    /// An absolute http(s) URL, or `None` for pull mode.
    pub destination_url: Option<String>,
    /// Largest body accepted; above 0.
    pub max_body_bytes: u64,
    /// Body fields required besides the event id; none empty.
    pub required_fields: Vec<String>,
    /// Where the event id is read; `None`: the scheme's default. The
    /// backend checks its grammar.
    pub event_id_field: Option<String>,
    /// Most forwards in flight at once; above 0.
    pub max_in_flight: u32,
    /// `None`: no rate limit.
    pub rate_limit: Option<RateLimit>,
    /// The public URL the provider calls; the backend checks it.
    pub public_url: Option<String>,
    /// The provider's secret (or public key); `None`: the backend
    /// generates one.
    pub secret: Option<ProvidedSecret>,
    /// Scheme `meta`: the verify token its subscription handshake presents.
    pub verify_token: Option<ProvidedSecret>,
}

/// A secret the operator supplies (the provider issued it, or it is the
/// provider's public key): `{:?}` never shows it, and it is never sent back.
#[derive(Clone, PartialEq, Eq)]
pub struct ProvidedSecret(String);

impl ProvidedSecret {
    /// `None` for an empty value (the API's "generate one").
    pub fn of(value: String) -> Option<ProvidedSecret> {
        (!value.is_empty()).then_some(ProvidedSecret(value))
    }

    /// The value, for the one place that checks and seals it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for ProvidedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ProvidedSecret(<redacted>)")
    }
}

/// Changes to a tenant: `None` keeps a setting, `Some` replaces it. Defaults
/// are already applied (a 0 tolerance arrives as 300), except for the rate
/// limit, whose burst may depend on the stored rate: the backend combines
/// the two with [`RateLimit::from_api`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantPatch {
    /// New signature scheme; the secrets stay.
    pub scheme: Option<Scheme>,
    /// New spec for scheme `hmac`, as given (the backend validates it).
    pub hmac: Option<HmacFields>,
    /// New timestamp tolerance.
    pub tolerance_secs: Option<u64>,
    /// `Some(None)` switches to pull mode; `Some(Some(url))` to forwarding.
    pub destination_url: Option<Option<String>>,
    /// Enables or disables the tenant.
    pub enabled: Option<bool>,
    /// New body limit; above 0.
    pub max_body_bytes: Option<u64>,
    /// Replaces the whole list; `Some(vec![])` clears it.
    pub required_fields: Option<Vec<String>>,
    /// New sustained rate, finite and not negative; 0 removes the limit.
    pub rate_limit_per_sec: Option<f64>,
    /// New burst; 0 derives it from the rate.
    pub rate_limit_burst: Option<u32>,
    /// New forwarding concurrency; above 0.
    pub max_in_flight: Option<u32>,
    /// `Some(None)` removes the public URL; `Some(Some(url))` sets it.
    pub public_url: Option<Option<String>>,
    /// `Some(None)` removes the verify token; `Some(Some(token))` sets it.
    pub verify_token: Option<Option<ProvidedSecret>>,
}

/// A created tenant and its first secrets, which are shown this once only.
#[derive(Clone, PartialEq)]
pub struct CreatedTenant {
    /// The tenant as stored.
    pub tenant: TenantView,
    /// Key id of the first signing secret.
    pub kid: String,
    /// The first signing secret, in the form the scheme expects.
    pub secret: String,
    /// The secret hookd signs forwarded deliveries with.
    pub destination_secret: String,
}

impl fmt::Debug for CreatedTenant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreatedTenant")
            .field("tenant", &self.tenant)
            .field("kid", &self.kid)
            .finish_non_exhaustive()
    }
}

/// The outcome of a rotation; the new secret is shown this once only.
#[derive(Clone, PartialEq, Eq)]
pub struct RotatedSecret {
    /// Key id of the new current secret.
    pub kid: String,
    /// The new current secret.
    pub secret: String,
    /// Key id of the secret that was current and is now previous.
    pub previous_kid: String,
    /// When the previous secret stops being accepted, Unix ms.
    pub previous_expires_at_ms: i64,
}

impl fmt::Debug for RotatedSecret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RotatedSecret")
            .field("kid", &self.kid)
            .field("previous_kid", &self.previous_kid)
            .field("previous_expires_at_ms", &self.previous_expires_at_ms)
            .finish_non_exhaustive()
    }
}

/// What may be shown about a secret: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SecretInfo {
    /// The key id.
    pub kid: String,
    /// Current or previous.
    pub state: SecretState,
    /// Creation (or first load), Unix ms.
    pub created_at_ms: i64,
    /// When a previous secret stops being accepted; `None` for the current
    /// one or a config-file previous secret without an expiry.
    pub expires_at_ms: Option<i64>,
}

/// A new tenant-scoped token; its value is shown this once only.
#[derive(Clone, PartialEq, Eq)]
pub struct CreatedToken {
    /// Public id, for listing and revoking.
    pub token_id: String,
    /// The bearer token itself.
    pub token: String,
}

impl fmt::Debug for CreatedToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CreatedToken")
            .field("token_id", &self.token_id)
            .finish_non_exhaustive()
    }
}

/// What may be shown about a token: never its value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenInfo {
    /// Public id.
    pub token_id: String,
    /// The tenant it is scoped to.
    pub tenant_id: String,
    /// Who or what uses it, as given at creation.
    pub description: String,
    /// Creation, Unix ms.
    pub created_at_ms: i64,
}

/// What a tenant is doing now, for the dashboard's overview.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantActivity {
    /// Deliveries waiting for a forward attempt or a pull.
    pub queue_depth: u64,
    /// Dead letters kept.
    pub dead_letters: u64,
    /// When the oldest waiting delivery was accepted (or created by a
    /// redelivery), Unix ms; `None` with nothing waiting.
    pub oldest_pending_ms: Option<i64>,
    /// Whether the destination's circuit breaker is open (or half-open);
    /// `None` in pull mode, or when the tenant shares the metrics label
    /// `other` with others.
    pub breaker_open: Option<bool>,
    /// Ingest counts of the last hour on hookd's clock (kept in memory: a
    /// restart starts them at zero).
    pub last_hour: IngestCounts,
    /// The same over the last day.
    pub last_day: IngestCounts,
    /// Recorded refusals (content and signature) of the last hour, by error
    /// code, most frequent first.
    pub refused_last_hour: Vec<(String, u64)>,
    /// The same over the last day.
    pub refused_last_day: Vec<(String, u64)>,
    /// Median of hookd's clock minus the signed timestamp over the recent
    /// accepted deliveries, seconds (negative: the sender's clock is ahead);
    /// `None` before any, for schemes without a timestamp, or when the
    /// tenant shares the metrics label `other`.
    pub median_clock_skew_secs: Option<f64>,
    /// The handshake the tenant's scheme expects (docs/providers.md) and what
    /// it came to since hookd started; `None` for schemes without one, or
    /// when the tenant shares the metrics label `other`.
    pub handshake: Option<HandshakeActivity>,
}

/// A tenant's provider handshakes since hookd started.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct HandshakeActivity {
    /// Which handshake: `slack.url_verification`, `meta.hub.challenge`, ...
    pub handshake: String,
    /// Answered as the provider expects.
    pub answered: u64,
    /// Refused (a bad signature or verify token, a malformed handshake).
    pub refused: u64,
    /// When the last one was answered, Unix ms.
    pub last_answered_ms: Option<i64>,
    /// When the last one was refused, Unix ms.
    pub last_refused_ms: Option<i64>,
    /// The error code of the last refusal.
    pub last_refusal: Option<String>,
}

/// A tenant's ingest counts over a span of time.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IngestCounts {
    /// New deliveries.
    pub accepted: u64,
    /// Events accepted before, answered as duplicates.
    pub duplicates: u64,
    /// Refused requests by error code, most frequent first.
    pub rejected: Vec<(String, u64)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let token = CreatedToken {
            token_id: "tok_1".into(),
            token: "hkt_very_secret".into(),
        };
        assert!(!format!("{token:?}").contains("very_secret"));
        let provided = ProvidedSecret::of("pdl_very_secret".into()).unwrap();
        assert!(!format!("{provided:?}").contains("very_secret"));
        assert_eq!(ProvidedSecret::of(String::new()), None);
    }
}
