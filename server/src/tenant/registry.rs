//! Tenant id -> running actor, plus what the HTTP layer must know before it
//! reads a body (limit, enabled).

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use actix::{Actor, Addr, ArbiterHandle};

use super::actor::TenantActor;
use crate::{
    clock::SharedClock, config::TenantSettings, error::Result, ids::TenantId, store::Store,
};

/// What the ingress needs to route one delivery.
#[derive(Clone)]
pub struct TenantHandle {
    /// The tenant's actor.
    pub addr: Addr<TenantActor>,
    /// Body limit, enforced while reading.
    pub max_body_bytes: usize,
    /// Disabled tenants are answered 403 before the body is read.
    pub enabled: bool,
}

/// All running tenants.
#[derive(Clone)]
pub struct Registry {
    tenants: Arc<RwLock<HashMap<TenantId, TenantHandle>>>,
    arbiters: Arc<Vec<ArbiterHandle>>,
    store: Store,
    clock: SharedClock,
}

impl Registry {
    /// An empty registry whose actors run on `arbiters` (spread by tenant).
    pub fn new(arbiters: Vec<ArbiterHandle>, store: Store, clock: SharedClock) -> Self {
        assert!(!arbiters.is_empty(), "at least one arbiter");
        Registry {
            tenants: Arc::default(),
            arbiters: Arc::new(arbiters),
            store,
            clock,
        }
    }

    /// Starts (or replaces) the actor of one tenant.
    pub fn start_tenant(&self, settings: TenantSettings) -> Result<()> {
        let settings = Arc::new(settings);
        let trees = self.store.tenant_trees(&settings.id)?;
        let index = {
            let tenants = self.tenants.read().expect("registry lock");
            tenants.len() % self.arbiters.len()
        };
        let actor = TenantActor::new(
            settings.clone(),
            trees,
            self.store.committer().clone(),
            self.clock.clone(),
        );
        let addr = TenantActor::start_in_arbiter(&self.arbiters[index], |_| actor);
        let handle = TenantHandle {
            addr,
            max_body_bytes: settings.max_body_bytes,
            enabled: settings.enabled,
        };
        self.tenants
            .write()
            .expect("registry lock")
            .insert(settings.id.clone(), handle);
        Ok(())
    }

    /// The handle of one tenant.
    pub fn get(&self, id: &str) -> Option<TenantHandle> {
        self.tenants
            .read()
            .expect("registry lock")
            .get(&TenantId::new(id))
            .cloned()
    }

    /// True when every tenant's actor is alive.
    pub fn all_running(&self) -> bool {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .all(|h| h.addr.connected())
    }

    /// The storage the tenants write to.
    pub fn store(&self) -> &Store {
        &self.store
    }
}
