//! A tenant's ingest gate: the checks the HTTP worker that read a delivery
//! runs before the durable write, with no thread hand-off.

use std::{
    borrow::Cow,
    panic::AssertUnwindSafe,
    sync::{Arc, Mutex, PoisonError, RwLock},
};

use bytes::Bytes;
use hookd_proto::domain::DEFAULT_ROUTE;
use hookd_sdk::signature::{self, Delivery, HeaderSource, Verified};
use tokio::sync::Semaphore;

use super::{
    commit::{Commit, ContractRejection, SenderFacts},
    filters::{filter_inline, FilterWork},
    headers::SignedHeaders,
    replay::{replay_cache, Replay, ReplayCache, ReplayKeys, Scope},
    snapshot::{Published, Snapshot},
    validate::{content_event_id, is_form, validate_body, Body, Checked, EventIdSource},
};
use crate::routes::handle::Wake;
use crate::routes::handle::{fan_out, RouteHandle};
use crate::tenant::TenantSettings;
use crate::{
    clock::SharedClock,
    config::{EventIdRule, LimitsConfig, MetricsConfig, DEPRECATED_SCAN_LIMIT_DEFAULT},
    contracts::TenantContracts,
    feed::DeliveryFeed,
    ids::{DeliveryId, EventId},
    ingest::{Answer, BodyError, Ingest, IngestError, IngestOutcome},
    metrics::{Metrics, SenderMetrics, TypeOutcome},
    rate_limit::TokenBucket,
    routes::filter::{pool::FilterPool, Passes},
    store::{
        api::{Receipt, TenantStore},
        records::EventMeta,
        NewDelivery,
    },
    telemetry::{
        spans::{self, IngestSpan, ACTOR_SPAN, COMMIT_SPAN},
        Spans,
    },
};

/// Headers kept with a stored event so the forwarder can pass them on.
const KEPT_HEADERS: [&str; 3] = ["content-type", "x-github-event", "x-shopify-topic"];

/// The rate limiter of `settings`, full, if it has one.
fn full_limiter(settings: &TenantSettings, now_ms: i64) -> Option<TokenBucket> {
    settings
        .rate_limit
        .map(|limit| TokenBucket::new(limit, now_ms))
}

/// What a gate writes to and reports through, besides its tenant's state.
#[derive(Clone)]
pub(super) struct GateParts {
    pub data: TenantStore,
    pub clock: SharedClock,
    pub feed: DeliveryFeed,
    pub spans: Spans,
    pub senders: Option<Arc<SenderMetrics>>,
    /// The replay cache every tenant's gate shares.
    pub replay: ReplayCache,
    /// The tenant's turn on the filter threads: one evaluation at a time.
    pub filter_share: Arc<Semaphore>,
}

/// One tenant's ingest gate.
///
/// A tenant's ingest gate: the checks the HTTP worker that read a delivery
/// runs (verify, replay check, body checks, contracts, rate limit) against
/// the snapshot its tenant's actor published (`super::snapshot`), the
/// tenant's scope in the shared replay cache (`super::replay`) and the
/// rate limiter; the durable write and what follows it is
/// `super::commit`. No thread hand-off before the commit: the worker that
/// holds the request does all of it. The actor (`actor.rs`) owns the gate:
/// it alone publishes the snapshot, retunes the limiter and the replay
/// scope when the settings change, and resets the gate after a panic.
pub struct Gate {
    published: Arc<Published>,
    limiter: Mutex<Option<TokenBucket>>,
    /// The tenant's scope in `parts.replay`.
    scope: RwLock<Scope>,
    parts: GateParts,
}

impl Gate {
    /// A gate of its own for `settings` with no contracts, writing to
    /// `data` (benchmarks and tests; a running tenant's gate reads the
    /// snapshot its actor publishes).
    pub fn new(
        settings: Arc<TenantSettings>,
        data: TenantStore,
        clock: SharedClock,
        wake: Arc<Wake>,
        feed: DeliveryFeed,
        spans: Spans,
    ) -> Self {
        let metrics = Metrics::new(&MetricsConfig {
            enabled: false,
            addr: None,
            max_tenant_labels: 1,
            scan_limit: DEPRECATED_SCAN_LIMIT_DEFAULT,
        });
        let route = RouteHandle {
            name: DEFAULT_ROUTE.to_owned(),
            data: data.clone(),
            wake,
            hold: Arc::default(),
            metrics: metrics.route(&metrics.tenant(&settings.id), DEFAULT_ROUTE),
        };
        let contracts = Arc::new(TenantContracts::default());
        let snapshot = Snapshot::of(settings, contracts, Arc::new([route]));
        let parts = GateParts {
            data,
            clock,
            feed,
            spans,
            senders: None,
            replay: replay_cache(LimitsConfig::DEFAULT_REPLAY_CACHE_KEYS),
            filter_share: FilterPool::tenant_share(),
        };
        Gate::on(Arc::new(Published::new(snapshot)), parts)
    }

    /// The gate of the tenant whose snapshot is published in `published`.
    pub(super) fn on(published: Arc<Published>, parts: GateParts) -> Self {
        let settings = published.load().settings().clone();
        Gate {
            limiter: Mutex::new(full_limiter(&settings, parts.clock.now_ms())),
            scope: RwLock::new(Scope::new(settings.tolerance_secs)),
            published,
            parts,
        }
    }

    /// The snapshot in force.
    pub(super) fn snapshot(&self) -> Arc<Snapshot> {
        self.published.load()
    }

    /// Settings change from `old` to `new` (the actor's change): a changed
    /// rate limit starts full, a changed tolerance starts a new, empty
    /// replay scope (the durable log still catches resends); what did not
    /// change carries on.
    pub(super) fn retune(&self, old: &TenantSettings, new: &TenantSettings) {
        if old.rate_limit != new.rate_limit {
            *self.limiter.lock().unwrap_or_else(PoisonError::into_inner) =
                full_limiter(new, self.parts.clock.now_ms());
        }
        if old.tolerance_secs != new.tolerance_secs {
            *self.scope.write().unwrap_or_else(PoisonError::into_inner) =
                Scope::new(new.tolerance_secs);
        }
    }

    /// Rebuilds what a panic may have left half changed: the rate limiter
    /// starts full again. The snapshot is immutable and the replay cache
    /// changes atomically, so both are kept.
    pub(super) fn reset(&self) {
        let limiter = full_limiter(self.snapshot().settings(), self.parts.clock.now_ms());
        *self.limiter.lock().unwrap_or_else(PoisonError::into_inner) = limiter;
        self.limiter.clear_poison();
    }

    fn replay(&self) -> Replay {
        let scope = *self.scope.read().unwrap_or_else(PoisonError::into_inner);
        Replay::new(self.parts.replay.clone(), scope)
    }

    /// Checks the body against the tenant's contracts. Returns the event
    /// type for the accepted count, or the rejection to answer unless the
    /// event was accepted before the contracts changed.
    fn check_contract(
        &self,
        snapshot: &Snapshot,
        body: &[u8],
        event_id: &EventId,
        keys: &ReplayKeys,
    ) -> Result<Option<String>, Box<ContractRejection>> {
        let verdict = snapshot.contracts().check(body);
        let Err(error) = verdict.result else {
            return Ok(verdict.event_type);
        };
        let outcome = match error {
            BodyError::UnknownEventType { .. } => TypeOutcome::UnknownEventType,
            _ => TypeOutcome::ContractViolation,
        };
        Err(Box::new(ContractRejection {
            error,
            event_type: verdict.event_type,
            outcome,
            event_id: event_id.clone(),
            content_key: snapshot.content_idem_key(keys),
        }))
    }

    /// Everything up to the durable write: verify, replay cache, rate limit,
    /// body checks. Returns the write to make, or the duplicate's answer.
    fn prepare(
        &self,
        snapshot: &Snapshot,
        replay: &Replay,
        msg: &Ingest,
    ) -> Result<Prepared, IngestError> {
        let s = snapshot.settings();
        #[cfg(any(test, feature = "fault-injection"))]
        crate::faults::maybe_panic(s.id.as_str());
        let now_ms = self.parts.clock.now_ms();
        let headers = SignedHeaders(msg.headers);
        let keys = snapshot.live_keys(now_ms.div_euclid(1000));
        let url = s.delivery_url(msg.query);
        let signed_body = msg.wire.as_ref().unwrap_or(&msg.body);
        let delivery = Delivery {
            method: msg.method,
            url: url.as_deref(),
            headers: &headers,
            body: signed_body,
        };
        let now = now_ms.div_euclid(1000);
        let verified = match &s.hmac {
            Some(spec) => signature::verify_hmac(spec, &delivery, keys, now, s.tolerance_secs),
            None => signature::verify_delivery(s.scheme, &delivery, keys, now, s.tolerance_secs),
        }
        .map_err(|error| IngestError::Verify {
            error,
            tolerance_secs: s.tolerance_secs,
        })?;

        let keys = ReplayKeys::of(s.scheme, &verified, signed_body);
        if let Some((event_id, delivery_id)) = replay.first(&keys) {
            return Ok(Prepared::Duplicate(IngestOutcome {
                event_id,
                delivery_id,
                duplicate: true,
                routes: Vec::new(),
                receipt: Receipt::Queued,
            }));
        }

        let checked = checked_body(s, msg, &headers, &verified, signed_body)?;
        let event_id = checked.event_id;
        let view = checked.form_json.as_deref().unwrap_or(&msg.body);
        let event_type = match self.check_contract(snapshot, view, &event_id, &keys) {
            Ok(event_type) => event_type,
            Err(rejection) => return Ok(Prepared::Rejected(rejection)),
        };

        self.take_token(now_ms)?;

        let view = match checked.form_json {
            Some(json) => Cow::Owned(Bytes::from(json)),
            None => Cow::Borrowed(&msg.body),
        };
        let filters = filter_inline(s, msg, (headers.0, view), &event_id);
        let mut item = Box::new(new_delivery(
            snapshot, msg, &headers, event_id, &keys, now_ms,
        ));
        item.event_type.clone_from(&event_type);
        let filters = match filters {
            Ok(passes) => {
                item.fan_out(s, &passes);
                None
            }
            Err(work) => Some(work),
        };
        Ok(Prepared::New {
            item,
            filters,
            replay_keys: keys,
            sender: SenderFacts {
                event_type,
                skew_ms: verified.timestamp.map(|ts| now_ms - ts * 1000),
                now_ms,
            },
        })
    }

    /// Takes a token from the tenant's rate limiter, if it has one, at
    /// `now_ms`; refused with how long to wait when it is empty.
    fn take_token(&self, now_ms: i64) -> Result<(), IngestError> {
        if let Some(limiter) = self
            .limiter
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .as_mut()
        {
            limiter
                .try_take(now_ms)
                .map_err(|wait| IngestError::RateLimited {
                    retry_after_secs: wait,
                })?;
        }
        Ok(())
    }
}

/// The body checks of a verified delivery: its form decoded, its event id
/// read as the tenant's rule says (for the body's type) and its required
/// fields present.
fn checked_body(
    s: &TenantSettings,
    msg: &Ingest,
    headers: &SignedHeaders<'_>,
    verified: &Verified,
    signed_body: &[u8],
) -> Result<Checked, BodyError> {
    let form = is_form(headers.header("content-type"));
    let content_id;
    let id_source = match s.event_id.for_body(form, s.event_id_field.is_some()) {
        EventIdRule::SchemeHeader(name) => {
            EventIdSource::Header(name, verified.header_event_id.as_deref())
        }
        EventIdRule::Content => {
            content_id = content_event_id(verified, signed_body);
            EventIdSource::Content(&content_id)
        }
        rule => EventIdSource::Rule(rule),
    };
    let body = Body {
        bytes: &msg.body,
        form,
        headers,
    };
    validate_body(&body, id_source, &s.required_fields)
}

/// The write an accepted delivery makes: the event with the headers worth
/// passing on, its trace ids and its idempotency keys; the copies its
/// routes' filters make are added by [`NewDelivery::fan_out`].
fn new_delivery(
    snapshot: &Snapshot,
    msg: &Ingest,
    headers: &SignedHeaders<'_>,
    event_id: EventId,
    keys: &ReplayKeys,
    now_ms: i64,
) -> NewDelivery {
    let kept = KEPT_HEADERS
        .iter()
        .filter_map(|name| Some(((*name).to_owned(), headers.header(name)?.to_owned())))
        .collect();
    let (trace_id, span_id, sampled) = spans::span_ids(&msg.trace);
    // The default route's delay: its delivery is due (and named) then.
    let due_ms = now_ms + snapshot.settings().delay_ms;
    let meta = EventMeta {
        event_id: event_id.clone(),
        delivery_id: DeliveryId::due_at(due_ms),
        request_id: msg.request_id.clone(),
        received_at_ms: now_ms,
        headers: kept,
        trace_id,
        span_id,
        sampled,
    };
    NewDelivery {
        content_key: snapshot.content_idem_key(keys),
        event_id,
        meta,
        body: msg.body.clone(),
        due_ms,
        copies: Vec::new(),
        receipt: Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

/// A new delivery as the filters' verdicts fan it out to routes.
trait FanOut {
    /// Adds the copies, receipt and route outcomes the filters' verdicts
    /// `passes` make.
    fn fan_out(&mut self, settings: &TenantSettings, passes: &Passes);
}

impl FanOut for NewDelivery {
    fn fan_out(&mut self, settings: &TenantSettings, passes: &Passes) {
        // Each route's delay counts from acceptance.
        let ids = (&self.meta.delivery_id, self.meta.received_at_ms);
        let fan_out = fan_out(&settings.routes, passes, ids);
        self.copies = fan_out.copies;
        self.receipt = fan_out.receipt;
        self.routes = fan_out.routes;
    }
}

enum Prepared {
    Duplicate(IngestOutcome),
    /// Rejected by a contract: answered as a duplicate instead if the event
    /// was accepted before the contract changed.
    Rejected(Box<ContractRejection>),
    New {
        replay_keys: ReplayKeys,
        item: Box<NewDelivery>,
        /// Filters that need a filter thread to decide: the copies are
        /// added to `item` once they have.
        filters: Option<FilterWork>,
        sender: SenderFacts,
    },
}

impl Gate {
    /// Runs one delivery's checks on the calling thread; a rejection's lookup
    /// and a new delivery's commit are left to the caller (see [`Answer`]).
    /// A panic in the checks answers this delivery with a 5xx and calls
    /// `panicked`, which has the tenant's actor restart the gate. The
    /// delivery's `hookd.actor` span ends with its answer, whichever it is.
    pub fn answer(&self, msg: Ingest, panicked: impl FnOnce()) -> Answer {
        let snapshot = self.snapshot();
        let tenant = &snapshot.settings().id;
        let span = IngestSpan::new(self.parts.spans.start_child(&msg.trace, ACTOR_SPAN, tenant));
        let answer = self.checked(&snapshot, msg, span.context(), panicked);
        span.around(answer)
    }

    fn checked(
        &self,
        snapshot: &Snapshot,
        msg: Ingest,
        span: &opentelemetry::Context,
        panicked: impl FnOnce(),
    ) -> Answer {
        let tenant = &snapshot.settings().id;
        // A poisoned store acknowledges nothing, not even from the replay
        // cache: the sender retries after the restart.
        if !self.parts.data.is_healthy() {
            return Answer::now(Err(IngestError::StorageUnavailable));
        }
        let replay = self.replay();
        let prepared =
            std::panic::catch_unwind(AssertUnwindSafe(|| self.prepare(snapshot, &replay, &msg)));
        let Ok(prepared) = prepared else {
            tracing::error!(tenant = %tenant, request_id = %msg.request_id, "tenant ingest panicked; its actor's supervisor restarts it");
            panicked();
            return Answer::now(Err(IngestError::ChecksPanicked));
        };
        match prepared {
            Err(e) => Answer::now(Err(e)),
            Ok(Prepared::Duplicate(outcome)) => Answer::now(Ok(outcome)),
            Ok(Prepared::Rejected(rejection)) => {
                Answer::later(rejection.answer(self.parts.data.clone(), self.parts.senders.clone()))
            }
            Ok(Prepared::New {
                replay_keys,
                mut item,
                filters,
                sender,
            }) => {
                let commit = Commit {
                    data: self.parts.data.clone(),
                    replay,
                    routes: snapshot.routes().clone(),
                    feed: self.parts.feed.clone(),
                    span: IngestSpan::new(self.parts.spans.start_child(span, COMMIT_SPAN, tenant)),
                    tenant: tenant.clone(),
                    request_id: msg.request_id,
                    senders: self.parts.senders.clone(),
                    tolerance_secs: snapshot.settings().tolerance_secs,
                };
                let Some(filters) = filters else {
                    return Answer::later(commit.run(*item, replay_keys, sender));
                };
                let settings = snapshot.settings().clone();
                let share = self.parts.filter_share.clone();
                Answer::later(async move {
                    let passes = FilterPool::shared()
                        .run(&share, move || filters.finish())
                        .await
                        .map_err(|_| IngestError::ChecksPanicked)?;
                    item.fan_out(&settings, &passes);
                    commit.run(*item, replay_keys, sender).await
                })
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use actix_web::http::header::HeaderMap;
    use hookd_sdk::signature::{sign, Scheme, Secret};

    use super::{
        super::replay::{Scope as ReplayScope, ScopedKey},
        *,
    };
    use crate::{
        clock::ManualClock,
        config::TenantConfig,
        store::{api::Storage, SledStore},
    };

    const NOW_SECS: i64 = 1_700_000_000;
    const FIRST: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    fn settings(secret: &str, rate_limit: Option<serde_json::Value>) -> Arc<TenantSettings> {
        let mut config = serde_json::json!({
            "id": "gate",
            "scheme": "standard",
            "secrets": [{ "kid": "k1", "secret": secret }],
        });
        if let Some(limit) = rate_limit {
            config["rate_limit"] = limit;
        }
        let config: TenantConfig = serde_json::from_value(config).unwrap();
        Arc::new(TenantSettings::resolve_under(&config, 1024 * 1024).unwrap())
    }

    /// A gate on a fresh store (syncs off), its clock at `NOW_SECS`.
    fn gate(dir: &std::path::Path, settings: Arc<TenantSettings>) -> (Gate, SledStore) {
        let (store, _committer) = SledStore::open(dir, 64, false).unwrap();
        let data = Storage::tenant(&store, &settings.id).unwrap();
        let clock: SharedClock = Arc::new(ManualClock::at_secs(NOW_SECS));
        let spans = Spans::new(&opentelemetry_sdk::trace::SdkTracerProvider::builder().build());
        let gate = Gate::new(
            settings,
            data,
            clock,
            Arc::default(),
            DeliveryFeed::default(),
            spans,
        );
        (gate, store)
    }

    /// The headers of a delivery `id` signed with `secret`, and its body.
    fn signed(secret: &str, id: &str) -> (HeaderMap, bytes::Bytes) {
        let body = format!("{{\"type\":\"order.paid\",\"id\":\"{id}\"}}");
        let key = Secret::from_provider(Scheme::Standard, "k1", secret).unwrap();
        let signed = sign(Scheme::Standard, &key, id, NOW_SECS, body.as_bytes());
        (Ingest::headers(signed), bytes::Bytes::from(body))
    }

    fn run(
        gate: &Gate,
        (headers, body): &(HeaderMap, bytes::Bytes),
    ) -> Result<IngestOutcome, IngestError> {
        let answer = gate.answer(Ingest::post(headers, body), || {
            panic!("the checks did not panic")
        });
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap()
            .block_on(async { answer.await })
    }

    /// A reset (the actor restarting after a panic) rebuilds the rate
    /// limiter full, and keeps the replay cache.
    #[test]
    fn a_reset_refills_the_rate_limiter_and_keeps_the_replay_cache() {
        let dir = tempfile::tempdir().unwrap();
        let limit = serde_json::json!({ "per_sec": 0.001, "burst": 1 });
        let (gate, _store) = gate(dir.path(), settings(FIRST, Some(limit)));
        let first = signed(FIRST, "msg_1");
        assert!(!run(&gate, &first).unwrap().duplicate);
        assert!(matches!(
            run(&gate, &signed(FIRST, "msg_2")),
            Err(IngestError::RateLimited { .. })
        ));
        gate.reset();
        assert!(
            run(&gate, &first).unwrap().duplicate,
            "answered from the replay cache"
        );
        assert!(!run(&gate, &signed(FIRST, "msg_2")).unwrap().duplicate);
    }

    fn entry(scope: ReplayScope, n: u32) -> (ScopedKey, (EventId, DeliveryId)) {
        let id = format!("evt_{n}");
        (
            scope.key(format!("id:{id}").into_bytes()),
            (EventId::new(id), DeliveryId::generate()),
        )
    }

    /// A full replay cache must make room for the newest deliveries: their
    /// resends are the ones that come. An admission policy that keeps the
    /// older keys instead sends every such resend to the durable log.
    #[test]
    fn a_full_replay_cache_keeps_the_newest_deliveries() {
        let capacity = 1_000;
        let cache = replay_cache(capacity);
        let scope = ReplayScope::new(300);
        let fill = |range: std::ops::Range<u32>| {
            for n in range {
                let (key, value) = entry(scope, n);
                assert!(cache.get(&key).is_none(), "a new delivery misses first");
                cache.insert(key, value);
            }
            cache.run_pending_tasks();
        };
        fill(0..capacity as u32);
        fill(capacity as u32..2 * capacity as u32);
        let kept = (capacity as u32..2 * capacity as u32)
            .filter(|n| cache.contains_key(&entry(scope, *n).0))
            .count();
        assert_eq!(
            kept, capacity as usize,
            "every one of the newest {capacity}"
        );
        assert!(cache.entry_count() <= capacity);
    }
}
