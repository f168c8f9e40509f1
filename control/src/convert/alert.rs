//! AlertService requests to the domain and back, each refusal naming its
//! field.

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_proto::{domain::AlertType, v1 as pb};

use super::{is_absolute_http_url, non_empty};
use crate::{
    error::Error,
    model::{
        AlertFilter, AlertRuleView, AlertSettingsView, AlertSinkFormat, AlertSinkView, AlertState,
        AlertView, NewAlertSettings, NewAlertSink, SetAlertSettingsOutcome,
    },
    Result,
};

/// The prefix of a Standard Webhooks secret.
const SECRET_PREFIX: &str = "whsec_";
/// The modes `route.failing` takes.
const ROUTE_FAILING_MODES: [&str; 3] = ["consecutive", "first_failure", "last_attempt"];

fn invalid(message: String) -> Error {
    Error::InvalidArgument(message)
}

/// AlertService requests to the domain and back. Alert types, rule numbers,
/// the sink URL's shape and the sink secret's form are checked here, each
/// refusal naming its field (`rules[2].window_secs`); whether the
/// address policy allows the sink is the backend's to say.
impl TryFrom<pb::SetAlertSettingsRequest> for NewAlertSettings {
    type Error = Error;

    /// The settings are required: empty ones (no sink, no rules) are how a
    /// tenant clears its own.
    fn try_from(r: pb::SetAlertSettingsRequest) -> Result<Self> {
        let settings = r.settings.ok_or_else(|| {
            invalid("settings is required; send empty settings to clear the tenant's own".into())
        })?;
        let sink = settings.sink.map(NewAlertSink::try_from).transpose()?;
        let mut rules: Vec<AlertRuleView> = Vec::with_capacity(settings.rules.len());
        for (index, rule) in settings.rules.into_iter().enumerate() {
            let rule = new_rule(&format!("rules[{index}]"), rule)?;
            if rules.iter().any(|r| r.alert_type == rule.alert_type) {
                return Err(invalid(format!(
                    "rules[{index}].type: {} has a rule already; give at most one per type",
                    rule.alert_type
                )));
            }
            rules.push(rule);
        }
        Ok(NewAlertSettings { sink, rules })
    }
}

impl TryFrom<pb::AlertSink> for NewAlertSink {
    type Error = Error;

    fn try_from(sink: pb::AlertSink) -> Result<Self> {
        if !is_absolute_http_url(&sink.url) {
            return Err(invalid(format!(
                "sink.url {:?} is not an absolute http(s) URL",
                sink.url
            )));
        }
        let format = match pb::AlertSinkFormat::try_from(sink.format) {
            Ok(pb::AlertSinkFormat::Standard) => AlertSinkFormat::Standard,
            Ok(pb::AlertSinkFormat::Slack) => AlertSinkFormat::Slack,
            Err(_) => {
                return Err(invalid(format!(
                    "sink.format {} is not an AlertSinkFormat",
                    sink.format
                )))
            }
        };
        let secret = non_empty(sink.secret).map(sink_secret).transpose()?;
        Ok(NewAlertSink {
            url: sink.url,
            format,
            secret,
        })
    }
}

/// A Standard Webhooks secret: `whsec_` and the base64 of at least one
/// byte. The message never repeats the secret.
fn sink_secret(secret: String) -> Result<String> {
    let key = secret
        .strip_prefix(SECRET_PREFIX)
        .ok_or_else(|| invalid("sink.secret must start with whsec_".into()))?;
    match STANDARD.decode(key) {
        Ok(bytes) if !bytes.is_empty() => Ok(secret),
        _ => Err(invalid(
            "sink.secret must be whsec_ followed by base64 of the key".into(),
        )),
    }
}

fn new_rule(field: &str, rule: pb::AlertRule) -> Result<AlertRuleView> {
    let kind: AlertType = rule
        .r#type
        .parse()
        .map_err(|e| invalid(format!("{field}.type: {e}")))?;
    if !rule.window_secs.is_finite() || rule.window_secs < 0.0 {
        return Err(invalid(format!(
            "{field}.window_secs: must be a finite number of seconds, 0 (the default) or more"
        )));
    }
    let mode = non_empty(rule.mode);
    match (&mode, kind) {
        (None, _) => {}
        (Some(mode), AlertType::RouteFailing) if ROUTE_FAILING_MODES.contains(&mode.as_str()) => {}
        (Some(mode), AlertType::RouteFailing) => {
            return Err(invalid(format!(
            "{field}.mode {mode:?}: route.failing takes consecutive, first_failure or last_attempt"
        )))
        }
        (Some(_), other) => {
            return Err(invalid(format!(
                "{field}.mode: only route.failing has a mode, not {other}"
            )))
        }
    }
    Ok(AlertRuleView {
        alert_type: kind.as_str().to_owned(),
        enabled: rule.enabled,
        threshold: rule.threshold,
        window_secs: rule.window_secs,
        mode,
        overridden: false,
    })
}

impl TryFrom<&pb::ListAlertsRequest> for AlertFilter {
    type Error = Error;

    /// The states a ListAlerts request filters by; empty: every state.
    fn try_from(r: &pb::ListAlertsRequest) -> Result<Self> {
        alert_filter(&r.states)
    }
}

fn alert_filter(states: &[i32]) -> Result<AlertFilter> {
    let states = states
        .iter()
        .enumerate()
        .map(|(index, &raw)| match pb::AlertState::try_from(raw) {
            Ok(pb::AlertState::Open) => Ok(AlertState::Open),
            Ok(pb::AlertState::Acknowledged) => Ok(AlertState::Acknowledged),
            Ok(pb::AlertState::Resolved) => Ok(AlertState::Resolved),
            Ok(pb::AlertState::Unspecified) => Err(invalid(format!(
                "states[{index}]: ALERT_STATE_UNSPECIFIED is no state; leave states empty for all"
            ))),
            Err(_) => Err(invalid(format!(
                "states[{index}]: {raw} is not an AlertState"
            ))),
        })
        .collect::<Result<_>>()?;
    Ok(AlertFilter { states })
}

impl From<AlertSinkFormat> for pb::AlertSinkFormat {
    fn from(format: AlertSinkFormat) -> Self {
        match format {
            AlertSinkFormat::Standard => pb::AlertSinkFormat::Standard,
            AlertSinkFormat::Slack => pb::AlertSinkFormat::Slack,
        }
    }
}

impl From<AlertSinkView> for pb::AlertSink {
    fn from(s: AlertSinkView) -> Self {
        pb::AlertSink {
            url: s.url,
            format: pb::AlertSinkFormat::from(s.format).into(),
            secret: String::new(),
            has_secret: s.has_secret,
        }
    }
}

impl From<AlertRuleView> for pb::AlertRule {
    fn from(r: AlertRuleView) -> Self {
        pb::AlertRule {
            r#type: r.alert_type,
            enabled: r.enabled,
            threshold: r.threshold,
            window_secs: r.window_secs,
            mode: r.mode.unwrap_or_default(),
            overridden: r.overridden,
        }
    }
}

impl From<AlertSettingsView> for pb::AlertSettings {
    fn from(s: AlertSettingsView) -> Self {
        pb::AlertSettings {
            sink: s.sink.map(Into::into),
            rules: s.rules.into_iter().map(Into::into).collect(),
        }
    }
}

impl From<SetAlertSettingsOutcome> for pb::SetAlertSettingsResponse {
    fn from(o: SetAlertSettingsOutcome) -> Self {
        pb::SetAlertSettingsResponse {
            settings: Some(o.settings.into()),
            generated_secret: o.generated_secret.unwrap_or_default(),
        }
    }
}

impl From<AlertState> for pb::AlertState {
    fn from(state: AlertState) -> Self {
        match state {
            AlertState::Open => pb::AlertState::Open,
            AlertState::Acknowledged => pb::AlertState::Acknowledged,
            AlertState::Resolved => pb::AlertState::Resolved,
        }
    }
}

impl From<AlertView> for pb::Alert {
    fn from(a: AlertView) -> Self {
        pb::Alert {
            id: a.id,
            tenant_id: a.tenant_id,
            r#type: a.alert_type,
            subject: a.subject,
            state: pb::AlertState::from(a.state).into(),
            summary: a.summary,
            opened_at_unix_ms: a.opened_at_unix_ms,
            last_seen_at_unix_ms: a.last_seen_at_unix_ms,
            acknowledged_at_unix_ms: a.acknowledged_at_unix_ms.unwrap_or(0),
            resolved_at_unix_ms: a.resolved_at_unix_ms.unwrap_or(0),
            occurrences: a.occurrences,
            notifications: a.notifications,
            delivery_ids: a.delivery_ids,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(kind: &str) -> pb::AlertRule {
        pb::AlertRule {
            r#type: kind.into(),
            enabled: true,
            ..Default::default()
        }
    }

    fn with(sink: Option<pb::AlertSink>, rules: Vec<pb::AlertRule>) -> Result<NewAlertSettings> {
        NewAlertSettings::try_from(pb::SetAlertSettingsRequest {
            tenant_id: "acme".into(),
            settings: Some(pb::AlertSettings { sink, rules }),
        })
    }

    fn sink(url: &str, secret: &str) -> Option<pb::AlertSink> {
        Some(pb::AlertSink {
            url: url.into(),
            secret: secret.into(),
            ..Default::default()
        })
    }

    fn refusal(result: Result<NewAlertSettings>) -> String {
        match result {
            Err(Error::InvalidArgument(message)) => message,
            other => panic!("expected InvalidArgument, got {other:?}"),
        }
    }

    #[test]
    fn zero_values_stay_defaults_and_empty_strings_none() {
        let new = with(sink("https://ops.test/a", ""), vec![rule("route.failing")]).unwrap();
        let sink = new.sink.unwrap();
        assert_eq!(
            (sink.secret, sink.format),
            (None, AlertSinkFormat::Standard)
        );
        assert_eq!(
            new.rules,
            [AlertRuleView {
                alert_type: "route.failing".into(),
                enabled: true,
                threshold: 0,
                window_secs: 0.0,
                mode: None,
                overridden: false,
            }]
        );
        assert_eq!(with(None, vec![]).unwrap().sink, None);
        let missing = NewAlertSettings::try_from(pb::SetAlertSettingsRequest::default());
        let missing = missing.unwrap_err().to_string();
        assert!(missing.contains("settings is required"), "{missing}");
    }

    #[test]
    fn each_bad_rule_is_refused_naming_its_index_and_field() {
        let cases = [
            (rule("route.on_fire"), "rules[1].type: unknown alert type"),
            (
                pb::AlertRule {
                    window_secs: -1.0,
                    ..rule("handshake.failed")
                },
                "rules[1].window_secs",
            ),
            (
                pb::AlertRule {
                    window_secs: f64::INFINITY,
                    ..rule("handshake.failed")
                },
                "rules[1].window_secs",
            ),
            (
                pb::AlertRule {
                    mode: "every_time".into(),
                    ..rule("route.failing")
                },
                "rules[1].mode \"every_time\"",
            ),
            (
                pb::AlertRule {
                    mode: "first_failure".into(),
                    ..rule("handshake.failed")
                },
                "rules[1].mode: only route.failing",
            ),
            (
                rule("ingest.rate_limited"),
                "rules[1].type: ingest.rate_limited has a rule",
            ),
        ];
        for (bad, expected) in cases {
            let message = refusal(with(None, vec![rule("ingest.rate_limited"), bad]));
            assert!(message.starts_with(expected), "{message}");
        }
    }

    #[test]
    fn sink_urls_and_secrets_are_checked_without_echoing_the_secret() {
        for url in [
            "",
            "ops.test/alerts",
            "ftp://ops.test",
            "https://",
            "https://a b",
        ] {
            let message = refusal(with(sink(url, ""), vec![]));
            assert!(message.starts_with("sink.url"), "{message}");
        }
        for secret in ["c2VjcmV0", "whsec_", "whsec_not base64!", "whsec_@@"] {
            let message = refusal(with(sink("http://ops.test", secret), vec![]));
            assert!(message.starts_with("sink.secret"), "{message}");
            assert!(!message.contains("base64!") && !message.contains("@@"));
        }
        let good = with(sink("http://ops.test", "whsec_c2VjcmV0"), vec![]).unwrap();
        assert_eq!(good.sink.unwrap().secret.as_deref(), Some("whsec_c2VjcmV0"));
        let format = pb::AlertSink {
            format: 7,
            ..sink("http://ops.test", "").unwrap()
        };
        let message = refusal(with(Some(format), vec![]));
        assert!(message.starts_with("sink.format 7"), "{message}");
    }

    #[test]
    fn state_filters_refuse_unspecified_and_unknown_values() {
        let filter = alert_filter(&[pb::AlertState::Open as i32, 3]).unwrap();
        assert_eq!(filter.states, [AlertState::Open, AlertState::Resolved]);
        assert!(alert_filter(&[]).unwrap().states.is_empty());
        for bad in [0, 9] {
            let message = alert_filter(&[1, bad]).unwrap_err().to_string();
            assert!(message.contains("states[1]"), "{message}");
        }
    }

    #[test]
    fn a_view_never_carries_a_secret_and_none_times_are_zero() {
        let sink = pb::AlertSink::from(AlertSinkView {
            url: "https://ops.test".into(),
            format: AlertSinkFormat::Slack,
            has_secret: true,
        });
        assert_eq!(sink.secret, "");
        assert_eq!(sink.format(), pb::AlertSinkFormat::Slack);
        let alert = pb::Alert::from(crate::fake::alert(
            "acme",
            "alr_1",
            AlertType::BacklogLagExceeded,
            5,
        ));
        assert_eq!(alert.r#type, "backlog.lag_exceeded");
        assert_eq!(alert.state(), pb::AlertState::Open);
        assert_eq!(
            (alert.acknowledged_at_unix_ms, alert.resolved_at_unix_ms),
            (0, 0)
        );
    }
}
