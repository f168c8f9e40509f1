//! Flags of `hookctl alerts`: a tenant's issues view, acknowledging an alert, and its
//! alert sink and rules (`--rule TYPE:THRESHOLD:WINDOW_SECS[:MODE]`).

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand, ValueEnum};
use hookd_sdk::client::proto::{AlertRule, AlertSinkFormat, AlertState};

use super::deliveries::PageArgs;

/// `hookctl alerts ...`
#[derive(Debug, Subcommand)]
pub enum AlertsCommand {
    /// List a tenant's alerts, newest first: open, acknowledged and resolved conditions.
    List {
        /// The tenant id.
        tenant: String,
        /// Only alerts in this state; repeat (or separate with commas) for several.
        #[arg(long = "state", value_enum, value_delimiter = ',')]
        states: Vec<StateArg>,
        /// Paging flags.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Acknowledge an open alert (someone is on it); again: no change. A resolved
    /// alert is refused.
    Ack {
        /// The tenant id.
        tenant: String,
        /// The alert id (`alr_...`).
        alert_id: String,
    },
    /// Show or replace where a tenant's alerts are sent and when they open.
    #[command(subcommand)]
    Settings(AlertSettingsCommand),
}

/// `hookctl alerts settings ...`
#[derive(Debug, Subcommand)]
pub enum AlertSettingsCommand {
    /// Show the tenant's sink and one rule per alert type, defaults filled in.
    Get {
        /// The tenant id.
        tenant: String,
    },
    /// Replace the tenant's sink and rules as a whole: types without --rule or
    /// --disable run with the operator's default rule.
    Set(SetAlertSettingsArgs),
}

/// The whole of a tenant's alert settings; a sink (--sink-url) or none (--no-sink) is
/// required, so a forgotten flag never removes the sink.
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("sink").required(true).args(["sink_url", "no_sink"])))]
pub struct SetAlertSettingsArgs {
    /// The tenant id.
    pub tenant: String,
    /// Where the tenant's operational events are sent (absolute http(s) URL).
    #[arg(long)]
    pub sink_url: Option<String>,
    /// How the sink's events are written (default: standard).
    #[arg(long, value_enum, conflicts_with = "no_sink")]
    pub sink_format: Option<SinkFormatArg>,
    /// Read the sink's `whsec_...` secret from this file (`-`: stdin); default: the
    /// sink keeps its secret, or hookd generates one for a new sink and prints it once.
    #[arg(long, conflicts_with = "no_sink")]
    pub sink_secret_file: Option<PathBuf>,
    /// No sink of the tenant's own: its events go to the operator's sink only.
    #[arg(long)]
    pub no_sink: bool,
    /// A rule, e.g. `verification.failure_spike:20:300` or
    /// `route.failing:1:60:first_failure`; 0 takes the default. Repeat for several.
    #[arg(long = "rule", value_name = "TYPE:THRESHOLD:WINDOW_SECS[:MODE]", value_parser = parse_rule)]
    pub rules: Vec<AlertRule>,
    /// An alert type that never opens for the tenant; repeat for several.
    #[arg(long = "disable", value_name = "TYPE")]
    pub disabled: Vec<String>,
}

/// Alert states as typed on the command line and printed in tables.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StateArg {
    /// The condition holds and nobody acknowledged it.
    Open,
    /// The condition holds; someone is on it.
    Acknowledged,
    /// The condition cleared.
    Resolved,
}

impl From<StateArg> for AlertState {
    fn from(state: StateArg) -> AlertState {
        match state {
            StateArg::Open => AlertState::Open,
            StateArg::Acknowledged => AlertState::Acknowledged,
            StateArg::Resolved => AlertState::Resolved,
        }
    }
}

/// Sink formats as typed on the command line.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum SinkFormatArg {
    /// A signed Standard Webhooks JSON event.
    Standard,
    /// A Slack-compatible incoming-webhook body, still signed.
    Slack,
}

impl From<SinkFormatArg> for AlertSinkFormat {
    fn from(format: SinkFormatArg) -> AlertSinkFormat {
        match format {
            SinkFormatArg::Standard => AlertSinkFormat::Standard,
            SinkFormatArg::Slack => AlertSinkFormat::Slack,
        }
    }
}

/// `TYPE:THRESHOLD:WINDOW_SECS[:MODE]` as an enabled rule; hookd checks the type, the
/// window's range and the mode.
pub fn parse_rule(text: &str) -> Result<AlertRule, String> {
    let usage = || format!("{text:?} is not TYPE:THRESHOLD:WINDOW_SECS[:MODE]");
    let mut parts = text.split(':');
    let (Some(kind), Some(threshold), Some(window)) = (parts.next(), parts.next(), parts.next())
    else {
        return Err(usage());
    };
    let mode = parts.next().unwrap_or_default();
    if kind.is_empty() || parts.next().is_some() {
        return Err(usage());
    }
    let threshold = threshold
        .parse()
        .map_err(|_| format!("{text:?}: THRESHOLD {threshold:?} is not a whole number"))?;
    let window_secs = window
        .parse()
        .map_err(|_| format!("{text:?}: WINDOW_SECS {window:?} is not a number of seconds"))?;
    Ok(AlertRule {
        r#type: kind.to_owned(),
        enabled: true,
        threshold,
        window_secs,
        mode: mode.to_owned(),
        overridden: false,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rules_are_type_threshold_window_and_an_optional_mode() {
        let rule = parse_rule("route.failing:3:60.5:first_failure").unwrap();
        assert_eq!(
            (rule.r#type.as_str(), rule.threshold, rule.window_secs),
            ("route.failing", 3, 60.5)
        );
        assert_eq!((rule.mode.as_str(), rule.enabled), ("first_failure", true));
        assert_eq!(parse_rule("handshake.failed:0:0").unwrap().mode, "");
        for bad in ["route.failing", "route.failing:3", ":1:2", "a:1:2:m:x"] {
            assert!(
                parse_rule(bad).unwrap_err().contains("TYPE:THRESHOLD"),
                "{bad}"
            );
        }
        assert!(parse_rule("a:-1:60").unwrap_err().contains("THRESHOLD"));
        assert!(parse_rule("a:1:soon").unwrap_err().contains("WINDOW_SECS"));
    }
}
