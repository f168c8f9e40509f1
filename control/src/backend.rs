//! [`ControlBackend`]: everything the control plane needs from the server, in
//! domain terms.

use futures_util::stream::BoxStream;

use crate::{
    error::Result,
    model::{AlertFilter, AlertSettingsView, AlertView, NewAlertSettings, SetAlertSettingsOutcome},
    model::{
        AttemptView, ContractCheck, ContractDef, ContractList, ContractView, CreatedTenant,
        CreatedToken, DeadLetterFilter, DeadLetterView, DeliveryContent, DeliveryEventView,
        DeliveryQuery, DeliveryView, Grant, NewTenant, Page, PageRequest, Principal,
        ProvidedSecret, PulledDelivery, Redelivered, RejectionFilter, RejectionView, RotatedSecret,
        SecretInfo, Selection, TenantActivity, TenantPatch, TenantView, TokenInfo,
    },
    model::{
        Cancel, Matched, MetricsQuery, NewRoute, RetryNow, RouteMetricsView, RoutePatch, RouteTest,
        RouteTestResult, RouteView,
    },
    model::{NewReplay, ReplayAction, ReplayStarted, ReplayView},
};

/// A live feed of delivery events for one watcher. It ends after yielding
/// an `Err` (typically [`crate::Error::Unavailable`] when the watcher fell
/// behind or hookd is stopping); [`crate::watch::from_broadcast`] builds one
/// from a `tokio::sync::broadcast` subscription.
pub type EventStream = BoxStream<'static, Result<DeliveryEventView>>;

/// [`ControlBackend::watches_per_token`] unless the backend says otherwise.
pub const DEFAULT_WATCHES_PER_TOKEN: usize = 8;

/// What the control plane needs from the server. The server implements it;
/// this crate never depends on the server.
///
/// Every method answers [`crate::Error::NotFound`] for a tenant that does
/// not exist, [`crate::Error::Unavailable`] when storage could not make a
/// change durable (and then changed nothing), and
/// [`crate::Error::Internal`] for anything the caller cannot act on.
///
/// [`ControlBackend`]: everything the control plane needs from the server,
/// in domain terms. The services authenticate, authorize and validate before
/// calling it, so an implementation can trust its arguments' shape (a
/// well-formed tenant id, a clamped page size, no empty ids) but not that
/// what they name exists.
#[tonic::async_trait]
pub trait ControlBackend: Send + Sync + 'static {
    /// True while storage is open and every tenant actor runs; drives
    /// `grpc.health.v1`. Called once a second, so it must be cheap.
    fn is_ready(&self) -> bool;

    /// Where the control plane's RPC spans go (`{service}/{method}`, with the
    /// OpenTelemetry RPC attributes); `None`, the default, records none.
    fn tracer(&self) -> Option<opentelemetry::global::BoxedTracer> {
        None
    }

    /// Who holds `bearer_token`: the admin token, or a live (not revoked)
    /// tenant-scoped token, compared by hash in constant time. `None` for
    /// anything else; the caller then gets UNAUTHENTICATED. A revoked token
    /// must answer `None` from the moment `revoke_token` returned.
    fn authenticate(&self, bearer_token: &str) -> Option<Grant>;

    /// Whether `grant` still holds: the admin token always does; a tenant
    /// token until it is revoked or its tenant deleted (a tenant made anew
    /// under the same id does not revive it).
    async fn still_valid(&self, grant: &Grant) -> bool;

    /// Most WatchDeliveries streams one token may hold open at once; the
    /// next is RESOURCE_EXHAUSTED.
    fn watches_per_token(&self) -> usize {
        DEFAULT_WATCHES_PER_TOKEN
    }

    /// Creates an enabled tenant with a first signing secret and a
    /// destination secret, durably, and returns both secrets: this is the
    /// only time they leave hookd. A taken id is `AlreadyExists`; a
    /// destination URL or event-id field the server refuses is
    /// `InvalidArgument`.
    async fn create_tenant(&self, tenant: NewTenant) -> Result<CreatedTenant>;

    /// Reads one tenant.
    async fn get_tenant(&self, tenant_id: &str) -> Result<TenantView>;

    /// Tenants in id order. A page token the backend did not issue is
    /// `InvalidArgument` naming `page_token`.
    async fn list_tenants(&self, page: PageRequest) -> Result<Page<TenantView>>;

    /// Applies the patch atomically (all of it or nothing) and returns the
    /// tenant as stored; later deliveries see the change. A config-file
    /// tenant is `FailedPrecondition`; a rate limit that resolves to a burst
    /// without a rate is `InvalidArgument`.
    async fn update_tenant(&self, tenant_id: &str, patch: TenantPatch) -> Result<TenantView>;

    /// Drops the tenant and everything it owns: secrets, tokens (which stop
    /// authenticating at once), events, deliveries, dead letters. A
    /// config-file tenant is `FailedPrecondition`.
    async fn delete_tenant(&self, tenant_id: &str) -> Result<()>;

    /// Makes a new current secret and returns it: the only time it leaves
    /// hookd. With `secret` (the provider issued it), that one instead,
    /// checked for the tenant's scheme (`InvalidArgument` naming `secret`)
    /// and not returned (the answer's secret is empty). The old current one
    /// becomes previous for `overlap_secs` (already defaulted and bounded to
    /// 30 days); a previous one that existed before is dropped. A
    /// config-file tenant is `FailedPrecondition`.
    async fn rotate_secret(
        &self,
        tenant_id: &str,
        overlap_secs: u64,
        secret: Option<ProvidedSecret>,
    ) -> Result<RotatedSecret>;

    /// The live secrets, current first, without their values; expired ones
    /// are left out.
    async fn list_secrets(&self, tenant_id: &str) -> Result<Vec<SecretInfo>>;

    /// Stops accepting the previous secret `kid` at once. An unknown kid is
    /// `NotFound`; the current secret, or a config-file tenant, is
    /// `FailedPrecondition`.
    async fn revoke_secret(&self, tenant_id: &str, kid: &str) -> Result<()>;

    /// Issues a token scoped to the tenant, keeping only its hash, and
    /// returns its value: the only time it leaves hookd. `description` is at
    /// most 256 bytes.
    async fn create_token(&self, tenant_id: &str, description: &str) -> Result<CreatedToken>;

    /// Live tokens, oldest first, of one tenant or (`None`) of all.
    async fn list_tokens(&self, tenant_id: Option<&str>) -> Result<Vec<TokenInfo>>;

    /// Revokes a token; `authenticate` refuses it from when this returns. An
    /// unknown or already revoked id is `NotFound`.
    async fn revoke_token(&self, token_id: &str) -> Result<()>;

    /// The deliveries of the tenant's route `query.route` that `query`
    /// passes, newest first, without attempts. A route the tenant lacks is
    /// `NotFound` naming it; a foreign page token is `InvalidArgument`. A
    /// page read by a body field may come back short (even empty) with a
    /// next token: it read [`crate::model::MAX_BODIES_READ`] bodies or
    /// [`crate::model::MAX_BODY_BYTES_READ`] of them.
    async fn list_deliveries(
        &self,
        tenant_id: &str,
        query: DeliveryQuery,
        page: PageRequest,
    ) -> Result<Page<DeliveryView>>;

    /// Every delivery whose id is `id`, or of an event whose id is `id`,
    /// on every route of `tenant_id` (`None`: every tenant), at most
    /// [`crate::model::MAX_SEARCH_RESULTS`], without attempts.
    async fn search_deliveries(
        &self,
        tenant_id: Option<&str>,
        id: &str,
    ) -> Result<Vec<DeliveryView>>;

    /// One delivery with every attempt, oldest first. An id the tenant does
    /// not have (or that was purged) is `NotFound`.
    async fn get_delivery(&self, tenant_id: &str, delivery_id: &str) -> Result<DeliveryView>;

    /// The headers and body of one delivery. An id the tenant does not have
    /// (or that was purged) is `NotFound`.
    async fn get_delivery_content(
        &self,
        tenant_id: &str,
        delivery_id: &str,
    ) -> Result<DeliveryContent>;

    /// Sends one delivery once to `url` instead of the tenant's destination,
    /// signed as a forward would be, records it with the delivery (who: `by`,
    /// when, where, the outcome) and returns what happened; the delivery's
    /// status, its attempts and the tenant's destination stay unchanged.
    /// A URL that is not absolute http(s), or whose literal address the
    /// destination address policy denies, is `InvalidArgument` and nothing
    /// is sent; a tenant without a destination secret (pull mode) is
    /// `FailedPrecondition`.
    async fn redirect(
        &self,
        by: &Principal,
        tenant_id: &str,
        delivery_id: &str,
        url: &str,
    ) -> Result<AttemptView>;

    /// The dead letters of the tenant's route `route` passing `filter`,
    /// most recently dead first. A route the tenant lacks is `NotFound`
    /// naming it; a foreign page token is `InvalidArgument`.
    async fn list_dead_letters(
        &self,
        tenant_id: &str,
        route: &str,
        filter: DeadLetterFilter,
        page: PageRequest,
    ) -> Result<Page<DeadLetterView>>;

    /// Queues each selected delivery's event again as a new delivery on its
    /// own route and marks the original redelivered; answers the new ids in
    /// the order of `Pick::Ids`, or oldest original first for
    /// `Pick::Matching` (at most [`crate::model::MAX_REDELIVER_PER_CALL`],
    /// `more` set when others matched; nothing written in a dry run), once
    /// they are durable. By ids all or nothing: an unknown id (on the
    /// selection's route, or on any route without one) is `NotFound`, one
    /// pending, in flight or already redelivered is `FailedPrecondition`,
    /// and then nothing changes. By filter, one another call redelivered
    /// meanwhile is skipped. A route the tenant lacks is `NotFound`.
    async fn redeliver(&self, tenant_id: &str, selection: Selection) -> Result<Redelivered>;

    /// Makes the chosen deliveries waiting for their next retry due now,
    /// their attempt counts unchanged, and wakes their routes; answers once
    /// that is durable. By ids: an unknown id (on the request's route, or
    /// on any route without one) is `NotFound` and nothing changes; one
    /// not waiting for a retry is skipped. `All`: the route's waiting
    /// deliveries, soonest due first, at most
    /// [`crate::model::MAX_REDELIVER_PER_CALL`]. A route the tenant lacks
    /// is `NotFound`.
    async fn retry_now(&self, tenant_id: &str, request: RetryNow) -> Result<Matched>;

    /// Dead-letters the chosen pending deliveries with reason `cancelled`,
    /// sending nothing; answers once that is durable. By ids: an unknown
    /// id is `NotFound` and nothing changes; one not pending is skipped.
    /// `All`: the route's pending deliveries the filter passes, soonest due
    /// first, at most [`crate::model::MAX_REDELIVER_PER_CALL`].
    async fn cancel_deliveries(&self, tenant_id: &str, request: Cancel) -> Result<Matched>;

    /// Deletes the selected dead letters and their stored bodies for good
    /// and returns how many went. Ids that are not dead letters of the
    /// tenant (on the selection's route, or on any route without one) are
    /// skipped, not errors. A route the tenant lacks is `NotFound`.
    async fn purge_dead_letters(&self, tenant_id: &str, selection: Selection) -> Result<u64>;

    /// What the tenant is doing now: queue, dead letters, breaker, counts
    /// since start and recorded refusals of the last hour and day.
    async fn tenant_activity(&self, tenant_id: &str) -> Result<TenantActivity>;

    /// The tenant's recorded rejections passing `filter`, newest first. A
    /// foreign page token is `InvalidArgument`.
    async fn list_rejections(
        &self,
        tenant_id: &str,
        filter: RejectionFilter,
        page: PageRequest,
    ) -> Result<Page<RejectionView>>;

    /// Events from now on of one tenant, or (`None`) of every tenant, for
    /// the holder of `grant`. The services pass `None` only for the admin
    /// token. Nothing from before the call is replayed. The stream ends with
    /// UNAUTHENTICATED once `grant` no longer holds, and with NOT_FOUND once
    /// the watched tenant is deleted: a tenant made anew under its id is
    /// never watched by a stream opened before.
    async fn watch(&self, grant: &Grant, tenant_id: Option<&str>) -> Result<EventStream>;

    /// Hands out up to `max` (1..=100) pending deliveries of a pull-mode
    /// tenant, oldest first, hidden from other pulls for `visibility_secs`
    /// (1..=43200); returns at once, possibly empty. A push-mode tenant is
    /// `FailedPrecondition`.
    async fn pull(
        &self,
        tenant_id: &str,
        max: u32,
        visibility_secs: u32,
    ) -> Result<Vec<PulledDelivery>>;

    /// Marks pulled deliveries delivered, even after their visibility
    /// timeout; returns how many this call acked. Unknown or already acked
    /// ids are skipped. A push-mode tenant is `FailedPrecondition`.
    async fn ack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> Result<u32>;

    /// Makes pulled deliveries pending again at once. Ids not currently
    /// pulled are skipped. A push-mode tenant is `FailedPrecondition`.
    async fn nack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> Result<()>;

    /// Saves a contract durably as a new revision of its (type, version) and
    /// puts it in force for deliveries checked from then on. A contract that
    /// does not compile, or whose example fails it, is `InvalidArgument`
    /// naming the field; one declared in the config file is
    /// `FailedPrecondition`.
    async fn put_contract(&self, tenant_id: &str, contract: ContractDef) -> Result<ContractView>;

    /// The contract in force for (type, version); `NotFound` when none.
    async fn get_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<ContractView>;

    /// Every contract in force, with the tenant's contract policy.
    async fn list_contracts(&self, tenant_id: &str) -> Result<ContractList>;

    /// Deletes a saved contract durably; `NotFound` when there is none, a
    /// config-file one is `FailedPrecondition`.
    async fn delete_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<()>;

    /// What the contract check at ingest would say about `payload`; stores
    /// and sends nothing.
    async fn validate_payload(&self, tenant_id: &str, payload: Vec<u8>) -> Result<ContractCheck>;

    /// Every route of the tenant, `default` (its own destination) first.
    async fn list_routes(&self, tenant_id: &str) -> Result<Vec<RouteView>>;

    /// One route; a name the tenant does not have is `NotFound`.
    async fn get_route(&self, tenant_id: &str, name: &str) -> Result<RouteView>;

    /// Adds a route durably and puts it in force for deliveries accepted
    /// after the call. A taken name (`default` included) is
    /// `AlreadyExists`; a filter, transform or setting the server refuses
    /// is `InvalidArgument` naming it; a config-file tenant is
    /// `FailedPrecondition`.
    async fn create_route(&self, tenant_id: &str, route: NewRoute) -> Result<RouteView>;

    /// Applies the patch atomically and returns the route as stored. On
    /// `default` only the destination and concurrency may change (as
    /// UpdateTenant); anything else there is `InvalidArgument`.
    async fn update_route(
        &self,
        tenant_id: &str,
        name: &str,
        patch: RoutePatch,
    ) -> Result<RouteView>;

    /// Removes a route and drops its data. `default` is
    /// `FailedPrecondition`, and so is a route with deliveries still queued
    /// unless `force`.
    async fn delete_route(&self, tenant_id: &str, name: &str, force: bool) -> Result<()>;

    /// Holds a route durably: from its dispatcher's next pass on every
    /// replica (within a second) nothing is sent, while events are still
    /// accepted and stored on it, its waiting deliveries shown as `Held`.
    /// Pausing a paused route changes nothing. An unknown route is
    /// `NotFound`; a pulled one `FailedPrecondition`.
    async fn pause_route(&self, tenant_id: &str, name: &str) -> Result<RouteView>;

    /// Lets a paused route send again, its concurrency rising from one to
    /// its limit over `ramp_secs`. Resuming a route that is not paused
    /// changes nothing. An unknown route is `NotFound`.
    async fn resume_route(&self, tenant_id: &str, name: &str, ramp_secs: u32) -> Result<RouteView>;

    /// A route's numbers by `query.step_ms` over `query.span_ms` up to
    /// now, and its queue now. An unknown route is `NotFound`.
    async fn route_metrics(
        &self,
        tenant_id: &str,
        name: &str,
        query: MetricsQuery,
    ) -> Result<RouteMetricsView>;

    /// Replays the tenant's stored events of `request`'s window into a
    /// route other than `default`, or counts them (a dry run). An unknown
    /// route is `NotFound`; `default` `InvalidArgument`; a route with a
    /// replay not finished `FailedPrecondition`.
    async fn replay_to_route(&self, tenant_id: &str, request: NewReplay) -> Result<ReplayStarted>;

    /// One replay and its progress. An unknown one is `NotFound`.
    async fn replay(&self, tenant_id: &str, replay_id: &str) -> Result<ReplayView>;

    /// A tenant's replays (of `route` only, if given), newest first.
    async fn replays(&self, tenant_id: &str, route: Option<&str>) -> Result<Vec<ReplayView>>;

    /// Pauses, resumes or cancels a replay. An unknown one is `NotFound`;
    /// one finished (done, or cancelled) `FailedPrecondition`.
    async fn act_on_replay(
        &self,
        tenant_id: &str,
        replay_id: &str,
        action: ReplayAction,
    ) -> Result<ReplayView>;

    /// Runs a route's filter and transform on an event; sends and stores
    /// nothing. An unknown route or delivery is `NotFound`; an inline
    /// filter or transform that does not compile is `InvalidArgument`.
    async fn test_route(&self, tenant_id: &str, test: RouteTest) -> Result<RouteTestResult>;

    /// The tenant's alert sink and rules, every default filled in.
    async fn get_alert_settings(&self, tenant_id: &str) -> Result<AlertSettingsView>;

    /// Replaces the tenant's alert sink and rules, checking them first
    /// ([`crate::Error::InvalidArgument`] naming the bad field; nothing
    /// changed). A config-file tenant is [`crate::Error::FailedPrecondition`].
    /// In force when it returns.
    async fn set_alert_settings(
        &self,
        tenant_id: &str,
        settings: NewAlertSettings,
    ) -> Result<SetAlertSettingsOutcome>;

    /// One page of the tenant's alerts, newest first.
    async fn list_alerts(
        &self,
        tenant_id: &str,
        filter: AlertFilter,
        page: PageRequest,
    ) -> Result<Page<AlertView>>;

    /// Acknowledges an open alert (again: no change); a resolved one is
    /// [`crate::Error::FailedPrecondition`], an unknown one
    /// [`crate::Error::NotFound`].
    async fn acknowledge_alert(&self, tenant_id: &str, alert_id: &str) -> Result<AlertView>;
}
