//! Tenant vocabulary: [`TenantId`], [`RateLimit`], [`SecretState`] and the
//! defaults a tenant (and each of its routes) gets for unset settings.

use std::{borrow::Borrow, fmt};

/// The defaults of a tenant's and a route's settings, the same for the
/// config file, the control plane and `hookctl apply`, defined here only.
pub mod defaults {
    /// The signature scheme when none is named.
    pub const SCHEME: crate::Scheme = crate::Scheme::Standard;
    /// Allowed clock distance of a signed timestamp, both ways, in seconds.
    pub const TOLERANCE_SECS: u64 = 300;
    /// Largest body accepted: 1 MiB.
    pub const MAX_BODY_BYTES: u64 = 1024 * 1024;
    /// Most forwards of one tenant (or one route) in flight at once.
    pub const MAX_IN_FLIGHT: u32 = 8;
    /// Delays between a route's attempts, in seconds; the last one repeats
    /// until the retry window ends.
    pub const RETRY_SCHEDULE_SECS: [f64; 5] = [30.0, 120.0, 600.0, 3600.0, 21600.0];
    /// How long after acceptance a failing delivery is retried, in seconds
    /// (then dead-lettered).
    pub const RETRY_WINDOW_SECS: f64 = 86_400.0;
    /// Random spread of each retry delay, as a fraction (0.1 = ±10 %).
    pub const RETRY_JITTER: f64 = 0.1;
    /// Consecutive failed attempts that open a route's circuit breaker.
    pub const BREAKER_FAILURE_THRESHOLD: u32 = 5;
    /// Seconds an open breaker waits before it lets one attempt through.
    pub const BREAKER_COOLDOWN_SECS: f64 = 30.0;
    /// A route's transform CPU budget per run, in ms.
    pub const TRANSFORM_CPU_MS: u32 = 50;
    /// A route's transform memory cap per run, in MiB.
    pub const TRANSFORM_MEMORY_MIB: u32 = 16;
}

/// A tenant id that is not `[a-z0-9_-]{1,64}`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InvalidTenantId {
    /// The id is empty.
    #[error("tenant_id is required")]
    Empty,
    /// The id is too long or uses a character outside the alphabet.
    #[error("tenant_id {0:?} is malformed: use 1 to 64 of a-z, 0-9, '_' and '-'")]
    Malformed(String),
}

/// A tenant's id: `[a-z0-9_-]{1,64}`, chosen by the operator. It becomes part
/// of URLs (`/hooks/{id}`) and storage names, so it is kept to a small,
/// unambiguous alphabet; the only way to build one is through `TryFrom`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(try_from = "String", into = "String")
)]
pub struct TenantId(String);

impl TenantId {
    /// Longest tenant id, in bytes.
    pub const MAX_LEN: usize = 64;

    /// Whether `value` is an acceptable tenant id.
    pub fn is_valid(value: &str) -> bool {
        !value.is_empty()
            && value.len() <= Self::MAX_LEN
            && value
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-' || b == b'_')
    }

    /// The id as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The storage scope of this tenant's route `route` (a valid route
    /// name: the same alphabet as a tenant id): the tenant's own id for the
    /// default route, `tenant~route` for any other. `~` is never in a
    /// tenant id, so scopes of different tenants and routes never meet.
    /// A scope names storage only; it is never a tenant of its own.
    pub fn route_scope(&self, route: &str) -> TenantId {
        debug_assert!(TenantId::is_valid(route), "route names are validated");
        if route == DEFAULT_ROUTE {
            return self.clone();
        }
        TenantId(format!("{}~{route}", self.0))
    }

    /// The storage scope of this tenant's alert sink `sink` (`tenant~~sink`):
    /// no route name holds a `~`, so it never meets a route's scope, and it
    /// is never a tenant of its own either.
    pub fn alert_scope(&self, sink: &str) -> TenantId {
        TenantId(format!("{}~~{sink}", self.0))
    }
}

/// The route every tenant has: its own destination (or pull queue).
pub const DEFAULT_ROUTE: &str = "default";

impl TryFrom<String> for TenantId {
    type Error = InvalidTenantId;

    fn try_from(value: String) -> Result<Self, Self::Error> {
        if value.is_empty() {
            Err(InvalidTenantId::Empty)
        } else if TenantId::is_valid(&value) {
            Ok(TenantId(value))
        } else {
            Err(InvalidTenantId::Malformed(value))
        }
    }
}

impl TryFrom<&str> for TenantId {
    type Error = InvalidTenantId;

    fn try_from(value: &str) -> Result<Self, Self::Error> {
        TenantId::try_from(value.to_owned())
    }
}

impl From<TenantId> for String {
    fn from(id: TenantId) -> String {
        id.0
    }
}

impl Borrow<str> for TenantId {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for TenantId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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

/// A secret state name that is neither `current` nor `previous`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown secret state {0:?} (expected current or previous)")]
pub struct InvalidSecretState(pub String);

/// Whether a live secret is the one to sign with or the one still honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "lowercase")
)]
pub enum SecretState {
    /// Senders should sign with it.
    Current,
    /// Still accepted until it expires (the one before, during a rotation's overlap).
    Previous,
}

impl SecretState {
    /// The name used on the wire and in the config file.
    pub fn as_str(self) -> &'static str {
        match self {
            SecretState::Current => "current",
            SecretState::Previous => "previous",
        }
    }
}

impl TryFrom<&str> for SecretState {
    type Error = InvalidSecretState;

    fn try_from(name: &str) -> Result<Self, Self::Error> {
        match name {
            "current" => Ok(SecretState::Current),
            "previous" => Ok(SecretState::Previous),
            other => Err(InvalidSecretState(other.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The default route is the tenant's own scope; another route's scope
    /// is no tenant id and shares no key prefix with its tenant's.
    #[test]
    fn route_scopes_never_meet_a_tenant() {
        let acme = TenantId::try_from("acme").unwrap();
        assert_eq!(acme.route_scope(DEFAULT_ROUTE), acme);
        let orders = acme.route_scope("orders");
        assert_eq!(orders.as_str(), "acme~orders");
        assert!(!TenantId::is_valid(orders.as_str()));
        assert!(!orders.as_str().starts_with("acme/"));
    }

    /// An alert sink's scope is no route's scope and no tenant id.
    #[test]
    fn alert_scopes_never_meet_a_route_or_a_tenant() {
        let acme = TenantId::try_from("acme").unwrap();
        let sink = acme.alert_scope("alerts");
        assert_eq!(sink.as_str(), "acme~~alerts");
        assert_ne!(sink, acme.route_scope("alerts"));
        assert!(!TenantId::is_valid(sink.as_str()));
    }

    #[test]
    fn tenant_ids_follow_the_documented_alphabet() {
        assert_eq!(
            TenantId::try_from("acme-eu_1").unwrap().as_str(),
            "acme-eu_1"
        );
        assert_eq!(TenantId::try_from(""), Err(InvalidTenantId::Empty));
        for bad in ["Acme", "a/b", "a b", &"a".repeat(65)] {
            assert_eq!(
                TenantId::try_from(bad),
                Err(InvalidTenantId::Malformed(bad.to_owned()))
            );
        }
        assert!(TenantId::try_from("a".repeat(64)).is_ok());
    }

    #[test]
    fn rate_limit_derives_a_missing_burst_from_the_rate() {
        assert_eq!(RateLimit::from_api(0.0, 5), None);
        assert_eq!(RateLimit::from_api(2.5, 0).map(|r| r.burst), Some(3));
        assert_eq!(RateLimit::from_api(0.2, 0).map(|r| r.burst), Some(1));
        assert_eq!(RateLimit::from_api(10.0, 40).map(|r| r.burst), Some(40));
    }

    #[test]
    fn secret_state_names_round_trip() {
        for state in [SecretState::Current, SecretState::Previous] {
            assert_eq!(SecretState::try_from(state.as_str()), Ok(state));
        }
        assert!(SecretState::try_from("Current").is_err());
    }
}
