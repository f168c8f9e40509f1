//! The map of running tenants: tenant id to the handle of its actor, and the
//! stored tenants that could not start.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use actix::{ArbiterHandle, Supervisor};

use super::{actor::TenantActor, handle::TenantHandle, services::Services, state::TenantState};
use crate::routes::handle::RouteHandle;
use crate::routes::hold::HoldRecord;
use crate::tenant::TenantSettings;
use crate::{
    catalog::follow::Tenants,
    contracts::TenantContracts,
    error::{Error, Result},
    feed::{DeliveryEvent, DeliveryEventKind},
    ids::{DeliveryId, TenantId},
    store::lifecycle::Resend,
};

/// All running tenants.
///
/// The map of running tenants: tenant id to the handle of its actor, and
/// the stored tenants that could not start. Everything else about a
/// running tenant is its actor's.
#[derive(Clone)]
pub struct Registry {
    tenants: Arc<RwLock<HashMap<TenantId, TenantHandle>>>,
    /// Stored tenants that could not start, with why: their ingest answers
    /// 503 until an update fixes them or they are deleted.
    unavailable: Arc<RwLock<HashMap<String, String>>>,
    arbiters: Arc<Vec<ArbiterHandle>>,
    services: Arc<Services>,
}

impl Registry {
    /// An empty registry whose actors run on `arbiters` (spread by tenant),
    /// sharing `services`.
    pub fn new(arbiters: Vec<ArbiterHandle>, services: Arc<Services>) -> Self {
        assert!(!arbiters.is_empty(), "at least one arbiter");
        Registry {
            tenants: Arc::default(),
            unavailable: Arc::default(),
            arbiters: Arc::new(arbiters),
            services,
        }
    }

    /// Stops every dispatcher (at shutdown): attempts in flight stay queued
    /// and are sent again after a restart.
    pub fn stop_forwarding(&self) {
        for handle in self.handles() {
            handle.stop();
        }
    }

    /// Gives up this process's forwarding leases (at shutdown, once its
    /// dispatchers stopped), so other processes take its tenants over at
    /// once. Blocks on storage.
    pub fn release_leases(&self) {
        let Services { store, lease, .. } = &*self.services;
        for handle in self.handles() {
            for route in handle.routes().iter() {
                let scope = route.scope();
                if let Err(e) = store.release_forwarding(scope, &lease.owner) {
                    tracing::warn!(tenant = %scope, error = %e, "giving up the forwarding lease failed; it runs out by itself");
                }
            }
        }
    }

    /// Starts the actor of one tenant, with a dispatcher for each of its
    /// routes that forwards; a running one is updated in place instead
    /// ([`TenantHandle::update`]). Work a previous incarnation left queued
    /// is picked up.
    pub fn start_tenant(&self, settings: TenantSettings) -> Result<()> {
        if let Some(running) = self.get(settings.id.as_str()) {
            return running.update(settings);
        }
        let services = &self.services;
        let settings = Arc::new(settings);
        let data = services.store.tenant(&settings.id)?;
        let none = TenantContracts::default();
        let contracts = TenantActor::contracts(services, &settings, &none, None);
        let state = TenantState::new(services, settings.clone(), contracts, data)?;
        let routes = state.snapshot().routes().clone();
        state.forward(services, (&routes, &settings), None)?;
        let arbiter = &self.arbiters[self.arbiter_index(&settings.id)];
        let (actor_state, actor_services) = (state.clone(), services.clone());
        let actor = Supervisor::start_in_arbiter(arbiter, move |_| {
            TenantActor::new(actor_state, actor_services)
        });
        let old = self
            .tenants
            .write()
            .expect("registry lock")
            .insert(settings.id.clone(), TenantHandle::new(actor, state));
        if let Some(old) = old {
            old.stop();
        }
        services.touched.touch(&settings.id);
        self.unavailable
            .write()
            .expect("registry lock")
            .remove(settings.id.as_str());
        Ok(())
    }

    /// Records a stored tenant that could not start, so its ingest answers
    /// 503 instead of 404 while every other tenant runs.
    pub fn mark_unavailable(&self, id: &str, reason: String) {
        self.unavailable
            .write()
            .expect("registry lock")
            .insert(id.to_owned(), reason);
    }

    /// Why a stored tenant is not running, when it failed to start.
    pub fn unavailable(&self, id: &str) -> Option<String> {
        self.unavailable
            .read()
            .expect("registry lock")
            .get(id)
            .cloned()
    }

    /// The handle of a running tenant, or `NotFound`.
    pub fn running(&self, id: &str) -> Result<TenantHandle> {
        self.get(id)
            .ok_or_else(|| Error::NotFound(format!("tenant {id}")))
    }

    /// Stops a tenant and forgets it; its data is left to the caller.
    pub fn remove(&self, id: &str) -> bool {
        self.services.telemetry.metrics().windows().forget(id);
        self.unavailable.write().expect("registry lock").remove(id);
        let removed = self.tenants.write().expect("registry lock").remove(id);
        if let Some(handle) = &removed {
            handle.stop();
            self.services.touched.touch(handle.data().tenant());
        }
        removed.is_some()
    }

    /// Spreads tenants over arbiters by a hash of their id.
    fn arbiter_index(&self, id: &TenantId) -> usize {
        let hash = id.as_str().bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
            (h ^ u64::from(b)).wrapping_mul(0x100_0000_01b3)
        });
        (hash % self.arbiters.len() as u64) as usize
    }

    /// The handle of one tenant.
    pub fn get(&self, id: &str) -> Option<TenantHandle> {
        self.tenants.read().expect("registry lock").get(id).cloned()
    }

    /// True when every tenant's actor takes messages.
    pub fn all_running(&self) -> bool {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .all(TenantHandle::is_alive)
    }

    /// Drops the ingest gates of tenants quiet for `idle_ms` by the
    /// services' clock; they start again on their next delivery. Returns
    /// how many were dropped.
    pub fn stop_idle_gates(&self, idle_ms: i64) -> usize {
        let now_ms = self.services.clock.now_ms();
        let stopped = self
            .handles()
            .iter()
            .filter(|h| h.state().gate().stop_if_idle(now_ms, idle_ms))
            .count();
        if stopped > 0 {
            tracing::debug!(stopped, "idle tenant gates dropped");
        }
        stopped
    }

    /// How many tenant gates run now.
    pub fn running_gates(&self) -> usize {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .filter(|h| h.state().gate().is_running())
            .count()
    }

    /// Queues a dead letter again as a new delivery of the same event and
    /// returns the new delivery id. Blocks on storage.
    pub fn redeliver(&self, tenant: &str, delivery_id: &DeliveryId) -> Result<DeliveryId> {
        let handle = self.running(tenant)?;
        let route = handle.route_of(delivery_id)?;
        self.redeliver_on(&handle, &route, delivery_id, Resend::Any)
    }

    /// [`Registry::redeliver`] of a delivery of `handle`'s route `route`,
    /// queued again on that route, a settled one as `resend` allows.
    /// Blocks on storage.
    pub fn redeliver_on(
        &self,
        handle: &TenantHandle,
        route: &RouteHandle,
        delivery_id: &DeliveryId,
        resend: Resend,
    ) -> Result<DeliveryId> {
        let tenant = handle.settings().id.clone();
        let now = self.services.clock.now_ms();
        let new_id = route.data.redeliver(delivery_id, now, resend)?;
        let state = route.data.state(&new_id)?;
        route.wake.queued();
        tracing::info!(tenant = %tenant, route = %route.name, delivery_id = %delivery_id, new_delivery_id = %new_id, "dead letter redelivered");
        if let Some(state) = state {
            self.services.feed.publish(DeliveryEvent {
                kind: DeliveryEventKind::Redelivered,
                tenant,
                delivery_id: new_id.clone(),
                event_id: state.event_id,
                at_ms: now,
                attempt: 0,
                status_code: None,
                reason: None,
            });
        }
        Ok(new_id)
    }

    /// Every running tenant's handle.
    pub fn handles(&self) -> Vec<TenantHandle> {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .cloned()
            .collect()
    }
}

/// The catalog follower changes this process's tenants through the registry.
impl Tenants for Registry {
    fn is_running(&self, id: &str) -> bool {
        self.get(id).is_some()
    }

    fn start(&self, settings: TenantSettings) -> Result<()> {
        self.start_tenant(settings)
    }

    fn rotate(&self, settings: TenantSettings) -> Result<()> {
        self.running(settings.id.as_str())?.rotate(settings)
    }

    fn stop(&self, id: &str) -> bool {
        self.remove(id)
    }

    fn unavailable(&self, id: &str, reason: String) {
        self.mark_unavailable(id, reason);
    }

    fn reload_contracts(&self, id: &str) -> Result<()> {
        self.running(id)?.reload_contracts(None)
    }

    fn hold(&self, id: &str, route: &str, record: HoldRecord) -> bool {
        self.get(id)
            .is_some_and(|tenant| tenant.hold_route(route, record))
    }

    fn replay(&self, id: &str, replay_id: &str) -> bool {
        self.get(id).is_some_and(|tenant| {
            let started = tenant.state().replay(&self.services, replay_id);
            if let Err(e) = &started {
                tracing::warn!(tenant = %id, replay = %replay_id, error = %e, "a replay cannot start here");
            }
            started.is_ok()
        })
    }
}
