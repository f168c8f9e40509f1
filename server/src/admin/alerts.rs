//! AlertService over the server: a tenant's alert settings and its alerts
//! (the issues view).

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_control::{
    model::{
        AlertFilter, AlertSettingsView, AlertSinkFormat, AlertState, AlertView, NewAlertSettings,
        Page, PageRequest, SetAlertSettingsOutcome,
    },
    Error as ApiError, Result as ApiResult,
};
use rand::RngCore;
use secrecy::SecretString;
use zeroize::Zeroizing;

use super::{api, Backend};
use crate::{
    alerts::{sink_secret, RuleOverride, StoredSettings, StoredSink, StoredState},
    config::SinkFormat,
    ids::TenantId,
};

impl Backend {
    /// The tenant's id, if it runs here or is stored.
    fn alert_tenant(&self, tenant_id: &str) -> ApiResult<TenantId> {
        let id = TenantId::try_from(tenant_id.to_owned())
            .map_err(|e| ApiError::InvalidArgument(e.to_string()))?;
        let known = self.registry.get(tenant_id).is_some()
            || self.config_tenants.contains(tenant_id)
            || self.catalog.contains(tenant_id).map_err(api)?;
        match known {
            true => Ok(id),
            false => Err(ApiError::NotFound(format!("tenant {tenant_id}"))),
        }
    }

    pub(super) fn alert_settings(&self, tenant_id: &str) -> ApiResult<AlertSettingsView> {
        let id = self.alert_tenant(tenant_id)?;
        self.alerts.settings_view(&id).map_err(api)
    }

    /// AlertService over the server: a tenant's alert settings (kept in the
    /// catalog's rows, the sink's secret sealed, in force when the call
    /// returns) and its alerts (the issues view), newest first.
    pub(super) fn put_alert_settings(
        &self,
        tenant_id: &str,
        new: NewAlertSettings,
    ) -> ApiResult<SetAlertSettingsOutcome> {
        let id = self.alert_tenant(tenant_id)?;
        if self.config_tenants.contains(tenant_id) {
            return Err(ApiError::FailedPrecondition(format!(
                "tenant {tenant_id} is declared in the config file; change its [tenants.alerts] there"
            )));
        }
        let rules: Vec<RuleOverride> = new.rules.iter().map(RuleOverride::from).collect();
        self.alerts
            .defaults()
            .overridden(&rules)
            .map_err(|e| ApiError::InvalidArgument(e.to_string()))?;
        let rows = self.alerts.rows();
        let before = rows.settings(tenant_id).map_err(api)?;
        let mut generated = None;
        let sink = match new.sink {
            None => None,
            Some(sink) => {
                self.check_sink_url(&sink.url)?;
                let sealed_secret = match (sink.secret, before.sink) {
                    (Some(secret), _) => {
                        let secret = SecretString::from(secret);
                        sink_secret(&secret)
                            .map_err(|e| ApiError::InvalidArgument(format!("sink.secret: {e}")))?;
                        self.alerts.seal(tenant_id, &secret)
                    }
                    (None, Some(kept)) => kept.sealed_secret,
                    (None, None) => {
                        let secret = new_sink_secret();
                        let sealed = self.alerts.seal(tenant_id, &secret);
                        generated = Some(secret);
                        sealed
                    }
                };
                Some(StoredSink {
                    url: sink.url,
                    format: match sink.format {
                        AlertSinkFormat::Standard => SinkFormat::Standard,
                        AlertSinkFormat::Slack => SinkFormat::Slack,
                    },
                    sealed_secret,
                })
            }
        };
        rows.put_settings(tenant_id, &StoredSettings { sink, rules })
            .map_err(api)?;
        self.alerts.reload(&id).map_err(api)?;
        Ok(SetAlertSettingsOutcome {
            settings: self.alerts.settings_view(&id).map_err(api)?,
            generated_secret: generated
                .map(|s| secrecy::ExposeSecret::expose_secret(&s).to_owned()),
        })
    }

    /// Refuses a sink URL that is not absolute http(s) or whose literal
    /// address the destination address policy denies.
    fn check_sink_url(&self, url: &str) -> ApiResult<()> {
        let parsed = reqwest::Url::parse(url)
            .ok()
            .filter(|u| matches!(u.scheme(), "http" | "https"))
            .ok_or_else(|| {
                ApiError::InvalidArgument(format!(
                    "sink.url: {url:?} is not an absolute http(s) URL"
                ))
            })?;
        self.alerts
            .policy()
            .check_url(&parsed)
            .map_err(|denied| ApiError::InvalidArgument(format!("sink.url: {}", denied.refusal())))
    }

    pub(super) fn alerts_page(
        &self,
        tenant_id: &str,
        filter: &AlertFilter,
        page: &PageRequest,
    ) -> ApiResult<Page<AlertView>> {
        self.alert_tenant(tenant_id)?;
        let all = self.alerts.rows().all(tenant_id).map_err(api)?;
        let after = match &page.token {
            None => None,
            Some(token) => match all.iter().position(|a| &a.id == token) {
                Some(at) => Some(at),
                None => return Err(ApiError::InvalidArgument("page_token is not valid".into())),
            },
        };
        let wanted = |a: &&crate::alerts::AlertRecord| {
            filter.states.is_empty() || filter.states.contains(&AlertState::from(a.state))
        };
        let size = page.size.clamp(1, 1000) as usize;
        let mut rest = all.iter().skip(after.map_or(0, |at| at + 1)).filter(wanted);
        let items: Vec<AlertView> = rest.by_ref().take(size).map(|a| a.view()).collect();
        let next_token = match rest.next().is_some() {
            true => items.last().map(|a| a.id.clone()),
            false => None,
        };
        Ok(Page { items, next_token })
    }

    pub(super) fn acknowledge(&self, tenant_id: &str, alert_id: &str) -> ApiResult<AlertView> {
        self.alert_tenant(tenant_id)?;
        let rows = self.alerts.rows();
        let mut alert = rows
            .get(tenant_id, alert_id)
            .map_err(api)?
            .ok_or_else(|| ApiError::NotFound(format!("alert {alert_id}")))?;
        match alert.state {
            StoredState::Resolved => {
                return Err(ApiError::FailedPrecondition(format!(
                    "alert {alert_id} is resolved"
                )))
            }
            StoredState::Acknowledged => {}
            StoredState::Open => {
                alert.state = StoredState::Acknowledged;
                alert.acknowledged_at_ms = Some(self.now_ms());
                rows.put(&alert).map_err(api)?;
            }
        }
        Ok(alert.view())
    }
}

/// A fresh Standard Webhooks secret for a sink given without one.
fn new_sink_secret() -> SecretString {
    let mut raw = Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(raw.as_mut_slice());
    SecretString::from(format!("whsec_{}", STANDARD.encode(raw.as_slice())))
}
