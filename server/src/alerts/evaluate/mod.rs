//! The evaluator: a task on the server's clock that, every
//! `alerts.evaluate_every_secs`, reads the running tenants that may have
//! something new: those whose signals changed or that the registry
//! started, changed or stopped since (the [`Touched`](super::Touched)
//! list), and those whose own schedule is due (a storage reading every
//! [`STORAGE_EVERY_MS`], a backlog about to reach its threshold, a window
//! about to settle, an open alert, an expiring key). For each it steps each
//! condition's gate and, on a transition, stores the alert and queues one
//! notification to each of the tenant's sinks (the operator's within its
//! budget, [`OperatorBudget`]: the rest in one digest when its window
//! ends), and removes its alerts resolved longer ago than
//! `alerts.retention_secs`. A quiet tenant costs nothing until one of these
//! comes. Off the ingest path: its storage work runs on the blocking pool.

mod schedule;
#[cfg(test)]
mod tests;

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    sync::Arc,
};

use futures_util::future::BoxFuture;
use hookd_proto::domain::AlertType;

use super::{
    debounce::{Gate, Transition, Window},
    event::{self, Measure},
    operator::{Digest, OperatorBudget},
    records::{AlertRecord, StoredState},
    rules::{FailingMode, Rule},
    signals::{RouteReading, Signals},
    Alerts, Resolved,
};
use crate::{
    config::TenantSettings,
    error::Result,
    ids::TenantId,
    metrics::TenantMetrics,
    store::api::{blocking, QueueCounts, TenantStore},
    tenant::{RouteHandle, TenantHandle},
};
pub(crate) use schedule::Book;

/// How often queue counts are read from storage, at most.
const STORAGE_EVERY_MS: i64 = 15_000;

/// How late a queue whose oldest pending delivery was due at `due_ms` is at
/// `now`, in whole seconds: the backlog rule's reading.
fn lag_secs(due_ms: i64, now: i64) -> u64 {
    u64::try_from((now - due_ms).max(0) / 1000).unwrap_or_default()
}

/// Evaluates every tenant's conditions until the task is dropped.
pub async fn run(alerts: Alerts) {
    let clock = alerts.inner.services.clock.clone();
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
    /// When its earliest stored resolved alert passes the retention; `None`
    /// while it has none.
    expires_at: Option<i64>,
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

/// A notification being queued, with what counts it (a digest: nothing).
type Queued = (
    Option<(Arc<TenantMetrics>, AlertType)>,
    BoxFuture<'static, bool>,
);

/// What an evaluation queues, and the operator's budget it is held to.
struct Outbox<'a> {
    queued: Vec<Queued>,
    operator: &'a mut OperatorBudget,
    /// When an alert of the tenant being visited last resolved.
    resolved_at: Option<i64>,
}

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
                for (counted, queue) in queued {
                    let queued = queue.await;
                    if let Some((metrics, kind)) = counted {
                        metrics.alerts().notified(kind, queued);
                    }
                }
                if wrote {
                    if let Err(e) = self.inner.services.store.durable_barrier().await {
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
        let mut budget = self.inner.operator_budget.lock().expect("alerts lock");
        let mut out = Outbox {
            queued: Vec::new(),
            operator: &mut budget,
            resolved_at: None,
        };
        if let Some(digest) = out.operator.roll(now) {
            self.digest(&book, &digest, now, &mut out.queued);
        }
        let touched = self.inner.services.touched().take();
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
        let read: Vec<TenantHandle> = handles
            .into_iter()
            .filter(|handle| self.admit(&mut book, handle, now))
            .collect();
        let due = read
            .iter()
            .map(|h| {
                let state = book.states.get(h.data().tenant());
                state
                    .is_some_and(|s| s.storage_due(now))
                    .then(|| h.routes().iter().map(|r| r.data.clone()).collect())
            })
            .collect();
        let counts = read_counts(due, |data| self.inner.services.store.counts_of(data));
        for (handle, counts) in read.iter().zip(counts) {
            self.visit(&mut book, handle, now, counts, &mut out);
        }
        out.queued
    }

    /// Queues the operator's digest of what its last window held back,
    /// through the operator's sink's queue of the first tenant it names
    /// that still runs (of any running tenant, else: logged, not sent).
    fn digest(&self, book: &Book, digest: &Digest, now: i64, queued: &mut Vec<Queued>) {
        let sink = digest.tenants().chain(book.states.keys()).find_map(|id| {
            book.states
                .get(id)?
                .settings
                .sinks
                .iter()
                .find(|s| s.is_operator())
        });
        let Some(sink) = sink else {
            tracing::warn!(
                held_back = digest.held_back,
                "the operator's alert digest has no sink to go through (no tenant runs); not sent"
            );
            return;
        };
        let id = format!("ntf_{}", ulid::Ulid::new());
        tracing::warn!(held_back = digest.held_back, notification = %id, "alert notifications to the operator's sink were held back; one digest sent");
        let body = event::body(sink.format(), &digest.event(&id));
        queued.push((None, sink.queue(&id, body, now)));
    }

    /// Removes the tenant's alerts resolved longer ago than the retention
    /// (a failure is tried again at its next reading).
    fn expire(&self, id: &TenantId, state: &mut TenantState, now: i64) {
        let retention = self.inner.retention_ms;
        match self
            .inner
            .rows
            .expire(id.as_str(), now.saturating_sub(retention))
        {
            Ok((removed, kept)) => {
                state.expires_at = kept.map(|at| at.saturating_add(retention));
                if removed > 0 {
                    tracing::info!(tenant = %id, removed, "resolved alerts past alerts.retention_secs removed");
                }
            }
            Err(e) => {
                tracing::error!(tenant = %id, error = %e, "removing expired alerts failed");
            }
        }
    }

    /// Whether one running tenant is read at `now`: not while it is quiet
    /// (its next reading scheduled instead), nor when its state cannot be
    /// loaded (tried again at the next tick).
    fn admit(&self, book: &mut Book, handle: &TenantHandle, now: i64) -> bool {
        // Before anything is read: a change from now on lists it again.
        handle.state().signals.visited();
        let id = handle.data().tenant().clone();
        // A state is the running tenant's while it was read from the same
        // signals; a tenant created again after a delete starts afresh.
        let quiet = match book.states.get(&id) {
            Some(state) if !Arc::ptr_eq(&handle.state().signals, &state.incarnation) => {
                book.forget(&id);
                None
            }
            Some(state) => state.quiet(handle, now),
            None => None,
        };
        if let Some(until) = quiet {
            book.wake_at(&id, until);
            return false;
        }
        if let Entry::Vacant(vacant) = book.states.entry(id) {
            match self.load(vacant.key(), handle) {
                Ok(state) => {
                    vacant.insert(state);
                }
                Err(e) => {
                    let id = vacant.into_key();
                    tracing::error!(tenant = %id, error = %e, "loading the tenant's alerts failed");
                    book.failed.insert(id);
                    return false;
                }
            }
        }
        true
    }

    /// Steps the conditions of a tenant [`Alerts::admit`] let through, its
    /// queue counts read as `counts`, then schedules its next reading.
    fn visit(
        &self,
        book: &mut Book,
        handle: &TenantHandle,
        now: i64,
        counts: Counts,
        out: &mut Outbox<'_>,
    ) {
        let id = handle.data().tenant().clone();
        let state = book.states.get_mut(&id).expect("admitted with its state");
        let seen = Seen {
            version: handle.state().signals.version(),
            routes: handle.routes().clone(),
            settings: handle.settings(),
        };
        let readings = readings(handle, state, now, counts);
        let gone = state.gone(&readings);
        let on = (&id, &handle.state().metrics);
        out.resolved_at = None;
        for (kind, subject, level) in readings {
            self.step(on, state, (kind, subject, level), now, out);
        }
        self.resolve_gone(on, state, gone, now, out);
        if let Some(at) = out.resolved_at.take() {
            let expires = at.saturating_add(self.inner.retention_ms);
            state.expires_at = Some(state.expires_at.map_or(expires, |e| e.min(expires)));
        }
        if state.expires_at.is_some_and(|at| at <= now) {
            self.expire(&id, state, now);
        }
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

    /// A tenant's settings, its sinks started, and its alerts still open.
    fn load(&self, id: &TenantId, handle: &TenantHandle) -> Result<TenantState> {
        let metrics = &handle.state().metrics;
        let settings = self.resolve(id, true)?;
        let mut conditions = HashMap::new();
        let mut resolved: Option<i64> = None;
        for alert in self.inner.rows.all(id.as_str())? {
            if alert.state == StoredState::Resolved {
                let at = alert.resolved_at_ms.unwrap_or(alert.last_seen_at_ms);
                resolved = Some(resolved.map_or(at, |r| r.min(at)));
                continue;
            }
            let Ok(kind) = alert.alert_type.parse::<AlertType>() else {
                continue;
            };
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
            incarnation: handle.state().signals.clone(),
            metrics: metrics.clone(),
            settings,
            conditions,
            storage: Vec::new(),
            storage_read_at: None,
            seen: None,
            wakes_at: None,
            expires_at: resolved.map(|at| at.saturating_add(self.inner.retention_ms)),
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
        };
        condition.holds = rule.enabled && holds;
        let m = measure(count, rule);
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
    /// Whether its queue counts are to be read at `now`.
    fn storage_due(&self, now: i64) -> bool {
        self.storage_read_at
            .is_none_or(|at| now - at >= STORAGE_EVERY_MS)
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

/// A tenant's queue counts at one evaluation.
#[derive(Debug, PartialEq)]
enum Counts {
    /// Its last reading is recent enough: it stands.
    NotDue,
    /// Read now: one per route, in the order of its routes.
    Read(Vec<QueueCounts>),
    /// Due, but the read failed: the last reading stands until the next.
    Failed,
}

/// The queue counts of the tenants `due` names (each due one's routes'
/// handles; `None` for one whose last reading stands), read for all of them
/// with one call of `read` (the engine's `counts_of`: on PostgreSQL a
/// statement per thousand routes, not one per route), in order.
fn read_counts(
    due: Vec<Option<Vec<TenantStore>>>,
    read: impl FnOnce(&[TenantStore]) -> Result<Vec<QueueCounts>>,
) -> Vec<Counts> {
    let data: Vec<TenantStore> = due.iter().flatten().flatten().cloned().collect();
    if data.is_empty() {
        return due.iter().map(|_| Counts::NotDue).collect();
    }
    let read = read(&data).unwrap_or_else(|e| {
        tracing::warn!(routes = data.len(), error = %e, "reading queue counts for alerts failed; the last readings stand");
        Vec::new()
    });
    let mut at = 0;
    due.into_iter()
        .map(|routes| {
            let Some(routes) = routes else {
                return Counts::NotDue;
            };
            let of = at..at + routes.len();
            at = of.end;
            read.get(of)
                .map_or(Counts::Failed, |c| Counts::Read(c.to_vec()))
        })
        .collect()
}

/// Everything a tenant's conditions read as now, its queue counts as `counts`.
fn readings(
    handle: &TenantHandle,
    state: &mut TenantState,
    now: i64,
    counts: Counts,
) -> Vec<(AlertType, String, Level)> {
    let signals = &handle.state().signals;
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
    for route in handle.routes().iter().map(|r| r.name.clone()) {
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
    match counts {
        Counts::NotDue => {}
        Counts::Read(read) => {
            state.storage_read_at = Some(now);
            state.storage = handle
                .routes()
                .iter()
                .map(|r| r.name.clone())
                .zip(read)
                .collect();
        }
        Counts::Failed => state.storage_read_at = Some(now),
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
