//! `[retention]`: how long finished work is kept, and how the idempotency
//! retention must compare with the retry windows of hookd and of senders.

use serde::{Deserialize, Serialize};

use super::TenantConfig;
use crate::error::InvalidSetting;

/// Stripe retries a webhook for up to 3 days, the longest retry window of
/// the senders whose schemes hookd verifies (Shopify retries for at most
/// 48 hours, Standard Webhooks senders such as Svix for about a day, Slack
/// for minutes, GitHub not at all).
pub const LONGEST_SENDER_RETRY_SECS: u64 = 3 * 86_400;

/// How long finished work is kept.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Idempotency records older than this are forgotten: a copy of an
    /// event arriving later is taken as new.
    pub idempotency_secs: u64,
    /// Delivered events (body, attempts) older than this are deleted.
    pub delivered_secs: u64,
    /// Dead letters (body, attempts) dead for longer than this are
    /// deleted, so they cannot fill the disk however many die.
    pub dead_secs: u64,
    /// Pause between sweeps.
    pub sweep_interval_secs: f64,
    /// Most records of each kind one sweep step deletes (or, for
    /// idempotency records, scans) for one tenant before the next tenant's
    /// turn.
    pub sweep_batch: usize,
}

impl RetentionConfig {
    /// Refuses an idempotency retention shorter than a config-file tenant's
    /// retry window or the one every tenant created over the control plane
    /// has (24 h): hookd would forget an event while still retrying it, and
    /// take the sender's copy of it as a new delivery.
    pub fn check_retry_windows(&self, tenants: &[TenantConfig]) -> Result<(), InvalidSetting> {
        for (i, tenant) in tenants.iter().enumerate() {
            let window = tenant.retry.window_secs;
            if (self.idempotency_secs as f64) < window {
                return Err(InvalidSetting::new(
                    "retention.idempotency_secs",
                    format!(
                        "{} is below tenants[{i}] ({}) retry.window_secs ({window}): a copy of \
                         an event sent while hookd still retries it would be taken as new; raise \
                         retention.idempotency_secs to at least {}",
                        self.idempotency_secs,
                        tenant.id,
                        window.ceil()
                    ),
                ));
            }
        }
        let api_window = super::tenant::default_window();
        if (self.idempotency_secs as f64) < api_window {
            return Err(InvalidSetting::new(
                "retention.idempotency_secs",
                format!(
                    "{} is below the retry window of tenants created over the control plane \
                     ({api_window} s): a copy of an event sent while hookd still retries it \
                     would be taken as new; raise retention.idempotency_secs to at least \
                     {api_window}",
                    self.idempotency_secs
                ),
            ));
        }
        Ok(())
    }

    /// A warning when the idempotency retention is shorter than the
    /// longest sender retry window ([`LONGEST_SENDER_RETRY_SECS`], Stripe's).
    pub fn sender_retry_warning(&self) -> Option<String> {
        (self.idempotency_secs < LONGEST_SENDER_RETRY_SECS).then(|| {
            format!(
                "retention.idempotency_secs ({}) is below {LONGEST_SENDER_RETRY_SECS} s (3 days, \
                 Stripe's retry window, the longest of the supported senders): a Stripe retry \
                 arriving later is taken as a new event",
                self.idempotency_secs
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::super::Config;

    fn load(toml: &str) -> crate::error::Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.toml");
        std::fs::write(&path, toml).unwrap();
        Config::load(Some(&path), &super::super::Overrides::default())
    }

    const TENANT: &str = "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n\
        [[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-inline-signing-secret\"\n\
        [tenants.retry]\nwindow_secs = 172800.0\n";

    #[test]
    fn idempotency_below_a_tenants_retry_window_is_refused() {
        let e = load(&format!("[retention]\nidempotency_secs = 86400\n{TENANT}"))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("retention.idempotency_secs: 86400 is below tenants[0] (acme) retry.window_secs (172800)"),
            "{e}"
        );
        let c = load(&format!("[retention]\nidempotency_secs = 172800\n{TENANT}")).unwrap();
        assert_eq!(c.retention.idempotency_secs, 172_800);
    }

    #[test]
    fn idempotency_below_the_retry_window_of_control_plane_tenants_is_refused() {
        let e = load("[retention]\nidempotency_secs = 3600\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("retention.idempotency_secs: 3600 is below the retry window of tenants created over the control plane (86400 s)"),
            "{e}"
        );
    }

    #[test]
    fn idempotency_below_the_longest_sender_retry_window_warns() {
        let c = load(&format!("[retention]\nidempotency_secs = 172800\n{TENANT}")).unwrap();
        let warning = c.retention.sender_retry_warning().unwrap();
        assert!(
            warning.contains("172800") && warning.contains("Stripe"),
            "{warning}"
        );
        let c = load("[retention]\nidempotency_secs = 259200\n").unwrap();
        assert_eq!(c.retention.sender_retry_warning(), None);
        let defaults = load("").unwrap().retention;
        assert_eq!(defaults.sender_retry_warning(), None);
        assert_eq!(defaults.dead_secs, 30 * 86_400);
    }
}
