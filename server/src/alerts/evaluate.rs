//! The evaluator: a task on the server's clock that, every
//! `alerts.evaluate_every_secs`, reads each running tenant's signals (and,
//! every [`STORAGE_EVERY_MS`], its routes' queue counts and its keys),
//! steps each condition's gate and, on a transition, stores the alert and
//! queues one notification to each of the tenant's sinks. Off the ingest
//! path: its storage work runs on the blocking pool.

use std::{collections::HashMap, sync::Arc};

use futures_util::future::BoxFuture;
use hookd_proto::domain::AlertType;

use super::{
    debounce::{Gate, Transition, Window},
    event::{self, Measure},
    records::{AlertRecord, StoredState},
    rules::FailingMode,
    Alerts, Resolved,
};
use crate::{
    ids::TenantId,
    metrics::TenantMetrics,
    store::api::{blocking, QueueCounts},
    tenant::TenantHandle,
};

/// How often queue counts are read from storage, at most.
const STORAGE_EVERY_MS: i64 = 15_000;

/// Evaluates every tenant's conditions until the task is dropped.
pub async fn run(alerts: Alerts) {
    let clock = alerts.inner.registry.clock().clone();
    loop {
        let now = clock.now_ms();
        alerts.tick(now).await;
        clock.sleep_until(now + alerts.inner.every_ms).await;
    }
}

/// One tenant's conditions and the settings they run under.
pub(crate) struct TenantState {
    pub(crate) settings: Resolved,
    conditions: HashMap<(AlertType, String), Condition>,
    storage: Vec<(String, QueueCounts)>,
    storage_read_at: Option<i64>,
}

#[derive(Default)]
struct Condition {
    gate: Gate,
    window: Window,
    alert: Option<AlertRecord>,
}

/// A notification being queued, with what counts it.
type Queued = (Arc<TenantMetrics>, AlertType, BoxFuture<'static, bool>);

/// What a condition reads as.
#[derive(Debug, Clone, Copy)]
enum Level {
    /// A monotonic total: holds when its count in the window reaches the threshold.
    Total(u64),
    /// A value now: holds when it reaches the threshold.
    AtLeast(u64),
    /// Seconds left: holds when at most the threshold.
    Within(u64),
}

impl Alerts {
    /// One evaluation at `now`; returns once its notifications are queued
    /// durably and its alerts stored.
    async fn tick(&self, now: i64) {
        let alerts = self.clone();
        match blocking(move || Ok(alerts.evaluate(now))).await {
            Ok(queued) => {
                let wrote = !queued.is_empty();
                for (metrics, kind, queue) in queued {
                    metrics.alerts().notified(kind, queue.await);
                }
                if wrote {
                    if let Err(e) = self.inner.registry.store().durable_barrier().await {
                        tracing::error!(error = %e, "making alerts durable failed");
                    }
                }
            }
            Err(e) => tracing::error!(error = %e, "evaluating alerts failed"),
        }
    }

    /// Steps every running tenant's conditions (blocks on storage).
    fn evaluate(&self, now: i64) -> Vec<Queued> {
        let handles = self.inner.registry.handles();
        let mut tenants = self.inner.tenants.lock().expect("alerts lock");
        tenants.retain(|id, _| handles.iter().any(|h| h.data().tenant() == id));
        let mut queued = Vec::new();
        for handle in handles {
            let id = handle.data().tenant().clone();
            if !tenants.contains_key(&id) {
                match self.load(&id, &handle.metrics) {
                    Ok(state) => tenants.insert(id.clone(), state),
                    Err(e) => {
                        tracing::error!(tenant = %id, error = %e, "loading the tenant's alerts failed");
                        continue;
                    }
                };
            }
            let state = tenants.get_mut(&id).expect("inserted above");
            for (kind, subject, level) in readings(&handle, state, now) {
                let on = (&id, &handle.metrics);
                self.step(on, state, (kind, subject, level), now, &mut queued);
            }
        }
        queued
    }

    /// A tenant's settings, its sinks started, and its alerts still open.
    fn load(&self, id: &TenantId, metrics: &TenantMetrics) -> crate::error::Result<TenantState> {
        let settings = self.resolve(id, true)?;
        let mut conditions = HashMap::new();
        for alert in self.inner.rows.all(id.as_str())? {
            let Ok(kind) = alert.alert_type.parse::<AlertType>() else {
                continue;
            };
            if alert.state == StoredState::Resolved {
                continue;
            }
            metrics.alerts().opened(kind);
            let condition = Condition {
                gate: Gate::opened_at(alert.opened_at_ms),
                window: Window::default(),
                alert: Some(alert.clone()),
            };
            conditions.insert((kind, alert.subject.clone()), condition);
        }
        Ok(TenantState {
            settings,
            conditions,
            storage: Vec::new(),
            storage_read_at: None,
        })
    }

    /// Steps one condition; on a transition, stores it and queues its
    /// notifications.
    fn step(
        &self,
        (tenant, metrics): (&TenantId, &Arc<TenantMetrics>),
        state: &mut TenantState,
        (kind, subject, level): (AlertType, String, Level),
        now: i64,
        queued: &mut Vec<Queued>,
    ) {
        let rule = state.settings.rules.get(kind);
        let condition = state.conditions.entry((kind, subject.clone())).or_default();
        let (count, holds) = match level {
            Level::Total(total) => {
                let count = condition.window.count(now, total, rule.window_ms);
                (count, count >= rule.threshold)
            }
            Level::AtLeast(value) => (value, value >= rule.threshold),
            Level::Within(left) => (left, left <= rule.threshold),
        };
        let holds = holds && rule.enabled;
        let measure = Measure {
            count,
            threshold: rule.threshold,
            window_secs: (rule.window_ms / 1000) as u64,
        };
        let mut alert = match condition.gate.step(now, holds, rule.window_ms) {
            Some(Transition::Open) => AlertRecord {
                id: format!("alr_{}", ulid::Ulid::new()),
                tenant_id: tenant.to_string(),
                alert_type: kind.as_str().to_owned(),
                subject: subject.clone(),
                state: StoredState::Open,
                summary: event::summary(kind, &subject, measure),
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
                let mut alert = match self.inner.rows.get(tenant.as_str(), &held.id) {
                    Ok(Some(stored)) => stored,
                    _ => held.clone(),
                };
                alert.last_seen_at_ms = held.last_seen_at_ms;
                alert.occurrences = held.occurrences.max(alert.occurrences);
                alert.state = StoredState::Resolved;
                alert.resolved_at_ms = Some(now);
                alert
            }
            None => {
                if let Some(alert) = condition.alert.as_mut().filter(|_| holds) {
                    alert.last_seen_at_ms = now;
                    alert.occurrences = alert.occurrences.max(count);
                }
                return;
            }
        };
        let id = format!("ntf_{}", ulid::Ulid::new());
        let body = event::event(&id, &alert, kind, measure);
        for sink in &state.settings.sinks {
            let queue = sink.queue(&id, event::body(sink.format(), &body), now);
            queued.push((metrics.clone(), kind, queue));
            alert.notifications += 1;
        }
        match alert.state {
            StoredState::Resolved => metrics.alerts().resolved(kind),
            _ => metrics.alerts().opened(kind),
        }
        if let Err(e) = self.inner.rows.put(&alert) {
            tracing::error!(tenant = %tenant, alert = %alert.id, error = %e, "storing an alert failed");
        }
        tracing::warn!(tenant = %tenant, alert = %alert.id, alert_type = kind.as_str(), subject = %subject, state = ?alert.state, "alert {}", if alert.state == StoredState::Resolved { "resolved" } else { "opened" });
        if alert.state != StoredState::Resolved {
            condition.alert = Some(alert);
        }
    }
}

/// Everything a tenant's conditions read as now.
fn readings(
    handle: &TenantHandle,
    state: &mut TenantState,
    now: i64,
) -> Vec<(AlertType, String, Level)> {
    let signals = &handle.signals;
    let mut out: Vec<(AlertType, String, Level)> = [
        AlertType::VerificationFailureSpike,
        AlertType::IngestRateLimited,
        AlertType::ContractRejectionSpike,
        AlertType::HandshakeFailed,
    ]
    .into_iter()
    .map(|kind| (kind, String::new(), Level::Total(signals.total(kind))))
    .collect();
    let mode = state.settings.rules.get(AlertType::RouteFailing).mode;
    for (route, r) in signals.routes() {
        let failing = match mode {
            FailingMode::FirstFailure => r.failed,
            FailingMode::LastAttempt => r.dead,
        };
        out.push((
            AlertType::RouteFailing,
            route.clone(),
            Level::Total(failing),
        ));
        out.push((
            AlertType::TransformFailing,
            route.clone(),
            Level::Total(r.transform_failed),
        ));
        let open = u64::from(r.breaker_open);
        out.push((AlertType::RouteCircuitOpened, route, Level::AtLeast(open)));
    }
    if let Some((secret, Some(until))) = &handle.settings().previous {
        // The overlap's end is in Unix seconds, the clock in ms.
        let until_ms = until.saturating_mul(1000);
        let left = u64::try_from((until_ms - now).max(0) / 1000).unwrap_or_default();
        let level = if until_ms > now {
            Level::Within(left)
        } else {
            Level::Within(u64::MAX)
        };
        out.push((
            AlertType::SecretPreviousExpiring,
            secret.kid().to_owned(),
            level,
        ));
    }
    if state
        .storage_read_at
        .is_none_or(|at| now - at >= STORAGE_EVERY_MS)
    {
        state.storage_read_at = Some(now);
        state.storage = handle
            .routes
            .iter()
            .filter_map(|route| match route.data.counts() {
                Ok(counts) => Some((route.name.clone(), counts)),
                Err(e) => {
                    tracing::warn!(tenant = %handle.data().tenant(), route = %route.name, error = %e, "reading queue counts for alerts failed");
                    None
                }
            })
            .collect();
    }
    for (route, counts) in &state.storage {
        out.push((
            AlertType::DeadLettersDepthExceeded,
            route.clone(),
            Level::AtLeast(counts.dead),
        ));
        let lag = counts.oldest_due_ms.map_or(0, |due| {
            u64::try_from((now - due).max(0) / 1000).unwrap_or_default()
        });
        out.push((
            AlertType::BacklogLagExceeded,
            route.clone(),
            Level::AtLeast(lag),
        ));
    }
    out
}
