//! What every running tenant shares with the rest of the process, held once
//! and handed to whoever needs one of them.

use std::{sync::Arc, time::Duration};

use super::replay::{replay_cache, ReplayCache};
use crate::routes::handle::Wake;
use crate::routes::hold::Hold;
use crate::routes::settings::ForwardSettings;
use crate::{
    alerts::{Signals, Touched},
    clock::SharedClock,
    config::{LimitsConfig, RateLimitConfig},
    error::{Error, Result},
    feed::DeliveryFeed,
    forward::{Dispatcher, DispatcherParts, ForwardRuntime, LeaseTerms},
    ids::TenantId,
    metrics::RouteMetrics,
    store::{api::TenantStore, Store},
    telemetry::Telemetry,
};

/// `storage.postgres.forward_lease_secs`'s default.
const DEFAULT_LEASE: Duration = Duration::from_secs(15);

/// The process's shared services.
///
/// What every running tenant shares with the rest of the process: storage,
/// the clock, the live feed, telemetry, the replay cache and the forwarding
/// runtime, held once and handed to whoever needs one of them.
#[derive(Clone)]
pub struct Services {
    /// The storage every tenant writes to.
    pub store: Store,
    /// The clock the tenants run on.
    pub clock: SharedClock,
    /// The live delivery feed.
    pub feed: DeliveryFeed,
    /// Where spans and metrics are recorded.
    pub telemetry: Telemetry,
    /// The replay cache every tenant's gate keeps its scope in.
    pub(crate) replay: ReplayCache,
    /// Where the dispatchers run.
    pub(crate) forwarding: ForwardRuntime,
    /// This process's claim on the scopes it forwards.
    pub(crate) lease: LeaseTerms,
    /// Private CAs every destination trusts (`[forward] ca_file`).
    pub(crate) forward_cas: Arc<Vec<reqwest::Certificate>>,
    /// Each tenant's rejection-recording budget (`[limits.rejection_records]`).
    pub(crate) rejection_records: RateLimitConfig,
    /// The tenants started, changed or stopped, and those whose signals
    /// changed, since the alert evaluator last read them.
    pub(crate) touched: Arc<Touched>,
}

impl Services {
    /// The services of a process storing to `store`, its dispatchers on
    /// `forwarding`, every limit at its default.
    pub fn new(
        store: Store,
        clock: SharedClock,
        forwarding: ForwardRuntime,
        feed: DeliveryFeed,
        telemetry: Telemetry,
    ) -> Self {
        telemetry.metrics().windows().begin(clock.now_ms());
        Services {
            store,
            clock,
            feed,
            telemetry,
            replay: replay_cache(LimitsConfig::DEFAULT_REPLAY_CACHE_KEYS),
            forwarding,
            lease: LeaseTerms::new(DEFAULT_LEASE),
            forward_cas: Arc::default(),
            rejection_records: RateLimitConfig {
                per_sec: 1.0,
                burst: 100,
            },
            touched: Arc::default(),
        }
    }

    /// With one replay cache of at most `keys` keys for every tenant
    /// (`[limits] replay_cache_keys`).
    pub fn with_replay_cache_keys(mut self, keys: u64) -> Self {
        self.replay = replay_cache(keys);
        self
    }

    /// With each tenant recording at most `budget` of its rejections
    /// (`[limits.rejection_records]`).
    pub fn with_rejection_records(mut self, budget: RateLimitConfig) -> Self {
        self.rejection_records = budget;
        self
    }

    /// With dispatchers claiming their scope's forwarding lease for `lease`
    /// at a time (`storage.postgres.forward_lease_secs`).
    pub fn with_forward_lease(mut self, lease: Duration) -> Self {
        self.lease = LeaseTerms::new(lease);
        self
    }

    /// With `cas` (`[forward] ca_file`) trusted by every destination.
    pub fn with_forward_cas(mut self, cas: Vec<reqwest::Certificate>) -> Self {
        self.forward_cas = Arc::new(cas);
        self
    }

    /// The tenants started, changed or stopped, and those whose signals
    /// changed, since the alert evaluator last took them.
    pub(crate) fn touched(&self) -> &Arc<Touched> {
        &self.touched
    }

    /// Starts a dispatcher forwarding what is queued on `data` to `settings`'
    /// destination, `name` being its route (or alert sink) of `tenant`; its
    /// failures raise `signals` when given. The returned handle stops it.
    pub(crate) fn start_dispatcher(
        &self,
        (tenant, name): (&TenantId, &str),
        (data, wake, hold): (TenantStore, Arc<Wake>, Option<Arc<Hold>>),
        (settings, metrics): (&ForwardSettings, Arc<RouteMetrics>),
        signals: Option<Arc<Signals>>,
    ) -> Result<futures_util::future::AbortHandle> {
        let dispatcher = Dispatcher::new(DispatcherParts {
            tenant: tenant.clone(),
            route: name.to_owned(),
            data,
            store: self.store.clone(),
            settings: settings.clone(),
            clock: self.clock.clone(),
            wake,
            hold,
            feed: self.feed.clone(),
            spans: self.telemetry.spans().clone(),
            metrics,
            shared_cas: self.forward_cas.clone(),
            lease: self.lease.clone(),
            signals,
        })
        .map_err(|e| {
            Error::config(
                format!("tenant {tenant} {name}"),
                format!("destination client: {e}"),
            )
        })?;
        Ok(self.forwarding.spawn(dispatcher.run()))
    }
}
