//! The tasks a serving hookd runs beside its listeners, stopped before
//! storage is flushed.

use std::{sync::Arc, time::Duration};

use tokio::task::JoinHandle;

use crate::catalog::follow::{follow, Follower};
use crate::{
    alerts::{self, Alerts},
    config::{Config, StorageBackend},
    sweeper,
    tenant::{Registry, Services},
};

/// How often tenants are checked for idle actors.
const REAP_EVERY: Duration = Duration::from_secs(15);

/// The background tasks, running once started.
///
/// The tasks a serving hookd runs beside its listeners: the alerts'
/// evaluator, the retention sweeper, the reaper of idle tenant actors and, on a shared store, the
/// catalog follower. They hold the registry (so storage) and are stopped
/// before storage is flushed.
pub(crate) struct Background {
    tasks: Vec<JoinHandle<()>>,
}

impl Background {
    /// Starts the tasks on the current actix runtime.
    pub(crate) fn start(
        config: &Config,
        (registry, services): (&Registry, &Arc<Services>),
        follower: Follower,
        alerts: Alerts,
    ) -> Background {
        let mut tasks = vec![
            actix_rt::spawn(alerts::run(alerts)),
            actix_rt::spawn(sweeper::run(
                (registry.clone(), services.clone()),
                config.retention.clone(),
            )),
            actix_rt::spawn(reap_idle_gates(
                registry.clone(),
                Duration::from_secs(config.limits.tenant_idle_secs),
            )),
        ];
        // Tenants created, changed or deleted by other replicas sharing the store.
        if config.storage.backend == StorageBackend::Postgres {
            tasks.push(actix_rt::spawn(follow(
                follower,
                Duration::from_millis(config.storage.postgres.catalog_poll_ms),
            )));
        }
        Background { tasks }
    }

    /// Stops every task and waits until each has let go of what it held.
    pub(crate) async fn stop(self) {
        for task in self.tasks {
            task.abort();
            let _ = task.await;
        }
    }
}

/// Drops the ingest gates of tenants without a delivery for `idle`, every
/// [`REAP_EVERY`], forever.
async fn reap_idle_gates(registry: Registry, idle: Duration) {
    let idle_ms = i64::try_from(idle.as_millis()).unwrap_or(i64::MAX);
    loop {
        tokio::time::sleep(REAP_EVERY).await;
        registry.stop_idle_gates(idle_ms);
    }
}
