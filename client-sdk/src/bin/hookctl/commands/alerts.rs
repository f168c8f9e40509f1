//! `hookctl alerts list|ack|settings get|settings set`, and how an alert and a
//! tenant's alert settings are printed.

use std::io::{self, Write};

use hookd_sdk::client::{
    proto::{
        Alert, AlertRule, AlertSettings, AlertSink, AlertSinkFormat, AlertState, ListAlertsRequest,
    },
    HookdClient,
};
use serde_json::{json, Value};

use super::secret_file::read_secret;
use crate::{
    cli::{AlertSettingsCommand, AlertsCommand, SetAlertSettingsArgs},
    output::Output,
    view::{or_dash, short_name, when, View},
};

/// Runs one `alerts` subcommand.
///
/// `hookctl alerts list|ack|settings get|settings set`, and how an alert and a
/// tenant's alert settings are printed. A sink's secret is printed only when hookd
/// generated it, this once.
pub async fn run(client: &HookdClient, out: Output, command: AlertsCommand) -> anyhow::Result<()> {
    match command {
        AlertsCommand::List {
            tenant,
            states,
            page,
        } => {
            let states: Vec<AlertState> = states.into_iter().map(Into::into).collect();
            if page.all {
                let alerts = client.list_all_alerts(tenant, &states).await?;
                return Ok(out.list("alerts", &alerts, Some(""))?);
            }
            let listed = client
                .list_alerts(ListAlertsRequest {
                    tenant_id: tenant,
                    states: states.into_iter().map(Into::into).collect(),
                    page_size: page.page_size,
                    page_token: page.page_token,
                })
                .await?;
            Ok(out.list("alerts", &listed.alerts, Some(&listed.next_page_token))?)
        }
        AlertsCommand::Ack { tenant, alert_id } => {
            Ok(out.record(&client.acknowledge_alert(tenant, alert_id).await?)?)
        }
        AlertsCommand::Settings(AlertSettingsCommand::Get { tenant }) => {
            let settings = client.get_alert_settings(tenant).await?;
            show(out, &settings, "")
        }
        AlertsCommand::Settings(AlertSettingsCommand::Set(args)) => {
            let tenant = args.tenant.clone();
            let answer = client.set_alert_settings(tenant, settings(args)?).await?;
            show(
                out,
                &answer.settings.unwrap_or_default(),
                &answer.generated_secret,
            )
        }
    }
}

/// The settings `set` sends: the sink (its secret read from a file) and the rules,
/// those of `--rule` first, then one disabled rule per `--disable`.
fn settings(args: SetAlertSettingsArgs) -> anyhow::Result<AlertSettings> {
    let sink = match args.sink_url {
        Some(url) => Some(AlertSink {
            url,
            format: args
                .sink_format
                .map_or(AlertSinkFormat::Standard, AlertSinkFormat::from)
                .into(),
            secret: args
                .sink_secret_file
                .as_deref()
                .map(read_secret)
                .transpose()?
                .unwrap_or_default(),
            has_secret: false,
        }),
        None => None,
    };
    let disabled = args.disabled.into_iter().map(|kind| AlertRule {
        r#type: kind,
        enabled: false,
        ..Default::default()
    });
    Ok(AlertSettings {
        sink,
        rules: args.rules.into_iter().chain(disabled).collect(),
    })
}

/// Prints settings: for people the sink's fields then the rules' table, for scripts
/// one document; a secret hookd generated comes last, with the once-only warning.
fn show(out: Output, settings: &AlertSettings, generated_secret: &str) -> anyhow::Result<()> {
    let mut document = settings_json(settings);
    if !generated_secret.is_empty() {
        document["generated_secret"] = json!(generated_secret);
    }
    if out.is_document() {
        match generated_secret.is_empty() {
            true => out.document(&document)?,
            false => out.once(Vec::new(), &document)?,
        }
        return Ok(());
    }
    out.fields(&SinkFields(settings.sink.as_ref()))?;
    writeln!(io::stdout().lock())?;
    out.table(&settings.rules)?;
    if !generated_secret.is_empty() {
        writeln!(io::stdout().lock())?;
        out.once(
            vec![("sink secret", generated_secret.to_owned())],
            &document,
        )?;
    }
    Ok(())
}

fn settings_json(settings: &AlertSettings) -> Value {
    json!({
        "sink": settings.sink.as_ref().map(sink_json),
        "rules": settings.rules.iter().map(View::json).collect::<Vec<_>>(),
    })
}

fn sink_json(sink: &AlertSink) -> Value {
    json!({
        "url": sink.url,
        "format": format_label(sink.format),
        "has_secret": sink.has_secret,
    })
}

/// `ALERT_SINK_FORMAT_SLACK` -> `slack`: the spelling `--sink-format` accepts.
fn format_label(raw: i32) -> String {
    AlertSinkFormat::try_from(raw)
        .map(|format| short_name(format.as_str_name(), "ALERT_SINK_FORMAT_"))
        .unwrap_or_else(|_| raw.to_string())
}

/// `ALERT_STATE_ACKNOWLEDGED` -> `acknowledged`: the spelling `--state` accepts.
fn state_label(raw: i32) -> String {
    AlertState::try_from(raw)
        .map(|state| short_name(state.as_str_name(), "ALERT_STATE_"))
        .unwrap_or_else(|_| raw.to_string())
}

/// A tenant's sink as a field list; none is said in words.
struct SinkFields<'a>(Option<&'a AlertSink>);

impl View for SinkFields<'_> {
    const COLUMNS: &'static [&'static str] = &["SINK", "FORMAT", "SECRET"];

    fn cells(&self) -> Vec<String> {
        match self.0 {
            Some(sink) => vec![
                sink.url.clone(),
                format_label(sink.format),
                if sink.has_secret { "set" } else { "-" }.to_owned(),
            ],
            None => vec![
                "none (the operator's sink only)".into(),
                "-".into(),
                "-".into(),
            ],
        }
    }

    fn json(&self) -> Value {
        self.0.map_or_else(|| json!({ "sink": null }), sink_json)
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        ["sink", "format", "secret"]
            .into_iter()
            .zip(self.cells())
            .collect()
    }
}

impl View for AlertRule {
    const COLUMNS: &'static [&'static str] = &["TYPE", "ENABLED", "THRESHOLD", "WINDOW", "MODE"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.r#type.clone(),
            self.enabled.to_string(),
            self.threshold.to_string(),
            format!("{}s", self.window_secs),
            or_dash(&self.mode),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "type": self.r#type,
            "enabled": self.enabled,
            "threshold": self.threshold,
            "window_secs": self.window_secs,
            "mode": self.mode,
        })
    }
}

impl View for Alert {
    const COLUMNS: &'static [&'static str] =
        &["ID", "TYPE", "SUBJECT", "STATE", "OPENED", "SUMMARY"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.r#type.clone(),
            or_dash(&self.subject),
            state_label(self.state),
            when(self.opened_at_unix_ms),
            self.summary.clone(),
        ]
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("alert", self.id.clone()),
            ("tenant", self.tenant_id.clone()),
            ("type", self.r#type.clone()),
            ("subject", or_dash(&self.subject)),
            ("state", state_label(self.state)),
            ("summary", self.summary.clone()),
            ("opened", when(self.opened_at_unix_ms)),
            ("last seen", when(self.last_seen_at_unix_ms)),
            ("acknowledged", when(self.acknowledged_at_unix_ms)),
            ("resolved", when(self.resolved_at_unix_ms)),
            ("occurrences", self.occurrences.to_string()),
            ("notifications", self.notifications.to_string()),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "id": self.id,
            "tenant_id": self.tenant_id,
            "type": self.r#type,
            "subject": self.subject,
            "state": state_label(self.state),
            "summary": self.summary,
            "opened_at_unix_ms": self.opened_at_unix_ms,
            "last_seen_at_unix_ms": self.last_seen_at_unix_ms,
            "acknowledged_at_unix_ms": self.acknowledged_at_unix_ms,
            "resolved_at_unix_ms": self.resolved_at_unix_ms,
            "occurrences": self.occurrences,
            "notifications": self.notifications,
        })
    }
}
