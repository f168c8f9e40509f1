//! The tenant actor: the supervisor of one tenant's ingest gate. It runs
//! while the tenant takes deliveries (started on the first, stopped when
//! idle, see `slot.rs`) and, when a delivery's checks panic, is stopped and
//! restarted by its actix `Supervisor`, which rebuilds what the panic may
//! have left half changed. Deliveries do not pass through its mailbox: the
//! HTTP worker that read one runs the checks against the gate itself (see
//! `gate.rs`), so a delivery costs no hop to the actor's thread and back.

use std::sync::Arc;

use actix::{Actor, ActorContext, Context, Handler, Message, Supervised};

use super::gate::Gate;

/// One tenant's actor.
pub struct TenantActor {
    gate: Arc<Gate>,
}

impl TenantActor {
    /// The actor supervising `gate`.
    pub fn new(gate: Arc<Gate>) -> Self {
        TenantActor { gate }
    }
}

impl Actor for TenantActor {
    type Context = Context<Self>;
}

/// Run under an actix `Supervisor`: stopped after a panic, it is restarted
/// and resets its gate. It stops for good once its tenant is removed or
/// idle (no address left).
impl Supervised for TenantActor {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        self.gate.reset();
        tracing::warn!(tenant = %self.gate.tenant(), "tenant actor restarted after a panic in its ingest");
    }
}

/// A delivery's checks panicked: restart.
#[derive(Message)]
#[rtype(result = "()")]
pub struct Panicked;

impl Handler<Panicked> for TenantActor {
    type Result = ();

    fn handle(&mut self, _msg: Panicked, ctx: &mut Self::Context) {
        ctx.stop();
    }
}
