//! Where conditions arise: one tenant's occurrence counters. The ingest
//! path only bumps an atomic (no lock, no allocation, no await); a route's
//! dispatcher, off that path, counts per route under a short lock. The
//! evaluator reads the totals at each tick.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicU64, Ordering},
        Mutex,
    },
};

use hookd_proto::domain::AlertType;

use crate::store::lifecycle::Next;

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
    /// The breaker is open now.
    pub(crate) breaker_open: bool,
}

/// One tenant's occurrence totals since it started, kept across restarts
/// of its actor (the registry holds them beside the rejection budget).
#[derive(Debug)]
pub struct Signals {
    tenant: [AtomicU64; AlertType::ALL.len()],
    routes: Mutex<HashMap<String, RouteReading>>,
    /// Counts every change, so the evaluator can tell a tenant with
    /// nothing new from one it must read again.
    changes: AtomicU64,
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            tenant: std::array::from_fn(|_| AtomicU64::new(0)),
            routes: Mutex::default(),
            changes: AtomicU64::new(0),
        }
    }
}

impl Signals {
    /// Counts one occurrence of a tenant-wide condition (a refused
    /// signature, a rate-limited or contract-rejected delivery, a refused
    /// handshake). Lock-free.
    pub fn bump(&self, kind: AlertType) {
        self.tenant[index(kind)].fetch_add(1, Ordering::Relaxed);
        self.changes.fetch_add(1, Ordering::Release);
    }

    /// How many changes were counted so far: read before the totals, a
    /// version unchanged since means the totals did not change either.
    pub(crate) fn version(&self) -> u64 {
        self.changes.load(Ordering::Acquire)
    }

    /// The total of a tenant-wide condition.
    pub(crate) fn total(&self, kind: AlertType) -> u64 {
        self.tenant[index(kind)].load(Ordering::Relaxed)
    }

    /// Counts what an attempt on `route` led to, and its breaker's state
    /// after it (called by the route's dispatcher).
    pub(crate) fn outcome(&self, route: &str, next: &Next, breaker_open: bool) {
        self.route(route, |reading| {
            reading.breaker_open = breaker_open;
            match next {
                Next::Delivered | Next::Dropped => {}
                Next::Retry { .. } => reading.failed += 1,
                Next::Dead { .. } => {
                    reading.failed += 1;
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
        self.changes.fetch_add(1, Ordering::Release);
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
        signals.outcome("orders", &Next::Retry { due_ms: 1 }, false);
        signals.outcome("orders", &dead, true);
        signals.outcome("audit", &Next::Delivered, false);
        let want = RouteReading {
            failed: 2,
            dead: 1,
            transform_failed: 0,
            breaker_open: true,
        };
        assert_eq!(
            signals.routes(),
            [
                ("audit".to_owned(), RouteReading::default()),
                ("orders".to_owned(), want)
            ]
        );
    }

    #[test]
    fn every_change_moves_the_version_and_a_reading_does_not() {
        let signals = Signals::default();
        let start = signals.version();
        signals.bump(AlertType::IngestRateLimited);
        let bumped = signals.version();
        assert!(bumped > start);
        signals.outcome("orders", &Next::Delivered, false);
        let reported = signals.version();
        assert!(reported > bumped);
        let _ = (
            signals.total(AlertType::IngestRateLimited),
            signals.routes(),
        );
        assert_eq!(signals.version(), reported);
    }
}
