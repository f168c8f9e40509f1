//! The evaluator: a task on the server's clock that, every
//! `alerts.evaluate_every_secs`, reads the running tenants that may have
//! something new: those whose signals changed or that the registry
//! started, changed or stopped since (the [`Touched`](super::Touched)
//! list), and those whose own schedule is due (a storage reading every
//! [`STORAGE_EVERY_MS`], a backlog about to reach its threshold, a window
//! about to settle, an open alert, an expiring key). For each it steps each
//! condition's gate
//! and, on a transition, stores the alert and queues one notification to
//! each of the tenant's sinks. A quiet tenant costs nothing until one of
//! these comes. Off the ingest path: its storage work runs on the blocking
//! pool.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, HashSet},
    sync::Arc,
};

use futures_util::future::BoxFuture;
use hookd_proto::domain::AlertType;

use super::{
    debounce::{Gate, Transition, Window},
    event::{self, Measure},
    records::{AlertRecord, StoredState},
    rules::{FailingMode, Rule},
    signals::{RouteReading, Signals},
    Alerts, Resolved,
};
use crate::{
    config::TenantSettings,
    ids::TenantId,
    metrics::TenantMetrics,
    store::api::{blocking, QueueCounts},
    tenant::{RouteHandle, TenantHandle},
};

/// How often queue counts are read from storage, at most.
const STORAGE_EVERY_MS: i64 = 15_000;

/// How late a queue whose oldest pending delivery was due at `due_ms` is at
/// `now`, in whole seconds: the backlog rule's reading.
fn lag_secs(due_ms: i64, now: i64) -> u64 {
    u64::try_from((now - due_ms).max(0) / 1000).unwrap_or_default()
}

/// From when stepping the backlog rule (`rule`) for a queue whose oldest
/// pending delivery was due at `oldest_due_ms` could find something to do:
/// once the queue's lag reaches the threshold (`i64::MAX`: never, the queue
/// being empty or the rule off; `None`: at once, a threshold of 0). A
/// queue's lag grows with the clock, but until it reaches the threshold its
/// reading does not hold, so a tenant with a backlog is evaluated once its
/// lag could open an alert, not at every tick.
fn backlog_wakes_at(rule: Rule, oldest_due_ms: Option<i64>) -> Option<i64> {
    match oldest_due_ms {
        Some(_) if !rule.enabled => Some(i64::MAX),
        None => Some(i64::MAX),
        Some(_) if rule.threshold == 0 => None,
        Some(due) => {
            let threshold_ms =
                i64::try_from(rule.threshold.saturating_mul(1000)).unwrap_or(i64::MAX);
            Some(due.saturating_add(threshold_ms))
        }
    }
}

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
    /// The signals of the tenant they were read from: kept by the registry
    /// across the tenant's restarts and updates, new when it is created
    /// again after a delete, so a state is never carried over to a new
    /// tenant of the same id.
    incarnation: Arc<Signals>,
    /// Its label's counters, where its open alerts are counted.
    metrics: Arc<TenantMetrics>,
    settings: Resolved,
    conditions: HashMap<(AlertType, String), Condition>,
    storage: Vec<(String, QueueCounts)>,
    storage_read_at: Option<i64>,
    /// What its last evaluation read from; `None` before the first one and
    /// after its alert settings changed.
    seen: Option<Seen>,
    /// When it is next read unless it is touched first, while that is in
    /// the [`Book`]'s schedule.
    wakes_at: Option<i64>,
}

/// Every running tenant's conditions, and when each is read next.
#[derive(Default)]
pub(crate) struct Book {
    states: HashMap<TenantId, TenantState>,
    /// (when, tenant): an entry whose time is no longer its state's
    /// `wakes_at` is stale and skipped.
    schedule: BinaryHeap<Reverse<(i64, TenantId)>>,
    /// Tenants whose state could not be loaded: tried again at each tick.
    failed: HashSet<TenantId>,
    /// Whether every running tenant was read once (at the first tick):
    /// from then on only touched and scheduled ones are.
    walked: bool,
}

impl Book {
    /// Puts new alert settings in force for `tenant`; the next tick reads it.
    pub(crate) fn reload(&mut self, tenant: &TenantId, settings: Resolved) {
        if let Some(state) = self.states.get_mut(tenant) {
            state.reload(settings);
            state.wakes_at = Some(i64::MIN);
            self.schedule.push(Reverse((i64::MIN, tenant.clone())));
        }
    }

    /// The tenants whose schedule is due at `now`, taken off it.
    fn due(&mut self, now: i64) -> Vec<TenantId> {
        let mut due = Vec::new();
        while self
            .schedule
            .peek()
            .is_some_and(|Reverse((at, _))| *at <= now)
        {
            let Some(Reverse((at, id))) = self.schedule.pop() else {
                break;
            };
            if let Some(state) = self.states.get_mut(&id).filter(|s| s.wakes_at == Some(at)) {
                state.wakes_at = None;
                due.push(id);
            }
        }
        due
    }

    /// Schedules `id`'s next reading after one at `now`: when its quiet
    /// ends, or at the next tick if it is not quiet.
    fn schedule(&mut self, id: &TenantId, now: i64) {
        let Some(state) = self.states.get_mut(id) else {
            return;
        };
        let at = state.quiet_until(now).unwrap_or(now.saturating_add(1));
        if state.wakes_at != Some(at) {
            state.wakes_at = Some(at);
            self.schedule.push(Reverse((at, id.clone())));
        }
    }

    /// Drops the state of a tenant no longer running (deleted: its alerts
    /// went with it).
    fn forget(&mut self, id: &TenantId) {
        self.failed.remove(id);
        if let Some(gone) = self.states.remove(id) {
            gone.uncount_open();
        }
    }
}

/// What a tenant's evaluation read from: the version of its signals, its
/// routes and its settings (by identity).
struct Seen {
    version: u64,
    routes: Arc<[RouteHandle]>,
    settings: Arc<TenantSettings>,
}

#[derive(Default)]
struct Condition {
    gate: Gate,
    window: Window,
    alert: Option<AlertRecord>,
    /// Whether it held at its last step (an enabled rule's).
    holds: bool,
}

impl Condition {
    /// From when stepping it again, its reading unchanged, would do
    /// nothing: no alert, a closed gate, not holding, a settled window
    /// ([`Window::settled_from`]); `None` while one of them is not so.
    fn quiet_from(&self, window_ms: i64) -> Option<i64> {
        if self.alert.is_some() || self.gate.is_open() || self.holds {
            return None;
        }
        self.window.settled_from(window_ms)
    }
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

    /// Steps the conditions of every running tenant that may have
    /// something new at `now` (blocks on storage): all of them at the first
    /// tick, then the touched and the scheduled ones.
    fn evaluate(&self, now: i64) -> Vec<Queued> {
        let registry = &self.inner.registry;
        let mut book = self.inner.tenants.lock().expect("alerts lock");
        let touched = registry.touched().take();
        let handles = if book.walked {
            let mut ids: HashSet<TenantId> = touched.into_iter().collect();
            ids.extend(book.failed.drain());
            ids.extend(book.due(now));
            let mut handles = Vec::with_capacity(ids.len());
            for id in ids {
                match registry.get(id.as_str()) {
                    Some(handle) => handles.push(handle),
                    None => book.forget(&id),
                }
            }
            handles
        } else {
            book.walked = true;
            registry.handles()
        };
        let mut queued = Vec::new();
        for handle in handles {
            self.visit(&mut book, &handle, now, &mut queued);
        }
        queued
    }

    /// Reads one running tenant at `now` unless it is quiet, then
    /// schedules its next reading.
    fn visit(&self, book: &mut Book, handle: &TenantHandle, now: i64, queued: &mut Vec<Queued>) {
        // Before anything is read: a change from now on lists it again.
        handle.signals.visited();
        let id = handle.data().tenant().clone();
        // A state is the running tenant's while it was read from the same
        // signals; a tenant created again after a delete starts afresh.
        match book.states.get(&id) {
            Some(state) if !Arc::ptr_eq(&handle.signals, &state.incarnation) => book.forget(&id),
            Some(state) if state.quiet(handle, now) => {
                book.schedule(&id, now);
                return;
            }
            _ => {}
        }
        if !book.states.contains_key(&id) {
            match self.load(&id, handle) {
                Ok(state) => {
                    book.states.insert(id.clone(), state);
                }
                Err(e) => {
                    tracing::error!(tenant = %id, error = %e, "loading the tenant's alerts failed");
                    book.failed.insert(id);
                    return;
                }
            }
        }
        let state = book.states.get_mut(&id).expect("inserted above");
        let seen = Seen {
            version: handle.signals.version(),
            routes: handle.routes.clone(),
            settings: handle.settings(),
        };
        let readings = readings(handle, state, now);
        let gone = state.gone(&readings);
        let on = (&id, &handle.metrics);
        for (kind, subject, level) in readings {
            self.step(on, state, (kind, subject, level), now, queued);
        }
        self.resolve_gone(on, state, gone, now, queued);
        state.seen = Some(seen);
        book.schedule(&id, now);
    }

    /// Drops the conditions in `gone` and resolves their open alerts, at
    /// once: a subject that went away cannot flap.
    fn resolve_gone(
        &self,
        on: (&TenantId, &Arc<TenantMetrics>),
        state: &mut TenantState,
        gone: Vec<(AlertType, String)>,
        now: i64,
        queued: &mut Vec<Queued>,
    ) {
        for (kind, subject) in gone {
            let open = state.conditions.remove(&(kind, subject));
            let Some(alert) = open.and_then(|c| c.alert) else {
                continue;
            };
            let m = measure(0, state.settings.rules.get(kind));
            let alert = self.resolved(on.0, alert, Resolution::Gone(gone_reason(kind)), now);
            self.notify(on, &state.settings, alert, (kind, m), queued);
        }
    }

    /// A tenant's settings, its sinks started, and its alerts still open.
    fn load(&self, id: &TenantId, handle: &TenantHandle) -> crate::error::Result<TenantState> {
        let metrics = &handle.metrics;
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
                holds: true,
            };
            conditions.insert((kind, alert.subject.clone()), condition);
        }
        Ok(TenantState {
            incarnation: handle.signals.clone(),
            metrics: metrics.clone(),
            settings,
            conditions,
            storage: Vec::new(),
            storage_read_at: None,
            seen: None,
            wakes_at: None,
        })
    }

    /// Steps one condition; on a transition, stores it and queues its
    /// notifications; while it stays open and holds, stores what changed of
    /// its last sighting and occurrences (at most once per tick).
    fn step(
        &self,
        on: (&TenantId, &Arc<TenantMetrics>),
        state: &mut TenantState,
        (kind, subject, level): (AlertType, String, Level),
        now: i64,
        queued: &mut Vec<Queued>,
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
        };
        condition.holds = rule.enabled && holds;
        let m = measure(count, rule);
        if !rule.enabled {
            if let Some(alert) = condition.alert.take() {
                *condition = Condition::default();
                let alert = self.resolved(tenant, alert, Resolution::Gone("rule disabled"), now);
                self.notify(on, &state.settings, alert, (kind, m), queued);
            }
            return;
        }
        let alert = match condition.gate.step(now, holds, rule.window_ms) {
            Some(Transition::Open) => AlertRecord {
                id: format!("alr_{}", ulid::Ulid::new()),
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
                self.resolved(tenant, held, Resolution::Cleared, now)
            }
            None => {
                if let Some(alert) = condition.alert.as_mut().filter(|_| holds) {
                    self.seen(tenant, alert, (now, count));
                }
                return;
            }
        };
        if let Some(alert) = self.notify(on, &state.settings, alert, (kind, m), queued) {
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
        if let Resolution::Gone(reason) = why {
            alert.summary = format!("{}; resolved: {reason}", alert.summary);
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
    /// `settings` and stores it; the alert back while it stays open.
    fn notify(
        &self,
        (tenant, metrics): (&TenantId, &Arc<TenantMetrics>),
        settings: &Resolved,
        mut alert: AlertRecord,
        (kind, m): (AlertType, Measure),
        queued: &mut Vec<Queued>,
    ) -> Option<AlertRecord> {
        let now = alert.resolved_at_ms.unwrap_or(alert.opened_at_ms);
        let id = format!("ntf_{}", ulid::Ulid::new());
        let body = event::event(&id, &alert, kind, m);
        for sink in &settings.sinks {
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
        tracing::warn!(tenant = %tenant, alert = %alert.id, alert_type = kind.as_str(), subject = %alert.subject, state = ?alert.state, "alert {}", if alert.state == StoredState::Resolved { "resolved" } else { "opened" });
        (alert.state != StoredState::Resolved).then_some(alert)
    }
}

/// Why an alert resolves.
#[derive(Debug, Clone, Copy)]
enum Resolution {
    /// Its condition cleared.
    Cleared,
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
    }
}

impl TenantState {
    /// True when evaluating the tenant at `now` could change nothing, so
    /// the evaluation is skipped: nothing counted since the last one, the
    /// same routes and settings, and quiet by the clock
    /// ([`TenantState::quiet_until`]). Most tenants most of the time, a
    /// tenant with a backlog too.
    fn quiet(&self, handle: &TenantHandle, now: i64) -> bool {
        let Some(seen) = &self.seen else {
            return false;
        };
        seen.version == handle.signals.version()
            && Arc::ptr_eq(&seen.routes, &handle.routes)
            && Arc::ptr_eq(&seen.settings, &handle.settings())
            && self.quiet_until(now).is_some()
    }

    /// Until when, nothing being counted meanwhile, evaluating the tenant
    /// could change nothing: its next storage reading, the moment a queue's
    /// lag could reach the backlog rule's threshold ([`backlog_wakes_at`]).
    /// `None` when it is not quiet at `now`: a storage reading is due, a
    /// condition is not quiet (an open alert, a gate open or a reading that
    /// holds, a window yet to settle), or a key expires.
    fn quiet_until(&self, now: i64) -> Option<i64> {
        let mut until = self.storage_read_at?.saturating_add(STORAGE_EVERY_MS);
        let backlog = self.settings.rules.get(AlertType::BacklogLagExceeded);
        for (_, counts) in &self.storage {
            until = until.min(backlog_wakes_at(backlog, counts.oldest_due_ms)?);
        }
        for ((kind, _), condition) in &self.conditions {
            let window_ms = self.settings.rules.get(*kind).window_ms;
            if *kind == AlertType::SecretPreviousExpiring || condition.quiet_from(window_ms)? > now
            {
                return None;
            }
        }
        (now < until).then_some(until)
    }

    /// Puts new alert settings in force; the next evaluation reads the
    /// tenant again.
    pub(crate) fn reload(&mut self, settings: Resolved) {
        self.settings = settings;
        self.seen = None;
    }

    /// Takes this state's open alerts out of `hookd_alerts_open` as it is
    /// dropped with its tenant (deleted: its alerts went with it).
    fn uncount_open(&self) {
        let open = self.conditions.iter().filter(|(_, c)| c.alert.is_some());
        for ((kind, _), _) in open {
            self.metrics.alerts().resolved(*kind);
        }
    }

    /// The conditions no reading mentions any more (their route deleted,
    /// their key gone): dropped, and resolved if an alert of theirs is open.
    fn gone(&self, readings: &[(AlertType, String, Level)]) -> Vec<(AlertType, String)> {
        self.conditions
            .keys()
            .filter(|(kind, subject)| !readings.iter().any(|(k, s, _)| k == kind && s == subject))
            .cloned()
            .collect()
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
    // Every route of the tenant now, read as zero until its dispatcher
    // reports (after a restart); a deleted route's reports are not read.
    let reported: HashMap<String, RouteReading> = signals.routes().into_iter().collect();
    for route in handle.routes.iter().map(|r| r.name.clone()) {
        let r = reported.get(&route).copied().unwrap_or_default();
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
        let before = std::mem::take(&mut state.storage);
        state.storage = handle
            .routes
            .iter()
            .filter_map(|route| match route.data.counts() {
                Ok(counts) => Some((route.name.clone(), counts)),
                Err(e) => {
                    tracing::warn!(tenant = %handle.data().tenant(), route = %route.name, error = %e, "reading queue counts for alerts failed; the last reading stands");
                    before.iter().find(|(name, _)| *name == route.name).cloned()
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
        let lag = counts.oldest_due_ms.map_or(0, |due| lag_secs(due, now));
        out.push((
            AlertType::BacklogLagExceeded,
            route.clone(),
            Level::AtLeast(lag),
        ));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(enabled: bool, threshold: u64) -> Rule {
        Rule {
            enabled,
            threshold,
            window_ms: 60_000,
            mode: FailingMode::FirstFailure,
        }
    }

    /// A backlog is idle for the rule until its lag reaches the threshold
    /// (the reading that would hold), and always when the rule is off.
    /// Whether the backlog rule finds nothing to do at `now`.
    fn backlog_idle(rule: Rule, oldest_due_ms: Option<i64>, now: i64) -> bool {
        backlog_wakes_at(rule, oldest_due_ms).is_some_and(|at| now < at)
    }

    #[test]
    fn a_backlog_wakes_the_rule_once_its_lag_reaches_the_threshold() {
        let (on, off, now) = (rule(true, 300), rule(false, 300), 1_000_000);
        assert_eq!(backlog_wakes_at(on, Some(now)), Some(now + 300_000));
        assert_eq!(backlog_wakes_at(off, Some(now)), Some(i64::MAX));
        assert_eq!(
            backlog_wakes_at(rule(true, u64::MAX), Some(now)),
            Some(i64::MAX)
        );
        assert!(backlog_idle(on, None, now));
        assert!(backlog_idle(on, Some(now - 299_999), now));
        assert!(!backlog_idle(on, Some(now - 300_000), now));
        assert!(!backlog_idle(on, Some(now - 3_600_000), now));
        assert!(backlog_idle(off, Some(now - 3_600_000), now));
        // Due in the future (a retry): no lag.
        assert!(backlog_idle(on, Some(now + 5_000), now));
        assert!(!backlog_idle(rule(true, 0), Some(now + 5_000), now));
        assert_eq!(lag_secs(now - 299_999, now), 299);
    }

    /// The state of a tenant `id` with one route whose queue's oldest
    /// delivery was due at `oldest_due_ms`, read from storage at `read_at`,
    /// nothing counted.
    fn state(id: &TenantId, read_at: i64, oldest_due_ms: Option<i64>) -> TenantState {
        let config = crate::config::Config::with_defaults(std::path::Path::new("/tmp"));
        let metrics = crate::metrics::Metrics::new(&crate::metrics::tests::config(16));
        TenantState {
            incarnation: Arc::default(),
            metrics: metrics.tenant(id),
            settings: Resolved {
                rules: crate::alerts::Rules::defaults(&config.alerts),
                view: None,
                sinks: Vec::new(),
            },
            conditions: HashMap::new(),
            storage: vec![(
                "default".to_owned(),
                QueueCounts {
                    depth: u64::from(oldest_due_ms.is_some()),
                    dead: 0,
                    oldest_due_ms,
                },
            )],
            storage_read_at: Some(read_at),
            seen: None,
            wakes_at: None,
        }
    }

    /// A quiet tenant is read again when its next storage reading is due
    /// or its backlog could reach the rule's threshold, not at each tick;
    /// one that is not quiet, at the next tick; a rescheduled or forgotten
    /// one's old entry is skipped; reloaded settings make it due at once.
    #[test]
    fn a_quiet_tenant_is_read_again_only_when_its_schedule_comes() {
        let (acme, now) = (TenantId::try_from("acme").unwrap(), 1_000_000);
        let mut book = Book::default();
        book.states.insert(acme.clone(), state(&acme, now, None));
        book.schedule(&acme, now);
        assert_eq!(book.states[&acme].wakes_at, Some(now + STORAGE_EVERY_MS));
        assert!(book.due(now + STORAGE_EVERY_MS - 1).is_empty());
        assert_eq!(
            book.due(now + STORAGE_EVERY_MS),
            std::slice::from_ref(&acme)
        );
        assert!(book.due(now + STORAGE_EVERY_MS).is_empty(), "taken off");

        // A backlog: read again once its lag could reach the threshold.
        let threshold_ms = {
            let rule = book.states[&acme]
                .settings
                .rules
                .get(AlertType::BacklogLagExceeded);
            i64::try_from(rule.threshold).unwrap() * 1000
        };
        let due = now - threshold_ms + 2_000;
        book.states
            .insert(acme.clone(), state(&acme, now, Some(due)));
        book.schedule(&acme, now);
        assert_eq!(book.states[&acme].wakes_at, Some(now + 2_000));

        // Rescheduled sooner (an open alert: at the next tick): the entry
        // of the later time is skipped when it comes.
        let open = Condition {
            holds: true,
            ..Condition::default()
        };
        let tenant = book.states.get_mut(&acme).unwrap();
        tenant
            .conditions
            .insert((AlertType::RouteFailing, "default".into()), open);
        assert_eq!(tenant.quiet_until(now), None);
        book.schedule(&acme, now);
        assert_eq!(book.due(now + 1), std::slice::from_ref(&acme));
        assert!(
            book.due(now + 2_000).is_empty(),
            "the stale entry is skipped"
        );

        // Forgotten: its entries are skipped; reloaded: due at once.
        book.schedule(&acme, now + 1);
        book.forget(&acme);
        assert!(book.due(i64::MAX).is_empty());
        book.states.insert(acme.clone(), state(&acme, now, None));
        let config = crate::config::Config::with_defaults(std::path::Path::new("/tmp"));
        let resolved = Resolved {
            rules: crate::alerts::Rules::defaults(&config.alerts),
            view: None,
            sinks: Vec::new(),
        };
        book.reload(&acme, resolved);
        assert!(book.states[&acme].seen.is_none());
        assert_eq!(book.due(now), [acme]);
    }

    /// A tenant is not quiet while a storage reading is due, a window is
    /// yet to settle, or a previous key expires.
    #[test]
    fn a_tenant_is_quiet_until_its_first_reason_to_be_read() {
        let (acme, now) = (TenantId::try_from("acme").unwrap(), 1_000_000);
        let mut tenant = state(&acme, now, None);
        assert_eq!(tenant.quiet_until(now), Some(now + STORAGE_EVERY_MS));
        assert_eq!(tenant.quiet_until(now + STORAGE_EVERY_MS), None);
        tenant.storage_read_at = None;
        assert_eq!(tenant.quiet_until(now), None, "never read");
        tenant.storage_read_at = Some(now);
        let window_ms = tenant
            .settings
            .rules
            .get(AlertType::VerificationFailureSpike)
            .window_ms;
        let mut counted = Condition::default();
        counted.window.count(now - 1_000, 3, window_ms);
        tenant.conditions.insert(
            (AlertType::VerificationFailureSpike, String::new()),
            counted,
        );
        assert_eq!(tenant.quiet_until(now), None, "its window has not settled");
        assert_eq!(
            tenant.quiet_until(now - 1_000 + window_ms),
            None,
            "a storage reading is due by then"
        );
        tenant.storage_read_at = Some(now - 1_000 + window_ms);
        assert_eq!(
            tenant.quiet_until(now - 1_000 + window_ms),
            Some(now - 1_000 + window_ms + STORAGE_EVERY_MS),
            "settled: quiet until the next reading"
        );
        tenant.conditions.insert(
            (AlertType::SecretPreviousExpiring, "k1".into()),
            Condition::default(),
        );
        assert_eq!(tenant.quiet_until(now - 1_000 + window_ms), None);
    }
}
