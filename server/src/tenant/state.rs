//! A running tenant's state, written by its actor alone and read without a
//! hop by the HTTP workers and the control plane.

use std::{
    collections::HashMap,
    sync::{atomic::AtomicBool, atomic::Ordering, Arc, Mutex, PoisonError},
};

use futures_util::future::AbortHandle;
use tokio::sync::{Notify, Semaphore};

use super::{
    gate::GateParts,
    services::Services,
    slot::GateSlot,
    snapshot::{Published, Snapshot},
};
use crate::forward::{FindRoute, ReplayTarget, Replayer, ReplayerParts};
use crate::routes::handle::{forwarding, RouteHandle};
use crate::routes::settings::ForwardSettings;
use crate::tenant::TenantSettings;
use crate::{
    alerts::Signals,
    error::{Error, Result},
    ids::TenantId,
    ingest::{Answer, Ingest},
    metrics::TenantMetrics,
    rate_limit::RejectionBudget,
    routes::{
        filter::pool::FilterPool,
        transform::pool::{RouteShare, TransformPool},
    },
    store::api::TenantStore,
};

/// One running tenant.
///
/// A running tenant's state, written by its actor alone and read without a
/// hop by the HTTP workers and the control plane: the published snapshot,
/// the ingest gate, the route dispatchers, its counters, rejection budget,
/// alert signals and shares of the filter and transform threads.
pub(crate) struct TenantState {
    /// The tenant's id, which never changes while it runs.
    id: TenantId,
    published: Arc<Published>,
    gate: GateSlot,
    /// The counters of its `tenant` label.
    pub(crate) metrics: Arc<TenantMetrics>,
    /// How many of its rejections may still be recorded.
    pub(crate) rejection_budget: Arc<RejectionBudget>,
    /// Its occurrence counters for alerts.
    pub(crate) signals: Arc<Signals>,
    /// The share of the transform workers its control-plane runs take (a
    /// route's check when saved, an unsaved route's test): however many it
    /// asks for, it holds at most a route's share.
    pub(crate) transform_share: Arc<RouteShare>,
    /// Its turn on the filter threads, which its gate and its route tests
    /// take: one evaluation at a time.
    pub(crate) filter_share: Arc<Semaphore>,
    /// The dispatchers of its routes that forward, by route name.
    running: Mutex<Running>,
}

/// The dispatchers of a tenant's routes and its replays running.
#[derive(Default)]
struct Running {
    dispatchers: HashMap<String, AbortHandle>,
    /// By replay id.
    replays: HashMap<String, RunningReplay>,
    /// Set once the tenant is removed or the process stops: no dispatcher
    /// starts again.
    stopped: bool,
}

/// A replay running: stopped with `abort`, told of a change to its order
/// with `nudge`; `ended` once it ended by itself.
struct RunningReplay {
    abort: AbortHandle,
    nudge: Arc<Notify>,
    ended: Arc<AtomicBool>,
}

impl Running {
    /// Puts `started` in place of the dispatchers of the same routes and
    /// stops those of every route not in `forwarding` (removed, or pulled).
    fn replace(&mut self, started: Vec<(String, AbortHandle)>, forwarding: &[&str]) {
        for (name, abort) in started {
            if let Some(old) = self.dispatchers.insert(name, abort) {
                old.abort();
            }
        }
        self.dispatchers.retain(|name, abort| {
            let keep = forwarding.contains(&name.as_str());
            if !keep {
                abort.abort();
            }
            keep
        });
    }
}

impl TenantState {
    /// The state of a tenant starting under `settings` with `contracts`,
    /// writing its own deliveries to `data`; nothing runs yet.
    pub(super) fn new(
        services: &Services,
        settings: Arc<TenantSettings>,
        contracts: crate::contracts::TenantContracts,
        data: TenantStore,
    ) -> Result<Arc<TenantState>> {
        let id = settings.id.clone();
        let metrics = services.telemetry.metrics().tenant(&id);
        let filter_share = FilterPool::tenant_share();
        let parts = GateParts {
            filter_share: filter_share.clone(),
            data,
            clock: services.clock.clone(),
            feed: services.feed.clone(),
            spans: services.telemetry.spans().clone(),
            senders: Some(
                services
                    .telemetry
                    .metrics()
                    .senders()
                    .label(metrics.label()),
            ),
            replay: services.replay.clone(),
        };
        let sources = (&services.store, &**services.telemetry.metrics());
        let routes = RouteHandle::first(sources, &settings.routes, &parts.data, &metrics)?;
        let signals = Arc::new(Signals::of(settings.id.clone(), services.touched.clone()));
        let now_ms = services.clock.now_ms();
        let first = Snapshot::of(settings, Arc::new(contracts), routes.into());
        let published = Arc::new(Published::new(first));
        Ok(Arc::new(TenantState {
            id,
            gate: GateSlot::new(published.clone(), parts),
            published,
            metrics,
            rejection_budget: Arc::new(RejectionBudget::new(services.rejection_records, now_ms)),
            signals,
            transform_share: TransformPool::shared().route_share(),
            filter_share,
            running: Mutex::default(),
        }))
    }

    /// The tenant's id.
    pub(crate) fn id(&self) -> &TenantId {
        &self.id
    }

    /// Its settings, contracts and routes in force.
    pub(crate) fn snapshot(&self) -> Arc<Snapshot> {
        self.published.load()
    }

    /// Puts `next` in force for every reader from now on (its actor only).
    pub(super) fn publish(&self, next: Snapshot) {
        self.published.publish(next);
    }

    /// Its ingest gate, started for the delivery if it is not running.
    pub(crate) fn gate(&self) -> &GateSlot {
        &self.gate
    }

    /// Runs one delivery through its gate; `panicked` has its actor
    /// restart the gate after a panic in the checks.
    pub(super) fn ingest(&self, msg: Ingest<'_>, panicked: impl FnOnce()) -> Answer {
        self.gate.ingest(msg, panicked)
    }

    /// Settings change from `old` to `new` (its actor only).
    pub(super) fn retune(&self, old: &TenantSettings, new: &TenantSettings) {
        self.gate.retune(old, new);
    }

    /// Rebuilds what a panic may have left half changed (its actor only).
    pub(super) fn reset_gate(&self) {
        self.gate.reset();
    }

    /// Runs a dispatcher for each of `routes` that forwards under
    /// `settings`: starts those whose forwarding differs from what
    /// `previous` (the snapshot in force, if any) had, keeps the others and
    /// stops those of routes that no longer forward. Nothing changes unless
    /// every new one could start.
    pub(super) fn forward(
        &self,
        services: &Services,
        (routes, settings): (&[RouteHandle], &TenantSettings),
        previous: Option<&Snapshot>,
    ) -> Result<()> {
        let now = forwarding(settings.forward.as_ref(), &settings.routes);
        let before = previous.map(|s| {
            let was = s.settings();
            (s.routes(), forwarding(was.forward.as_ref(), &was.routes))
        });
        let changed: Vec<(&RouteHandle, &ForwardSettings)> = routes
            .iter()
            .zip(&now)
            .filter_map(|(route, forward)| Some((route, (*forward)?)))
            .filter(|(route, forward)| {
                let old = before.as_ref().and_then(|(running, was)| {
                    let i = running.iter().position(|r| r.name == route.name)?;
                    was[i]
                });
                old != Some(*forward)
            })
            .collect();
        let started = self.start_dispatchers(services, &changed)?;
        let names: Vec<&str> = routes
            .iter()
            .zip(&now)
            .filter(|(_, forward)| forward.is_some())
            .map(|(route, _)| route.name.as_str())
            .collect();
        self.running(|running| running.replace(started, &names))
    }

    /// Starts a dispatcher for each of `routes` (with their forwarding);
    /// none runs unless all could start.
    fn start_dispatchers(
        &self,
        services: &Services,
        routes: &[(&RouteHandle, &ForwardSettings)],
    ) -> Result<Vec<(String, AbortHandle)>> {
        let tenant = self.id.clone();
        let mut started = Vec::with_capacity(routes.len());
        for (route, forward) in routes {
            let built = services.start_dispatcher(
                (&tenant, &route.name),
                (
                    route.data.clone(),
                    route.wake.clone(),
                    Some(route.hold.clone()),
                ),
                (forward, route.metrics.clone()),
                Some(self.signals.clone()),
            );
            match built {
                Ok(abort) => started.push((route.name.clone(), abort)),
                Err(e) => {
                    for (_, abort) in started {
                        abort.abort();
                    }
                    return Err(e);
                }
            }
        }
        Ok(started)
    }

    /// Runs replay `id` (stored), or tells the one running that its order
    /// changed; a replay that ended is started again (it reads its order
    /// and progress, and ends at once if there is nothing left to do).
    pub(crate) fn replay(&self, services: &Services, id: &str) -> Result<()> {
        self.running(|running| {
            running
                .replays
                .retain(|_, r| !r.ended.load(Ordering::SeqCst));
            if let Some(replay) = running.replays.get(id) {
                replay.nudge.notify_one();
                return;
            }
            let (nudge, ended) = (Arc::new(Notify::new()), Arc::new(AtomicBool::new(false)));
            let replayer = Replayer::new(ReplayerParts {
                tenant: self.id.clone(),
                replay_id: id.to_owned(),
                store: services.store.clone(),
                clock: services.clock.clone(),
                lease: services.lease.clone(),
                find: self.find_route(),
                nudge: nudge.clone(),
                ended: ended.clone(),
            });
            let abort = services.forwarding.spawn(replayer.run());
            let replay = RunningReplay {
                abort,
                nudge,
                ended,
            };
            running.replays.insert(id.to_owned(), replay);
        })
    }

    /// Finds a route of this tenant as it runs now, for a replay.
    pub(crate) fn find_route(&self) -> FindRoute {
        let published = self.published.clone();
        Arc::new(move |name: &str| {
            let now = published.load();
            let route = now.routes().iter().find(|r| r.name == name)?.clone();
            let settings = now.settings();
            let declared = settings.routes.iter().find(|r| r.name == name)?;
            Some(ReplayTarget {
                source: now.routes()[0].data.clone(),
                route,
                filter: declared.filter.clone(),
                path: format!("/hooks/{}", settings.id),
            })
        })
    }

    /// Runs `change` on its dispatchers, unless the tenant was stopped.
    fn running<T>(&self, change: impl FnOnce(&mut Running) -> T) -> Result<T> {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        if running.stopped {
            return Err(Error::stopped("tenant actor"));
        }
        Ok(change(&mut running))
    }

    /// The dispatchers running now, by route name.
    #[cfg(test)]
    pub(super) fn dispatchers(&self) -> HashMap<String, AbortHandle> {
        let running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.dispatchers.clone()
    }

    /// True once the tenant was stopped.
    pub(super) fn is_stopped(&self) -> bool {
        self.running
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .stopped
    }

    /// Stops every dispatcher for good (the tenant removed, or the process
    /// stopping): attempts in flight stay queued and are sent again after
    /// a restart.
    pub(super) fn stop(&self) {
        let mut running = self.running.lock().unwrap_or_else(PoisonError::into_inner);
        running.stopped = true;
        for (_, abort) in running.dispatchers.drain() {
            abort.abort();
        }
        for (_, replay) in running.replays.drain() {
            replay.abort.abort();
        }
    }
}
