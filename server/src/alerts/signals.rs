//! Where conditions arise: one tenant's occurrence counters, bumped on the
//! ingest path and by its routes' dispatchers.

use std::{
    collections::{HashMap, VecDeque},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex,
    },
};

use hookd_proto::domain::AlertType;

use crate::{
    ids::{DeliveryId, TenantId},
    store::lifecycle::Next,
};

/// The tenants the evaluator must read at its next tick, whatever their
/// schedule: their signals changed, or the registry started, changed or
/// stopped them. Shared by the registry and every tenant's [`Signals`].
#[derive(Debug, Default)]
pub struct Touched {
    ids: Mutex<Vec<TenantId>>,
}

impl Touched {
    /// Puts `id` on the list.
    pub fn touch(&self, id: &TenantId) {
        self.ids.lock().expect("touched lock").push(id.clone());
    }

    /// The list so far, emptied.
    pub(crate) fn take(&self) -> Vec<TenantId> {
        std::mem::take(&mut *self.ids.lock().expect("touched lock"))
    }
}

/// Failed deliveries kept per route, for the alert that names them.
const FAILED_IDS: usize = 5;

/// Position of a type in [`AlertType::ALL`].
pub(crate) fn index(kind: AlertType) -> usize {
    AlertType::ALL
        .iter()
        .position(|k| *k == kind)
        .expect("every type is in the catalogue")
}

/// What a route's dispatcher reported for one route.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub(crate) struct RouteReading {
    /// Attempts that failed (a retry was scheduled or the delivery died).
    pub(crate) failed: u64,
    /// Deliveries dead-lettered.
    pub(crate) dead: u64,
    /// Transforms that failed.
    pub(crate) transform_failed: u64,
    /// Attempts that failed since the last one that delivered (any error:
    /// refused, timed out, an error status).
    pub(crate) failed_in_a_row: u64,
    /// Attempts that delivered.
    pub(crate) delivered: u64,
    /// The breaker is open now.
    pub(crate) breaker_open: bool,
}

/// One tenant's occurrence totals since it started, kept across restarts
/// of its actor (the registry holds them beside the rejection budget).
///
/// Where conditions arise: one tenant's occurrence counters. The ingest
/// path bumps an atomic (no await; a lock and an allocation only for the
/// first change after each evaluation of the tenant, which puts it on the
/// evaluator's list); a route's dispatcher, off that path, counts per route
/// under a short lock. The evaluator reads the totals of the tenants on its
/// list at its next tick.
#[derive(Debug)]
pub struct Signals {
    tenant: [AtomicU64; AlertType::ALL.len()],
    routes: Mutex<HashMap<String, RouteReading>>,
    /// Each route's latest failed deliveries, newest last, at most
    /// [`FAILED_IDS`]; a delivered attempt empties them.
    failed_ids: Mutex<HashMap<String, VecDeque<DeliveryId>>>,
    /// Counts every change, so the evaluator can tell a tenant with
    /// nothing new from one it must read again.
    changes: AtomicU64,
    /// Whether the tenant is on the evaluator's list since a change.
    listed: AtomicBool,
    /// The tenant, and the list a change puts it on (none for signals no
    /// evaluator reads).
    list: Option<(TenantId, Arc<Touched>)>,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            tenant: std::array::from_fn(|_| AtomicU64::new(0)),
            routes: Mutex::default(),
            failed_ids: Mutex::default(),
            changes: AtomicU64::new(0),
            listed: AtomicBool::new(false),
            list: None,
        }
    }
}

impl Signals {
    /// The signals of `tenant`, whose changes put it on `touched`.
    pub fn of(tenant: TenantId, touched: Arc<Touched>) -> Self {
        Signals {
            list: Some((tenant, touched)),
            ..Signals::default()
        }
    }

    /// Counts a change, and puts the tenant on the evaluator's list unless
    /// it is there since an earlier one. Sequentially consistent with
    /// [`Signals::visited`] and [`Signals::version`]: a change the
    /// evaluator's reading missed always lists the tenant again.
    fn changed(&self) {
        self.changes.fetch_add(1, Ordering::SeqCst);
        if let Some((tenant, touched)) = &self.list {
            if !self.listed.swap(true, Ordering::SeqCst) {
                touched.touch(tenant);
            }
        }
    }

    /// Called by the evaluator before it reads the tenant: a change from
    /// now on lists it again.
    pub(crate) fn visited(&self) {
        self.listed.store(false, Ordering::SeqCst);
    }

    /// Counts one occurrence of a tenant-wide condition (a refused
    /// signature, a rate-limited or contract-rejected delivery, a refused
    /// handshake). Lock-free but for the first change after each reading
    /// of the tenant, which puts it on the evaluator's list.
    pub fn bump(&self, kind: AlertType) {
        self.tenant[index(kind)].fetch_add(1, Ordering::Relaxed);
        self.changed();
    }

    /// How many changes were counted so far: read before the totals, a
    /// version unchanged since means the totals did not change either.
    pub(crate) fn version(&self) -> u64 {
        self.changes.load(Ordering::SeqCst)
    }

    /// The total of a tenant-wide condition.
    pub(crate) fn total(&self, kind: AlertType) -> u64 {
        self.tenant[index(kind)].load(Ordering::Relaxed)
    }

    /// Counts what an attempt of delivery `id` on `route` led to, and its
    /// breaker's state after it (called by the route's dispatcher).
    pub(crate) fn outcome(
        &self,
        (route, id): (&str, &DeliveryId),
        next: &Next,
        breaker_open: bool,
    ) {
        let failed = matches!(next, Next::Retry { .. } | Next::Dead { .. });
        if failed || matches!(next, Next::Delivered) {
            let mut ids = self.failed_ids.lock().expect("signals lock");
            let ids = ids.entry(route.to_owned()).or_default();
            match failed {
                true => {
                    ids.retain(|held| held != id);
                    ids.push_back(id.clone());
                    if ids.len() > FAILED_IDS {
                        ids.pop_front();
                    }
                }
                false => ids.clear(),
            }
        }
        self.route(route, |reading| {
            reading.breaker_open = breaker_open;
            match next {
                Next::Delivered => {
                    reading.delivered += 1;
                    reading.failed_in_a_row = 0;
                }
                Next::Dropped => {}
                Next::Retry { .. } => {
                    reading.failed += 1;
                    reading.failed_in_a_row += 1;
                }
                Next::Dead { .. } => {
                    reading.failed += 1;
                    reading.failed_in_a_row += 1;
                    reading.dead += 1;
                }
                Next::TransformFailed { .. } => {
                    reading.transform_failed += 1;
                    reading.dead += 1;
                }
            }
        });
    }

    /// Changes what is known of `route`.
    fn route(&self, route: &str, change: impl FnOnce(&mut RouteReading)) {
        let mut routes = self.routes.lock().expect("signals lock");
        match routes.get_mut(route) {
            Some(reading) => change(reading),
            None => change(routes.entry(route.to_owned()).or_default()),
        }
        drop(routes);
        self.changed();
    }

    /// The latest failed deliveries of `route`, newest last, since its last
    /// delivered attempt.
    pub(crate) fn failed_ids(&self, route: &str) -> Vec<String> {
        let ids = self.failed_ids.lock().expect("signals lock");
        ids.get(route)
            .map(|ids| ids.iter().map(ToString::to_string).collect())
            .unwrap_or_default()
    }

    /// Every route's reading, by name.
    pub(crate) fn routes(&self) -> Vec<(String, RouteReading)> {
        let routes = self.routes.lock().expect("signals lock");
        let mut all: Vec<_> = routes.iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(n: u32) -> DeliveryId {
        DeliveryId::new(format!("dlv_{n}"))
    }

    #[test]
    fn outcomes_count_per_route_and_tenant_bumps_per_type() {
        let signals = Signals::default();
        signals.bump(AlertType::VerificationFailureSpike);
        signals.bump(AlertType::VerificationFailureSpike);
        assert_eq!(signals.total(AlertType::VerificationFailureSpike), 2);
        assert_eq!(signals.total(AlertType::HandshakeFailed), 0);
        let dead = Next::Dead {
            reason: "503".into(),
        };
        signals.outcome(("orders", &id(1)), &Next::Retry { due_ms: 1 }, false);
        signals.outcome(("orders", &id(2)), &dead, true);
        signals.outcome(("audit", &id(3)), &Next::Delivered, false);
        let want = RouteReading {
            failed: 2,
            dead: 1,
            transform_failed: 0,
            failed_in_a_row: 2,
            delivered: 0,
            breaker_open: true,
        };
        let audit = RouteReading {
            delivered: 1,
            ..RouteReading::default()
        };
        assert_eq!(
            signals.routes(),
            [("audit".to_owned(), audit), ("orders".to_owned(), want)]
        );
        assert_eq!(signals.failed_ids("orders"), ["dlv_1", "dlv_2"]);
        for n in 3..10 {
            signals.outcome(("orders", &id(n)), &Next::Retry { due_ms: 1 }, false);
        }
        let kept = signals.failed_ids("orders");
        assert_eq!(kept.len(), FAILED_IDS, "the latest only: {kept:?}");
        assert_eq!(kept.last().map(String::as_str), Some("dlv_9"));
        signals.outcome(("orders", &id(1)), &Next::Delivered, false);
        let orders = signals.routes()[1].1;
        assert_eq!(
            (orders.failed_in_a_row, orders.delivered, orders.failed),
            (0, 1, 9)
        );
        assert!(
            signals.failed_ids("orders").is_empty(),
            "a delivery clears them"
        );
    }

    #[test]
    fn every_change_moves_the_version_and_a_reading_does_not() {
        let signals = Signals::default();
        let start = signals.version();
        signals.bump(AlertType::IngestRateLimited);
        let bumped = signals.version();
        assert!(bumped > start);
        signals.outcome(("orders", &id(1)), &Next::Delivered, false);
        let reported = signals.version();
        assert!(reported > bumped);
        let _ = (
            signals.total(AlertType::IngestRateLimited),
            signals.routes(),
        );
        assert_eq!(signals.version(), reported);
    }

    #[test]
    fn a_change_lists_the_tenant_once_until_it_is_visited() {
        let touched = Arc::new(Touched::default());
        let acme = TenantId::try_from("acme").unwrap();
        let signals = Signals::of(acme.clone(), touched.clone());
        assert!(touched.take().is_empty());
        signals.bump(AlertType::VerificationFailureSpike);
        signals.outcome(("orders", &id(1)), &Next::Delivered, false);
        assert_eq!(
            touched.take(),
            std::slice::from_ref(&acme),
            "listed once for two changes"
        );
        signals.bump(AlertType::HandshakeFailed);
        assert!(touched.take().is_empty(), "still listed: not visited since");
        signals.visited();
        assert!(touched.take().is_empty(), "a visit lists nothing");
        signals.outcome(("orders", &id(1)), &Next::Delivered, false);
        assert_eq!(touched.take(), [acme]);
        let detached = Signals::default();
        detached.bump(AlertType::IngestRateLimited);
        assert_eq!(detached.total(AlertType::IngestRateLimited), 1);
    }
}
