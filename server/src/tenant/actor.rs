//! The tenant actor: the one owner and only writer of its tenant's state.
//! Every change to the tenant (new settings: a secret rotated or revoked,
//! an update; new contracts) is a message to it, handled in order on its
//! arbiter's thread: it rebuilds what the change touches (the rate limiter,
//! the replay cache) and publishes the next immutable [`Snapshot`], in
//! force for the next delivery once the sender's `send` returns. Deliveries
//! do not pass through its mailbox: the HTTP worker that read one runs the
//! checks against the gate the actor owns (see `gate.rs`), reading the
//! published snapshot, so a delivery costs no hop to the actor's thread and
//! back. It runs while the tenant takes deliveries or changes (started on
//! the first, stopped when idle, see `slot.rs`) and, when a delivery's
//! checks panic, is stopped and restarted by its actix `Supervisor`, which
//! rebuilds what the panic may have left half changed.

use std::sync::Arc;

use actix::{Actor, ActorContext, Context, Handler, Message, Supervised};

use super::{gate::Gate, snapshot::Snapshot};
use crate::{config::TenantSettings, contracts::TenantContracts};

/// One tenant's actor.
pub struct TenantActor {
    gate: Arc<Gate>,
}

impl TenantActor {
    /// The actor owning `gate`.
    pub(super) fn new(gate: Arc<Gate>) -> Self {
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
pub(super) struct Panicked;

impl Handler<Panicked> for TenantActor {
    type Result = ();

    fn handle(&mut self, _msg: Panicked, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// A change to the tenant's state.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) enum Change {
    /// New settings (a secret rotated or revoked, an update), with the
    /// contracts compiled for them, or `None` to keep those in force.
    Settings {
        settings: Arc<TenantSettings>,
        contracts: Option<TenantContracts>,
    },
    /// The tenant's contracts changed.
    Contracts(TenantContracts),
}

impl Handler<Change> for TenantActor {
    type Result = ();

    fn handle(&mut self, change: Change, _ctx: &mut Self::Context) {
        let now = self.gate.snapshot();
        let next = match change {
            Change::Settings {
                settings,
                contracts,
            } => {
                self.gate.retune(now.settings(), &settings);
                let contracts = contracts.map_or_else(|| now.contracts().clone(), Arc::new);
                Snapshot::of(settings, contracts)
            }
            Change::Contracts(set) => Snapshot::of(now.settings().clone(), Arc::new(set)),
        };
        self.gate.publish(next);
    }
}
