//! A replay running: steps through the tenant's stored events at its
//! rate, making each passing event's delivery on the route, and stores
//! its progress after each step.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use futures_util::future::join_all;
use tokio::sync::{Notify, Semaphore};

use super::lease::{ForwardLease, LeaseTerms};
use crate::{
    clock::SharedClock,
    error::{Error, Result},
    ids::{DeliveryId, TenantId},
    routes::{
        filter::pool::FilterPool,
        handle::RouteHandle,
        replay::{
            walk::{Judge, Judged, Skip, Verdict, Walk, STEP_FILTER_STEPS},
            Control, ReplayOrder, ReplayProgress,
        },
    },
    store::{api::blocking, CommitOutcome, Store},
};

/// Steps a second: a replay makes at most a tenth of its rate a step.
const STEPS_PER_SEC: u32 = 10;

/// Deliveries a step writes at once: a step's writes go to the committer
/// live ingest shares a few at a time, so a live request never waits
/// behind more than these in a group commit.
const WRITES_AT_ONCE: usize = 16;

/// Events one step looks at, at most, for each delivery it may make.
const SCAN_PER_MADE: usize = 4;

/// Longest a replay waits, paused or without the lease, before it looks
/// at its order again.
const IDLE: Duration = Duration::from_secs(1);

/// A replay makes nothing while its route has more than this many seconds
/// of its rate queued (at least one step's worth): the route's live
/// deliveries never queue behind more of a replay than that, and a
/// destination that fails is not piled up on.
const BACKLOG_SECS: u64 = 2;

/// Longest a replay waits after a failed step before it tries again.
const MOST_BACKOFF: Duration = Duration::from_secs(30);

/// What a replay reads of its running route each step: the tenant's own
/// deliveries (where the events are), the route's handle (where the new
/// deliveries go, and its wake), its filter now and the tenant's hook
/// path. `None`: the route is gone.
pub struct ReplayTarget {
    /// The tenant's deliveries on `default`.
    pub source: crate::store::TenantStore,
    /// The route replayed into.
    pub route: RouteHandle,
    /// Its filter now.
    pub filter: Option<crate::routes::filter::RouteFilter>,
    /// `/hooks/{tenant}`.
    pub path: String,
}

/// Finds a route of the running tenant by name.
pub type FindRoute = Arc<dyn Fn(&str) -> Option<ReplayTarget> + Send + Sync>;

/// What a [`Replayer`] is built from.
pub struct ReplayerParts {
    /// Its tenant.
    pub tenant: TenantId,
    /// The replay it runs.
    pub replay_id: String,
    /// The store: the order and progress rows, the lease.
    pub store: Store,
    /// The clock its steps are paced on.
    pub clock: SharedClock,
    /// This process's claim on the scopes it forwards.
    pub lease: LeaseTerms,
    /// The route, as the tenant runs it now.
    pub find: FindRoute,
    /// Notified when its order changes.
    pub nudge: Arc<Notify>,
    /// Set when it ends.
    pub ended: Arc<AtomicBool>,
}

/// One replay running.
///
/// A replay running: on a store several replicas share, only where the
/// route's forwarding lease is held (so it carries on elsewhere after a
/// takeover); paced at its rate; its reads and the route's filter on the
/// replay lane ([`FilterPool::replay_lane`]), so live ingest and filters
/// never wait behind it. It ends once it is done, cancelled or forgotten.
pub struct Replayer {
    parts: ReplayerParts,
    /// Its turn on the replay lane.
    share: Semaphore,
}

/// A step's outcome.
enum Stepped {
    /// More to walk.
    More,
    /// The window is walked.
    Done,
}

impl Replayer {
    /// A replayer of `parts`; nothing runs until [`Replayer::run`].
    pub fn new(parts: ReplayerParts) -> Replayer {
        Replayer {
            parts,
            share: Semaphore::new(1),
        }
    }

    /// Runs until the replay is done, cancelled or forgotten (or the task
    /// is dropped).
    pub async fn run(self) {
        self.run_steps().await;
        self.parts.ended.store(true, Ordering::SeqCst);
    }

    async fn run_steps(&self) {
        let p = &self.parts;
        let mut lease: Option<ForwardLease> = None;
        let mut progress: Option<ReplayProgress> = None;
        let mut walk: Option<Walk> = None;
        let mut backoff = Duration::from_millis(500);
        loop {
            let order = match self.load().await {
                Ok(Some(order)) if order.control != Control::Cancel => order,
                Ok(_) => return,
                Err(e) => {
                    tracing::error!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "reading the replay's order failed");
                    self.wait(IDLE).await;
                    continue;
                }
            };
            let Some(target) = (p.find)(&order.route) else {
                self.fail(progress.take(), "the route is gone").await;
                return;
            };
            let lease = lease.get_or_insert_with(|| {
                ForwardLease::new(
                    p.store.clone(),
                    target.route.scope().clone(),
                    p.lease.clone(),
                )
            });
            let held = lease.holds().await.is_some();
            if !held || order.control == Control::Pause {
                // Another replica may step it meanwhile: read it afresh.
                (progress, walk) = (None, None);
                self.wait(IDLE).await;
                continue;
            }
            let mut now = match progress.take() {
                Some(now) => now,
                None => match self.load_progress().await {
                    Ok(now) => now,
                    Err(e) => {
                        tracing::error!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "reading the replay's progress failed");
                        self.wait(IDLE).await;
                        continue;
                    }
                },
            };
            if now.finished_at_ms.is_some() {
                return;
            }
            if now.failed {
                progress = Some(now);
                self.wait(IDLE).await;
                continue;
            }
            let most = u64::from(order.rate_per_sec.div_ceil(STEPS_PER_SEC).max(1));
            let ceiling = (u64::from(order.rate_per_sec) * BACKLOG_SECS).max(most);
            let data = target.route.data.clone();
            match blocking(move || data.counts()).await {
                Ok(queued) if queued.depth >= ceiling => {
                    progress = Some(now);
                    self.wait(Duration::from_millis(u64::from(1000 / STEPS_PER_SEC)))
                        .await;
                    continue;
                }
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "reading the route's queue failed");
                    progress = Some(now);
                    self.wait(IDLE).await;
                    continue;
                }
            }
            let walking = walk.take().unwrap_or_else(|| {
                let window = (order.since_ms, order.until_ms);
                let source = target.source.clone();
                Walk::new(source, window, order.event_type.clone(), now.cursor.clone())
            });
            let (walking, stepped) = self.step(&order, &target, walking, &mut now).await;
            walk = Some(walking);
            let pause = match stepped {
                Ok(Stepped::Done) => {
                    now.finished_at_ms = Some(p.clock.now_ms());
                    now.last_error = None;
                    Duration::ZERO
                }
                Ok(Stepped::More) => {
                    now.last_error = None;
                    backoff = Duration::from_millis(500);
                    Duration::from_millis(u64::from(1000 / STEPS_PER_SEC))
                }
                Err(e) => {
                    tracing::warn!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "a replay step failed; it is tried again");
                    now.last_error = Some(e.to_string());
                    backoff = (backoff * 2).min(MOST_BACKOFF);
                    // The walk may be ahead of what was made: read on
                    // from the stored cursor.
                    walk = None;
                    backoff
                }
            };
            if let Err(e) = self.store_progress(&now).await {
                tracing::error!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "storing the replay's progress failed; the step is done again (nothing is made twice)");
                walk = None;
                self.wait(IDLE).await;
                continue;
            }
            if now.finished_at_ms.is_some() {
                tracing::info!(tenant = %p.tenant, replay = %p.replay_id, route = %order.route, replayed = now.counts.replayed, scanned = now.counts.scanned, "replay done");
                return;
            }
            progress = Some(now);
            self.wait(pause).await;
        }
    }

    /// One step: the next events of the walk judged on the replay lane,
    /// the deliveries made, the progress counted. The cursor moves past
    /// the last event whose outcome is durable.
    async fn step(
        &self,
        order: &ReplayOrder,
        target: &ReplayTarget,
        mut walk: Walk,
        progress: &mut ReplayProgress,
    ) -> (Walk, Result<Stepped>) {
        let most = order.rate_per_sec.div_ceil(STEPS_PER_SEC).max(1) as usize;
        let judge = judge(order, target);
        let source = target.source.clone();
        let now_ms = self.parts.clock.now_ms();
        let judged = FilterPool::replay_lane()
            .run(&self.share, move || {
                let judged = walk
                    .next(most * SCAN_PER_MADE)
                    .and_then(|rows| judge.judge(&source, rows, (now_ms, most, STEP_FILTER_STEPS)));
                (walk, judged)
            })
            .await;
        let (mut walk, judged) = match judged {
            Ok(done) => done,
            Err(_) => {
                let window = (order.since_ms, order.until_ms);
                let fresh = Walk::new(
                    target.source.clone(),
                    window,
                    order.event_type.clone(),
                    progress.cursor.clone(),
                );
                return (fresh, Err(Error::stopped("replay lane")));
            }
        };
        let Judged { verdicts, rest } = match judged {
            Ok(judged) => judged,
            Err(e) => return (walk, Err(e)),
        };
        walk.unread(rest);
        let made = self.make(order, target, verdicts, progress).await;
        target.route.wake.queued();
        match made {
            Ok(()) if walk.is_done() => (walk, Ok(Stepped::Done)),
            Ok(()) => (walk, Ok(Stepped::More)),
            Err(e) => (walk, Err(e)),
        }
    }

    /// Writes the deliveries of `verdicts` on the route at once (one
    /// commit), each under the event id in the route's idempotency log,
    /// and counts every verdict into `progress` in order, up to the first
    /// that failed.
    async fn make(
        &self,
        order: &ReplayOrder,
        target: &ReplayTarget,
        verdicts: Vec<(DeliveryId, crate::store::records::DeliveryState, Verdict)>,
        progress: &mut ReplayProgress,
    ) -> Result<()> {
        let planned: HashMap<DeliveryId, DeliveryId> = progress.planned.drain(..).collect();
        let mut writes = Vec::new();
        let mut outcomes = Vec::with_capacity(verdicts.len());
        for (id, state, verdict) in verdicts {
            let slot = match verdict {
                Verdict::Make(mut new) => {
                    if let Some(made) = planned.get(&id) {
                        new.due_ms = made.time_ms().unwrap_or(new.due_ms);
                        new.meta.delivery_id = made.clone();
                    }
                    progress
                        .planned
                        .push((id.clone(), new.meta.delivery_id.clone()));
                    writes.push(*new);
                    None
                }
                Verdict::Skip(skip) => Some(skip),
            };
            outcomes.push((id, state.received_at_ms, slot));
        }
        // Planned ids of events this step did not reach stay planned.
        let last = outcomes.last().map(|(id, ..)| id.clone());
        progress.planned.extend(
            planned
                .into_iter()
                .filter(|(source, _)| last.as_ref().is_none_or(|last| source > last)),
        );
        progress.planned.sort();
        if !writes.is_empty() {
            self.store_progress(progress).await?;
            self.parts.store.durable_barrier().await?;
        }
        let mut results = Vec::with_capacity(writes.len());
        let mut writes = writes.into_iter().peekable();
        while writes.peek().is_some() {
            let chunk = writes
                .by_ref()
                .take(WRITES_AT_ONCE)
                .map(|new| target.route.data.commit(new));
            results.extend(join_all(chunk).await);
        }
        let mut written = results.into_iter();
        for (id, received_at_ms, skip) in outcomes {
            let c = &mut progress.counts;
            match skip {
                Some(Skip::NotMatched) => c.not_matched += 1,
                Some(Skip::Filtered) => c.filtered += 1,
                Some(Skip::AlreadyOnRoute) => c.already_on_route += 1,
                Some(Skip::Gone) => c.gone += 1,
                None => match written.next().expect("one outcome a write") {
                    Ok(CommitOutcome::Accepted) => c.replayed += 1,
                    // Made by this replay before its progress was stored.
                    Ok(CommitOutcome::Duplicate(first)) if first > order.made_after => {
                        c.replayed += 1
                    }
                    Ok(_) => c.already_on_route += 1,
                    Err(e) => return Err(e),
                },
            }
            c.scanned += 1;
            progress.cursor = Some(id);
            progress.position_ms = Some(received_at_ms);
        }
        let cursor = progress.cursor.clone();
        progress
            .planned
            .retain(|(source, _)| cursor.as_ref().is_none_or(|c| source > c));
        Ok(())
    }

    /// Marks the replay failed for good: its route is gone.
    async fn fail(&self, progress: Option<ReplayProgress>, why: &str) {
        let p = &self.parts;
        let mut progress = match progress {
            Some(progress) => progress,
            None => self.load_progress().await.unwrap_or_default(),
        };
        progress.failed = true;
        progress.last_error = Some(why.to_owned());
        tracing::warn!(tenant = %p.tenant, replay = %p.replay_id, reason = why, "replay stopped");
        if let Err(e) = self.store_progress(&progress).await {
            tracing::error!(tenant = %p.tenant, replay = %p.replay_id, error = %e, "storing the replay's progress failed");
        }
    }

    async fn load(&self) -> Result<Option<ReplayOrder>> {
        let (store, tenant, id) = self.row_key();
        blocking(move || ReplayOrder::load(&*store.catalog_rows()?, &tenant, &id)).await
    }

    async fn load_progress(&self) -> Result<ReplayProgress> {
        let (store, tenant, id) = self.row_key();
        blocking(move || ReplayProgress::load(&*store.catalog_rows()?, &tenant, &id)).await
    }

    async fn store_progress(&self, progress: &ReplayProgress) -> Result<()> {
        let (store, tenant, id) = self.row_key();
        let change = progress.put(&tenant, &id);
        blocking(move || store.catalog_rows()?.apply(&[change])).await
    }

    fn row_key(&self) -> (Store, String, String) {
        let p = &self.parts;
        (p.store.clone(), p.tenant.to_string(), p.replay_id.clone())
    }

    /// Until `wait` passed on the server's clock or the order changed.
    async fn wait(&self, wait: Duration) {
        let clock = &self.parts.clock;
        let at = clock.now_ms() + wait.as_millis() as i64;
        tokio::select! {
            _ = clock.sleep_until(at) => {}
            _ = self.parts.nudge.notified() => {}
        }
    }
}

/// Most events a dry run looks at: a window with more is refused.
pub const MOST_COUNTED: u64 = 1_000_000;

/// Events a dry run reads at once.
const COUNT_CHUNK: usize = 2_000;

/// How many deliveries `order` would make on `target` now, had it run
/// from the start: the events of its window that match, pass the route's
/// filter and that the route has no delivery of (it got it when it
/// arrived, or a replay made one). The same walk and judge a run takes,
/// on the replay lane. More than [`MOST_COUNTED`] events in the window is
/// `InvalidArgument`.
pub async fn count(order: &ReplayOrder, target: &ReplayTarget, now_ms: i64) -> Result<u64> {
    let share = Semaphore::new(1);
    let window = (order.since_ms, order.until_ms);
    let mut walk = Walk::new(
        target.source.clone(),
        window,
        order.event_type.clone(),
        None,
    );
    let judge = Arc::new(judge(order, target));
    let (mut scanned, mut count) = (0u64, 0u64);
    while !walk.is_done() {
        let (source, route, judge) = (
            target.source.clone(),
            target.route.data.clone(),
            judge.clone(),
        );
        let (back, chunk) = FilterPool::replay_lane()
            .run(&share, move || {
                let chunk = walk.next(COUNT_CHUNK).and_then(|rows| {
                    let judged = judge.judge(&source, rows, (now_ms, usize::MAX, u64::MAX))?;
                    let mut count = 0u64;
                    for (_, _, verdict) in &judged.verdicts {
                        if let Verdict::Make(new) = verdict {
                            let key = new.event_id.as_str().as_bytes();
                            count += u64::from(route.idempotency(key)?.is_none());
                        }
                    }
                    Ok((judged.verdicts.len() as u64, count))
                });
                (walk, chunk)
            })
            .await
            .map_err(|_| Error::stopped("replay lane"))?;
        walk = back;
        let (looked, made) = chunk?;
        scanned += looked;
        count += made;
        if scanned > MOST_COUNTED {
            return Err(Error::InvalidArgument(format!(
                "the window holds more than {MOST_COUNTED} events: count a narrower one (or a type)"
            )));
        }
    }
    Ok(count)
}

/// What `order`'s events are judged against on `target`.
fn judge(order: &ReplayOrder, target: &ReplayTarget) -> Judge {
    Judge {
        route: order.route.clone(),
        filter: target.filter.clone(),
        path: target.path.clone(),
        body: order.body_pointer.clone().zip(order.body_value.clone()),
    }
}
