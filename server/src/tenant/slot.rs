//! Where a tenant's actor and its ingest gate live: started on the tenant's
//! first delivery and stopped once the tenant has been quiet for `[limits]
//! tenant_idle_secs`. A quiet tenant costs its handle, not a gate with a
//! replay cache and a rate limiter; the durable idempotency log keeps
//! duplicates out while the replay cache is gone.

use std::sync::{Arc, Mutex};

use actix::{Addr, ArbiterHandle, Supervisor};
use tokio::sync::Notify;

use super::{
    actor::{Panicked, TenantActor},
    gate::Gate,
};
use crate::{
    clock::SharedClock,
    config::TenantSettings,
    contracts::Slot,
    feed::DeliveryFeed,
    ingest::{Answer, Ingest},
    metrics::SenderMetrics,
    store::api::Tenant,
    telemetry::Spans,
};

/// Everything a tenant's gate is built from, apart from its settings.
#[derive(Clone)]
pub(super) struct ActorParts {
    pub data: Tenant,
    pub clock: SharedClock,
    pub wake: Arc<Notify>,
    pub events: DeliveryFeed,
    pub spans: Spans,
    pub contracts: Slot,
    pub senders: Arc<SenderMetrics>,
}

/// One tenant's actor, when it runs.
pub struct ActorSlot {
    arbiter: ArbiterHandle,
    parts: ActorParts,
    state: Mutex<SlotState>,
}

struct SlotState {
    settings: Arc<TenantSettings>,
    running: Option<Running>,
}

struct Running {
    addr: Addr<TenantActor>,
    gate: Arc<Gate>,
    last_used_ms: i64,
}

impl ActorSlot {
    /// An empty slot: the actor starts on `arbiter` when first asked for.
    pub(super) fn new(
        arbiter: ArbiterHandle,
        settings: Arc<TenantSettings>,
        parts: ActorParts,
    ) -> Self {
        ActorSlot {
            arbiter,
            parts,
            state: Mutex::new(SlotState {
                settings,
                running: None,
            }),
        }
    }

    /// Runs one delivery through the tenant's gate on the calling thread,
    /// starting the actor and its gate first if they are not running.
    pub fn ingest(&self, msg: Ingest<'_>) -> Answer {
        self.running().answer(msg, || self.restart())
    }

    /// The running gate, started now (with its actor) if it is not running.
    fn running(&self) -> Arc<Gate> {
        let now_ms = self.parts.clock.now_ms();
        let mut state = self.state.lock().expect("actor slot lock");
        if let Some(running) = state.running.as_mut().filter(|r| r.addr.connected()) {
            running.last_used_ms = running.last_used_ms.max(now_ms);
            return running.gate.clone();
        }
        let gate = Arc::new(self.gate(state.settings.clone()));
        state.running = Some(Running {
            addr: self.start(gate.clone()),
            gate: gate.clone(),
            last_used_ms: now_ms,
        });
        gate
    }

    /// A delivery's checks panicked: the running actor restarts and resets
    /// its gate.
    fn restart(&self) {
        let state = self.state.lock().expect("actor slot lock");
        if let Some(running) = &state.running {
            running.addr.do_send(Panicked);
        }
    }

    fn gate(&self, settings: Arc<TenantSettings>) -> Gate {
        let parts = self.parts.clone();
        Gate::new(
            settings,
            parts.data,
            parts.clock,
            parts.wake,
            parts.events,
            parts.spans,
        )
        .with_contracts(parts.contracts, parts.senders)
    }

    /// Starts the actor on its arbiter's thread, under a supervisor that
    /// restarts it after a panic.
    fn start(&self, gate: Arc<Gate>) -> Addr<TenantActor> {
        Supervisor::start_in_arbiter(&self.arbiter, move |_| TenantActor::new(gate))
    }

    /// New settings (a secret rotated): in force for the running gate's next
    /// delivery, and for a gate started later.
    pub fn reconfigure(&self, settings: Arc<TenantSettings>) {
        let mut state = self.state.lock().expect("actor slot lock");
        if let Some(running) = &state.running {
            running.gate.reconfigure(settings.clone());
        }
        state.settings = settings;
    }

    /// Stops the actor when nothing asked for it for `idle_ms`, nor for as
    /// long as its rate limiter takes to fill up again (a limiter dropped
    /// earlier would forget a burst it refused). Requests still holding its
    /// address finish first. True when it was stopped.
    pub fn stop_if_idle(&self, now_ms: i64, idle_ms: i64) -> bool {
        let mut state = self.state.lock().expect("actor slot lock");
        let refill_ms = state.settings.rate_limit.map_or(0, |limit| {
            (f64::from(limit.burst) / limit.per_sec * 1000.0).ceil() as i64
        });
        let idle = state
            .running
            .as_ref()
            .is_some_and(|r| now_ms - r.last_used_ms >= idle_ms.max(refill_ms));
        if idle {
            state.running = None;
        }
        idle
    }

    /// True while the actor runs.
    pub fn is_running(&self) -> bool {
        let state = self.state.lock().expect("actor slot lock");
        state.running.is_some()
    }

    /// False only when the actor was started and can no longer take
    /// messages; a tenant whose actor waits for its first delivery is fine.
    pub fn healthy(&self) -> bool {
        let state = self.state.lock().expect("actor slot lock");
        state.running.as_ref().is_none_or(|r| r.addr.connected())
    }
}
