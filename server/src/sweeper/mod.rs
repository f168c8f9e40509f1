//! Retention: the periodic pass over every tenant that removes everything past
//! its retention.

mod pacing;

use std::{
    collections::{HashMap, HashSet},
    sync::Arc,
};

use self::pacing::{Budget, Pacing, Progress};

use crate::{
    config::RetentionConfig,
    ids::TenantId,
    store::{
        api::{blocking, RejectionLog, Storage, Store, SweepRequest, TenantStore},
        lifecycle::Swept,
    },
    tenant::{Registry, Services},
};

/// What a pass removed, over every tenant.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Removed {
    /// Deliveries, dead letters, originals and idempotency records.
    pub data: Swept,
    /// Recorded rejections.
    pub rejections: usize,
    /// Sweep steps taken (each one bounded batch of one tenant).
    pub steps: usize,
}

impl Removed {
    /// Records removed, of every kind.
    pub fn total(&self) -> usize {
        self.data.total() + self.rejections
    }
}

/// What a pass removes: its cut-off times and batch size.
#[derive(Debug, Clone, Copy)]
pub struct Due {
    /// The stored data's cut-offs.
    pub data: SweepRequest,
    /// Rejections recorded before this (Unix ms) are deleted.
    pub rejections_before_ms: i64,
}

impl Due {
    /// What is due at `now_ms` by `retention`.
    pub fn at(retention: &RetentionConfig, now_ms: i64) -> Due {
        let before = |secs: u64| now_ms.saturating_sub((secs as i64).saturating_mul(1000));
        Due {
            data: SweepRequest {
                delivered_before_ms: before(retention.delivered_secs),
                idem_before_ms: before(retention.idempotency_secs),
                dead_before_ms: before(retention.dead_secs),
                batch: retention.sweep_batch,
                idem_scan: retention.sweep_batch,
            },
            rejections_before_ms: before(retention.delivered_secs),
        }
    }
}

/// The queues of each tenant's alert sinks (`crate::alerts`), swept like
/// its routes', kept from pass to pass: asking the engine for a handle is a
/// catalog query on PostgreSQL, two per tenant per pass otherwise. They are
/// made again when the tenant's data handle changes (the tenant was
/// deleted and made again) and dropped with the tenant.
#[derive(Default)]
struct SinkHandles(HashMap<TenantId, (TenantStore, Vec<TenantStore>)>);

impl SinkHandles {
    /// The sink handles of the tenant whose data handle is `data`.
    fn of(&mut self, store: &dyn Storage, data: &TenantStore) -> Vec<TenantStore> {
        let tenant = data.tenant();
        if let Some((owner, sinks)) = self.0.get(tenant) {
            if Arc::ptr_eq(owner, data) {
                return sinks.clone();
            }
        }
        let sinks: Vec<TenantStore> = crate::alerts::SINK_NAMES
            .into_iter()
            .filter_map(|sink| store.tenant(&tenant.alert_scope(sink)).ok())
            .collect();
        self.0.insert(tenant.clone(), (data.clone(), sinks.clone()));
        sinks
    }

    /// Drops the handles of every tenant not in `tenants`.
    fn keep(&mut self, tenants: &HashSet<TenantId>) {
        self.0.retain(|tenant, _| tenants.contains(tenant));
    }
}

/// Sweeps forever; dropped with the server. The registry holds every
/// tenant that started, with its data handle, whether its gate runs or
/// stopped idle, so a tenant quiet since its data was written is swept too.
///
/// Retention: every `sweep_interval_secs`, one pass over every tenant the
/// registry holds (whether its actor runs or has stopped idle) removes
/// everything past its retention: delivered events, dead letters (and the
/// originals they were redelivered from), idempotency records and recorded
/// rejections. A pass is sized to what is due: it gives each tenant one
/// bounded batch in turn, yielding between batches, and goes round again
/// until no tenant has anything due left, so a busy tenant is swept as fast
/// as it writes and cannot hold up the others. Idempotency records, which
/// only a scan of every record finds old, are scanned in cycles spread
/// over many passes ([`pacing`]).
pub async fn run((registry, services): (Registry, Arc<Services>), retention: RetentionConfig) {
    if let Some(warning) = retention.sender_retry_warning() {
        tracing::warn!("{warning}");
    }
    let interval = std::time::Duration::from_secs_f64(retention.sweep_interval_secs);
    let mut pacing = Pacing::new(&retention);
    let mut sinks = SinkHandles::default();
    loop {
        tokio::time::sleep(interval).await;
        let now_ms = services.clock.now_ms();
        let due = Due::at(&retention, now_ms);
        let handles = registry.handles();
        let tenants = handles
            .iter()
            .flat_map(|h| {
                let mut data: Vec<_> = h.routes().iter().map(|r| r.data.clone()).collect();
                data.extend(sinks.of(&*services.store, &h.data()));
                data
            })
            .collect();
        sinks.keep(&handles.iter().map(|h| h.data().tenant().clone()).collect());
        let rejections = services
            .store
            .rejections()
            .inspect_err(|e| tracing::error!(error = %e, "rejections cannot be swept"))
            .ok();
        let store = services.store.clone();
        let removed = paced_pass(&mut pacing, store, tenants, rejections, &due, now_ms).await;
        if removed.total() > 0 {
            tracing::info!(
                delivered = removed.data.delivered,
                dead = removed.data.dead,
                originals = removed.data.originals,
                idempotency = removed.data.idempotency,
                rejections = removed.rejections,
                steps = removed.steps,
                "retention sweep removed expired records"
            );
        }
    }
}

/// One pass: every tenant in turn gets one bounded step, round after round,
/// until none has anything due; a tenant whose step fails is left for the
/// next pass. Each tenant's idempotency log is scanned whole.
pub async fn pass(
    store: Store,
    tenants: Vec<TenantStore>,
    rejections: Option<Arc<dyn RejectionLog>>,
    due: &Due,
) -> Removed {
    let open = tenants
        .into_iter()
        .map(|data| Sweeping::new(data, Budget::whole()))
        .collect();
    sweep(store, open, rejections, due).await.0
}

/// A pass at `now_ms` whose idempotency scans `pacing` sizes, and which
/// tells `pacing` how far each got.
async fn paced_pass(
    pacing: &mut Pacing,
    store: Store,
    tenants: Vec<TenantStore>,
    rejections: Option<Arc<dyn RejectionLog>>,
    due: &Due,
    now_ms: i64,
) -> Removed {
    let open = tenants
        .into_iter()
        .map(|data| {
            let budget = pacing.budget(data.tenant(), now_ms);
            Sweeping::new(data, budget)
        })
        .collect();
    let (removed, swept) = sweep(store, open, rejections, due).await;
    pacing.passed(swept.into_iter().map(Sweeping::into_progress));
    removed
}

/// Steps every tenant of `all` in turn until none has anything due: first
/// those the engine says have something due or whose idempotency scan is
/// ([`probe`]), then each as long as its last step says more may be.
async fn sweep(
    store: Store,
    mut all: Vec<Sweeping>,
    rejections: Option<Arc<dyn RejectionLog>>,
    due: &Due,
) -> (Removed, Vec<Sweeping>) {
    probe(store, &mut all, rejections.clone(), due).await;
    let mut removed = Removed::default();
    while all.iter().any(Sweeping::is_due) {
        for sweeping in all.iter_mut().filter(|s| s.is_due()) {
            sweeping.step(rejections.clone(), due, &mut removed).await;
            tokio::task::yield_now().await;
        }
    }
    removed.data.more = false;
    (removed, all)
}

/// Asks the engine, for every tenant of a pass at once, whether it has
/// delivered events, dead letters or rejections past their cut-offs, so
/// that a pass over many tenants with nothing due takes one trip to the
/// blocking pool (on PostgreSQL a statement per thousand tenants), not a
/// step (three to eight statements) per tenant. Should the probe fail,
/// every tenant is stepped as before.
async fn probe(
    store: Store,
    all: &mut [Sweeping],
    rejections: Option<Arc<dyn RejectionLog>>,
    due: &Due,
) {
    let data: Vec<TenantStore> = all.iter().map(|s| s.data.clone()).collect();
    let (request, rejections_before_ms) = (due.data, due.rejections_before_ms);
    let probed = blocking(move || {
        let data_due = store.sweep_due(&data, &request)?;
        let rejections_due = match rejections {
            Some(log) => {
                let ids: Vec<String> = data.iter().map(|d| d.tenant().to_string()).collect();
                Some(log.sweep_due(&ids, rejections_before_ms)?)
            }
            None => None,
        };
        Ok((data_due, rejections_due))
    })
    .await;
    let (data_due, rejections_due) = match probed {
        Ok(probed) => probed,
        Err(e) => {
            tracing::warn!(tenants = all.len(), error = %e, "asking which tenants have anything due failed; each is swept");
            return;
        }
    };
    for (i, sweeping) in all.iter_mut().enumerate() {
        let scans = sweeping.idem_left > 0 && !sweeping.idem_ended;
        sweeping.data_due = scans || data_due.get(i).copied().unwrap_or(true);
        sweeping.rejections_due = rejections_due
            .as_ref()
            .is_some_and(|due| due.get(i).copied().unwrap_or(true));
    }
}

/// One tenant in a pass: where its idempotency scan is and what is left.
struct Sweeping {
    data: TenantStore,
    cursor: Vec<u8>,
    data_due: bool,
    rejections_due: bool,
    /// Idempotency records this pass may still scan.
    idem_left: usize,
    /// Idempotency records scanned in this pass, at most.
    idem_scanned: u64,
    /// Whether the scan reached the end of the log.
    idem_ended: bool,
}

impl Sweeping {
    fn new(data: TenantStore, budget: Budget) -> Sweeping {
        Sweeping {
            data,
            cursor: budget.cursor,
            data_due: true,
            rejections_due: true,
            idem_left: budget.records,
            idem_scanned: 0,
            idem_ended: false,
        }
    }

    /// Its handle and how far its idempotency scan got.
    fn into_progress(self) -> (TenantId, Progress) {
        let progress = Progress {
            cursor: self.cursor,
            scanned: self.idem_scanned,
            ended: self.idem_ended,
        };
        (self.data.tenant().clone(), progress)
    }

    fn is_due(&self) -> bool {
        self.data_due || self.rejections_due
    }

    /// One bounded batch of the tenant's data and of its rejections, on a
    /// blocking thread.
    async fn step(
        &mut self,
        rejections: Option<Arc<dyn RejectionLog>>,
        due: &Due,
        removed: &mut Removed,
    ) {
        let (data, tenant) = (self.data.clone(), self.data.tenant().clone());
        let idem_scan = match self.idem_ended {
            true => 0,
            false => due.data.batch.min(self.idem_left),
        };
        let request = SweepRequest {
            idem_scan,
            ..due.data
        };
        let (rejections_before_ms, cursor) = (due.rejections_before_ms, self.cursor.clone());
        let (sweep_data, sweep_rejections) = (self.data_due, self.rejections_due);
        let outcome = blocking(move || {
            let mut cursor = cursor;
            let swept = sweep_data.then(|| data.sweep(&request, &mut cursor));
            let rejected = match rejections {
                Some(log) if sweep_rejections => {
                    Some(log.sweep(data.tenant().as_str(), rejections_before_ms, request.batch))
                }
                _ => None,
            };
            Ok((swept, rejected, cursor))
        })
        .await;
        removed.steps += 1;
        let Ok((swept, rejected, cursor)) = outcome else {
            (self.data_due, self.rejections_due) = (false, false);
            return;
        };
        self.data_due = match swept {
            Some(Ok(swept)) => {
                if idem_scan > 0 {
                    self.idem_left -= idem_scan;
                    self.idem_scanned += idem_scan as u64;
                    self.idem_ended = cursor.is_empty();
                }
                self.cursor = cursor;
                removed.data += swept;
                swept.more
            }
            Some(Err(e)) => failed(&tenant, "retention sweep failed", &e),
            None => false,
        };
        self.rejections_due = match rejected {
            Some(Ok(n)) => {
                removed.rejections += n;
                n >= due.data.batch
            }
            Some(Err(e)) => failed(&tenant, "retention sweep of rejections failed", &e),
            None => false,
        };
    }
}

/// Logs a failed step; the tenant is left for the next pass.
fn failed(tenant: &TenantId, what: &str, e: &crate::error::Error) -> bool {
    tracing::error!(tenant = %tenant, error = %e, "{what}");
    false
}

/// Tests' retention: everything kept `secs`, a pass a minute, batches of
/// `batch`; a test changes what it needs apart with `..`.
#[cfg(test)]
fn retention(secs: u64, batch: usize) -> RetentionConfig {
    RetentionConfig {
        idempotency_secs: secs,
        delivered_secs: secs,
        dead_secs: secs,
        sweep_interval_secs: 60.0,
        sweep_batch: batch,
    }
}

#[cfg(test)]
mod tests;
