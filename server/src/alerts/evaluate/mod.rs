//! The evaluator: the task that, every `alerts.evaluate_every_secs`, steps the
//! alert conditions of the tenants that may have something new.

mod readings;
mod schedule;
mod step;
#[cfg(test)]
mod tests;

use std::{
    collections::{hash_map::Entry, HashMap, HashSet},
    sync::Arc,
};

use futures_util::future::BoxFuture;
use hookd_proto::domain::AlertType;

use self::readings::{read_counts, readings, Counts, Level};
use super::{
    debounce::{Gate, Window},
    event,
    operator::{Digest, OperatorBudget},
    records::{AlertRecord, StoredState},
    signals::Signals,
    Alerts, Resolved,
};
use crate::routes::handle::RouteHandle;
use crate::tenant::TenantSettings;
use crate::{
    error::Result,
    ids::TenantId,
    metrics::TenantMetrics,
    store::api::{blocking, QueueCounts},
    tenant::TenantHandle,
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
///
/// The evaluator: a task on the server's clock that, every
/// `alerts.evaluate_every_secs`, reads the running tenants that may have
/// something new: those whose signals changed or that the registry
/// started, changed or stopped since (the [`Touched`](super::Touched)
/// list), and those whose own schedule is due (a storage reading every
/// `STORAGE_EVERY_MS`, a backlog about to reach its threshold, a window
/// about to settle, an open alert, an expiring key). For each it steps each
/// condition's gate and, on a transition, stores the alert and queues one
/// notification to each of the tenant's sinks (the operator's within its
/// budget, [`OperatorBudget`]: the rest in one digest when its window
/// ends), and removes its alerts resolved longer ago than
/// `alerts.retention_secs`. A quiet tenant costs nothing until one of these
/// comes. Off the ingest path: its storage work runs on the blocking pool.
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
    /// A streak's deliveries when its alert was opened (or first read
    /// open after a start): one more resolves it.
    delivered_at_open: Option<u64>,
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
                delivered_at_open: None,
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
