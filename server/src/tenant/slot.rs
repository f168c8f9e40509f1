//! Where a tenant's ingest gate lives: started on its first delivery and
//! dropped once the tenant has been quiet for `[limits] tenant_idle_secs`.

use std::sync::{Arc, Mutex, PoisonError};

use super::{
    gate::{Gate, GateParts},
    snapshot::Published,
};
use crate::ingest::{Answer, Ingest};
use crate::tenant::TenantSettings;

/// One tenant's gate, when it runs.
///
/// Where a tenant's ingest gate lives: started on its first delivery and
/// dropped once the tenant has been quiet for `[limits] tenant_idle_secs`,
/// so a quiet tenant costs its published snapshot, not a replay scope and
/// a rate limiter; the durable idempotency log keeps duplicates out while
/// the replay scope is gone.
pub(crate) struct GateSlot {
    published: Arc<Published>,
    parts: GateParts,
    running: Mutex<Option<Started>>,
}

struct Started {
    gate: Arc<Gate>,
    last_used_ms: i64,
}

impl GateSlot {
    /// An empty slot: the gate starts when first asked for.
    pub(super) fn new(published: Arc<Published>, parts: GateParts) -> Self {
        GateSlot {
            published,
            parts,
            running: Mutex::default(),
        }
    }

    /// Runs one delivery through the gate on the calling thread, starting
    /// it first if it is not running.
    pub(super) fn ingest(&self, msg: Ingest<'_>, panicked: impl FnOnce()) -> Answer {
        let gate = {
            let mut running = self.lock();
            let now_ms = self.parts.clock.now_ms();
            let started = running.get_or_insert_with(|| Started {
                gate: Arc::new(Gate::on(self.published.clone(), self.parts.clone())),
                last_used_ms: now_ms,
            });
            started.last_used_ms = started.last_used_ms.max(now_ms);
            started.gate.clone()
        };
        gate.answer(msg, panicked)
    }

    /// Settings change from `old` to `new`: a running gate retunes what
    /// changed; one started later reads the new settings.
    pub(super) fn retune(&self, old: &TenantSettings, new: &TenantSettings) {
        if let Some(started) = self.lock().as_ref() {
            started.gate.retune(old, new);
        }
    }

    /// Rebuilds what a panic may have left half changed in a running gate.
    pub(super) fn reset(&self) {
        if let Some(started) = self.lock().as_ref() {
            started.gate.reset();
        }
    }

    /// Drops the gate when nothing asked for it for `idle_ms`, nor for as
    /// long as its rate limiter takes to fill up again (a limiter dropped
    /// earlier would forget a burst it rejected). Requests still holding
    /// it finish first. True when it was dropped.
    pub(crate) fn stop_if_idle(&self, now_ms: i64, idle_ms: i64) -> bool {
        let settings = self.published.load().settings().clone();
        let refill_ms = settings.rate_limit.map_or(0, |limit| {
            (f64::from(limit.burst) / limit.per_sec * 1000.0).ceil() as i64
        });
        let mut running = self.lock();
        let idle = running
            .as_ref()
            .is_some_and(|s| now_ms - s.last_used_ms >= idle_ms.max(refill_ms));
        if idle {
            *running = None;
        }
        idle
    }

    /// True while the gate runs.
    pub(crate) fn is_running(&self) -> bool {
        self.lock().is_some()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<Started>> {
        self.running.lock().unwrap_or_else(PoisonError::into_inner)
    }
}
