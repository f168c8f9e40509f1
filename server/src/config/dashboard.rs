//! `[dashboard]`: the delivery dashboard served on an address of its own.

use serde::{Deserialize, Serialize};

use super::parse_addr;
use crate::error::{Error, Result};

/// Longest a dashboard session may stay idle: one day.
const MAX_SESSION_IDLE_SECS: u64 = 86_400;

/// Delivery dashboard settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct DashboardConfig {
    /// Serve the dashboard.
    pub enabled: bool,
    /// Where it listens, e.g. `127.0.0.1:8081`.
    pub addr: String,
    /// A session ends after this many seconds without a request.
    pub session_idle_secs: u64,
}

impl DashboardConfig {
    /// Checks the keys, naming the key in the error.
    pub(super) fn validate(&self) -> Result<()> {
        parse_addr("dashboard.addr", &self.addr)?;
        if !(60..=MAX_SESSION_IDLE_SECS).contains(&self.session_idle_secs) {
            return Err(Error::Config(format!(
                "dashboard.session_idle_secs: {} is out of range (60 to {MAX_SESSION_IDLE_SECS})",
                self.session_idle_secs
            )));
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use crate::config::Config;

    #[test]
    fn defaults_serve_on_localhost_and_bad_values_name_their_key() {
        let defaults = Config::with_defaults(std::path::Path::new("/tmp"));
        assert!(defaults.dashboard.enabled);
        assert_eq!(defaults.dashboard.addr, "127.0.0.1:8081");
        let mut bad = defaults.clone();
        bad.dashboard.addr = "anywhere".into();
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("dashboard.addr"), "{e}");
        let mut bad = defaults;
        bad.dashboard.session_idle_secs = 5;
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("dashboard.session_idle_secs"), "{e}");
    }
}
