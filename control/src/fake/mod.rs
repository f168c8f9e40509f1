//! An in-memory [`ControlBackend`] for tests: a few tenants, fixed tokens,
//! deliveries and dead letters the test seeds, an event bus the test feeds,
//! an optional cap on page sizes (to make clients page), and a log of which
//! methods ran so a test can prove a refused call never reached the backend.
//! The one fake control plane: this crate's tests use it, and so do the
//! SDK's and hookctl's, through the `fake` feature and [`FakeServer`].

use std::{
    collections::BTreeMap,
    sync::{
        atomic::{AtomicBool, AtomicU32, Ordering},
        Mutex,
    },
};

use tokio::sync::broadcast;

mod alerts;
mod redeliver;
mod routes;
mod server;

pub use alerts::{alert, ACKNOWLEDGED_AT_MS, GENERATED_SINK_SECRET};
pub use server::FakeServer;

use crate::{
    backend::{ControlBackend, EventStream},
    error::{Error, Result},
    model::{AlertFilter, AlertSettingsView, AlertView, NewAlertSettings, SetAlertSettingsOutcome},
    model::{
        AttemptView, ContractCheck, ContractDef, ContractList, ContractView, CreatedTenant,
        CreatedToken, DeadLetterFilter, DeadLetterView, DeliveryContent, DeliveryEventView,
        DeliveryStatus, DeliveryView, Grant, NewTenant, Page, PageRequest, Pick, Principal,
        ProvidedSecret, PulledDelivery, Redelivered, RejectionFilter, RejectionView, RotatedSecret,
        Scheme, SecretInfo, SecretState, Selection, TenantActivity, TenantPatch, TenantView,
        TokenBinding, TokenInfo,
    },
    model::{NewRoute, RoutePatch, RouteTest, RouteTestResult, RouteView},
};

/// The admin's bearer token.
pub const ADMIN: &str = "admin-token";
/// A bearer token scoped to tenant `acme`.
pub const ACME: &str = "acme-token";

/// The fake backend; see the module documentation.
pub struct FakeBackend {
    tenants: Mutex<BTreeMap<String, TenantView>>,
    deliveries: Mutex<Vec<DeliveryView>>,
    dead_letters: Mutex<Vec<DeadLetterView>>,
    /// (tenant, route) of every route besides the default ones.
    route_names: Mutex<Vec<(String, String)>>,
    selections: Mutex<Vec<Selection>>,
    calls: Mutex<Vec<&'static str>>,
    ready: AtomicBool,
    page_limit: AtomicU32,
    routes: routes::FakeRoutes,
    alerts: alerts::FakeAlerts,
    /// Events sent here reach watchers.
    pub events: broadcast::Sender<DeliveryEventView>,
}

impl Default for FakeBackend {
    fn default() -> Self {
        FakeBackend::new()
    }
}

impl FakeBackend {
    /// Tenants `acme` (pull mode) and `globex` (push mode), no deliveries.
    pub fn new() -> Self {
        let tenants = [
            ("acme", None),
            ("globex", Some("https://globex.test/hooks")),
        ]
        .into_iter()
        .map(|(id, url)| (id.to_owned(), tenant(id, url.map(str::to_owned))))
        .collect();
        FakeBackend {
            tenants: Mutex::new(tenants),
            deliveries: Mutex::new(Vec::new()),
            dead_letters: Mutex::new(Vec::new()),
            route_names: Mutex::new(Vec::new()),
            selections: Mutex::new(Vec::new()),
            calls: Mutex::new(Vec::new()),
            ready: AtomicBool::new(true),
            page_limit: AtomicU32::new(u32::MAX),
            routes: routes::FakeRoutes::default(),
            alerts: alerts::FakeAlerts::default(),
            events: broadcast::channel(4).0,
        }
    }

    /// What `is_ready` answers from now on.
    pub fn set_ready(&self, ready: bool) {
        self.ready.store(ready, Ordering::Relaxed);
    }

    /// Adds tenant `tenant_id` (pull mode without a `destination_url`).
    pub fn add_tenant(&self, tenant_id: &str, destination_url: Option<&str>) {
        let view = tenant(tenant_id, destination_url.map(str::to_owned));
        self.tenants
            .lock()
            .unwrap()
            .insert(tenant_id.to_owned(), view);
    }

    /// Adds a delivery.
    pub fn add_delivery(&self, delivery: DeliveryView) {
        self.deliveries.lock().unwrap().push(delivery);
    }

    /// Adds a dead letter.
    pub fn add_dead_letter(&self, dead: DeadLetterView) {
        self.dead_letters.lock().unwrap().push(dead);
    }

    /// Gives tenant `tenant_id` route `route` besides its default one.
    pub fn add_route(&self, tenant_id: &str, route: &str) {
        self.route_names
            .lock()
            .unwrap()
            .push((tenant_id.to_owned(), route.to_owned()));
    }

    /// Adds an alert (see [`alert`]).
    pub fn add_alert(&self, alert: AlertView) {
        self.alerts.add(alert);
    }

    /// The selections `redeliver` and `purge_dead_letters` were given, in
    /// order.
    pub fn selections(&self) -> Vec<Selection> {
        self.selections.lock().unwrap().clone()
    }

    /// Pages of tenants, dead letters and alerts hold at most `limit` items,
    /// whatever the caller asks for, so a client must follow page tokens.
    pub fn limit_pages(&self, limit: u32) {
        self.page_limit.store(limit.max(1), Ordering::Relaxed);
    }

    fn page_size(&self, page: &PageRequest) -> usize {
        page.size.min(self.page_limit.load(Ordering::Relaxed)) as usize
    }

    /// Backend methods called so far, in order (not `authenticate`).
    pub fn calls(&self) -> Vec<&'static str> {
        self.calls.lock().unwrap().clone()
    }

    fn called(&self, method: &'static str) {
        self.calls.lock().unwrap().push(method);
    }

    fn tenant(&self, tenant_id: &str) -> Result<TenantView> {
        self.tenants
            .lock()
            .unwrap()
            .get(tenant_id)
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("no tenant has the id \"{tenant_id}\"")))
    }
}

/// The secret an answer shows, as hookd does: none when the caller
/// supplied it, else `generated`.
fn shown(supplied: Option<ProvidedSecret>, generated: &str) -> String {
    match supplied {
        Some(_) => String::new(),
        None => generated.to_owned(),
    }
}

/// A tenant as the fake keeps it: Standard Webhooks, enabled, created at a
/// fixed time.
pub fn tenant(tenant_id: &str, destination_url: Option<String>) -> TenantView {
    TenantView {
        tenant_id: tenant_id.into(),
        scheme: Scheme::Standard,
        hmac: None,
        tolerance_secs: 300,
        destination_url,
        enabled: true,
        max_body_bytes: 1 << 20,
        required_fields: vec![],
        from_config: false,
        max_in_flight: 16,
        rate_limit: None,
        event_id_field: None,
        public_url: None,
        has_verify_token: false,
        created_at_ms: 1_700_000_000_000,
    }
}

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
        Ok(RotatedSecret {
            kid: "k2".into(),
            secret: shown(secret, "whsec_bmV3"),
            previous_kid: "k1".into(),
            previous_expires_at_ms: 1_700_000_000_000 + overlap_secs as i64 * 1000,
        })
    }

    async fn list_secrets(&self, tenant_id: &str) -> Result<Vec<SecretInfo>> {
        self.called("list_secrets");
        self.tenant(tenant_id)?;
        Ok(vec![SecretInfo {
            kid: "k1".into(),
            state: SecretState::Current,
            created_at_ms: 1_700_000_000_000,
            expires_at_ms: None,
        }])
    }

    async fn revoke_secret(&self, tenant_id: &str, kid: &str) -> Result<()> {
        self.called("revoke_secret");
        self.tenant(tenant_id)?;
        match kid {
            "k1" => Err(Error::FailedPrecondition(
                "k1 is the current secret; rotate first".into(),
            )),
            _ => Err(Error::NotFound(format!("tenant has no secret \"{kid}\""))),
        }
    }

    async fn create_token(&self, tenant_id: &str, _description: &str) -> Result<CreatedToken> {
        self.called("create_token");
        self.tenant(tenant_id)?;
        Ok(CreatedToken {
            token_id: "tok_1".into(),
            token: "hkt_new".into(),
        })
    }

    async fn list_tokens(&self, _tenant_id: Option<&str>) -> Result<Vec<TokenInfo>> {
        self.called("list_tokens");
        Ok(vec![])
    }

    async fn revoke_token(&self, token_id: &str) -> Result<()> {
        self.called("revoke_token");
        Err(Error::NotFound(format!(
            "no token has the id \"{token_id}\""
        )))
    }

    async fn list_deliveries(
        &self,
        tenant_id: &str,
        route: &str,
        status: Option<DeliveryStatus>,
        page: PageRequest,
    ) -> Result<Page<DeliveryView>> {
        self.called("list_deliveries");
        self.known_route(tenant_id, route)?;
        let items = self
            .deliveries
            .lock()
            .unwrap()
            .iter()
            .filter(|d| d.tenant_id == tenant_id && d.route == route)
            .filter(|d| status.is_none_or(|s| s == d.status))
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
            Pick::Ids(ids) => (ids.clone(), false, false),
            Pick::Matching(m) => {
                let (ids, more) = self.matching(tenant_id, selection.route_or_default(), m);
                (ids, more, m.dry_run)
            }
        };
        if dry_run {
            return Ok(Redelivered::of(&originals, Vec::new(), more));
        }
        self.dead_letters
            .lock()
            .unwrap()
            .retain(|d| d.tenant_id != tenant_id || !originals.contains(&d.delivery_id));
        let new_ids = originals.iter().map(|id| format!("{id}-again")).collect();
        Ok(Redelivered::of(&originals, new_ids, more))
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

    async fn ack(&self, tenant_id: &str, delivery_ids: Vec<String>) -> Result<u32> {
        self.called("ack");
        self.tenant(tenant_id)?;
        Ok(delivery_ids.len() as u32)
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
        self.routes.update(&self.tenant(tenant_id)?, name, patch)
    }

    async fn delete_route(&self, tenant_id: &str, name: &str, _force: bool) -> Result<()> {
        self.called("delete_route");
        self.routes.delete(&self.tenant(tenant_id)?, name)
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
