//! Stepping one condition of a tenant: its alert stored and its notifications
//! queued on a transition, its last sighting while it holds.

use std::sync::Arc;

use hookd_proto::domain::AlertType;

use super::{readings::Level, Condition, Outbox, TenantState};
use crate::{
    alerts::{
        debounce::Transition,
        event::{self, Measure},
        records::{AlertRecord, StoredState},
        rules::Rule,
        Alerts, Resolved,
    },
    ids::TenantId,
    metrics::TenantMetrics,
};

impl Alerts {
    /// Drops the conditions in `gone` and resolves their open alerts, at
    /// once: a subject that went away cannot flap.
    pub(super) fn resolve_gone(
        &self,
        on: (&TenantId, &Arc<TenantMetrics>),
        state: &mut TenantState,
        gone: Vec<(AlertType, String)>,
        now: i64,
        out: &mut Outbox<'_>,
    ) {
        for (kind, subject) in gone {
            let open = state.conditions.remove(&(kind, subject));
            let Some(alert) = open.and_then(|c| c.alert) else {
                continue;
            };
            let m = measure(0, state.settings.rules.get(kind));
            let alert = self.resolved(on.0, alert, Resolution::Gone(gone_reason(kind)), now);
            self.notify(on, &state.settings, alert, (kind, m), out);
        }
    }

    /// Steps one condition; on a transition, stores it and queues its
    /// notifications; while it stays open and holds, stores what changed of
    /// its last sighting and occurrences (at most once per tick).
    ///
    /// Stepping one condition of a tenant: on a transition its alert is stored
    /// and one notification queued to each of the tenant's sinks; while it stays
    /// open and holds, its last sighting is stored.
    pub(super) fn step(
        &self,
        on: (&TenantId, &Arc<TenantMetrics>),
        state: &mut TenantState,
        (kind, subject, level): (AlertType, String, Level),
        now: i64,
        out: &mut Outbox<'_>,
    ) {
        let tenant = on.0;
        let rule = state.settings.rules.get(kind);
        let condition = state.conditions.entry((kind, subject.clone())).or_default();
        let (count, holds) = match level {
            Level::Total(total) => {
                let count = condition.window.count(now, total, rule.window_ms);
                (count, count >= rule.threshold)
            }
            Level::AtLeast(value) => (value, value >= rule.threshold),
            Level::Within(left) => (left, left <= rule.threshold),
            Level::Streak {
                failed,
                delivered,
                waited_secs,
            } => {
                let since = match condition.gate.is_open() {
                    true => *condition.delivered_at_open.get_or_insert(delivered),
                    false => {
                        condition.delivered_at_open = Some(delivered);
                        delivered
                    }
                };
                let open = condition.gate.is_open() && delivered == since;
                let aged = waited_secs.saturating_mul(1000) >= rule.window_ms.max(0) as u64;
                (failed, open || failed >= rule.threshold || aged)
            }
        };
        condition.holds = rule.enabled && holds;
        let m = match level {
            Level::Streak { waited_secs, .. } => Measure {
                waited_secs: Some(waited_secs),
                ..measure(count, rule)
            },
            _ => measure(count, rule),
        };
        if !rule.enabled {
            if let Some(alert) = condition.alert.take() {
                *condition = Condition::default();
                let alert = self.resolved(tenant, alert, Resolution::Gone("rule disabled"), now);
                self.notify(on, &state.settings, alert, (kind, m), out);
            }
            return;
        }
        let alert = match condition.gate.step(now, holds, rule.window_ms) {
            Some(Transition::Open) => AlertRecord {
                id: format!("alr_{}", ulid::Ulid::new()),
                delivery_ids: match kind {
                    AlertType::RouteFailing => state.incarnation.failed_ids(&subject),
                    _ => Vec::new(),
                },
                tenant_id: tenant.to_string(),
                alert_type: kind.as_str().to_owned(),
                subject: subject.clone(),
                state: StoredState::Open,
                summary: event::summary(kind, &subject, m),
                opened_at_ms: now,
                last_seen_at_ms: now,
                acknowledged_at_ms: None,
                resolved_at_ms: None,
                occurrences: count,
                notifications: 0,
            },
            Some(Transition::Resolve) => {
                let Some(held) = condition.alert.take() else {
                    return;
                };
                let why = match level {
                    Level::Streak { .. } => Resolution::Recovered,
                    _ => Resolution::Cleared,
                };
                self.resolved(tenant, held, why, now)
            }
            None => {
                if let Some(alert) = condition.alert.as_mut().filter(|_| holds) {
                    self.seen(tenant, alert, (now, count));
                }
                return;
            }
        };
        if let Some(alert) = self.notify(on, &state.settings, alert, (kind, m), out) {
            condition.alert = Some(alert);
        }
    }

    /// The stored alert behind `held` (acknowledged there, perhaps),
    /// resolved at `now`: its summary says why when its subject went away.
    fn resolved(
        &self,
        tenant: &TenantId,
        held: AlertRecord,
        why: Resolution,
        now: i64,
    ) -> AlertRecord {
        let mut alert = match self.inner.rows.get(tenant.as_str(), &held.id) {
            Ok(Some(stored)) => stored,
            _ => held.clone(),
        };
        alert.last_seen_at_ms = held.last_seen_at_ms.max(alert.last_seen_at_ms);
        alert.occurrences = held.occurrences.max(alert.occurrences);
        alert.state = StoredState::Resolved;
        alert.resolved_at_ms = Some(now);
        match why {
            Resolution::Gone(reason) => {
                alert.summary = format!("{}; resolved: {reason}", alert.summary);
            }
            Resolution::Recovered => {
                alert.summary = event::recovered(&alert.subject, alert.occurrences);
            }
            Resolution::Cleared => {}
        }
        alert
    }

    /// Records that an open alert's condition still holds at `now` with
    /// `count`: stored (over what the control plane changed, such as an
    /// acknowledgement) only when its last sighting or occurrences changed.
    fn seen(&self, tenant: &TenantId, alert: &mut AlertRecord, (now, count): (i64, u64)) {
        let occurrences = alert.occurrences.max(count);
        if (alert.last_seen_at_ms, alert.occurrences) == (now, occurrences) {
            return;
        }
        alert.last_seen_at_ms = now;
        alert.occurrences = occurrences;
        let stored = match self.inner.rows.get(tenant.as_str(), &alert.id) {
            Ok(Some(stored)) if stored.state != StoredState::Resolved => stored,
            Ok(_) => return,
            Err(e) => {
                tracing::error!(tenant = %tenant, alert = %alert.id, error = %e, "reading an alert failed");
                return;
            }
        };
        let updated = AlertRecord {
            last_seen_at_ms: now,
            occurrences: occurrences.max(stored.occurrences),
            ..stored
        };
        if let Err(e) = self.inner.rows.put(&updated) {
            tracing::error!(tenant = %tenant, alert = %alert.id, error = %e, "storing an alert failed");
        }
    }

    /// Queues one notification of `alert`'s transition to each sink of
    /// `settings` (the operator's while its budget lasts) and stores it;
    /// the alert back while it stays open.
    fn notify(
        &self,
        (tenant, metrics): (&TenantId, &Arc<TenantMetrics>),
        settings: &Resolved,
        mut alert: AlertRecord,
        (kind, m): (AlertType, Measure),
        out: &mut Outbox<'_>,
    ) -> Option<AlertRecord> {
        let now = alert.resolved_at_ms.unwrap_or(alert.opened_at_ms);
        let id = format!("ntf_{}", ulid::Ulid::new());
        let body = event::event(&id, &alert, kind, m);
        let event_type = match alert.state {
            StoredState::Resolved => {
                out.resolved_at = Some(now);
                kind.resolved_event_type()
            }
            _ => kind.as_str(),
        };
        for sink in &settings.sinks {
            if sink.is_operator() && !out.operator.admit(now, tenant, event_type) {
                metrics.alerts().held(kind);
                continue;
            }
            let queue = sink.queue(&id, event::body(sink.format(), &body), now);
            out.queued.push((Some((metrics.clone(), kind)), queue));
            alert.notifications += 1;
        }
        match alert.state {
            StoredState::Resolved => metrics.alerts().resolved(kind),
            _ => metrics.alerts().opened(kind),
        }
        if let Err(e) = self.inner.rows.put(&alert) {
            tracing::error!(tenant = %tenant, alert = %alert.id, error = %e, "storing an alert failed");
        }
        tracing::warn!(tenant = %tenant, alert = %alert.id, alert_type = kind.as_str(), subject = %alert.subject, state = ?alert.state, "alert {}", if alert.state == StoredState::Resolved { "resolved" } else { "opened" });
        (alert.state != StoredState::Resolved).then_some(alert)
    }
}

/// Why an alert resolves.
#[derive(Debug, Clone, Copy)]
enum Resolution {
    /// Its condition cleared.
    Cleared,
    /// Its destination delivered again after a run of failures.
    Recovered,
    /// Its subject or its rule went away (the words say which).
    Gone(&'static str),
}

/// What went away when a condition of `kind` is no longer read at all.
fn gone_reason(kind: AlertType) -> &'static str {
    match kind {
        AlertType::SecretPreviousExpiring => "key removed",
        _ => "route removed",
    }
}

/// What is reported of a count under `rule`.
fn measure(count: u64, rule: Rule) -> Measure {
    Measure {
        count,
        threshold: rule.threshold,
        window_secs: (rule.window_ms / 1000) as u64,
        waited_secs: None,
    }
}
