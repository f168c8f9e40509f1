//! Alerts of one `tenant` label: `hookd_alerts_open` and
//! `hookd_alert_notifications_total`.

use hookd_proto::domain::AlertType;
use prometheus_client::metrics::{counter::Counter, family::Family, gauge::Gauge};

use super::Labels;

/// One label's alert gauges and counters.
///
/// Alerts of one `tenant` label: `hookd_alerts_open{tenant,type}` (open or
/// acknowledged alerts now) and `hookd_alert_notifications_total{tenant,
/// type,outcome}` (`queued`: written to a sink's queue, whose attempts are
/// `hookd_forward_attempts_total` of route `~alerts` or `~operator`;
/// `failed`: it could not be queued; `held`: the operator's sink's budget
/// held it back for the window's digest). Series appear with a type's
/// first alert.
pub struct AlertMetrics {
    label: String,
    open: Family<Labels, Gauge>,
    notifications: Family<Labels, Counter>,
}

impl AlertMetrics {
    pub(super) fn new(
        label: &str,
        open: Family<Labels, Gauge>,
        notifications: Family<Labels, Counter>,
    ) -> Self {
        AlertMetrics {
            label: label.to_owned(),
            open,
            notifications,
        }
    }

    fn labels(&self, kind: AlertType) -> Labels {
        vec![
            ("tenant", self.label.clone()),
            ("type", kind.as_str().to_owned()),
        ]
    }

    /// An alert of `kind` opened (or was found open at a start).
    pub fn opened(&self, kind: AlertType) {
        self.open.get_or_create(&self.labels(kind)).inc();
    }

    /// An alert of `kind` resolved.
    pub fn resolved(&self, kind: AlertType) {
        self.open.get_or_create(&self.labels(kind)).dec();
    }

    /// A notification about `kind` was queued to a sink (`queued`) or not.
    pub fn notified(&self, kind: AlertType, queued: bool) {
        let mut labels = self.labels(kind);
        labels.push((
            "outcome",
            if queued { "queued" } else { "failed" }.to_owned(),
        ));
        self.notifications.get_or_create(&labels).inc();
    }

    /// A notification about `kind` to the operator's sink was held back
    /// for the window's digest.
    pub fn held(&self, kind: AlertType) {
        let mut labels = self.labels(kind);
        labels.push(("outcome", "held".to_owned()));
        self.notifications.get_or_create(&labels).inc();
    }
}
