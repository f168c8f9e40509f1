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
}

impl Default for Signals {
    fn default() -> Self {
        Signals {
            tenant: std::array::from_fn(|_| AtomicU64::new(0)),
            routes: Mutex::default(),
        }
    }
}

impl Signals {
    /// Counts one occurrence of a tenant-wide condition (a refused
    /// signature, a rate-limited or contract-rejected delivery, a refused
    /// handshake). Lock-free.
    pub fn bump(&self, kind: AlertType) {
        self.tenant[index(kind)].fetch_add(1, Ordering::Relaxed);
    }

    /// The total of a tenant-wide condition.
    pub(crate) fn total(&self, kind: AlertType) -> u64 {
        self.tenant[index(kind)].load(Ordering::Relaxed)
    }

    /// Changes what is known of `route` (called by its dispatcher).
    pub(crate) fn route(&self, route: &str, change: impl FnOnce(&mut RouteReading)) {
        let mut routes = self.routes.lock().expect("signals lock");
        match routes.get_mut(route) {
            Some(reading) => change(reading),
            None => change(routes.entry(route.to_owned()).or_default()),
        }
    }

    /// Every route's reading, by name.
    pub(crate) fn routes(&self) -> Vec<(String, RouteReading)> {
        let routes = self.routes.lock().expect("signals lock");
        let mut all: Vec<_> = routes.iter().map(|(k, v)| (k.clone(), *v)).collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }
}
