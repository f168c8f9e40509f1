//! Following catalog changes made by other processes sharing the store.

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
    time::Duration,
};

use super::{
    known::{contract_prints, fingerprint, Fingerprint},
    resolve::{Resolver, Unrunnable},
    Catalog,
};
use crate::routes::hold::HoldRecord;
use crate::tenant::TenantSettings;
use crate::{
    error::Result,
    store::api::{CatalogRows, Store, Table},
};

/// The tenants running in this process, as the follower changes them.
pub trait Tenants: Send + Sync + 'static {
    /// True when tenant `id` runs here.
    fn is_running(&self, id: &str) -> bool;
    /// Starts a tenant, or updates it in place when it runs.
    fn start(&self, settings: TenantSettings) -> Result<()>;
    /// New secrets for a running tenant.
    fn rotate(&self, settings: TenantSettings) -> Result<()>;
    /// Stops a tenant; true when it ran.
    fn stop(&self, id: &str) -> bool;
    /// Records a stored tenant that cannot run, with why.
    fn unavailable(&self, id: &str, reason: String);
    /// Puts a running tenant's saved contracts in force again.
    fn reload_contracts(&self, id: &str) -> Result<()>;
    /// Puts an operator's hold on a running tenant's route; false when no
    /// such route runs here.
    fn hold(&self, id: &str, route: &str, record: HoldRecord) -> bool;
    /// Runs replay `replay_id` of a running tenant as stored now (or
    /// tells the one running that its order changed); false when the
    /// tenant does not run here.
    fn replay(&self, id: &str, replay_id: &str) -> bool;
}

/// Starts (or updates) tenant `id` as stored now; a tenant no longer
/// stored is left alone.
pub fn start_stored(
    tenants: &dyn Tenants,
    resolver: &Resolver,
    catalog: &Catalog,
    id: &str,
) -> std::result::Result<(), Unrunnable> {
    match resolver.stored(catalog, id)? {
        Some(settings) => tenants.start(settings).map_err(Unrunnable::Failed),
        None => Ok(()),
    }
}

/// What a follower needs to start stored tenants, and what it saw last.
///
/// Following catalog changes made by other processes sharing the store:
/// each poll reads [`crate::store::api::Storage::catalog_version`], and
/// when it moved, compares every stored tenant's rows with those this
/// process last wrote or applied (its own writes are known already), then
/// starts tenants created elsewhere, updates those updated, swaps the
/// secrets of those rotated and stops those deleted, and recompiles the
/// contracts of every running tenant (config-file ones too) whose saved
/// contracts changed. Tokens need nothing: they are read from the shared
/// rows on every request.
pub struct Follower {
    tenants: Arc<dyn Tenants>,
    store: Store,
    catalog: Catalog,
    rows: Arc<dyn CatalogRows>,
    config_ids: Arc<HashSet<String>>,
    resolver: Resolver,
    version: u64,
    /// Each tenant's saved contracts as last compiled here, hashed.
    contracts: HashMap<String, u64>,
    /// Each route's hold as last put in force here, by `tenant/route`.
    holds: HashMap<String, HoldRecord>,
    /// Each replay's order as last seen here, by `tenant/replay id`.
    replays: HashMap<String, Vec<u8>>,
}

impl Follower {
    /// A follower of the catalog as it is now: the version first, then the
    /// rows, so that whatever changes after the version was read is applied
    /// by the first poll. Made before the stored tenants are read and
    /// started, so that a change made meanwhile is not taken for known.
    pub fn new(
        tenants: Arc<dyn Tenants>,
        store: Store,
        catalog: Catalog,
        resolver: Resolver,
    ) -> Result<Follower> {
        let mut follower = Follower {
            rows: store.catalog_rows()?,
            config_ids: catalog.config_ids(),
            tenants,
            catalog,
            resolver,
            version: store.catalog_version()?,
            store,
            contracts: HashMap::new(),
            holds: HashMap::new(),
            replays: HashMap::new(),
        };
        follower.contracts = follower.contract_prints()?;
        follower.holds = follower.stored_holds()?;
        follower.replays = follower
            .rows
            .scan(Table::Replays, "")?
            .into_iter()
            .collect();
        let now = follower.fingerprints()?;
        *follower.catalog.known().lock().expect("known lock") = now;
        Ok(follower)
    }

    fn fingerprints(&self) -> Result<HashMap<String, Fingerprint>> {
        let secrets: HashMap<String, Vec<u8>> =
            self.rows.scan(Table::Secrets, "")?.into_iter().collect();
        Ok(self
            .rows
            .scan(Table::Tenants, "")?
            .into_iter()
            .filter(|(id, _)| !self.config_ids.contains(id))
            .map(|(id, record)| {
                let print = fingerprint(&record, secrets.get(&id).map(Vec::as_slice));
                (id, print)
            })
            .collect())
    }

    fn contract_prints(&self) -> Result<HashMap<String, u64>> {
        Ok(contract_prints(&self.rows.scan(Table::Contracts, "")?))
    }

    /// Reloads the contracts of each running tenant whose saved contracts
    /// changed since the last poll (this process's own changes too:
    /// reloading is idempotent, and compiles only the contracts changed).
    fn recompile_contracts(&mut self) -> Result<()> {
        let now = self.contract_prints()?;
        let changed: HashSet<&String> = now
            .keys()
            .chain(self.contracts.keys())
            .filter(|id| now.get(*id) != self.contracts.get(*id))
            .collect();
        for id in changed.into_iter().filter(|id| self.tenants.is_running(id)) {
            match self.tenants.reload_contracts(id) {
                Ok(()) => tracing::info!(tenant = %id, "saved contracts changed: recompiled here"),
                Err(e) => {
                    tracing::warn!(tenant = %id, error = %e, "recompiling changed contracts failed")
                }
            }
        }
        self.contracts = now;
        Ok(())
    }

    fn stored_holds(&self) -> Result<HashMap<String, HoldRecord>> {
        Ok(HoldRecord::all(&*self.rows)?
            .into_iter()
            .map(|(tenant, route, record)| (HoldRecord::key(&tenant, &route), record))
            .collect())
    }

    /// Puts in force each route's hold paused or resumed since the last
    /// poll (on any replica): a dispatcher here stops sending, or ramps
    /// up, at its next pass.
    fn follow_holds(&mut self) -> Result<()> {
        let now = self.stored_holds()?;
        for (key, record) in &now {
            if self.holds.get(key) == Some(record) {
                continue;
            }
            let (tenant, route) = key.split_once('/').unwrap_or((key, ""));
            if self.tenants.hold(tenant, route, *record) {
                let change = if record.paused { "paused" } else { "resumed" };
                tracing::info!(tenant = %tenant, route = %route, change, "route held on another replica: applied here");
            }
        }
        self.holds = now;
        Ok(())
    }

    /// Hands each replay ordered, paused, resumed or cancelled since the
    /// last poll (on any replica) to its tenant here: one running here
    /// sees the change at its next step, one new starts (and runs where
    /// the route's lease is held).
    fn follow_replays(&mut self) -> Result<()> {
        let now: HashMap<String, Vec<u8>> =
            self.rows.scan(Table::Replays, "")?.into_iter().collect();
        for (key, order) in &now {
            if self.replays.get(key) == Some(order) {
                continue;
            }
            let (tenant, id) = key.split_once('/').unwrap_or((key, ""));
            if self.tenants.replay(tenant, id) {
                tracing::info!(tenant = %tenant, replay = %id, "replay ordered or steered on another replica: followed here");
            }
        }
        self.replays = now;
        Ok(())
    }

    /// One poll: applies what changed since the last. Blocks on storage.
    pub fn step(&mut self) -> Result<()> {
        let version = self.store.catalog_version()?;
        if version == self.version {
            return Ok(());
        }
        let now = self.fingerprints()?;
        let seen = self.catalog.known().lock().expect("known lock").clone();
        for id in seen.keys().filter(|id| !now.contains_key(*id)) {
            if self.tenants.stop(id) {
                tracing::info!(tenant = %id, "tenant deleted on another replica: stopped here");
            }
        }
        for (id, print) in &now {
            let started = match seen.get(id) {
                // Created here (already running) or elsewhere.
                None if self.tenants.is_running(id) => continue,
                None => "created",
                Some(old) if old.0 != print.0 => "updated",
                Some(old) if old.1 != print.1 => "rotated",
                Some(_) => continue,
            };
            let outcome = match started {
                "rotated" => self.rotate(id),
                _ => start_stored(&*self.tenants, &self.resolver, &self.catalog, id),
            };
            match outcome {
                Ok(()) => {
                    tracing::info!(tenant = %id, change = started, "tenant changed on another replica: applied here")
                }
                Err(reason) => {
                    tracing::error!(tenant = %id, reason = %reason, "stored tenant cannot start and is skipped; its deliveries get 503 TENANT_UNAVAILABLE");
                    self.tenants.unavailable(id, reason.to_string());
                }
            }
        }
        *self.catalog.known().lock().expect("known lock") = now;
        self.recompile_contracts()?;
        self.follow_holds()?;
        self.follow_replays()?;
        self.version = version;
        Ok(())
    }

    /// New secrets for a running tenant, without restarting it; one not
    /// running here starts.
    fn rotate(&self, id: &str) -> std::result::Result<(), Unrunnable> {
        let Some(settings) = self.resolver.stored(&self.catalog, id)? else {
            return Ok(());
        };
        let applied = match self.tenants.is_running(id) {
            true => self.tenants.rotate(settings),
            false => self.tenants.start(settings),
        };
        applied.map_err(Unrunnable::Failed)
    }
}

/// Polls every `every` until the task is dropped; a failure is logged
/// once, until a poll succeeds again.
pub async fn follow(mut follower: Follower, every: Duration) {
    let mut failing = false;
    loop {
        tokio::time::sleep(every).await;
        let stepped = tokio::task::spawn_blocking(move || {
            let result = follower.step();
            (follower, result)
        })
        .await;
        match stepped {
            Ok((back, result)) => {
                follower = back;
                match result {
                    Err(e) if !failing => {
                        tracing::warn!(error = %e, "reading catalog changes failed; trying again");
                        failing = true;
                    }
                    Err(_) => {}
                    Ok(()) => failing = false,
                }
            }
            Err(_) => return,
        }
    }
}
