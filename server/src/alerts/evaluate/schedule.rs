//! When the evaluator reads a tenant next: the [`Book`] of every running
//! tenant's state and schedule, and when a tenant is quiet.

use std::{
    cmp::Reverse,
    collections::{BinaryHeap, HashMap, HashSet},
    sync::Arc,
};

use hookd_proto::domain::AlertType;

use super::{Condition, TenantState, STORAGE_EVERY_MS};
use crate::{
    alerts::{
        rules::{FailingMode, Rule},
        Resolved,
    },
    ids::TenantId,
    tenant::TenantHandle,
};

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

/// From when the oldest queued delivery of a route, waiting since
/// `oldest_pending_ms`, has waited as long as `route.failing`'s window
/// (`rule`, in `consecutive` mode): `i64::MAX` when nothing waits or the
/// rule does not read the age.
fn failing_wakes_at(rule: Rule, oldest_pending_ms: Option<i64>) -> i64 {
    match oldest_pending_ms {
        Some(since) if rule.enabled && rule.mode == FailingMode::InARow => {
            since.saturating_add(rule.window_ms)
        }
        _ => i64::MAX,
    }
}

/// Every running tenant's conditions, and when each is read next.
#[derive(Default)]
pub(crate) struct Book {
    pub(super) states: HashMap<TenantId, TenantState>,
    /// (when, tenant): an entry whose time is no longer its state's
    /// `wakes_at` is stale and skipped.
    pub(super) schedule: BinaryHeap<Reverse<(i64, TenantId)>>,
    /// Tenants whose state could not be loaded: tried again at each tick.
    pub(super) failed: HashSet<TenantId>,
    /// Whether every running tenant was read once (at the first tick):
    /// from then on only touched and scheduled ones are.
    pub(super) walked: bool,
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
    pub(super) fn due(&mut self, now: i64) -> Vec<TenantId> {
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
    pub(super) fn schedule(&mut self, id: &TenantId, now: i64) {
        let Some(state) = self.states.get(id) else {
            return;
        };
        let at = state.quiet_until(now).unwrap_or(now.saturating_add(1));
        self.wake_at(id, at);
    }

    /// Schedules `id`'s next reading at `at`.
    pub(super) fn wake_at(&mut self, id: &TenantId, at: i64) {
        let Some(state) = self.states.get_mut(id) else {
            return;
        };
        if state.wakes_at != Some(at) {
            state.wakes_at = Some(at);
            self.schedule.push(Reverse((at, id.clone())));
        }
    }

    /// Drops the state of a tenant no longer running (deleted: its alerts
    /// went with it).
    pub(super) fn forget(&mut self, id: &TenantId) {
        self.failed.remove(id);
        if let Some(gone) = self.states.remove(id) {
            gone.uncount_open();
        }
    }
}

impl Condition {
    /// From when stepping it again, its reading unchanged, would do
    /// nothing: no alert, a closed gate, not holding, a settled window
    /// ([`Window::settled_from`](crate::alerts::debounce::Window::settled_from));
    /// `None` while one of them is not so.
    fn quiet_from(&self, window_ms: i64) -> Option<i64> {
        if self.alert.is_some() || self.gate.is_open() || self.holds {
            return None;
        }
        self.window.settled_from(window_ms)
    }
}

impl TenantState {
    /// Until when evaluating the tenant could change nothing, if it could
    /// change nothing at `now`, so the evaluation is skipped: nothing
    /// counted since the last one, the same routes and settings, and quiet
    /// by the clock ([`TenantState::quiet_until`]). Most tenants most of
    /// the time, a tenant with a backlog too.
    pub(super) fn quiet(&self, handle: &TenantHandle, now: i64) -> Option<i64> {
        let seen = self.seen.as_ref()?;
        let unchanged = seen.version == handle.state().signals.version()
            && Arc::ptr_eq(&seen.routes, &handle.routes())
            && Arc::ptr_eq(&seen.settings, &handle.settings());
        unchanged.then(|| self.quiet_until(now)).flatten()
    }

    /// Until when, nothing being counted meanwhile, evaluating the tenant
    /// could change nothing: its next storage reading, the moment a queue's
    /// lag could reach the backlog rule's threshold ([`backlog_wakes_at`]),
    /// the moment a route's oldest delivery could make it failing
    /// ([`failing_wakes_at`]).
    /// `None` when it is not quiet at `now`: a storage reading is due, a
    /// condition is not quiet (an open alert, a gate open or a reading that
    /// holds, a window yet to settle), or a key expires.
    fn quiet_until(&self, now: i64) -> Option<i64> {
        let mut until = self.storage_read_at?.saturating_add(STORAGE_EVERY_MS);
        let backlog = self.settings.rules.get(AlertType::BacklogLagExceeded);
        let failing = self.settings.rules.get(AlertType::RouteFailing);
        for (_, counts) in &self.storage {
            until = until.min(backlog_wakes_at(backlog, counts.oldest_due_ms)?);
            until = until.min(failing_wakes_at(failing, counts.oldest_pending_ms));
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{alerts::evaluate::lag_secs, alerts::rules::FailingMode, store::api::QueueCounts};

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
                    // The backlog rule's schedule alone: route.failing's
                    // age has a test of its own.
                    oldest_pending_ms: None,
                },
            )],
            storage_read_at: Some(read_at),
            seen: None,
            wakes_at: None,
            expires_at: None,
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
