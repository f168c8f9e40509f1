//! The fake's alerts: settings kept per tenant in memory, alerts a test seeds
//! and AlertService's acknowledge transitions; nothing opens or is sent.

use std::{collections::BTreeMap, sync::Mutex};

use hookd_proto::domain::AlertType;

use crate::{
    error::{Error, Result},
    model::{
        AlertFilter, AlertRuleView, AlertSettingsView, AlertSinkView, AlertState, AlertView,
        NewAlertSettings, Page, TenantView,
    },
};

/// The secret the fake "generates" for a new sink given without one.
pub const GENERATED_SINK_SECRET: &str = "whsec_ZmFrZS1zaW5r";

/// When the fake acknowledges an alert.
pub const ACKNOWLEDGED_AT_MS: i64 = 1_700_000_100_000;

/// The fake's default rule for every type: one occurrence in 300 s;
/// `route.failing` on three failed attempts in a row.
fn default_rule(kind: AlertType) -> AlertRuleView {
    let failing = kind == AlertType::RouteFailing;
    AlertRuleView {
        alert_type: kind.as_str().to_owned(),
        enabled: true,
        threshold: if failing { 3 } else { 1 },
        window_secs: 300.0,
        mode: failing.then(|| "consecutive".to_owned()),
        overridden: false,
    }
}

/// `given` over the default, its 0s and `None` read as "the default".
fn in_force(given: &AlertRuleView, default: AlertRuleView) -> AlertRuleView {
    AlertRuleView {
        alert_type: default.alert_type.clone(),
        enabled: given.enabled,
        threshold: match given.threshold {
            0 => default.threshold,
            n => n,
        },
        window_secs: if given.window_secs > 0.0 {
            given.window_secs
        } else {
            default.window_secs
        },
        mode: given.mode.clone().or(default.mode),
        overridden: true,
    }
}

/// An open alert of `tenant_id` about the tenant itself, opened at `opened_at_ms`,
/// for a test to seed with [`crate::fake::FakeBackend::add_alert`].
pub fn alert(tenant_id: &str, id: &str, kind: AlertType, opened_at_ms: i64) -> AlertView {
    AlertView {
        id: id.into(),
        tenant_id: tenant_id.into(),
        alert_type: kind.as_str().into(),
        subject: String::new(),
        state: AlertState::Open,
        summary: format!("{kind} on tenant {tenant_id}"),
        opened_at_unix_ms: opened_at_ms,
        last_seen_at_unix_ms: opened_at_ms,
        acknowledged_at_unix_ms: None,
        resolved_at_unix_ms: None,
        occurrences: 1,
        notifications: 1,
        delivery_ids: Vec::new(),
    }
}

/// Settings and alerts of every tenant.
///
/// The fake's alerts: settings kept per tenant in memory (every type of the
/// catalogue filled in with one default rule), alerts a test seeds, and the
/// acknowledge transitions AlertService documents. Nothing ever opens an
/// alert by itself and nothing is sent.
#[derive(Default)]
pub(super) struct FakeAlerts {
    settings: Mutex<BTreeMap<String, AlertSettingsView>>,
    alerts: Mutex<Vec<AlertView>>,
}

impl FakeAlerts {
    pub(super) fn add(&self, alert: AlertView) {
        self.alerts.lock().unwrap().push(alert);
    }

    pub(super) fn settings(&self, tenant: &TenantView) -> AlertSettingsView {
        self.settings
            .lock()
            .unwrap()
            .get(&tenant.tenant_id)
            .cloned()
            .unwrap_or_else(|| AlertSettingsView {
                sink: None,
                rules: AlertType::ALL.map(default_rule).to_vec(),
            })
    }

    /// Replaces the settings; a new sink without a secret gets
    /// [`GENERATED_SINK_SECRET`], an existing one keeps its own.
    pub(super) fn set(
        &self,
        tenant: &TenantView,
        new: NewAlertSettings,
    ) -> Result<(AlertSettingsView, Option<String>)> {
        if tenant.from_config {
            return Err(Error::FailedPrecondition(format!(
                "tenant \"{}\" is declared in the config file; change it there",
                tenant.tenant_id
            )));
        }
        let had_sink = self.settings(tenant).sink.is_some();
        let generated = new
            .sink
            .as_ref()
            .is_some_and(|s| s.secret.is_none() && !had_sink)
            .then(|| GENERATED_SINK_SECRET.to_owned());
        let rules = AlertType::ALL
            .map(|kind| {
                let default = default_rule(kind);
                match new.rules.iter().find(|r| r.alert_type == kind.as_str()) {
                    Some(given) => in_force(given, default),
                    None => default,
                }
            })
            .to_vec();
        let view = AlertSettingsView {
            sink: new.sink.map(|s| AlertSinkView {
                url: s.url,
                format: s.format,
                has_secret: true,
            }),
            rules,
        };
        self.settings
            .lock()
            .unwrap()
            .insert(tenant.tenant_id.clone(), view.clone());
        Ok((view, generated))
    }

    /// A page of `size` from offset `token`, newest first.
    pub(super) fn list(
        &self,
        tenant_id: &str,
        filter: &AlertFilter,
        token: Option<&str>,
        size: usize,
    ) -> Result<Page<AlertView>> {
        let start: usize = token
            .map(|t| t.parse())
            .transpose()
            .map_err(|_| Error::InvalidArgument("page_token: not from ListAlerts".into()))?
            .unwrap_or(0);
        let mut matching: Vec<AlertView> = self
            .alerts
            .lock()
            .unwrap()
            .iter()
            .filter(|a| a.tenant_id == tenant_id)
            .filter(|a| filter.states.is_empty() || filter.states.contains(&a.state))
            .cloned()
            .collect();
        matching.sort_by_key(|a| std::cmp::Reverse(a.opened_at_unix_ms));
        let end = (start + size).min(matching.len());
        Ok(Page {
            items: matching.get(start..end).unwrap_or_default().to_vec(),
            next_token: (end < matching.len()).then(|| end.to_string()),
        })
    }

    /// Open -> acknowledged; acknowledged stays; resolved is refused.
    pub(super) fn acknowledge(&self, tenant_id: &str, alert_id: &str) -> Result<AlertView> {
        let mut alerts = self.alerts.lock().unwrap();
        let alert = alerts
            .iter_mut()
            .find(|a| a.tenant_id == tenant_id && a.id == alert_id)
            .ok_or_else(|| Error::NotFound(format!("tenant has no alert \"{alert_id}\"")))?;
        match alert.state {
            AlertState::Open => {
                alert.state = AlertState::Acknowledged;
                alert.acknowledged_at_unix_ms = Some(ACKNOWLEDGED_AT_MS);
            }
            AlertState::Acknowledged => {}
            AlertState::Resolved => {
                return Err(Error::FailedPrecondition(format!(
                    "alert \"{alert_id}\" is resolved; there is nothing to acknowledge"
                )))
            }
        }
        Ok(alert.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{fake::tenant, model::NewAlertSink};

    #[test]
    fn acknowledging_moves_open_to_acknowledged_once_and_refuses_resolved() {
        let alerts = FakeAlerts::default();
        alerts.add(alert("acme", "alr_1", AlertType::RouteFailing, 10));
        alerts.add(AlertView {
            state: AlertState::Resolved,
            ..alert("acme", "alr_2", AlertType::HandshakeFailed, 20)
        });
        let first = alerts.acknowledge("acme", "alr_1").unwrap();
        assert_eq!(first.state, AlertState::Acknowledged);
        assert_eq!(first.acknowledged_at_unix_ms, Some(ACKNOWLEDGED_AT_MS));
        assert_eq!(alerts.acknowledge("acme", "alr_1").unwrap(), first);
        assert!(matches!(
            alerts.acknowledge("acme", "alr_2"),
            Err(Error::FailedPrecondition(_))
        ));
        assert!(matches!(
            alerts.acknowledge("globex", "alr_1"),
            Err(Error::NotFound(_))
        ));
    }

    #[test]
    fn a_new_sink_gets_a_secret_once_and_rules_fill_in_defaults() {
        let alerts = FakeAlerts::default();
        let acme = tenant("acme", None);
        let sink = NewAlertSink {
            url: "https://ops.test/alerts".into(),
            format: Default::default(),
            secret: None,
        };
        let new = NewAlertSettings {
            sink: Some(sink),
            rules: vec![AlertRuleView {
                alert_type: "handshake.failed".into(),
                enabled: false,
                threshold: 0,
                window_secs: 0.0,
                mode: None,
                overridden: false,
            }],
        };
        let (view, generated) = alerts.set(&acme, new.clone()).unwrap();
        assert_eq!(generated.as_deref(), Some(GENERATED_SINK_SECRET));
        assert_eq!(view.rules.len(), AlertType::ALL.len());
        let handshake = view.rules.last().unwrap();
        assert_eq!((handshake.enabled, handshake.threshold), (false, 1));
        assert_eq!(alerts.set(&acme, new).unwrap().1, None, "kept, not new");
        assert_eq!(alerts.settings(&acme), view);
    }
}
