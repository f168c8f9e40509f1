//! The config text `compare` adds to hookd's for some phases: every alert
//! rule off, or on with the operator's sink (the store on PostgreSQL is
//! [`crate::storage`]'s).

use std::fmt::Write as _;

/// The Standard Webhooks secret the operator's alert sink is given.
const ALERT_SINK_SECRET: &str = "whsec_YWxlcnQtc2luay1zZWNyZXQtZm9yLWhvb2tkLWJlbmNo";
/// Every alert type of `[alerts.rules]` (server/config.default.toml).
const ALERT_TYPES: [&str; 10] = [
    "route.failing",
    "route.circuit_opened",
    "deadletters.depth_exceeded",
    "verification.failure_spike",
    "ingest.rate_limited",
    "contract.rejection_spike",
    "secret.previous_expiring",
    "backlog.lag_exceeded",
    "transform.failing",
    "handshake.failed",
];

/// Every alert rule off, no sink.
pub(super) fn alerts_off() -> String {
    let mut out = String::new();
    for name in ALERT_TYPES {
        let _ = write!(out, "\n[alerts.rules.{name:?}]\nenabled = false\n");
    }
    out
}

/// Every alert rule on (the defaults) and the operator's sink at `url`.
pub(super) fn alerts_on(url: &str) -> String {
    let mut out = format!(
        "\n[alerts.sink]\nurl = {url:?}\nsecret = {ALERT_SINK_SECRET:?}\nformat = \"standard\"\n"
    );
    for name in ALERT_TYPES {
        let _ = write!(out, "\n[alerts.rules.{name:?}]\nenabled = true\n");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_generated_configs_name_every_alert_type() {
        let off = alerts_off();
        assert_eq!(off.matches("enabled = false").count(), ALERT_TYPES.len());
        assert!(off.contains("[alerts.rules.\"route.failing\"]"), "{off}");
        assert!(!off.contains("[alerts.sink]"), "{off}");
        let on = alerts_on("http://127.0.0.1:9/alerts");
        assert_eq!(on.matches("enabled = true").count(), ALERT_TYPES.len());
        assert!(on.contains("url = \"http://127.0.0.1:9/alerts\""), "{on}");
    }
}
