//! What the ingress and the control plane hold of one running tenant: the
//! address of its actor, to send it changes, and the state it publishes.

use std::sync::Arc;

use actix::Addr;

use super::{
    actor::{Change, ChecksPanicked, TenantActor},
    snapshot::Snapshot,
    state::TenantState,
};
use crate::routes::handle::RouteHandle;
use crate::routes::hold::HoldRecord;
use crate::tenant::TenantSettings;
use crate::{
    contracts::Contract,
    error::{Error, Result},
    ids::DeliveryId,
    ingest::{Answer, Ingest},
    store::api::TenantStore,
};

/// One running tenant, cheap to clone.
#[derive(Clone)]
pub struct TenantHandle {
    actor: Addr<TenantActor>,
    state: Arc<TenantState>,
}

impl TenantHandle {
    pub(super) fn new(actor: Addr<TenantActor>, state: Arc<TenantState>) -> Self {
        TenantHandle { actor, state }
    }

    /// Runs one delivery through the tenant's ingest gate on the calling
    /// thread (starting the gate if it is not running).
    pub fn ingest(&self, msg: Ingest<'_>) -> Answer {
        self.state
            .ingest(msg, || self.actor.do_send(ChecksPanicked))
    }

    /// What the tenant's actor publishes and keeps: its counters, budget,
    /// signals and shares.
    pub(crate) fn state(&self) -> &Arc<TenantState> {
        &self.state
    }

    /// Its data in storage: the default route's.
    pub fn data(&self) -> TenantStore {
        self.state.snapshot().routes()[0].data.clone()
    }

    /// The tenant's settings in force.
    pub fn settings(&self) -> Arc<TenantSettings> {
        self.state.snapshot().settings().clone()
    }

    /// The tenant's settings, contracts and routes in force, as one
    /// snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.state.snapshot()
    }

    /// Its routes in force, the default one first.
    pub fn routes(&self) -> Arc<[RouteHandle]> {
        self.state.snapshot().routes().clone()
    }

    /// The route whose scope holds delivery `id`: the default route unless
    /// another one's does. Reads storage.
    pub fn route_of(&self, id: &DeliveryId) -> Result<RouteHandle> {
        let routes = self.routes();
        for route in routes.iter().skip(1) {
            if route.data.state(id)?.is_some() {
                return Ok(route.clone());
            }
        }
        Ok(routes[0].clone())
    }

    /// Puts an operator's hold (`record`, as stored) on route `name` and
    /// wakes its dispatcher; false when the tenant has no such route.
    pub fn hold_route(&self, name: &str, record: HoldRecord) -> bool {
        let routes = self.routes();
        let Some(route) = routes.iter().find(|r| r.name == name) else {
            return false;
        };
        route.hold.apply(Some(record));
        route.wake.queued();
        true
    }

    /// New secrets (a rotation or a revocation), in force for the next
    /// delivery once this returns. Blocks until its actor applied them:
    /// call it off the async workers.
    pub fn rotate(&self, settings: TenantSettings) -> Result<()> {
        self.change(Change::Secrets(Arc::new(settings)))
    }

    /// New settings, in force for the next delivery once this returns:
    /// its contracts read again, a route's dispatcher restarted only when
    /// its forwarding changed, new routes started, removed ones stopped.
    /// Blocks until its actor applied them.
    pub fn update(&self, settings: TenantSettings) -> Result<()> {
        self.change(Change::Settings(Arc::new(settings)))
    }

    /// Puts its saved contracts in force after a change, compiling only
    /// those changed (`fresh`: one just saved, compiled to check it).
    /// Blocks until its actor applied them.
    pub fn reload_contracts(&self, fresh: Option<Contract>) -> Result<()> {
        self.change(Change::Contracts { fresh })
    }

    fn change(&self, change: Change) -> Result<()> {
        futures_executor::block_on(self.actor.send(change))
            .map_err(|_| Error::stopped("tenant actor"))?
    }

    /// True while its actor takes messages.
    pub(super) fn is_alive(&self) -> bool {
        self.actor.connected()
    }

    /// Stops its dispatchers for good; the actor stops when its last
    /// address is dropped.
    pub(super) fn stop(&self) {
        self.state.stop();
    }
}
