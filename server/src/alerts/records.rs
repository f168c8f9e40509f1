//! Alerts and a tenant's alert settings as catalog rows, the same on every
//! engine.

use std::sync::Arc;

use hookd_control::model::{AlertState, AlertView};
use serde::{Deserialize, Serialize};

use super::rules::RuleOverride;
use crate::{
    config::SinkFormat,
    error::{Error, Result},
    store::api::{CatalogRows, RowChange, Table},
};

/// Where an alert stands, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StoredState {
    /// The condition holds.
    Open,
    /// The condition holds and someone is on it.
    Acknowledged,
    /// The condition cleared.
    Resolved,
}

impl From<StoredState> for AlertState {
    fn from(state: StoredState) -> Self {
        match state {
            StoredState::Open => AlertState::Open,
            StoredState::Acknowledged => AlertState::Acknowledged,
            StoredState::Resolved => AlertState::Resolved,
        }
    }
}

/// One alert, from when it opened until it resolved.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AlertRecord {
    /// `alr_<ulid>`.
    pub id: String,
    /// The deliveries behind it when it opened (`route.failing`: the
    /// route's latest failed ones, newest last); empty for other types.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub delivery_ids: Vec<String>,
    /// The tenant.
    pub tenant_id: String,
    /// The alert type's name.
    pub alert_type: String,
    /// A route, a key id, or empty.
    pub subject: String,
    /// Where it stands.
    pub state: StoredState,
    /// In plain words.
    pub summary: String,
    /// When it opened (Unix ms).
    pub opened_at_ms: i64,
    /// The last evaluation that saw the condition hold.
    pub last_seen_at_ms: i64,
    /// When someone acknowledged it.
    pub acknowledged_at_ms: Option<i64>,
    /// When it resolved.
    pub resolved_at_ms: Option<i64>,
    /// Occurrences counted while open (the largest count seen).
    pub occurrences: u64,
    /// Notifications queued for it, to every sink.
    pub notifications: u32,
}

impl AlertRecord {
    /// As the control plane shows it.
    pub fn view(&self) -> AlertView {
        AlertView {
            id: self.id.clone(),
            tenant_id: self.tenant_id.clone(),
            alert_type: self.alert_type.clone(),
            subject: self.subject.clone(),
            state: self.state.into(),
            summary: self.summary.clone(),
            opened_at_unix_ms: self.opened_at_ms,
            last_seen_at_unix_ms: self.last_seen_at_ms,
            acknowledged_at_unix_ms: self.acknowledged_at_ms,
            resolved_at_unix_ms: self.resolved_at_ms,
            occurrences: self.occurrences,
            notifications: self.notifications,
            delivery_ids: self.delivery_ids.clone(),
        }
    }

    fn key(&self) -> String {
        key(&self.tenant_id, &self.id)
    }
}

fn key(tenant: &str, id: &str) -> String {
    format!("{tenant}/{id}")
}

/// A tenant's sink as stored: its secret sealed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredSink {
    /// Absolute http(s) URL, checked against the address policy.
    pub url: String,
    /// How events are written.
    pub format: SinkFormat,
    /// The `whsec_` secret, sealed for (tenant, `alert-sink`).
    pub sealed_secret: Vec<u8>,
}

/// A tenant's alert settings as stored.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct StoredSettings {
    /// Its own sink.
    pub sink: Option<StoredSink>,
    /// Its overrides of the defaults.
    pub rules: Vec<RuleOverride>,
}

pub use crate::config::SINK_KID;

/// Alerts and alert settings in the catalog's rows.
///
/// Alerts and a tenant's alert settings as catalog rows, the same on every
/// engine: `Table::Alerts` keyed `tenant/alr_<ulid>` (ids sort by time, so
/// a tenant's newest are its last keys) and `Table::AlertSettings` keyed
/// by tenant, the sink's secret sealed with the master key.
#[derive(Clone)]
pub struct AlertRows {
    rows: Arc<dyn CatalogRows>,
}

impl AlertRows {
    /// Over the store's catalog rows.
    pub fn new(rows: Arc<dyn CatalogRows>) -> AlertRows {
        AlertRows { rows }
    }

    /// Writes `alert` (new or changed).
    pub fn put(&self, alert: &AlertRecord) -> Result<()> {
        let value = serde_json::to_vec(alert).expect("records serialize");
        self.rows
            .apply(&[RowChange::Put(Table::Alerts, alert.key(), value)])
    }

    /// One alert of a tenant.
    pub fn get(&self, tenant: &str, id: &str) -> Result<Option<AlertRecord>> {
        self.rows
            .get(Table::Alerts, &key(tenant, id))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Every alert of a tenant, newest first.
    pub fn all(&self, tenant: &str) -> Result<Vec<AlertRecord>> {
        let mut all = self
            .rows
            .scan(Table::Alerts, &format!("{tenant}/"))?
            .into_iter()
            .map(|(_, bytes)| decode::<AlertRecord>(&bytes))
            .collect::<Result<Vec<_>>>()?;
        all.reverse();
        Ok(all)
    }

    /// A tenant's stored settings (default: none).
    pub fn settings(&self, tenant: &str) -> Result<StoredSettings> {
        Ok(match self.rows.get(Table::AlertSettings, tenant)? {
            Some(bytes) => decode(&bytes)?,
            None => StoredSettings::default(),
        })
    }

    /// Replaces a tenant's settings.
    pub fn put_settings(&self, tenant: &str, settings: &StoredSettings) -> Result<()> {
        let value = serde_json::to_vec(settings).expect("settings serialize");
        self.rows.apply(&[RowChange::Put(
            Table::AlertSettings,
            tenant.to_owned(),
            value,
        )])
    }

    /// Removes the tenant's alerts resolved at or before `before_ms`; hands
    /// back how many, and when the earliest resolved one it keeps resolved.
    pub fn expire(&self, tenant: &str, before_ms: i64) -> Result<(usize, Option<i64>)> {
        let mut changes = Vec::new();
        let mut kept: Option<i64> = None;
        for alert in self.all(tenant)? {
            let Some(resolved) = alert
                .resolved_at_ms
                .filter(|_| alert.state == StoredState::Resolved)
            else {
                continue;
            };
            match resolved <= before_ms {
                true => changes.push(RowChange::Remove(Table::Alerts, alert.key())),
                false => kept = Some(kept.map_or(resolved, |k| k.min(resolved))),
            }
        }
        if !changes.is_empty() {
            self.rows.apply(&changes)?;
        }
        Ok((changes.len(), kept))
    }

    /// Removes every alert and the settings of a deleted tenant.
    pub fn drop_tenant(&self, tenant: &str) -> Result<()> {
        let mut changes: Vec<RowChange> = self
            .rows
            .scan(Table::Alerts, &format!("{tenant}/"))?
            .into_iter()
            .map(|(k, _)| RowChange::Remove(Table::Alerts, k))
            .collect();
        changes.push(RowChange::Remove(Table::AlertSettings, tenant.to_owned()));
        self.rows.apply(&changes)
    }
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("alert row: {e}")))
}
