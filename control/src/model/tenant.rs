//! Tenants, their signing secrets and their API tokens.

use std::fmt;

/// The signature scheme a tenant's sender signs with; decides which headers
/// ingest reads and how the signature is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Standard Webhooks / Svix (the default).
    Standard,
    /// hookd's own `X-Webhook-Signature`.
    Hookd,
    /// `Stripe-Signature`.
    Stripe,
    /// `X-Hub-Signature-256`.
    Github,
    /// `X-Shopify-Hmac-Sha256`.
    Shopify,
    /// `X-Slack-Signature`.
    Slack,
}

impl Scheme {
    /// Every scheme, in the order the API documents them.
    pub const ALL: [Scheme; 6] = [
        Scheme::Standard,
        Scheme::Hookd,
        Scheme::Stripe,
        Scheme::Github,
        Scheme::Shopify,
        Scheme::Slack,
    ];

    /// The name used on the wire and in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Standard => "standard",
            Scheme::Hookd => "hookd",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::Slack => "slack",
        }
    }

    /// The scheme called `name` (as [`Scheme::as_str`] spells it), if any.
    pub fn from_name(name: &str) -> Option<Scheme> {
        Scheme::ALL.into_iter().find(|s| s.as_str() == name)
    }
}

/// A token-bucket limit on a tenant's accepted deliveries.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimit {
    /// Sustained deliveries per second; finite and above 0.
    pub per_sec: f64,
    /// Deliveries that may arrive at once above the rate; at least 1.
    pub burst: u32,
}

impl RateLimit {
    /// The limit the API means by a rate and a burst where 0 is "unset": no
    /// limit for a zero rate; for a zero burst, the rate rounded up (at
    /// least 1). The backend uses it too when an update changes only one of
    /// the two, so both sides derive the burst the same way.
    pub fn from_api(per_sec: f64, burst: u32) -> Option<RateLimit> {
        if per_sec <= 0.0 || !per_sec.is_finite() {
            return None;
        }
        let burst = if burst == 0 {
            per_sec.ceil().clamp(1.0, f64::from(u32::MAX)) as u32
        } else {
            burst
        };
        Some(RateLimit { per_sec, burst })
    }
}

/// A tenant as stored, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct TenantView {
    /// `[a-z0-9_-]{1,64}`; also the ingest path `/hooks/{tenant_id}`.
    pub tenant_id: String,
    /// How the sender signs.
    pub scheme: Scheme,
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
    /// Body field holding the event id; `None`: the scheme's default.
    pub event_id_field: Option<String>,
    /// Creation (or first load, for config-file tenants), Unix ms.
    pub created_at_ms: i64,
}

/// A tenant to create, validated and with the API's defaults applied
/// (scheme `standard`, 300 s tolerance, 1 MiB bodies, 8 in flight).
#[derive(Debug, Clone, PartialEq)]
pub struct NewTenant {
    /// Well-formed (`[a-z0-9_-]{1,64}`); may still be taken.
    pub tenant_id: String,
    /// How the sender signs.
    pub scheme: Scheme,
    /// Allowed clock distance of a signed timestamp.
    pub tolerance_secs: u64,
    /// An absolute http(s) URL, or `None` for pull mode.
    pub destination_url: Option<String>,
    /// Largest body accepted; above 0.
    pub max_body_bytes: u64,
    /// Body fields required besides the event id; none empty.
    pub required_fields: Vec<String>,
    /// Body field holding the event id; `None`: the scheme's default.
    pub event_id_field: Option<String>,
    /// Most forwards in flight at once; above 0.
    pub max_in_flight: u32,
    /// `None`: no rate limit.
    pub rate_limit: Option<RateLimit>,
}

/// Changes to a tenant: `None` keeps a setting, `Some` replaces it. Defaults
/// are already applied (a 0 tolerance arrives as 300), except for the rate
/// limit, whose burst may depend on the stored rate: the backend combines
/// the two with [`RateLimit::from_api`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TenantPatch {
    /// New signature scheme; the secrets stay.
    pub scheme: Option<Scheme>,
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

/// Whether a live secret is the one to sign with or the one still honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecretState {
    /// Senders should sign with it.
    Current,
    /// Still accepted until it expires.
    Previous,
}

impl SecretState {
    /// The name used on the wire.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretState::Current => "current",
            SecretState::Previous => "previous",
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn scheme_names_round_trip() {
        for scheme in Scheme::ALL {
            assert_eq!(Scheme::from_name(scheme.as_str()), Some(scheme));
        }
        assert_eq!(Scheme::from_name("Standard"), None);
    }

    #[test]
    fn rate_limit_derives_a_missing_burst_from_the_rate() {
        assert_eq!(RateLimit::from_api(0.0, 5), None);
        assert_eq!(RateLimit::from_api(2.5, 0).map(|r| r.burst), Some(3));
        assert_eq!(RateLimit::from_api(0.2, 0).map(|r| r.burst), Some(1));
        assert_eq!(RateLimit::from_api(10.0, 40).map(|r| r.burst), Some(40));
    }

    #[test]
    fn secrets_stay_out_of_debug_output() {
        let token = CreatedToken {
            token_id: "tok_1".into(),
            token: "hkt_very_secret".into(),
        };
        assert!(!format!("{token:?}").contains("very_secret"));
    }
}
