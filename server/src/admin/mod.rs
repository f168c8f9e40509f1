//! The server's side of the control plane: [`Backend`] implements
//! `hookd_control::ControlBackend`.

mod activity;
mod alerts;
mod contracts;
mod deliveries;
mod hold;
mod metrics;
mod pending;
mod redeliver;
mod redirect;
mod rejections;
mod replay;
mod route_test;
mod routes;
mod tenants;
mod watch;

use std::{collections::HashSet, sync::Arc};

use hookd_control::{
    model::{AlertFilter, AlertSettingsView, AlertView, NewAlertSettings, SetAlertSettingsOutcome},
    model::{
        AttemptView, Cancel, ContractCheck, ContractDef, ContractList, ContractView, CreatedTenant,
        CreatedToken, DeadLetterFilter, DeadLetterView, DeliveryContent, DeliveryQuery,
        DeliveryView, Grant, NewTenant, Page, PageRequest, Principal, ProvidedSecret,
        PulledDelivery, Redelivered, RejectionFilter, RejectionView, RotatedSecret, SecretInfo,
        Selection, TenantActivity, TenantPatch, TenantView, TokenBinding, TokenInfo,
    },
    model::{
        Matched, MetricsQuery, NewRoute, RetryNow, RouteMetricsView, RoutePatch, RouteTest,
        RouteTestResult, RouteView,
    },
    model::{NewReplay, ReplayAction, ReplayStarted, ReplayView},
    ControlBackend, Error as ApiError, EventStream, Result as ApiResult,
};
use secrecy::{ExposeSecret, SecretString};
use subtle::ConstantTimeEq;

use crate::{
    alerts::Alerts,
    catalog::{Catalog, Resolver},
    error::Error,
    tenant::{Registry, Services},
};

/// Implements the control plane over the running server. Cheap to clone:
/// a clone carries a call's storage work to the blocking pool.
///
/// The server's side of the control plane: [`Backend`] implements
/// `hookd_control::ControlBackend` over the registry, the catalog of
/// API-created tenants and the delivery store.
#[derive(Clone)]
pub struct Backend {
    registry: Registry,
    services: Arc<Services>,
    catalog: Catalog,
    /// Tenants declared in the config file: read-only over the API.
    config_tenants: Arc<HashSet<String>>,
    admin_token: SecretString,
    /// Stored tenants to running settings, under the operator's caps.
    resolver: Resolver,
    /// Bumped when a token is revoked or a tenant deleted: open watches
    /// re-check their token.
    revocations: Arc<tokio::sync::watch::Sender<u64>>,
    /// `grpc.watch_streams_per_token`.
    watches_per_token: usize,
    /// Every tenant's alerts and alert settings.
    alerts: Alerts,
}

impl Backend {
    /// A backend over `registry`; `config_tenants` are the ids declared in
    /// the config file; stored tenants run as `resolver` has them (its
    /// address policy holds destinations set over the API); one token holds
    /// at most `watches_per_token` WatchDeliveries streams; `alerts` keeps
    /// the tenants' alerts.
    pub fn new(
        (registry, services): (Registry, Arc<Services>),
        catalog: Catalog,
        config_tenants: HashSet<String>,
        admin_token: SecretString,
        resolver: Resolver,
        watches_per_token: usize,
        alerts: Alerts,
    ) -> Self {
        Backend {
            registry,
            services,
            catalog,
            config_tenants: Arc::new(config_tenants),
            admin_token,
            resolver,
            revocations: Arc::new(tokio::sync::watch::channel(0).0),
            watches_per_token,
            alerts,
        }
    }

    /// Every tenant's alerts, for their evaluator.
    pub(crate) fn alerts(&self) -> &Alerts {
        &self.alerts
    }

    /// Runs `work` (storage calls may block) on the blocking pool, off the
    /// gRPC runtime's threads.
    async fn blocking<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Backend) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        let backend = self.clone();
        tokio::task::spawn_blocking(move || work(&backend))
            .await
            .map_err(|e| ApiError::Internal(format!("control-plane task failed: {e}")))?
    }

    /// [`Backend::blocking`], answered only once its writes are durable
    /// (flushed and fdatasynced through the committer, sharing its fsyncs).
    async fn durably<T: Send + 'static>(
        &self,
        work: impl FnOnce(&Backend) -> ApiResult<T> + Send + 'static,
    ) -> ApiResult<T> {
        if !self.services.store.is_healthy() {
            return Err(api(Error::StoragePoisoned));
        }
        let out = self.blocking(work).await?;
        self.services.store.durable_barrier().await.map_err(api)?;
        Ok(out)
    }

    fn now_ms(&self) -> i64 {
        self.services.clock.now_ms()
    }
}

/// Maps a server error to what the control plane reports.
fn api(e: Error) -> ApiError {
    match e {
        Error::NotFound(what) => ApiError::NotFound(what),
        Error::AlreadyExists(what) => ApiError::AlreadyExists(what),
        Error::TenantDeleted(tenant) => ApiError::NotFound(format!("tenant {tenant}")),
        Error::Precondition(why) => ApiError::FailedPrecondition(why),
        Error::InvalidArgument(why) => ApiError::InvalidArgument(why),
        Error::Config { key, reason } => ApiError::InvalidArgument(format!("{key}: {reason}")),
        Error::Stopped {
            panicked: false, ..
        }
        | Error::StoragePoisoned
        | Error::Storage { .. }
        | Error::Io(_) => ApiError::Unavailable(format!("storage: {e}")),
        Error::Corrupt(_) | Error::Stopped { panicked: true, .. } => {
            ApiError::Internal(e.to_string())
        }
    }
}

#[tonic::async_trait]
impl ControlBackend for Backend {
    fn is_ready(&self) -> bool {
        self.services.store.is_healthy() && self.registry.all_running()
    }

    fn tracer(&self) -> Option<opentelemetry::global::BoxedTracer> {
        let tracer = self.services.telemetry.spans().tracer().clone();
        Some(opentelemetry::global::BoxedTracer::new(Box::new(tracer)))
    }

    fn authenticate(&self, bearer_token: &str) -> Option<Grant> {
        let admin = self.admin_token.expose_secret().as_bytes();
        if bool::from(bearer_token.as_bytes().ct_eq(admin)) {
            return Some(Grant::admin());
        }
        match self.catalog.token_record(bearer_token) {
            Ok(record) => record.map(|r| Grant {
                principal: Principal::Tenant(r.tenant_id),
                binding: Some(TokenBinding {
                    token_id: r.token_id,
                    tenant_incarnation: r.tenant_incarnation,
                }),
            }),
            Err(e) => {
                tracing::error!(error = %e, "token lookup failed");
                None
            }
        }
    }

    async fn still_valid(&self, grant: &Grant) -> bool {
        self.still(grant).await
    }

    fn watches_per_token(&self) -> usize {
        self.watches_per_token
    }

    async fn create_tenant(&self, tenant: NewTenant) -> ApiResult<CreatedTenant> {
        self.durably(move |b| b.create(tenant)).await
    }

    async fn get_tenant(&self, tenant_id: &str) -> ApiResult<TenantView> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.view(&tenant_id)).await
    }

    async fn list_tenants(&self, page: PageRequest) -> ApiResult<Page<TenantView>> {
        self.blocking(move |b| b.list(page)).await
    }

    async fn update_tenant(&self, tenant_id: &str, patch: TenantPatch) -> ApiResult<TenantView> {
        let tenant_id = tenant_id.to_owned();
        self.durably(move |b| b.update(&tenant_id, patch)).await
    }

    async fn delete_tenant(&self, tenant_id: &str) -> ApiResult<()> {
        self.delete(tenant_id).await
    }

    async fn rotate_secret(
        &self,
        tenant_id: &str,
        overlap_secs: u64,
        secret: Option<ProvidedSecret>,
    ) -> ApiResult<RotatedSecret> {
        let tenant_id = tenant_id.to_owned();
        self.durably(move |b| b.rotate(&tenant_id, overlap_secs, secret))
            .await
    }

    async fn list_secrets(&self, tenant_id: &str) -> ApiResult<Vec<SecretInfo>> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.secrets(&tenant_id)).await
    }

    async fn revoke_secret(&self, tenant_id: &str, kid: &str) -> ApiResult<()> {
        let (tenant_id, kid) = (tenant_id.to_owned(), kid.to_owned());
        self.durably(move |b| b.revoke(&tenant_id, &kid)).await
    }

    async fn create_token(&self, tenant_id: &str, description: &str) -> ApiResult<CreatedToken> {
        self.registry
            .get(tenant_id)
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))?;
        let (tenant_id, description) = (tenant_id.to_owned(), description.to_owned());
        let (record, token) = self
            .durably(move |b| {
                b.catalog
                    .create_token(&tenant_id, &description, b.now_ms())
                    .map_err(api)
            })
            .await?;
        Ok(CreatedToken {
            token_id: record.token_id,
            token,
        })
    }

    async fn list_tokens(&self, tenant_id: Option<&str>) -> ApiResult<Vec<TokenInfo>> {
        let tenant_id = tenant_id.map(str::to_owned);
        let tokens = self
            .blocking(move |b| b.catalog.list_tokens(tenant_id.as_deref()).map_err(api))
            .await?;
        Ok(tokens
            .into_iter()
            .map(|t| TokenInfo {
                token_id: t.token_id,
                tenant_id: t.tenant_id,
                description: t.description,
                created_at_ms: t.created_at_ms,
            })
            .collect())
    }

    async fn revoke_token(&self, token_id: &str) -> ApiResult<()> {
        let id = token_id.to_owned();
        match self
            .durably(move |b| b.catalog.revoke_token(&id).map_err(api))
            .await?
        {
            true => {
                self.revoked();
                Ok(())
            }
            false => Err(ApiError::NotFound(format!("token {token_id}"))),
        }
    }

    async fn list_deliveries(
        &self,
        tenant_id: &str,
        query: DeliveryQuery,
        page: PageRequest,
    ) -> ApiResult<Page<DeliveryView>> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.deliveries(&tenant_id, &query, page))
            .await
    }

    async fn search_deliveries(
        &self,
        tenant_id: Option<&str>,
        id: &str,
    ) -> ApiResult<Vec<DeliveryView>> {
        let (tenant_id, id) = (tenant_id.map(str::to_owned), id.to_owned());
        self.blocking(move |b| b.search(tenant_id.as_deref(), &id))
            .await
    }

    async fn get_delivery(&self, tenant_id: &str, delivery_id: &str) -> ApiResult<DeliveryView> {
        let (tenant_id, delivery_id) = (tenant_id.to_owned(), delivery_id.to_owned());
        self.blocking(move |b| b.delivery(&tenant_id, &delivery_id))
            .await
    }

    async fn get_delivery_content(
        &self,
        tenant_id: &str,
        delivery_id: &str,
    ) -> ApiResult<DeliveryContent> {
        let (tenant_id, delivery_id) = (tenant_id.to_owned(), delivery_id.to_owned());
        self.blocking(move |b| b.content(&tenant_id, &delivery_id))
            .await
    }

    async fn redirect(
        &self,
        by: &Principal,
        tenant_id: &str,
        delivery_id: &str,
        url: &str,
    ) -> ApiResult<AttemptView> {
        self.redirect_once(by, tenant_id, delivery_id, url).await
    }

    async fn list_dead_letters(
        &self,
        tenant_id: &str,
        route: &str,
        filter: DeadLetterFilter,
        page: PageRequest,
    ) -> ApiResult<Page<DeadLetterView>> {
        let (tenant_id, route) = (tenant_id.to_owned(), route.to_owned());
        self.blocking(move |b| b.dead_letters(&tenant_id, &route, filter, page))
            .await
    }

    async fn redeliver(&self, tenant_id: &str, selection: Selection) -> ApiResult<Redelivered> {
        self.redeliver_selection(tenant_id, selection).await
    }

    async fn purge_dead_letters(&self, tenant_id: &str, selection: Selection) -> ApiResult<u64> {
        self.purge(tenant_id, selection).await
    }

    async fn retry_now(&self, tenant_id: &str, request: RetryNow) -> ApiResult<Matched> {
        self.retry_waiting(tenant_id, request).await
    }

    async fn cancel_deliveries(&self, tenant_id: &str, request: Cancel) -> ApiResult<Matched> {
        self.cancel_pending(tenant_id, request).await
    }

    async fn tenant_activity(&self, tenant_id: &str) -> ApiResult<TenantActivity> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.activity(&tenant_id)).await
    }

    async fn list_rejections(
        &self,
        tenant_id: &str,
        filter: RejectionFilter,
        page: PageRequest,
    ) -> ApiResult<Page<RejectionView>> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.rejections(&tenant_id, filter, page))
            .await
    }

    async fn watch(&self, grant: &Grant, tenant_id: Option<&str>) -> ApiResult<EventStream> {
        self.watch_events(grant, tenant_id).await
    }

    async fn pull(
        &self,
        tenant_id: &str,
        max: u32,
        visibility_secs: u32,
    ) -> ApiResult<Vec<PulledDelivery>> {
        self.pull_deliveries(tenant_id, max, visibility_secs).await
    }

    async fn ack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> ApiResult<u32> {
        self.ack_deliveries(tenant_id, delivery_ids).await
    }

    async fn nack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> ApiResult<()> {
        self.nack_deliveries(tenant_id, delivery_ids).await
    }

    async fn put_contract(
        &self,
        tenant_id: &str,
        contract: ContractDef,
    ) -> ApiResult<ContractView> {
        let tenant_id = tenant_id.to_owned();
        let id = tenant_id.clone();
        let (saved, compiled) = self
            .durably(move |b| b.save_contract(&id, contract))
            .await?;
        self.blocking(move |b| b.reload_contracts(&tenant_id, Some(compiled)))
            .await?;
        Ok(saved)
    }

    async fn get_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> ApiResult<ContractView> {
        self.contract(tenant_id, event_type, version)
    }

    async fn list_contracts(&self, tenant_id: &str) -> ApiResult<ContractList> {
        self.contract_list(tenant_id)
    }

    async fn delete_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        version: Option<&str>,
    ) -> ApiResult<()> {
        let (tenant_id, event_type) = (tenant_id.to_owned(), event_type.to_owned());
        let version = version.map(str::to_owned);
        let id = tenant_id.clone();
        self.durably(move |b| b.remove_contract(&id, &event_type, version.as_deref()))
            .await?;
        self.blocking(move |b| b.reload_contracts(&tenant_id, None))
            .await
    }

    async fn validate_payload(
        &self,
        tenant_id: &str,
        payload: Vec<u8>,
    ) -> ApiResult<ContractCheck> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.check_payload(&tenant_id, &payload))
            .await
    }

    async fn list_routes(&self, tenant_id: &str) -> ApiResult<Vec<RouteView>> {
        self.routes_of(tenant_id)
    }

    async fn get_route(&self, tenant_id: &str, name: &str) -> ApiResult<RouteView> {
        self.route(tenant_id, name)
    }

    async fn create_route(&self, tenant_id: &str, route: NewRoute) -> ApiResult<RouteView> {
        if let Some(code) = &route.transform {
            let limits = (route.transform_cpu_ms, route.transform_memory_mib);
            self.check_transform(tenant_id, code, limits).await?;
        }
        let tenant_id = tenant_id.to_owned();
        self.durably(move |b| b.add_route(&tenant_id, route)).await
    }

    async fn update_route(
        &self,
        tenant_id: &str,
        name: &str,
        patch: RoutePatch,
    ) -> ApiResult<RouteView> {
        if let Some(Some(code)) = &patch.transform {
            let limits = self.patched_limits(tenant_id, name, &patch);
            self.check_transform(tenant_id, code, limits).await?;
        }
        let (tenant_id, name) = (tenant_id.to_owned(), name.to_owned());
        self.durably(move |b| b.change_route(&tenant_id, &name, patch))
            .await
    }

    async fn delete_route(&self, tenant_id: &str, name: &str, force: bool) -> ApiResult<()> {
        let (tenant_id, name) = (tenant_id.to_owned(), name.to_owned());
        let scope = self
            .durably(move |b| b.take_route(&tenant_id, &name, force))
            .await?;
        self.services
            .store
            .drop_tenant_trees(&scope)
            .await
            .map_err(api)
    }

    async fn route_metrics(
        &self,
        tenant_id: &str,
        name: &str,
        query: MetricsQuery,
    ) -> ApiResult<RouteMetricsView> {
        let (tenant_id, name) = (tenant_id.to_owned(), name.to_owned());
        self.blocking(move |b| b.metrics_of(&tenant_id, &name, query))
            .await
    }

    async fn replay_to_route(
        &self,
        tenant_id: &str,
        request: NewReplay,
    ) -> ApiResult<ReplayStarted> {
        self.start_replay(tenant_id, request).await
    }

    async fn replay(&self, tenant_id: &str, replay_id: &str) -> ApiResult<ReplayView> {
        self.replay_view(tenant_id, replay_id).await
    }

    async fn replays(&self, tenant_id: &str, route: Option<&str>) -> ApiResult<Vec<ReplayView>> {
        self.replay_views(tenant_id, route).await
    }

    async fn act_on_replay(
        &self,
        tenant_id: &str,
        replay_id: &str,
        action: ReplayAction,
    ) -> ApiResult<ReplayView> {
        self.steer_replay(tenant_id, replay_id, action).await
    }

    async fn pause_route(&self, tenant_id: &str, name: &str) -> ApiResult<RouteView> {
        let (tenant_id, name) = (tenant_id.to_owned(), name.to_owned());
        self.durably(move |b| b.hold_route(&tenant_id, &name, None))
            .await
    }

    async fn resume_route(
        &self,
        tenant_id: &str,
        name: &str,
        ramp_secs: u32,
    ) -> ApiResult<RouteView> {
        let (tenant_id, name) = (tenant_id.to_owned(), name.to_owned());
        let ramp_ms = i64::from(ramp_secs) * 1000;
        self.durably(move |b| b.hold_route(&tenant_id, &name, Some(ramp_ms)))
            .await
    }

    async fn test_route(&self, tenant_id: &str, test: RouteTest) -> ApiResult<RouteTestResult> {
        self.try_route(tenant_id, test).await
    }

    async fn get_alert_settings(&self, tenant_id: &str) -> ApiResult<AlertSettingsView> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.alert_settings(&tenant_id)).await
    }

    async fn set_alert_settings(
        &self,
        tenant_id: &str,
        settings: NewAlertSettings,
    ) -> ApiResult<SetAlertSettingsOutcome> {
        let tenant_id = tenant_id.to_owned();
        self.durably(move |b| b.put_alert_settings(&tenant_id, settings))
            .await
    }

    async fn list_alerts(
        &self,
        tenant_id: &str,
        filter: AlertFilter,
        page: PageRequest,
    ) -> ApiResult<Page<AlertView>> {
        let tenant_id = tenant_id.to_owned();
        self.blocking(move |b| b.alerts_page(&tenant_id, &filter, &page))
            .await
    }

    async fn acknowledge_alert(&self, tenant_id: &str, alert_id: &str) -> ApiResult<AlertView> {
        let (tenant_id, alert_id) = (tenant_id.to_owned(), alert_id.to_owned());
        self.durably(move |b| b.acknowledge(&tenant_id, &alert_id))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Each meaning of the internal error keeps the gRPC code and the
    /// message the control plane has always answered with.
    #[test]
    fn internal_errors_keep_their_control_plane_answers() {
        let answer = |e: Error| match api(e) {
            ApiError::InvalidArgument(m) => ("invalid_argument", m),
            ApiError::Unavailable(m) => ("unavailable", m),
            ApiError::Internal(m) => ("internal", m),
            other => ("other", other.to_string()),
        };
        let cases = [
            (
                Error::InvalidArgument("page_token is not valid".into()),
                ("invalid_argument", "page_token is not valid"),
            ),
            (
                Error::config("destination.url", "must be an http:// or https:// URL"),
                (
                    "invalid_argument",
                    "destination.url: must be an http:// or https:// URL",
                ),
            ),
            (
                Error::stopped("durable writer"),
                ("unavailable", "storage: durable writer is not running"),
            ),
            (
                Error::panicked("storage task"),
                ("internal", "storage task panicked"),
            ),
            (
                Error::storage("storage: postgres does not answer", None),
                ("unavailable", "storage: storage: postgres does not answer"),
            ),
            (
                Error::StoragePoisoned,
                (
                    "unavailable",
                    "storage: storage failed earlier and takes no writes until hookd restarts",
                ),
            ),
        ];
        for (error, (code, message)) in cases {
            assert_eq!(answer(error), (code, message.to_owned()));
        }
    }
}
