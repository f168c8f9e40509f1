//! `[dashboard]`: the delivery dashboard served on an address of its own,
//! checked here and handed to `hookd-dashboard` as its settings.

use std::time::Duration;

use serde::{Deserialize, Serialize};

use super::{bounds, parse_addr};
use crate::error::{Error, Result};

/// Longest a dashboard session may stay idle: one day.
const MAX_SESSION_IDLE_SECS: u64 = 86_400;

const _: () = assert!(
    bounds::DASHBOARD_TAILS_TOTAL.max + 50 < hookd_dashboard::MAX_CONNECTIONS as u64,
    "live tails must leave connections for pages"
);

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
    /// A session ends this many seconds after sign-in, however busy.
    pub session_max_secs: u64,
    /// Most live-tail streams one session holds open at once.
    pub tail_streams_per_session: usize,
    /// Most live-tail streams of all sessions together, kept below the
    /// dashboard's connection limit so pages are still answered.
    pub tail_streams_total: usize,
}

impl DashboardConfig {
    /// What the dashboard serves with; a client has `request_head_timeout`
    /// (the ingress's, from `http.request_timeout_secs`) to send a head.
    pub(crate) fn settings(&self, request_head_timeout: Duration) -> hookd_dashboard::Settings {
        hookd_dashboard::Settings {
            session_idle_secs: self.session_idle_secs,
            session_max_secs: self.session_max_secs,
            tail_streams_per_session: self.tail_streams_per_session,
            tail_streams_total: self.tail_streams_total,
            request_head_timeout,
        }
    }

    /// Checks the keys, naming the key in the error.
    pub(super) fn validate(&self) -> Result<()> {
        parse_addr("dashboard.addr", &self.addr)?;
        if !(60..=MAX_SESSION_IDLE_SECS).contains(&self.session_idle_secs) {
            return Err(Error::config(
                "dashboard.session_idle_secs",
                format!(
                    "{} is out of range (60 to {MAX_SESSION_IDLE_SECS})",
                    self.session_idle_secs
                ),
            ));
        }
        bounds::DASHBOARD_SESSION_MAX_SECS
            .check("dashboard.session_max_secs", self.session_max_secs)?;
        bounds::check_usize(
            bounds::DASHBOARD_TAILS_PER_SESSION,
            "dashboard.tail_streams_per_session",
            self.tail_streams_per_session,
        )?;
        bounds::check_usize(
            bounds::DASHBOARD_TAILS_TOTAL,
            "dashboard.tail_streams_total",
            self.tail_streams_total,
        )
        .map_err(Error::from)
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
        let mut bad = defaults.clone();
        bad.dashboard.session_idle_secs = 5;
        let e = bad.validate().unwrap_err().to_string();
        assert!(e.contains("dashboard.session_idle_secs"), "{e}");
    }

    #[test]
    fn lifetimes_and_tail_caps_have_bounds_naming_their_key() {
        let defaults = Config::with_defaults(std::path::Path::new("/tmp"));
        let d = &defaults.dashboard;
        assert_eq!(
            (
                d.session_max_secs,
                d.tail_streams_per_session,
                d.tail_streams_total
            ),
            (43_200, 4, 64)
        );
        assert_eq!(defaults.grpc.watch_streams_per_token, 8);
        type Edit = fn(&mut Config);
        let cases: [(&str, Edit); 5] = [
            ("dashboard.session_max_secs", |c| {
                c.dashboard.session_max_secs = 10
            }),
            ("dashboard.tail_streams_per_session", |c| {
                c.dashboard.tail_streams_per_session = 0
            }),
            ("dashboard.tail_streams_total", |c| {
                c.dashboard.tail_streams_total = 256
            }),
            ("grpc.watch_streams_per_token", |c| {
                c.grpc.watch_streams_per_token = 0
            }),
            ("grpc.watch_streams_per_token", |c| {
                c.grpc.watch_streams_per_token = 5_000
            }),
        ];
        for (key, edit) in cases {
            let mut bad = defaults.clone();
            edit(&mut bad);
            let e = bad.validate().unwrap_err().to_string();
            assert!(e.contains(key), "{key}: {e}");
        }
    }
}
