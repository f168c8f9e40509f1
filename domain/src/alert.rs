//! The catalogue of operational alerts: every [`AlertType`] hookd can open and
//! the event types it sends (docs/alerts.md).

use std::{fmt, str::FromStr};

/// A condition hookd watches for, per tenant (and per route or key where it
/// names a subject).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum AlertType {
    /// A route's forwards fail (first failure, or the last attempt).
    RouteFailing,
    /// A route's circuit breaker opened; resolves when it closes.
    RouteCircuitOpened,
    /// A route's dead letters passed a depth.
    DeadLettersDepthExceeded,
    /// Refused signatures passed a count in a window: usually a secret the
    /// provider rotated.
    VerificationFailureSpike,
    /// Deliveries refused by the tenant's ingest rate limit.
    IngestRateLimited,
    /// Contract rejections passed a count in a window.
    ContractRejectionSpike,
    /// A previous secret's overlap ends soon.
    SecretPreviousExpiring,
    /// A route's oldest pending delivery is older than a lag.
    BacklogLagExceeded,
    /// A route's transform fails.
    TransformFailing,
    /// A provider's handshake was refused.
    HandshakeFailed,
}

/// A name that is no type of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownAlertType(pub String);

impl fmt::Display for UnknownAlertType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "unknown alert type {:?}; expected one of: {}",
            self.0,
            AlertType::ALL.map(AlertType::as_str).join(", ")
        )
    }
}

impl std::error::Error for UnknownAlertType {}

impl AlertType {
    /// Every type, in catalogue order.
    pub const ALL: [AlertType; 10] = [
        AlertType::RouteFailing,
        AlertType::RouteCircuitOpened,
        AlertType::DeadLettersDepthExceeded,
        AlertType::VerificationFailureSpike,
        AlertType::IngestRateLimited,
        AlertType::ContractRejectionSpike,
        AlertType::SecretPreviousExpiring,
        AlertType::BacklogLagExceeded,
        AlertType::TransformFailing,
        AlertType::HandshakeFailed,
    ];

    /// Its name, which is also the `type` of the event sent when it opens.
    pub fn as_str(self) -> &'static str {
        match self {
            AlertType::RouteFailing => "route.failing",
            AlertType::RouteCircuitOpened => "route.circuit_opened",
            AlertType::DeadLettersDepthExceeded => "deadletters.depth_exceeded",
            AlertType::VerificationFailureSpike => "verification.failure_spike",
            AlertType::IngestRateLimited => "ingest.rate_limited",
            AlertType::ContractRejectionSpike => "contract.rejection_spike",
            AlertType::SecretPreviousExpiring => "secret.previous_expiring",
            AlertType::BacklogLagExceeded => "backlog.lag_exceeded",
            AlertType::TransformFailing => "transform.failing",
            AlertType::HandshakeFailed => "handshake.failed",
        }
    }

    /// The `type` of the event sent when it resolves.
    pub fn resolved_event_type(self) -> &'static str {
        match self {
            AlertType::RouteFailing => "route.failing.resolved",
            AlertType::RouteCircuitOpened => "route.circuit_closed",
            AlertType::DeadLettersDepthExceeded => "deadletters.depth_exceeded.resolved",
            AlertType::VerificationFailureSpike => "verification.failure_spike.resolved",
            AlertType::IngestRateLimited => "ingest.rate_limited.resolved",
            AlertType::ContractRejectionSpike => "contract.rejection_spike.resolved",
            AlertType::SecretPreviousExpiring => "secret.previous_expiring.resolved",
            AlertType::BacklogLagExceeded => "backlog.lag_exceeded.resolved",
            AlertType::TransformFailing => "transform.failing.resolved",
            AlertType::HandshakeFailed => "handshake.failed.resolved",
        }
    }
}

impl fmt::Display for AlertType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for AlertType {
    type Err = UnknownAlertType;

    fn from_str(name: &str) -> Result<Self, Self::Err> {
        AlertType::ALL
            .into_iter()
            .find(|kind| kind.as_str() == name)
            .ok_or_else(|| UnknownAlertType(name.to_owned()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_type_parses_back_from_its_name_and_resolves_under_another() {
        for kind in AlertType::ALL {
            assert_eq!(kind.as_str().parse::<AlertType>(), Ok(kind));
            assert_ne!(kind.resolved_event_type(), kind.as_str());
        }
        let unknown = "route.on_fire".parse::<AlertType>().unwrap_err();
        assert!(unknown.to_string().contains("route.failing"), "{unknown}");
    }
}
