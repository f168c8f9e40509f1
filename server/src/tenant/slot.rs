//! Where a tenant's actor and its ingest gate live: started on the tenant's
//! first delivery or change and stopped once the tenant has been quiet for
//! `[limits] tenant_idle_secs`. A quiet tenant costs its handle and its
//! published snapshot, not a gate with a replay scope and a rate limiter;
//! the durable idempotency log keeps duplicates out while the replay scope
//! is gone. At most one actor runs per tenant: one taking a change is not
//! stopped as idle until the change is in force.

use std::sync::{Arc, Mutex};

use actix::{Addr, ArbiterHandle, Supervisor};

use super::{
    actor::{Change, Panicked, TenantActor},
    gate::{Gate, GateParts},
    snapshot::{Published, Snapshot},
};
use crate::{
    error::{Error, Result},
    ingest::{Answer, Ingest},
};

/// One tenant's actor, when it runs, and the snapshot it publishes.
pub struct ActorSlot {
    arbiter: ArbiterHandle,
    parts: GateParts,
    published: Arc<Published>,
    state: Mutex<SlotState>,
}

#[derive(Default)]
struct SlotState {
    running: Option<Running>,
    /// Changes sent to the running actor and not yet in force.
    changing: usize,
}

struct Running {
    addr: Addr<TenantActor>,
    gate: Arc<Gate>,
    last_used_ms: i64,
}

impl ActorSlot {
    /// An empty slot for a tenant starting as `first`: the actor starts on
    /// `arbiter` when first asked for.
    pub(super) fn new(arbiter: ArbiterHandle, first: Snapshot, parts: GateParts) -> Self {
        ActorSlot {
            arbiter,
            parts,
            published: Arc::new(Published::new(first)),
            state: Mutex::default(),
        }
    }

    /// The tenant's state in force.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.published.load()
    }

    /// Runs one delivery through the tenant's gate on the calling thread,
    /// starting the actor and its gate first if they are not running.
    pub fn ingest(&self, msg: Ingest<'_>) -> Answer {
        let gate = {
            let mut state = self.state.lock().expect("actor slot lock");
            self.running(&mut state).gate.clone()
        };
        gate.answer(msg, || self.restart())
    }

    /// Sends `change` to the tenant's actor (started for it if it is not
    /// running) and blocks until it is in force: the next delivery is
    /// checked under it. Called off the async workers (the control plane's
    /// and the catalog follower's blocking threads).
    pub(super) fn change(&self, change: Change) -> Result<()> {
        let addr = {
            let mut state = self.state.lock().expect("actor slot lock");
            state.changing += 1;
            self.running(&mut state).addr.clone()
        };
        let done = futures_executor::block_on(addr.send(change));
        self.state.lock().expect("actor slot lock").changing -= 1;
        done.map_err(|_| Error::stopped("tenant actor"))
    }

    /// The running actor, started now (with its gate) if it is not running.
    fn running<'s>(&self, state: &'s mut SlotState) -> &'s mut Running {
        let now_ms = self.parts.clock.now_ms();
        let alive = state.running.as_ref().is_some_and(|r| r.addr.connected());
        if !alive {
            let gate = Arc::new(Gate::on(self.published.clone(), self.parts.clone()));
            state.running = Some(Running {
                addr: self.start(gate.clone()),
                gate,
                last_used_ms: now_ms,
            });
        }
        let running = state.running.as_mut().expect("started above");
        running.last_used_ms = running.last_used_ms.max(now_ms);
        running
    }

    /// A delivery's checks panicked: the running actor restarts and resets
    /// its gate.
    fn restart(&self) {
        let state = self.state.lock().expect("actor slot lock");
        if let Some(running) = &state.running {
            running.addr.do_send(Panicked);
        }
    }

    /// Starts the actor on its arbiter's thread, under a supervisor that
    /// restarts it after a panic.
    fn start(&self, gate: Arc<Gate>) -> Addr<TenantActor> {
        Supervisor::start_in_arbiter(&self.arbiter, move |_| TenantActor::new(gate))
    }

    /// Stops the actor when nothing asked for it for `idle_ms`, nor for as
    /// long as its rate limiter takes to fill up again (a limiter dropped
    /// earlier would forget a burst it rejected), and no change waits for
    /// it. Requests still holding its gate finish first. True when it was
    /// stopped.
    pub fn stop_if_idle(&self, now_ms: i64, idle_ms: i64) -> bool {
        let refill_ms = self.snapshot().settings().rate_limit.map_or(0, |limit| {
            (f64::from(limit.burst) / limit.per_sec * 1000.0).ceil() as i64
        });
        let mut state = self.state.lock().expect("actor slot lock");
        let idle = state.changing == 0
            && state
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
