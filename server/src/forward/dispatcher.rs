//! One tenant's forwarding loop: takes due deliveries from its queue, runs the
//! attempts and records every outcome.

use std::{collections::HashSet, future::Future, pin::Pin, sync::Arc, time::Instant};

use futures_util::{stream::FuturesUnordered, FutureExt, StreamExt};

use super::{
    adaptive::{ConcurrencyLimit, HostSignals},
    attempt::{self, AttemptResult},
    breaker::{Breaker, BreakerState},
    lease::{ForwardLease, LeaseTerms},
    policy::{next_step, Verdict},
    report::ForwardReport,
    round::{write_round, Decided, Recorded},
};
use crate::routes::handle::Wake;
use crate::routes::hold::{Allowed, Hold, HoldRecord};
use crate::routes::settings::ForwardSettings;
use crate::{
    alerts::Signals,
    clock::SharedClock,
    egress::{address::GuardedResolver, trust},
    error::Result,
    feed::DeliveryFeed,
    ids::{DeliveryId, RequestId, TenantId},
    metrics::{BreakerGauge, ConcurrencyGauge, RouteMetrics},
    rate_limit::TokenBucket,
    routes::transform::apply as transform,
    store::{
        api::{blocking, DueEntry, Fence, QueueKey, Store, TenantStore},
        lifecycle::Next,
    },
    telemetry::{
        spans::{self, ForwardTarget},
        Spans,
    },
};

/// Longest the loop sleeps without looking at the queue again.
const MAX_IDLE_MS: i64 = 1000;

/// How often a paused route's held deliveries are counted for its
/// metrics.
const HELD_SAMPLE_MS: i64 = 10_000;

/// When to look again for the delivery rate's next token, `wait_secs`
/// from `now` (at most [`MAX_IDLE_MS`] away).
fn token_due(now: i64, wait_secs: u64) -> i64 {
    now + (wait_secs as i64 * 1000).min(MAX_IDLE_MS)
}

struct Done {
    key: QueueKey,
    delivery_id: DeliveryId,
    accepted_at_ms: i64,
    tried: Tried,
    /// The lease the attempt was claimed under, to record it under.
    fence: Fence,
}

/// What became of a delivery taken from the queue.
enum Tried {
    /// The queued delivery had no stored event.
    NoEvent,
    /// The lease passed elsewhere (or the entry moved on) before it was
    /// sent, or would end before it could be: nothing was sent, nothing is
    /// written.
    Fenced,
    /// An attempt was made.
    Sent(Box<Sent>),
}

/// An attempt that was made.
struct Sent {
    result: AttemptResult,
    /// The request that brought the event in.
    request_id: RequestId,
    /// Holds the attempt's `hookd.forward` span.
    trace: opentelemetry::Context,
}

type InFlight = Pin<Box<dyn Future<Output = Done> + Send>>;

/// A round being written: the queue entries it settles, and its outcomes
/// once they are durable.
type Writing = Pin<Box<dyn Future<Output = (Vec<QueueKey>, Vec<Recorded>)> + Send>>;

/// Rounds a dispatcher writes at once: while one waits for its commit the
/// next attempts are sent and decided, and the outcomes decided meanwhile
/// make the next round, so forwarding does not idle on the disk. At most
/// `max_in_flight` attempts are finished and not yet durable, besides those
/// in flight: after a crash at most twice `max_in_flight` are sent again.
const MAX_ROUNDS_WRITING: usize = 4;

/// Outcomes decided and not yet in a round being written.
#[derive(Default)]
struct Unwritten {
    /// The queue entries they settle.
    keys: Vec<QueueKey>,
    decided: Vec<Decided>,
    /// When the last of them was decided.
    now: i64,
}

/// By when an attempt read at `read_at` with `left` on its lease must have
/// ended ([`attempt::send_by`]): on an engine that serves one process,
/// never (`None`).
fn send_by(read_at: Instant, left: std::time::Duration, fence: &Fence) -> Option<Instant> {
    fence.is_shared().then(|| attempt::send_by(read_at, left))
}

/// What a [`Dispatcher`] is built from.
pub struct DispatcherParts {
    /// The tenant it forwards for.
    pub tenant: TenantId,
    /// The route it forwards (`default` for the tenant's own destination).
    pub route: String,
    /// The route's data, in its scope.
    pub data: TenantStore,
    /// The store, for the forwarding lease.
    pub store: Store,
    /// Destination, retry policy, breaker and rate.
    pub settings: ForwardSettings,
    /// The clock it reads and sleeps on.
    pub clock: SharedClock,
    /// Notified when new work is queued.
    pub wake: Arc<Wake>,
    /// An operator's hold on the route; `None` for an alert sink's own,
    /// which nobody pauses.
    pub hold: Option<Arc<Hold>>,
    /// The live feed outcomes are published on.
    pub feed: DeliveryFeed,
    /// Starts the `hookd.forward` spans.
    pub spans: Spans,
    /// The route's counters.
    pub metrics: Arc<RouteMetrics>,
    /// Private CAs every destination trusts (`[forward] ca_file`).
    pub shared_cas: Arc<Vec<reqwest::Certificate>>,
    /// This process's claim to forward the tenant.
    pub lease: LeaseTerms,
    /// Where the route's failures, transform failures and breaker are
    /// told to the tenant's alerts; `None` for an alert sink's own.
    pub signals: Option<Arc<Signals>>,
}

/// The forwarding loop of one tenant.
///
/// One tenant's forwarding loop: takes due deliveries from its queue,
/// runs at most `max_in_flight` attempts at once (so a slow destination only
/// ever holds its own tenant's slots; fewer while an adaptive limit backs
/// off, `forward/adaptive.rs`), and records every outcome. Outcomes
/// are reported (log, metrics, feed) only once they are on disk, so after a
/// crash only attempts still in flight are sent again. A destination set over
/// the control plane gets a client whose resolver enforces the destination
/// address policy, with no redirects and no proxy.
pub struct Dispatcher {
    tenant: TenantId,
    route: String,
    data: TenantStore,
    settings: Arc<ForwardSettings>,
    client: reqwest::Client,
    clock: SharedClock,
    wake: Arc<Wake>,
    hold: Option<Arc<Hold>>,
    /// The store, whose catalog keeps the route's hold.
    store: Store,
    /// What each outcome tells: alert signals, counters, span, log, feed.
    report: ForwardReport,
    breaker: Breaker,
    rate: Option<TokenBucket>,
    spans: Spans,
    breaker_gauge: BreakerGauge,
    /// How many attempts may be in flight now.
    limit: ConcurrencyLimit,
    limit_gauge: ConcurrencyGauge,
    /// The destination as spans and logs name it (its URL may carry a token).
    target: ForwardTarget,
    /// Forwards start only while this process holds the tenant's lease.
    lease: ForwardLease,
    /// When a paused route's held deliveries were last counted.
    held_counted_ms: Option<i64>,
}

impl Dispatcher {
    /// A dispatcher for one tenant. Its client trusts the built-in roots,
    /// `shared_cas` (`[forward] ca_file`) and the destination's own `ca_file`.
    pub fn new(parts: DispatcherParts) -> reqwest::Result<Self> {
        let DispatcherParts {
            tenant,
            route,
            data,
            store,
            settings,
            clock,
            wake,
            hold,
            feed,
            spans,
            metrics,
            shared_cas,
            lease,
            signals,
        } = parts;
        let builder = reqwest::Client::builder()
            .connect_timeout(settings.connect_timeout)
            .redirect(reqwest::redirect::Policy::none())
            .pool_max_idle_per_host(settings.max_in_flight)
            .user_agent(concat!("hookd/", env!("CARGO_PKG_VERSION")));
        let mut builder = trust::trust(
            builder,
            shared_cas.iter().chain(&settings.ca_certs).cloned(),
        );
        if let Some(policy) = &settings.address_policy {
            // Every name is resolved, and checked, by hookd itself; a proxy
            // from the environment would resolve it out of sight.
            builder = builder
                .dns_resolver(Arc::new(GuardedResolver::new(policy.clone())))
                .no_proxy();
        }
        let client = builder.build()?;
        let target = ForwardTarget::of(&settings.url);
        let report = ForwardReport {
            tenant: tenant.clone(),
            route: route.clone(),
            scope: data.tenant().clone(),
            metrics: metrics.clone(),
            feed,
            signals,
            transformed: settings.transform.is_some(),
        };
        Ok(Dispatcher {
            lease: ForwardLease::new(store.clone(), data.tenant().clone(), lease),
            store,
            hold,
            report,
            breaker_gauge: BreakerGauge::new(metrics.clone()),
            limit: ConcurrencyLimit::new(
                settings.concurrency,
                settings.max_in_flight,
                HostSignals::shared().of(&settings.url),
            ),
            limit_gauge: ConcurrencyGauge::new(metrics.clone()),
            spans,
            target,
            breaker: Breaker::new(settings.breaker_threshold, settings.breaker_cooldown_ms),
            rate: settings
                .delivery_rate
                .map(|r| TokenBucket::new(r, clock.now_ms())),
            tenant,
            route,
            data,
            settings: Arc::new(settings),
            client,
            clock,
            wake,
            held_counted_ms: None,
        })
    }

    /// Runs until the task is dropped (at shutdown). Anything in flight then
    /// stays queued and is sent again after a restart.
    pub async fn run(mut self) {
        let mut in_flight: FuturesUnordered<InFlight> = FuturesUnordered::new();
        let mut writing: FuturesUnordered<Writing> = FuturesUnordered::new();
        let mut busy: HashSet<QueueKey> = HashSet::new();
        let mut unwritten = Unwritten::default();
        let most_unwritten = self.settings.max_in_flight;
        self.read_hold().await;
        loop {
            if !unwritten.keys.is_empty() && writing.len() < MAX_ROUNDS_WRITING {
                writing.push(self.write(std::mem::take(&mut unwritten)));
            }
            let now = self.clock.now_ms();
            let wake_at = match self.lease.holds().await {
                // Another process forwards the tenant; ask again soon.
                None => now + MAX_IDLE_MS,
                // Enough sent and not yet durable: wait for a round to land.
                Some(_) if busy.len() - in_flight.len() >= most_unwritten => now + MAX_IDLE_MS,
                Some(fence) => match self.start_due(now, &fence, &mut in_flight, &mut busy).await {
                    Ok(wake_at) => wake_at,
                    Err(e) => {
                        tracing::error!(tenant = %self.tenant, route = %self.route, error = %e, "reading the delivery queue failed");
                        now + MAX_IDLE_MS
                    }
                },
            };
            // On the server's clock, so a test's clock drives retries,
            // Retry-After, breaker cooldowns and the delivery rate.
            let sleep = self
                .clock
                .sleep_until(now + (wake_at - now).clamp(1, MAX_IDLE_MS));
            tokio::select! {
                Some(done) = in_flight.next(), if !in_flight.is_empty() => {
                    let mut finished = vec![done];
                    while let Some(Some(more)) = in_flight.next().now_or_never() {
                        finished.push(more);
                    }
                    self.decide_all(finished, in_flight.len(), &mut unwritten);
                }
                Some((keys, recorded)) = writing.next(), if !writing.is_empty() => {
                    for key in &keys {
                        busy.remove(key);
                    }
                    for outcome in recorded {
                        self.report.recorded(outcome);
                    }
                }
                _ = self.wake.notified() => {}
                _ = sleep => {}
            }
        }
    }

    /// Reads the route's stored hold unless it is known already (the
    /// route ran here before): until it is read nothing is sent, so a
    /// route paused before a restart stays paused across it.
    async fn read_hold(&self) {
        let Some(hold) = self.hold.clone() else {
            return;
        };
        while !hold.is_known() {
            let (store, tenant, route) = (
                self.store.clone(),
                self.tenant.to_string(),
                self.route.clone(),
            );
            let read =
                blocking(move || HoldRecord::load(&*store.catalog_rows()?, &tenant, &route)).await;
            match read {
                Ok(record) => hold.apply(record),
                Err(e) => {
                    tracing::error!(tenant = %self.tenant, route = %self.route, error = %e, "reading the route's hold failed; nothing is sent until it is read");
                    let now = self.clock.now_ms();
                    self.clock.sleep_until(now + MAX_IDLE_MS).await;
                }
            }
        }
    }

    /// Starts every due delivery there is room for; returns when to look again.
    async fn start_due(
        &mut self,
        now: i64,
        fence: &Fence,
        in_flight: &mut FuturesUnordered<InFlight>,
        busy: &mut HashSet<QueueKey>,
    ) -> Result<i64> {
        let mut wake_at = now + MAX_IDLE_MS;
        if self.wake.take_retry_now() {
            self.breaker.probe_now(now);
        }
        if let Some(reopens) = self.breaker.reopens_at() {
            wake_at = wake_at.min(reopens);
        }
        if let Some(resumes) = self.limit.paused_until(now) {
            wake_at = wake_at.min(resumes);
        }
        let allowed = self.limit.allowed(now);
        self.limit_gauge.set(self.limit.current());
        let allowed = match self.hold.as_ref().map(|hold| hold.allowed(now, allowed)) {
            None => allowed,
            Some(Allowed::UpTo(allowed)) => allowed,
            Some(Allowed::Nothing) => {
                self.count_held(now).await;
                return Ok(wake_at);
            }
        };
        let room = match self.room(now, in_flight.len(), allowed) {
            Ok(room) => room,
            Err(resumes) => return Ok(wake_at.min(resumes)),
        };
        // One trip to the blocking pool: the due deliveries there is room
        // for, with their states and events.
        let (data, skip) = (self.data.clone(), busy.clone());
        let reading = fence.clone();
        // Before the lease is read, so no attempt outlives it.
        let asked = Instant::now();
        let due = blocking(move || data.due(now, (room, &skip), &reading)).await?;
        if let Some(next) = due.next_due_ms {
            wake_at = wake_at.min(next);
        }
        let mut admitted = Vec::new();
        for entry in due.entries {
            if let Some(route) = &self.settings.transform {
                if let Err(resumes) = transform::admit(route, now) {
                    wake_at = wake_at.min(resumes);
                    break;
                }
            }
            if let Some(rate) = &mut self.rate {
                if let Err(wait_secs) = rate.try_take(now) {
                    wake_at = wake_at.min(token_due(now, wait_secs));
                    break;
                }
            }
            if !self.breaker.admit(now) {
                break;
            }
            admitted.push(entry);
        }
        // The lease was read with the entries, right before they are sent.
        for entry in admitted {
            busy.insert(entry.key.clone());
            let send_by = entry.send_for.map(|left| send_by(asked, left, fence));
            in_flight.push(self.attempt(entry, send_by, now, fence.clone()));
        }
        Ok(wake_at)
    }

    /// Counts a paused route's held deliveries into its metrics, at most
    /// every [`HELD_SAMPLE_MS`].
    async fn count_held(&mut self, now: i64) {
        let paused = self.hold.as_ref().is_some_and(|hold| hold.is_paused());
        let due = self
            .held_counted_ms
            .is_none_or(|at| now - at >= HELD_SAMPLE_MS || now < at);
        if !paused || !due {
            return;
        }
        self.held_counted_ms = Some(now);
        let data = self.data.clone();
        match blocking(move || data.counts()).await {
            Ok(counts) => self.report.metrics.window().held(counts.depth, now),
            Err(e) => {
                tracing::warn!(tenant = %self.tenant, route = %self.route, error = %e, "counting a paused route's held deliveries failed")
            }
        }
    }

    /// How many attempts may start now by what does not depend on the
    /// delivery: the free slots, the delivery rate's whole tokens, one probe
    /// while the breaker is not closed, one run while the transform backs
    /// off. Each delivery still takes its own turn of these checks; this
    /// only bounds how many are read for them. `Err`, when nothing can start
    /// (every slot in use, the breaker shut, the transform paused, no token):
    /// when to look again, so the queue is not read on every wake-up of the
    /// tenant's ingest for nothing.
    fn room(
        &mut self,
        now: i64,
        in_flight: usize,
        allowed: usize,
    ) -> std::result::Result<usize, i64> {
        let transform = self.settings.transform.as_deref();
        if let Some(resumes) = transform.and_then(|route| transform::paused_until(route, now)) {
            return Err(resumes);
        }
        let shut = match self.breaker.state() {
            BreakerState::Closed => false,
            BreakerState::HalfOpen => true,
            BreakerState::Open { until_ms } => now < until_ms,
        };
        if in_flight >= allowed || shut {
            return Err(now + MAX_IDLE_MS);
        }
        let mut room = allowed - in_flight;
        if let Some(rate) = &mut self.rate {
            match rate.whole(now) {
                Ok(tokens) => room = room.min(tokens),
                Err(wait_secs) => return Err(token_due(now, wait_secs)),
            }
        }
        let one_only = self.breaker.state() != BreakerState::Closed
            || transform.is_some_and(transform::backing_off);
        Ok(if one_only { room.min(1) } else { room })
    }

    /// Sends one attempt claimed under `fence` ([`claimed`]: on a store
    /// shared by several processes, `send_by` is when the send must have
    /// ended, before the lease does; `None`, the claim failed and nothing
    /// is sent).
    fn attempt(
        &self,
        entry: DueEntry,
        send_by: Option<Option<Instant>>,
        now: i64,
        fence: Fence,
    ) -> InFlight {
        let DueEntry {
            key,
            id: delivery_id,
            state,
            event,
            ..
        } = entry;
        let (Some(state), Some(event)) = (state, event) else {
            return Box::pin(std::future::ready(Done {
                key,
                delivery_id,
                accepted_at_ms: 0,
                tried: Tried::NoEvent,
                fence,
            }));
        };
        let accepted_at_ms = state.received_at_ms;
        let Some(send_by) = send_by else {
            return Box::pin(std::future::ready(Done {
                key,
                delivery_id,
                accepted_at_ms,
                tried: Tried::Fenced,
                fence,
            }));
        };
        let number = state.attempts + 1;
        let trace = self.spans.start_forward(
            (&self.tenant, &self.route),
            &event.meta,
            number,
            &self.target,
        );
        let trace_headers = spans::trace_headers(&trace);
        let (client, settings) = (self.client.clone(), self.settings.clone());
        Box::pin(async move {
            let sent = attempt::send(
                &client,
                &settings,
                &event,
                (number, now),
                &trace_headers,
                send_by,
            );
            let tried = match sent.await {
                Some(result) => Tried::Sent(Box::new(Sent {
                    result,
                    request_id: event.meta.request_id,
                    trace,
                })),
                None => Tried::Fenced,
            };
            Done {
                key,
                delivery_id,
                accepted_at_ms,
                tried,
                fence,
            }
        })
    }

    /// Decides finished attempts (retry policy, breaker, adaptive limit)
    /// at once and adds them to what the next round writes.
    /// `still_in_flight`: the attempts not finished yet.
    fn decide_all(&mut self, finished: Vec<Done>, still_in_flight: usize, to: &mut Unwritten) {
        let now = self.clock.now_ms();
        let in_use = still_in_flight + finished.len();
        for done in finished {
            let cut = match &done.tried {
                Tried::Sent(sent) => self.limit.observe_attempt(&sent.result, now, in_use),
                _ => false,
            };
            to.keys.push(done.key.clone());
            to.decided.push(self.decide(done, now, cut));
        }
        to.now = now;
        self.limit_gauge.set(self.limit.current());
    }

    /// Writes decided outcomes as one round, which ends once the records
    /// are on disk, with the queue entries the round settled (busy until
    /// then, so no pass reads them again) and the outcomes to report: an
    /// attempt reported done is never sent again after a crash.
    fn write(&self, round: Unwritten) -> Writing {
        let (data, tenant, route) = (self.data.clone(), self.tenant.clone(), self.route.clone());
        Box::pin(async move {
            let recorded = write_round(&data, (&tenant, &route), round.decided, round.now).await;
            (round.keys, recorded)
        })
    }

    /// What a finished attempt leads to (retry policy, circuit breaker),
    /// before anything is written; `cut`: an overload the adaptive limit
    /// answered above its floor, which the breaker does not count.
    fn decide(&mut self, done: Done, now: i64, cut: bool) -> Decided {
        let Sent {
            mut result,
            request_id,
            trace,
        } = match done.tried {
            Tried::Sent(sent) => *sent,
            Tried::NoEvent => {
                tracing::warn!(tenant = %self.tenant, route = %self.route, delivery_id = %done.delivery_id, "queued delivery has no stored event; dropping it");
                return Decided::NoEvent { key: done.key };
            }
            Tried::Fenced => {
                tracing::info!(tenant = %self.tenant, route = %self.route, delivery_id = %done.delivery_id, "forwarding lease passed elsewhere or about to end (or the delivery moved on) before the attempt; not sent");
                self.lease.recheck();
                return Decided::Fenced;
            }
        };
        let next = next_step(
            &self.settings,
            result.record.attempt,
            done.accepted_at_ms,
            now,
            &result.verdict,
            &result.error,
            &mut rand::rng(),
        );
        match &result.verdict {
            Verdict::Retryable { .. } if cut => self.breaker.on_cut(now),
            Verdict::Retryable { .. } => {
                if self.breaker.on_failure(now) {
                    self.report.breaker(&self.target, true);
                }
            }
            Verdict::Success | Verdict::Permanent => {
                if self.breaker.on_success() {
                    self.report.breaker(&self.target, false);
                }
            }
            Verdict::Unsendable | Verdict::Dropped | Verdict::TransformFailed => {
                self.breaker.on_not_sent(now)
            }
        }
        let breaker_open = self.breaker.state() != BreakerState::Closed;
        self.breaker_gauge.set(breaker_open);
        self.report.decided(&done.delivery_id, &next, breaker_open);
        if let Next::Retry { due_ms } = next {
            result.record.next_retry_at_ms = Some(due_ms);
        }
        Decided::Attempted {
            key: done.key,
            delivery_id: done.delivery_id,
            next,
            result: Box::new(result),
            request_id,
            trace,
            fence: done.fence,
        }
    }
}
