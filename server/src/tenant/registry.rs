//! Tenant id -> running actor and dispatcher, plus what the HTTP layer must
//! know before it reads a body (limit, enabled).

use std::{
    collections::HashMap,
    sync::{Arc, Mutex, PoisonError, RwLock},
    time::Duration,
};

use actix::ArbiterHandle;
use futures_util::future::AbortHandle;
use tokio::sync::Semaphore;

use super::{
    actor::Change,
    gate::GateParts,
    replay::{replay_cache, ReplayCache},
    routes::{self, RouteHandle},
    slot::ActorSlot,
    snapshot::Snapshot,
};
use crate::{
    alerts::{Signals, Touched},
    catalog::{self, contracts::ContractStore, follow::Tenants},
    clock::SharedClock,
    config::{ForwardSettings, LimitsConfig, RateLimitConfig, TenantSettings},
    contracts::{Contract, TenantContracts},
    error::{Error, Result},
    feed::{DeliveryEvent, DeliveryEventKind, DeliveryFeed},
    forward::{Dispatcher, DispatcherParts, ForwardRuntime, LeaseTerms},
    ids::{DeliveryId, TenantId},
    ingest::{Answer, Ingest},
    metrics::TenantMetrics,
    rate_limit::RejectionBudget,
    routes::{
        filter::pool::FilterPool,
        transform::pool::{RouteShare, TransformPool},
    },
    store::{
        api::{Store, TenantStore},
        lifecycle::Resend,
    },
    telemetry::Telemetry,
};

/// `storage.postgres.forward_lease_secs`'s default.
const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// What the ingress and the control plane need of one tenant.
#[derive(Clone)]
pub struct TenantHandle {
    /// The tenant's actor, started on its first delivery or change, and the
    /// snapshot of settings and contracts it publishes.
    actor: Arc<ActorSlot>,
    /// Its routes, the default one (its own data, [`TenantHandle::data`]) first.
    pub routes: Arc<[RouteHandle]>,
    /// The counters of its `tenant` label.
    pub metrics: Arc<TenantMetrics>,
    /// How many of its rejections may still be recorded; kept across
    /// restarts of the tenant, so an update does not refill it.
    pub rejection_budget: Arc<RejectionBudget>,
    /// Its occurrence counters for alerts; kept across restarts too.
    pub signals: Arc<Signals>,
    /// The share of the transform workers its control-plane runs take (a
    /// route's check when saved, an unsaved route's test), so that however
    /// many of them it asks for, it holds at most a route's share; kept
    /// across restarts too.
    pub transform_share: Arc<RouteShare>,
    /// Its turn on the filter threads, which its gate and its route tests
    /// take: one evaluation at a time; kept across restarts too.
    pub filter_share: Arc<Semaphore>,
    /// The dispatchers of its routes that forward; replaced when it is
    /// updated.
    dispatchers: Arc<Mutex<Vec<AbortHandle>>>,
}

/// All running tenants.
#[derive(Clone)]
pub struct Registry {
    tenants: Arc<RwLock<HashMap<TenantId, TenantHandle>>>,
    /// The tenants started, changed or stopped, and those whose signals
    /// changed, since the alert evaluator last read them.
    touched: Arc<Touched>,
    /// Stored tenants that could not start, with why: their ingest answers
    /// 503 until an update fixes them or they are deleted.
    unavailable: Arc<RwLock<HashMap<String, String>>>,
    arbiters: Arc<Vec<ArbiterHandle>>,
    store: Store,
    clock: SharedClock,
    feed: DeliveryFeed,
    telemetry: Telemetry,
    /// Private CAs every destination trusts (`[forward] ca_file`).
    forward_cas: Arc<Vec<reqwest::Certificate>>,
    /// Held while a change to a tenant is prepared and sent to its actor,
    /// so an older reading of the store never replaces a newer one.
    changes: Arc<Mutex<()>>,
    /// This process's claim on the tenants it forwards.
    lease: LeaseTerms,
    /// Where the dispatchers run.
    forwarding: ForwardRuntime,
    /// Each tenant's rejection-recording budget (`[limits.rejection_records]`).
    rejection_records: RateLimitConfig,
    /// The replay cache every tenant's gate keeps its scope in.
    replay: ReplayCache,
}

impl Registry {
    /// An empty registry whose actors run on `arbiters` (spread by tenant)
    /// and dispatchers on `forwarding`.
    pub fn new(
        arbiters: Vec<ArbiterHandle>,
        forwarding: ForwardRuntime,
        store: Store,
        clock: SharedClock,
        feed: DeliveryFeed,
        telemetry: Telemetry,
    ) -> Self {
        assert!(!arbiters.is_empty(), "at least one arbiter");
        telemetry.metrics().windows().begin(clock.now_ms());
        Registry {
            tenants: Arc::default(),
            touched: Arc::default(),
            unavailable: Arc::default(),
            arbiters: Arc::new(arbiters),
            store,
            clock,
            feed,
            telemetry,
            forward_cas: Arc::default(),
            changes: Arc::default(),
            lease: LeaseTerms::new(DEFAULT_LEASE),
            forwarding,
            rejection_records: RateLimitConfig {
                per_sec: 1.0,
                burst: 100,
            },
            replay: replay_cache(LimitsConfig::DEFAULT_REPLAY_CACHE_KEYS),
        }
    }

    /// The registry with one replay cache of at most `keys` keys for every
    /// tenant (`[limits] replay_cache_keys`).
    pub fn with_replay_cache_keys(mut self, keys: u64) -> Self {
        self.replay = replay_cache(keys);
        self
    }

    /// The registry with each tenant recording at most `budget` of its
    /// rejections (`[limits.rejection_records]`).
    pub fn with_rejection_records(mut self, budget: RateLimitConfig) -> Self {
        self.rejection_records = budget;
        self
    }

    /// The registry with dispatchers claiming their tenant's forwarding
    /// lease for `lease` at a time (`storage.postgres.forward_lease_secs`).
    pub fn with_forward_lease(mut self, lease: Duration) -> Self {
        self.lease = LeaseTerms::new(lease);
        self
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
        for handle in self.handles() {
            for route in handle.routes.iter() {
                let scope = route.scope();
                if let Err(e) = self.store.release_forwarding(scope, &self.lease.owner) {
                    tracing::warn!(tenant = %scope, error = %e, "giving up the forwarding lease failed; it runs out by itself");
                }
            }
        }
    }

    /// The registry with `cas` (`[forward] ca_file`) trusted by the
    /// dispatcher of every tenant it starts.
    pub fn with_forward_cas(mut self, cas: Vec<reqwest::Certificate>) -> Self {
        self.forward_cas = Arc::new(cas);
        self
    }

    /// Starts the actor and dispatcher of one tenant; a running one is
    /// updated in place instead ([`Registry::update`]). Work a previous
    /// incarnation left queued is picked up.
    pub fn start_tenant(&self, settings: TenantSettings) -> Result<()> {
        if self.get(settings.id.as_str()).is_some() {
            return self.update(settings);
        }
        self.launch(settings)
    }

    /// Starts a tenant's actor, gate and dispatchers anew, in place of any
    /// running ones (whose rejection budget it keeps).
    fn launch(&self, settings: TenantSettings) -> Result<()> {
        let settings = Arc::new(settings);
        let data = self.store.tenant(&settings.id)?;
        let arbiter = &self.arbiters[self.arbiter_index(&settings.id)];
        let previous = self.get(settings.id.as_str()).map(|h| h.routes);
        let previous = previous.as_deref().unwrap_or_default();
        let metrics = self.telemetry.metrics().tenant(&settings.id);
        let sources = (&self.store, &**self.telemetry.metrics());
        let routes: Arc<[RouteHandle]> =
            RouteHandle::all(sources, &settings, data.clone(), &metrics, previous)?.into();
        let senders = self.telemetry.metrics().senders().label(metrics.label());
        let running = self.get(settings.id.as_str());
        let filter_share = running
            .as_ref()
            .map_or_else(FilterPool::tenant_share, |old| old.filter_share.clone());
        let transform_share = running.as_ref().map_or_else(
            || TransformPool::shared().route_share(),
            |old| old.transform_share.clone(),
        );
        let parts = GateParts {
            filter_share: filter_share.clone(),
            data: data.clone(),
            clock: self.clock.clone(),
            wake: routes.iter().map(|r| r.wake.clone()).collect(),
            feed: self.feed.clone(),
            spans: self.telemetry.spans().clone(),
            senders: Some(senders),
            replay: self.replay.clone(),
        };
        let contracts = self.compiled_contracts(&settings, &TenantContracts::default(), None);
        let first = Snapshot::of(settings.clone(), Arc::new(contracts));
        let actor = Arc::new(ActorSlot::new(arbiter.clone(), first, parts));
        let signals = self.get(settings.id.as_str()).map_or_else(
            || Arc::new(Signals::of(settings.id.clone(), self.touched.clone())),
            |old| old.signals.clone(),
        );
        let dispatchers = self.dispatchers(&settings, &routes, &signals)?;
        let mut tenants = self.tenants.write().expect("registry lock");
        let rejection_budget = tenants.get(&settings.id).map_or_else(
            || {
                let now_ms = self.clock.now_ms();
                Arc::new(RejectionBudget::new(self.rejection_records, now_ms))
            },
            |old| old.rejection_budget.clone(),
        );
        let handle = TenantHandle {
            actor,
            routes,
            metrics,
            rejection_budget,
            signals,
            filter_share,
            transform_share,
            dispatchers: Arc::new(Mutex::new(dispatchers)),
        };
        let old = tenants.insert(settings.id.clone(), handle);
        drop(tenants);
        self.touched.touch(&settings.id);
        if let Some(old) = old {
            old.stop();
        }
        self.unavailable
            .write()
            .expect("registry lock")
            .remove(settings.id.as_str());
        Ok(())
    }

    /// A running dispatcher for each route of `settings` with a
    /// destination, each on its route's scope (its own queue, in-flight
    /// slots, rate, breaker and lease). None runs unless all could start.
    fn dispatchers(
        &self,
        settings: &TenantSettings,
        routes: &[RouteHandle],
        signals: &Arc<Signals>,
    ) -> Result<Vec<AbortHandle>> {
        let built = routes
            .iter()
            .zip(routes::forwarding(settings))
            .filter_map(|(route, forward)| Some((route, forward?)))
            .map(|(route, forward)| self.dispatcher(settings, route, forward, signals))
            .collect::<Result<Vec<_>>>()?;
        Ok(built
            .into_iter()
            .map(|dispatcher| self.forwarding.spawn(dispatcher.run()))
            .collect())
    }

    /// The dispatcher of one route.
    fn dispatcher(
        &self,
        settings: &TenantSettings,
        route: &RouteHandle,
        forward: &ForwardSettings,
        signals: &Arc<Signals>,
    ) -> Result<Dispatcher> {
        Dispatcher::new(DispatcherParts {
            tenant: settings.id.clone(),
            route: route.name.clone(),
            data: route.data.clone(),
            store: self.store.clone(),
            settings: forward.clone(),
            clock: self.clock.clone(),
            wake: route.wake.clone(),
            feed: self.feed.clone(),
            spans: self.telemetry.spans().clone(),
            metrics: route.metrics.clone(),
            shared_cas: self.forward_cas.clone(),
            lease: self.lease.clone(),
            signals: Some(signals.clone()),
        })
        .map_err(|e| {
            Error::config(
                format!("tenant {} route {}", settings.id, route.name),
                format!("destination client: {e}"),
            )
        })
    }

    /// Starts the dispatcher of one of `tenant`'s alert sinks, `name`, on
    /// its own scope `data`: a queue, slots, breaker and lease of its own,
    /// apart from the tenant's routes; its attempts raise no alerts.
    pub(crate) fn start_sink_dispatcher(
        &self,
        tenant: &TenantId,
        name: &str,
        (data, wake): (TenantStore, Arc<tokio::sync::Notify>),
        settings: ForwardSettings,
    ) -> Result<AbortHandle> {
        let metrics = self.telemetry.metrics();
        let route_metrics = metrics.route(&metrics.tenant(tenant), name);
        let dispatcher = Dispatcher::new(DispatcherParts {
            tenant: tenant.clone(),
            route: name.to_owned(),
            data,
            store: self.store.clone(),
            settings,
            clock: self.clock.clone(),
            wake,
            feed: self.feed.clone(),
            spans: self.telemetry.spans().clone(),
            metrics: route_metrics,
            shared_cas: self.forward_cas.clone(),
            lease: self.lease.clone(),
            signals: None,
        })
        .map_err(|e| {
            Error::config(
                format!("tenant {tenant} {name}"),
                format!("sink client: {e}"),
            )
        })?;
        Ok(self.forwarding.spawn(dispatcher.run()))
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
    fn running(&self, id: &str) -> Result<TenantHandle> {
        self.get(id)
            .ok_or_else(|| Error::NotFound(format!("tenant {id}")))
    }

    /// New secrets for a running tenant (a rotation or a revocation), in
    /// force for its next delivery: its actor publishes them; its
    /// dispatcher, replay scope and rate limit carry on.
    pub fn reconfigure(&self, settings: TenantSettings) -> Result<()> {
        let handle = self.running(settings.id.as_str())?;
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let changed = handle.actor.change(Change::Settings {
            settings: Arc::new(settings),
            contracts: None,
        });
        self.touched.touch(handle.data().tenant());
        changed
    }

    /// New settings for a running tenant, in force for its next delivery:
    /// its actor publishes them with its contracts compiled for them, keeps
    /// its replay scope and rate limiter unless their settings changed, and
    /// its dispatcher restarts on the new destination (attempts in flight
    /// stay queued and are sent again).
    ///
    /// When its routes are not the same ones (one added or removed), the
    /// tenant is started anew instead: its gate writes to and wakes the new
    /// set, a new route gets its dispatcher and a removed one loses it. Its
    /// replay scope and rate limiter then start empty and full (a
    /// duplicate is still found in the idempotency log).
    pub fn update(&self, settings: TenantSettings) -> Result<()> {
        let handle = self.running(settings.id.as_str())?;
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        if !handle.has_routes_of(&settings) {
            return self.launch(settings);
        }
        let dispatchers = self.dispatchers(&settings, &handle.routes, &handle.signals)?;
        let contracts = self.compiled_contracts(&settings, &handle.contracts(), None);
        let applied = handle.actor.change(Change::Settings {
            settings: Arc::new(settings),
            contracts: Some(contracts),
        });
        let old = std::mem::replace(
            &mut *handle.dispatchers.lock().expect("dispatcher lock"),
            dispatchers,
        );
        for old in old {
            old.abort();
        }
        self.touched.touch(handle.data().tenant());
        applied
    }

    /// The contracts of `settings`' tenant as saved now, reusing those
    /// `previous` compiled and `fresh` (see [`catalog::assemble`]).
    fn compiled_contracts(
        &self,
        settings: &TenantSettings,
        previous: &TenantContracts,
        fresh: Option<Contract>,
    ) -> TenantContracts {
        let saved = self.saved_contracts().and_then(|c| c.list(&settings.id));
        let saved = saved.unwrap_or_else(|e| {
            tracing::error!(tenant = %settings.id, error = %e, "saved contracts cannot be read; only the config file's are in force");
            Vec::new()
        });
        catalog::assemble(&settings.id, &settings.contracts, saved, previous, fresh)
    }

    /// Puts a running tenant's saved contracts in force after a change,
    /// compiling only those changed (`fresh`: one just saved, compiled to
    /// check it): deliveries checked from now on see it, those accepted
    /// before are untouched.
    pub fn reload_contracts(&self, id: &str, fresh: Option<Contract>) -> Result<()> {
        let handle = self.running(id)?;
        let _one_at_a_time = self.changes.lock().unwrap_or_else(PoisonError::into_inner);
        let snapshot = handle.snapshot();
        let set = self.compiled_contracts(snapshot.settings(), snapshot.contracts(), fresh);
        let changed = handle.actor.change(Change::Contracts(set));
        self.touched.touch(handle.data().tenant());
        changed
    }

    /// The contracts in force for a running tenant.
    pub fn contracts(&self, id: &str) -> Option<Arc<TenantContracts>> {
        Some(self.get(id)?.snapshot().contracts().clone())
    }

    /// Stops a tenant and forgets it; its data is left to the caller.
    pub fn remove(&self, id: &str) -> bool {
        self.telemetry.metrics().windows().forget(id);
        self.unavailable.write().expect("registry lock").remove(id);
        let removed = self.tenants.write().expect("registry lock").remove(id);
        if let Some(handle) = &removed {
            handle.stop();
            self.touched.touch(handle.data().tenant());
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

    /// True when no started tenant actor is dead (one waiting for its
    /// tenant's first delivery is fine).
    pub fn all_running(&self) -> bool {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .all(|h| h.actor.healthy())
    }

    /// Stops the actors of tenants quiet for `idle_ms` by the registry's
    /// clock; they start again on their next delivery. Returns how many
    /// stopped.
    pub fn stop_idle_actors(&self, idle_ms: i64) -> usize {
        let now_ms = self.clock.now_ms();
        let handles = self.handles();
        let stopped = handles
            .iter()
            .filter(|h| h.actor.stop_if_idle(now_ms, idle_ms))
            .count();
        if stopped > 0 {
            tracing::debug!(stopped, "idle tenant actors stopped");
        }
        stopped
    }

    /// How many tenant actors run now.
    pub fn running_actors(&self) -> usize {
        self.tenants
            .read()
            .expect("registry lock")
            .values()
            .filter(|h| h.actor.is_running())
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
        let now = self.clock.now_ms();
        let new_id = route.data.redeliver(delivery_id, now, resend)?;
        let state = route.data.state(&new_id)?;
        route.wake.notify_one();
        tracing::info!(tenant = %tenant, route = %route.name, delivery_id = %delivery_id, new_delivery_id = %new_id, "dead letter redelivered");
        if let Some(state) = state {
            self.feed.publish(DeliveryEvent {
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

    /// The clock the tenants run on.
    pub fn clock(&self) -> &SharedClock {
        &self.clock
    }

    /// The live delivery feed.
    pub fn feed(&self) -> &DeliveryFeed {
        &self.feed
    }

    /// Where the tenants record spans and metrics.
    pub fn telemetry(&self) -> &Telemetry {
        &self.telemetry
    }

    /// The contracts saved over the control plane.
    pub fn saved_contracts(&self) -> Result<ContractStore> {
        ContractStore::open(&*self.store)
    }

    /// The storage the tenants write to.
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The tenants started, changed or stopped, and those whose signals
    /// changed, since the alert evaluator last took them.
    pub(crate) fn touched(&self) -> &Touched {
        &self.touched
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

impl TenantHandle {
    /// Runs one delivery through the tenant's ingest gate on the calling
    /// thread (starting its actor and gate if they are not running).
    pub fn ingest(&self, msg: Ingest<'_>) -> Answer {
        self.actor.ingest(msg)
    }

    /// Its data in storage: the default route's.
    pub fn data(&self) -> &TenantStore {
        &self.routes[0].data
    }

    /// The tenant's settings in force.
    pub fn settings(&self) -> Arc<TenantSettings> {
        self.actor.snapshot().settings().clone()
    }

    /// The tenant's settings and contracts in force, as one snapshot.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.actor.snapshot()
    }

    /// The route whose scope holds delivery `id`: the default route unless
    /// another one's does. Reads storage.
    pub fn route_of(&self, id: &DeliveryId) -> Result<RouteHandle> {
        for route in self.routes.iter().skip(1) {
            if route.data.state(id)?.is_some() {
                return Ok(route.clone());
            }
        }
        Ok(self.routes[0].clone())
    }

    fn contracts(&self) -> Arc<TenantContracts> {
        self.actor.snapshot().contracts().clone()
    }

    /// Whether it runs exactly the routes of `settings`, by name and order.
    fn has_routes_of(&self, settings: &TenantSettings) -> bool {
        let running = self.routes.iter().skip(1).map(|r| r.name.as_str());
        running.eq(settings.routes.iter().map(|r| r.name.as_str()))
    }

    /// Stops the dispatcher; the actor stops when its last address is dropped.
    fn stop(&self) {
        for abort in self.dispatchers.lock().expect("dispatcher lock").drain(..) {
            abort.abort();
        }
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
        self.reconfigure(settings)
    }

    fn stop(&self, id: &str) -> bool {
        self.remove(id)
    }

    fn unavailable(&self, id: &str, reason: String) {
        self.mark_unavailable(id, reason);
    }

    fn reload_contracts(&self, id: &str) -> Result<()> {
        Registry::reload_contracts(self, id, None)
    }
}
