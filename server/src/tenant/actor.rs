//! The tenant actor: the one owner and only writer of its running tenant.

use std::sync::Arc;

use actix::{Actor, ActorContext, Context, Handler, Message, Supervised};

use super::{services::Services, snapshot::Snapshot, state::TenantState};
use crate::routes::handle::RouteHandle;
use crate::tenant::TenantSettings;
use crate::{
    catalog,
    contracts::{Contract, TenantContracts},
    error::{Error, Result},
};

/// One tenant's actor.
///
/// The tenant actor: the one owner and only writer of its running tenant —
/// the snapshot of settings, contracts and routes it publishes, each
/// route's dispatcher, its ingest gate. Every change is a [`Change`]
/// message handled in order on its arbiter's thread, so the mailbox is the
/// order of changes; the handler restarts only what the change touched.
pub struct TenantActor {
    state: Arc<TenantState>,
    services: Arc<Services>,
}

impl TenantActor {
    /// The actor of the tenant whose running state is `state`.
    pub(super) fn new(state: Arc<TenantState>, services: Arc<Services>) -> Self {
        TenantActor { state, services }
    }

    /// The contracts of `settings`' tenant as saved now, reusing those
    /// `previous` compiled and `fresh` (see [`catalog::assemble`]).
    pub(super) fn contracts(
        services: &Services,
        settings: &TenantSettings,
        previous: &TenantContracts,
        fresh: Option<Contract>,
    ) -> TenantContracts {
        let saved = catalog::contracts::ContractStore::open(&*services.store)
            .and_then(|c| c.list(&settings.id));
        let saved = saved.unwrap_or_else(|e| {
            tracing::error!(tenant = %settings.id, error = %e, "saved contracts cannot be read; only the config file's are in force");
            Vec::new()
        });
        catalog::assemble(&settings.id, &settings.contracts, saved, previous, fresh)
    }

    /// New settings: the routes they name (those kept keep their handle),
    /// a dispatcher started for each route whose forwarding is new or
    /// changed, those of removed routes stopped, then the snapshot
    /// published. Nothing changes unless all of it could be built.
    fn settle(&mut self, settings: Arc<TenantSettings>, contracts: TenantContracts) -> Result<()> {
        let now = self.state.snapshot();
        let routes = RouteHandle::all(
            (&self.services.store, self.services.telemetry.metrics()),
            &settings.routes,
            &self.state.metrics,
            now.routes(),
        )?;
        self.state
            .forward(&self.services, (&routes, &settings), Some(&now))?;
        let next = Snapshot::of(settings, Arc::new(contracts), routes.into());
        self.state.publish(next);
        Ok(())
    }
}

impl Actor for TenantActor {
    type Context = Context<Self>;
}

/// Run under an actix `Supervisor`: stopped after a panic in a delivery's
/// checks, it is restarted and resets its gate. It stops for good once its
/// tenant is removed (no address left).
impl Supervised for TenantActor {
    fn restarting(&mut self, _ctx: &mut Self::Context) {
        self.state.reset_gate();
        tracing::warn!(tenant = %self.state.id(), "tenant actor restarted after a panic in a delivery's checks");
    }
}

/// A delivery's checks panicked: restart.
#[derive(Message)]
#[rtype(result = "()")]
pub(super) struct ChecksPanicked;

impl Handler<ChecksPanicked> for TenantActor {
    type Result = ();

    fn handle(&mut self, _msg: ChecksPanicked, ctx: &mut Self::Context) {
        ctx.stop();
    }
}

/// A change to the running tenant.
#[derive(Message)]
#[rtype(result = "Result<()>")]
pub(super) enum Change {
    /// New secrets (a rotation or a revocation): in force for the next
    /// delivery; routes, dispatchers and contracts carry on.
    Secrets(Arc<TenantSettings>),
    /// New settings (an update): its contracts read again, each route
    /// restarted only if its forwarding changed.
    Settings(Arc<TenantSettings>),
    /// The tenant's saved contracts changed; `fresh` is one just saved,
    /// compiled to check it.
    Contracts { fresh: Option<Contract> },
}

impl Handler<Change> for TenantActor {
    type Result = Result<()>;

    fn handle(&mut self, change: Change, _ctx: &mut Self::Context) -> Result<()> {
        if self.state.is_stopped() {
            return Err(Error::stopped("tenant actor"));
        }
        let now = self.state.snapshot();
        let services = self.services.clone();
        match change {
            Change::Secrets(settings) => {
                self.state.retune(now.settings(), &settings);
                let next = Snapshot::of(settings, now.contracts().clone(), now.routes().clone());
                self.state.publish(next);
            }
            Change::Settings(settings) => {
                let contracts = Self::contracts(&services, &settings, now.contracts(), None);
                self.settle(settings.clone(), contracts)?;
                self.state.retune(now.settings(), &settings);
            }
            Change::Contracts { fresh } => {
                let contracts = Self::contracts(&services, now.settings(), now.contracts(), fresh);
                let next = Snapshot::of(
                    now.settings().clone(),
                    Arc::new(contracts),
                    now.routes().clone(),
                );
                self.state.publish(next);
            }
        }
        self.services.touched().touch(self.state.id());
        Ok(())
    }
}
