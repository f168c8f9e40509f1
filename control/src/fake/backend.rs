//! What the fake answers as a [`ControlBackend`], each call logged in
//! [`FakeBackend::calls`].

use std::sync::atomic::Ordering;

use super::redeliver::{is_pending, is_waiting};
use super::{shown, tenant, FakeBackend, ACME, ADMIN};
use crate::{
    backend::{ControlBackend, EventStream},
    error::{Error, Result},
    model::{AlertFilter, AlertSettingsView, AlertView, NewAlertSettings, SetAlertSettingsOutcome},
    model::{
        AttemptView, Cancel, ContractCheck, ContractDef, ContractList, ContractView, CreatedTenant,
        CreatedToken, DeadLetterFilter, DeadLetterView, DeliveryContent, DeliveryQuery,
        DeliveryView, Grant, Matched, NewTenant, Page, PageRequest, Pick, Principal,
        ProvidedSecret, PulledDelivery, Redelivered, RejectionFilter, RejectionView, RetryNow,
        RotatedSecret, SecretInfo, Selection, TenantActivity, TenantPatch, TenantView,
        TokenBinding, TokenInfo, Waiting,
    },
    model::{
        MetricsQuery, NewRoute, RouteMetricsView, RoutePatch, RouteTest, RouteTestResult,
        RouteView, DEFAULT_ROUTE, MAX_SEARCH_RESULTS,
    },
    model::{NewReplay, ReplayAction, ReplayStarted, ReplayView},
};

/// What the fake answers as a [`ControlBackend`]: tenants, secrets and
/// tokens, deliveries and dead letters, pulls, contracts, routes and alerts,
/// each call logged in [`FakeBackend::calls`].
#[tonic::async_trait]
impl ControlBackend for FakeBackend {
    fn is_ready(&self) -> bool {
        self.ready.load(Ordering::Relaxed)
    }

    fn authenticate(&self, bearer_token: &str) -> Option<Grant> {
        match bearer_token {
            ADMIN => Some(Grant::admin()),
            ACME => Some(Grant {
                principal: Principal::Tenant("acme".into()),
                binding: Some(TokenBinding {
                    token_id: "tok_acme".into(),
                    tenant_incarnation: "fake".into(),
                }),
            }),
            _ => None,
        }
    }

    async fn still_valid(&self, _grant: &Grant) -> bool {
        true
    }

    async fn create_tenant(&self, new: NewTenant) -> Result<CreatedTenant> {
        self.called("create_tenant");
        let mut tenants = self.tenants.lock().unwrap();
        if tenants.contains_key(&new.tenant_id) {
            return Err(Error::AlreadyExists(format!(
                "tenant \"{}\" already exists",
                new.tenant_id
            )));
        }
        let view = TenantView {
            public_url: new.public_url,
            has_verify_token: new.verify_token.is_some(),
            ..tenant(&new.tenant_id, new.destination_url)
        };
        tenants.insert(new.tenant_id.clone(), view.clone());
        self.keys.forget(&new.tenant_id);
        let secret = shown(new.secret, "whsec_c2VjcmV0");
        Ok(CreatedTenant {
            tenant: view,
            kid: "k1".into(),
            secret,
            destination_secret: "whsec_ZGVzdA==".into(),
        })
    }

    async fn get_tenant(&self, tenant_id: &str) -> Result<TenantView> {
        self.called("get_tenant");
        self.tenant(tenant_id)
    }

    async fn list_tenants(&self, page: PageRequest) -> Result<Page<TenantView>> {
        self.called("list_tenants");
        let size = self.page_size(&page);
        let tenants = self.tenants.lock().unwrap();
        let after = page.token.unwrap_or_default();
        let mut items: Vec<TenantView> = tenants
            .values()
            .filter(|t| t.tenant_id > after)
            .take(size + 1)
            .cloned()
            .collect();
        let next_token = (items.len() > size).then(|| {
            items.truncate(size);
            items
                .last()
                .map(|t| t.tenant_id.clone())
                .unwrap_or_default()
        });
        Ok(Page { items, next_token })
    }

    async fn update_tenant(&self, tenant_id: &str, patch: TenantPatch) -> Result<TenantView> {
        self.called("update_tenant");
        let mut view = self.tenant(tenant_id)?;
        if let Some(enabled) = patch.enabled {
            view.enabled = enabled;
        }
        if let Some(url) = patch.destination_url {
            view.destination_url = url;
        }
        if let Some(url) = patch.public_url {
            view.public_url = url;
        }
        if let Some(token) = patch.verify_token {
            view.has_verify_token = token.is_some();
        }
        self.tenants
            .lock()
            .unwrap()
            .insert(tenant_id.into(), view.clone());
        Ok(view)
    }

    async fn delete_tenant(&self, tenant_id: &str) -> Result<()> {
        self.called("delete_tenant");
        self.tenant(tenant_id)?;
        self.tenants.lock().unwrap().remove(tenant_id);
        self.keys.forget(tenant_id);
        Ok(())
    }

    async fn rotate_secret(
        &self,
        tenant_id: &str,
        overlap_secs: u64,
        secret: Option<ProvidedSecret>,
    ) -> Result<RotatedSecret> {
        self.called("rotate_secret");
        self.tenant(tenant_id)?;
        let (kid, previous_kid, previous_expires_at_ms) = self.keys.rotate(tenant_id, overlap_secs);
        Ok(RotatedSecret {
            kid,
            secret: shown(secret, "whsec_bmV3"),
            previous_kid,
            previous_expires_at_ms,
        })
    }

    async fn list_secrets(&self, tenant_id: &str) -> Result<Vec<SecretInfo>> {
        self.called("list_secrets");
        self.tenant(tenant_id)?;
        Ok(self.keys.secrets(tenant_id))
    }

    async fn revoke_secret(&self, tenant_id: &str, kid: &str) -> Result<()> {
        self.called("revoke_secret");
        self.tenant(tenant_id)?;
        self.keys.revoke(tenant_id, kid)
    }

    async fn create_token(&self, tenant_id: &str, description: &str) -> Result<CreatedToken> {
        self.called("create_token");
        self.tenant(tenant_id)?;
        Ok(self.keys.issue(tenant_id, description))
    }

    async fn list_tokens(&self, tenant_id: Option<&str>) -> Result<Vec<TokenInfo>> {
        self.called("list_tokens");
        Ok(self.keys.tokens(tenant_id))
    }

    async fn revoke_token(&self, token_id: &str) -> Result<()> {
        self.called("revoke_token");
        self.keys.revoke_token(token_id)
    }

    async fn list_deliveries(
        &self,
        tenant_id: &str,
        query: DeliveryQuery,
        page: PageRequest,
    ) -> Result<Page<DeliveryView>> {
        self.called("list_deliveries");
        self.known_route(tenant_id, &query.route)?;
        let items = self
            .deliveries
            .lock()
            .unwrap()
            .iter()
            .filter(|d| d.tenant_id == tenant_id && d.route == query.route)
            .filter(|d| query.status.is_none_or(|s| s == d.status))
            .filter(|d| query.event_id.as_ref().is_none_or(|e| *e == d.event_id))
            .filter(|d| query.since_ms.is_none_or(|t| d.received_at_ms >= t))
            .filter(|d| query.until_ms.is_none_or(|t| d.received_at_ms < t))
            .take(page.size as usize)
            .map(|d| DeliveryView {
                attempts: vec![],
                ..d.clone()
            })
            .collect();
        Ok(Page {
            items,
            next_token: None,
        })
    }

    async fn search_deliveries(
        &self,
        tenant_id: Option<&str>,
        id: &str,
    ) -> Result<Vec<DeliveryView>> {
        self.called("search_deliveries");
        Ok(self
            .deliveries
            .lock()
            .unwrap()
            .iter()
            .filter(|d| tenant_id.is_none_or(|t| t == d.tenant_id))
            .filter(|d| d.delivery_id == id || d.event_id == id)
            .take(MAX_SEARCH_RESULTS)
            .map(|d| DeliveryView {
                attempts: vec![],
                ..d.clone()
            })
            .collect())
    }

    async fn get_delivery(&self, tenant_id: &str, delivery_id: &str) -> Result<DeliveryView> {
        self.called("get_delivery");
        self.tenant(tenant_id)?;
        self.deliveries
            .lock()
            .unwrap()
            .iter()
            .find(|d| d.tenant_id == tenant_id && d.delivery_id == delivery_id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("no delivery has the id \"{delivery_id}\"")))
    }

    async fn get_delivery_content(
        &self,
        tenant_id: &str,
        delivery_id: &str,
    ) -> Result<DeliveryContent> {
        self.called("get_delivery_content");
        let delivery = self.get_delivery(tenant_id, delivery_id).await?;
        Ok(DeliveryContent {
            request_id: "req_fake".into(),
            headers: vec![("content-type".into(), "application/json".into())],
            body: format!(r#"{{"event_id":"{}"}}"#, delivery.event_id).into_bytes(),
            event_type: None,
        })
    }

    async fn redirect(
        &self,
        _by: &Principal,
        tenant_id: &str,
        delivery_id: &str,
        url: &str,
    ) -> Result<AttemptView> {
        self.called("redirect");
        self.get_delivery(tenant_id, delivery_id).await?;
        Err(Error::FailedPrecondition(format!(
            "the fake backend sends nothing (to {url})"
        )))
    }

    async fn tenant_activity(&self, tenant_id: &str) -> Result<TenantActivity> {
        self.called("tenant_activity");
        self.tenant(tenant_id)?;
        Ok(TenantActivity::default())
    }

    async fn list_rejections(
        &self,
        tenant_id: &str,
        _filter: RejectionFilter,
        _page: PageRequest,
    ) -> Result<Page<RejectionView>> {
        self.called("list_rejections");
        self.tenant(tenant_id)?;
        Ok(Page {
            items: Vec::new(),
            next_token: None,
        })
    }

    async fn list_dead_letters(
        &self,
        tenant_id: &str,
        route: &str,
        filter: DeadLetterFilter,
        page: PageRequest,
    ) -> Result<Page<DeadLetterView>> {
        self.called("list_dead_letters");
        self.known_route(tenant_id, route)?;
        let size = self.page_size(&page);
        let start: usize = match page.token.as_deref() {
            None => 0,
            Some(token) => token
                .parse()
                .map_err(|_| Error::InvalidArgument("page_token: not one of mine".into()))?,
        };
        let matching: Vec<DeadLetterView> = self
            .dead_letters
            .lock()
            .unwrap()
            .iter()
            .filter(|d| d.tenant_id == tenant_id && d.route == route)
            .filter(|d| filter.matches(d.dead_at_ms, &d.reason))
            .cloned()
            .collect();
        let end = (start + size).min(matching.len());
        Ok(Page {
            items: matching.get(start..end).unwrap_or_default().to_vec(),
            next_token: (end < matching.len()).then(|| end.to_string()),
        })
    }

    async fn redeliver(&self, tenant_id: &str, selection: Selection) -> Result<Redelivered> {
        self.called("redeliver");
        self.known_route(tenant_id, selection.route_or_default())?;
        self.selections.lock().unwrap().push(selection.clone());
        let (originals, more, dry_run) = match &selection.pick {
            Pick::Ids(ids) => (self.redeliverable(tenant_id, ids)?, false, false),
            Pick::Matching(m) => {
                let (ids, more) = self.matching(tenant_id, selection.route_or_default(), m);
                (ids, more, m.dry_run)
            }
        };
        if dry_run {
            return Ok(Redelivered::of(&originals, Vec::new(), more));
        }
        let new_ids = self.redelivered(tenant_id, &originals);
        Ok(Redelivered::of(&originals, new_ids, more))
    }

    async fn retry_now(&self, tenant_id: &str, request: RetryNow) -> Result<Matched> {
        self.called("retry_now");
        let route = request.route.as_deref();
        if let Some(route) = route {
            self.known_route(tenant_id, route)?;
        }
        let (ids, dry_run) = match request.pick {
            Waiting::Ids(ids) => (
                self.waiting_ids(tenant_id, route, (&ids, is_waiting))?,
                false,
            ),
            Waiting::All { dry_run, filter } => (
                self.waiting_on(
                    tenant_id,
                    route.unwrap_or(DEFAULT_ROUTE),
                    (&filter, is_waiting),
                ),
                dry_run,
            ),
        };
        if !dry_run {
            self.made_due(tenant_id, &ids);
        }
        Ok(Matched::of(&ids, false))
    }

    async fn cancel_deliveries(&self, tenant_id: &str, request: Cancel) -> Result<Matched> {
        self.called("cancel_deliveries");
        let route = request.route.as_deref();
        if let Some(route) = route {
            self.known_route(tenant_id, route)?;
        }
        let (ids, dry_run) = match request.pick {
            Waiting::Ids(ids) => (
                self.waiting_ids(tenant_id, route, (&ids, is_pending))?,
                false,
            ),
            Waiting::All { dry_run, filter } => (
                self.waiting_on(
                    tenant_id,
                    route.unwrap_or(DEFAULT_ROUTE),
                    (&filter, is_pending),
                ),
                dry_run,
            ),
        };
        if !dry_run {
            self.cancelled(tenant_id, &ids);
        }
        Ok(Matched::of(&ids, false))
    }

    async fn purge_dead_letters(&self, tenant_id: &str, selection: Selection) -> Result<u64> {
        self.called("purge_dead_letters");
        self.known_route(tenant_id, selection.route_or_default())?;
        self.selections.lock().unwrap().push(selection.clone());
        Ok(match selection.pick {
            Pick::Ids(ids) => ids.len() as u64,
            Pick::Matching(_) => 0,
        })
    }

    async fn watch(&self, _grant: &Grant, tenant_id: Option<&str>) -> Result<EventStream> {
        self.called("watch");
        if let Some(id) = tenant_id {
            self.tenant(id)?;
        }
        Ok(crate::watch::from_broadcast(
            self.events.subscribe(),
            Some,
            crate::watch::Ends::never(),
        ))
    }

    async fn pull(
        &self,
        tenant_id: &str,
        _max: u32,
        _visibility: u32,
    ) -> Result<Vec<PulledDelivery>> {
        self.called("pull");
        if self.tenant(tenant_id)?.destination_url.is_some() {
            return Err(Error::FailedPrecondition(format!(
                "tenant \"{tenant_id}\" has a destination_url; hookd forwards its deliveries"
            )));
        }
        Ok(vec![])
    }

    /// Acks nothing: the fake hands out no pulled deliveries, and hookd
    /// skips ids that are not pulled ones.
    async fn ack(&self, tenant_id: &str, _delivery_ids: Vec<String>) -> Result<u32> {
        self.called("ack");
        self.tenant(tenant_id)?;
        Ok(0)
    }

    async fn nack(&self, tenant_id: &str, _delivery_ids: Vec<String>) -> Result<()> {
        self.called("nack");
        self.tenant(tenant_id)?;
        Ok(())
    }

    async fn put_contract(&self, tenant_id: &str, contract: ContractDef) -> Result<ContractView> {
        self.called("put_contract");
        self.tenant(tenant_id)?;
        Ok(ContractView {
            contract,
            revision: 1,
            updated_at_ms: 1_700_000_000_000,
            from_config: false,
            required_fields: vec![],
        })
    }

    async fn get_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        _version: Option<&str>,
    ) -> Result<ContractView> {
        self.called("get_contract");
        self.tenant(tenant_id)?;
        Err(Error::NotFound(format!("no contract for {event_type:?}")))
    }

    async fn list_contracts(&self, tenant_id: &str) -> Result<ContractList> {
        self.called("list_contracts");
        self.tenant(tenant_id)?;
        Ok(ContractList {
            contracts: vec![],
            type_field: "type".into(),
            version_field: "version".into(),
            unknown_event_types: "accept".into(),
        })
    }

    async fn delete_contract(
        &self,
        tenant_id: &str,
        event_type: &str,
        _version: Option<&str>,
    ) -> Result<()> {
        self.called("delete_contract");
        self.tenant(tenant_id)?;
        Err(Error::NotFound(format!("no contract for {event_type:?}")))
    }

    async fn validate_payload(&self, tenant_id: &str, _payload: Vec<u8>) -> Result<ContractCheck> {
        self.called("validate_payload");
        self.tenant(tenant_id)?;
        Ok(ContractCheck::default())
    }

    async fn list_routes(&self, tenant_id: &str) -> Result<Vec<RouteView>> {
        self.called("list_routes");
        Ok(self.routes.list(&self.tenant(tenant_id)?))
    }

    async fn get_route(&self, tenant_id: &str, name: &str) -> Result<RouteView> {
        self.called("get_route");
        self.routes.get(&self.tenant(tenant_id)?, name)
    }

    async fn create_route(&self, tenant_id: &str, route: NewRoute) -> Result<RouteView> {
        self.called("create_route");
        self.routes.create(&self.tenant(tenant_id)?, route)
    }

    async fn update_route(
        &self,
        tenant_id: &str,
        name: &str,
        patch: RoutePatch,
    ) -> Result<RouteView> {
        self.called("update_route");
        let route = self.routes.update(&self.tenant(tenant_id)?, name, patch)?;
        if name == DEFAULT_ROUTE {
            self.keep_default_route(&route);
        }
        Ok(route)
    }

    async fn delete_route(&self, tenant_id: &str, name: &str, _force: bool) -> Result<()> {
        self.called("delete_route");
        self.routes.delete(&self.tenant(tenant_id)?, name)
    }

    async fn route_metrics(
        &self,
        tenant_id: &str,
        name: &str,
        query: MetricsQuery,
    ) -> Result<RouteMetricsView> {
        self.called("route_metrics");
        self.routes.metrics(&self.tenant(tenant_id)?, name, query)
    }

    async fn replay_to_route(&self, tenant_id: &str, request: NewReplay) -> Result<ReplayStarted> {
        self.called("replay_to_route");
        let tenant = self.tenant(tenant_id)?;
        self.routes.get(&tenant, &request.route)?;
        let deliveries = self.deliveries.lock().unwrap().clone();
        self.replays.start(tenant_id, request, &deliveries)
    }

    async fn replay(&self, tenant_id: &str, replay_id: &str) -> Result<ReplayView> {
        self.called("replay");
        self.tenant(tenant_id)?;
        self.replays.get(tenant_id, replay_id)
    }

    async fn replays(&self, tenant_id: &str, route: Option<&str>) -> Result<Vec<ReplayView>> {
        self.called("replays");
        self.tenant(tenant_id)?;
        Ok(self.replays.list(tenant_id, route))
    }

    async fn act_on_replay(
        &self,
        tenant_id: &str,
        replay_id: &str,
        action: ReplayAction,
    ) -> Result<ReplayView> {
        self.called("act_on_replay");
        self.tenant(tenant_id)?;
        self.replays.act(tenant_id, replay_id, action)
    }

    async fn pause_route(&self, tenant_id: &str, name: &str) -> Result<RouteView> {
        self.called("pause_route");
        self.routes.hold(&self.tenant(tenant_id)?, name, None)
    }

    async fn resume_route(&self, tenant_id: &str, name: &str, ramp_secs: u32) -> Result<RouteView> {
        self.called("resume_route");
        self.routes
            .hold(&self.tenant(tenant_id)?, name, Some(ramp_secs))
    }

    async fn test_route(&self, tenant_id: &str, test: RouteTest) -> Result<RouteTestResult> {
        self.called("test_route");
        Ok(self.routes.test(&self.tenant(tenant_id)?, test))
    }

    async fn get_alert_settings(&self, tenant_id: &str) -> Result<AlertSettingsView> {
        self.called("get_alert_settings");
        Ok(self.alerts.settings(&self.tenant(tenant_id)?))
    }

    async fn set_alert_settings(
        &self,
        tenant_id: &str,
        settings: NewAlertSettings,
    ) -> Result<SetAlertSettingsOutcome> {
        self.called("set_alert_settings");
        let (settings, generated_secret) = self.alerts.set(&self.tenant(tenant_id)?, settings)?;
        Ok(SetAlertSettingsOutcome {
            settings,
            generated_secret,
        })
    }

    async fn list_alerts(
        &self,
        tenant_id: &str,
        filter: AlertFilter,
        page: PageRequest,
    ) -> Result<Page<AlertView>> {
        self.called("list_alerts");
        self.tenant(tenant_id)?;
        let size = self.page_size(&page);
        self.alerts
            .list(tenant_id, &filter, page.token.as_deref(), size)
    }

    async fn acknowledge_alert(&self, tenant_id: &str, alert_id: &str) -> Result<AlertView> {
        self.called("acknowledge_alert");
        self.tenant(tenant_id)?;
        self.alerts.acknowledge(tenant_id, alert_id)
    }
}
