//! Tenants, secrets and their views for the control plane. Tenants from the
//! config file are read-only here: change them in the file.

use hookd_control::{
    model::{
        CreatedTenant, NewTenant, Page, PageRequest, ProvidedSecret, RateLimit, RotatedSecret,
        SecretInfo, SecretState, TenantPatch, TenantView,
    },
    Error as ApiError, Result as ApiResult,
};
use hookd_proto::domain::{defaults, Scheme};
use hookd_sdk::signature::Secret;
use secrecy::{ExposeSecret, SecretString};

use super::{api, Backend};
use crate::routes::hold::HoldRecord;
use crate::routes::replay::ReplayOrder;
use crate::tenant::TenantSettings;
use crate::{
    catalog::{SecretSet, StoredTenant, TenantRecord},
    config::RateLimitConfig,
    ids::TenantId,
};

/// What a change to a stored tenant touched.
pub(super) enum Changed {
    /// Its settings (an update): in force in place, its dispatcher restarted.
    Settings,
    /// Only its secrets (a rotation, a revocation).
    Secrets,
}

/// Overlap of a rotated secret when the caller gives none: 24 h.
const DEFAULT_OVERLAP_SECS: u64 = 86_400;
/// Concurrency limit when the caller gives none.
const DEFAULT_MAX_IN_FLIGHT: usize = defaults::MAX_IN_FLIGHT as usize;

impl Backend {
    pub(super) fn read_only(&self, tenant_id: &str) -> ApiResult<()> {
        if self.config_tenants.contains(tenant_id) {
            return Err(ApiError::FailedPrecondition(format!(
                "tenant {tenant_id} is declared in the config file; change it there and restart hookd"
            )));
        }
        Ok(())
    }

    pub(super) fn stored(&self, tenant_id: &str) -> ApiResult<(TenantRecord, SecretSet)> {
        self.read_only(tenant_id)?;
        self.catalog
            .get(tenant_id)
            .map_err(api)?
            .ok_or_else(|| ApiError::NotFound(format!("tenant {tenant_id}")))
    }

    /// The settings a stored tenant runs with, or why they are invalid.
    fn settings_of(&self, record: &TenantRecord, secrets: &SecretSet) -> ApiResult<TenantSettings> {
        self.resolver
            .settings(record, secrets)
            .map_err(|e| ApiError::InvalidArgument(api_field_names(&e.to_string())))
    }

    /// Validates, stores (only if its id is free) and starts a new tenant.
    fn apply_new(&self, record: &TenantRecord, secrets: &SecretSet) -> ApiResult<TenantSettings> {
        let settings = self.settings_of(record, secrets)?;
        self.catalog.create(record, secrets).map_err(api)?;
        self.registry.start_tenant(settings.clone()).map_err(api)?;
        Ok(settings)
    }

    /// Validates and persists a stored tenant's new settings (`Settings`)
    /// or secrets (`Secrets`), then has its actor put them in force.
    pub(super) fn apply(
        &self,
        record: &TenantRecord,
        secrets: &SecretSet,
        change: Changed,
    ) -> ApiResult<TenantSettings> {
        let settings = self.settings_of(record, secrets)?;
        self.catalog.put(record, secrets).map_err(api)?;
        let applied = match change {
            Changed::Settings => self.registry.start_tenant(settings.clone()),
            Changed::Secrets => self
                .registry
                .running(settings.id.as_str())
                .and_then(|running| running.rotate(settings.clone())),
        };
        applied.map_err(api)?;
        Ok(settings)
    }

    /// Refuses a destination URL that does not parse or whose literal
    /// address the destination address policy denies; a name is checked
    /// each time it is resolved.
    pub(super) fn check_destination(&self, url: &str) -> ApiResult<()> {
        let parsed = reqwest::Url::parse(url).map_err(|e| {
            ApiError::InvalidArgument(format!("destination_url: {url:?} is not a valid URL: {e}"))
        })?;
        self.resolver
            .address_policy()
            .check_url(&parsed)
            .map_err(|denied| ApiError::InvalidArgument(denied.refusal()))
    }

    pub(super) fn create(&self, new: NewTenant) -> ApiResult<CreatedTenant> {
        if let Some(url) = &new.destination_url {
            self.check_destination(url)?;
        }
        if self.registry.get(&new.tenant_id).is_some()
            || self.catalog.get(&new.tenant_id).map_err(api)?.is_some()
        {
            return Err(ApiError::AlreadyExists(format!(
                "tenant {} already exists",
                new.tenant_id
            )));
        }
        let scheme = new.scheme;
        let provided = new
            .secret
            .map(|secret| provided_secret(scheme, "k1", &secret))
            .transpose()?;
        let now = self.now_ms();
        let id = TenantId::try_from(new.tenant_id.as_str())
            .map_err(|e| ApiError::InvalidArgument(format!("tenant_id: {e}")))?;
        let record = TenantRecord::new(
            StoredTenant {
                hmac: new.hmac,
                tolerance_secs: new.tolerance_secs,
                max_body_bytes: new.max_body_bytes as usize,
                required_fields: new.required_fields,
                event_id_field: new.event_id_field,
                rate_limit: new.rate_limit.map(rate_config),
                destination_url: new.destination_url,
                max_in_flight: in_flight(new.max_in_flight),
                public_url: new.public_url,
                ..StoredTenant::new(id, scheme)
            },
            now,
        );
        let shown = provided.is_none();
        let mut secrets = SecretSet::starting_with(scheme, now, provided)
            .ok_or_else(|| provider_key_needed(scheme))?;
        secrets.verify_token = new.verify_token.map(verify_token);
        let settings = self.apply_new(&record, &secrets)?;
        tracing::info!(tenant = %new.tenant_id, scheme = scheme.as_str(), provided_secret = !shown, "tenant created");
        Ok(CreatedTenant {
            tenant: view_of(&settings, false, now),
            kid: secrets.current.kid.clone(),
            secret: shown_secret(shown, &secrets.current.secret),
            destination_secret: secrets.destination.expose_secret().to_owned(),
        })
    }

    pub(super) fn view(&self, tenant_id: &str) -> ApiResult<TenantView> {
        let handle = self.registry.get(tenant_id).ok_or_else(|| {
            match self.registry.unavailable(tenant_id) {
                Some(reason) => ApiError::FailedPrecondition(format!(
                    "tenant {tenant_id} is stored but cannot run ({reason}); fix it with UpdateTenant or delete it"
                )),
                None => ApiError::NotFound(format!("tenant {tenant_id}")),
            }
        })?;
        let from_config = self.config_tenants.contains(tenant_id);
        let created = match from_config {
            true => 0,
            false => self
                .catalog
                .get(tenant_id)
                .map_err(api)?
                .map_or(0, |(r, _)| r.created_at_ms),
        };
        Ok(view_of(&handle.settings(), from_config, created))
    }

    pub(super) fn list(&self, page: PageRequest) -> ApiResult<Page<TenantView>> {
        let mut ids: Vec<String> = self
            .registry
            .handles()
            .into_iter()
            .map(|h| h.settings().id.to_string())
            .filter(|id| page.token.as_ref().is_none_or(|after| id > after))
            .collect();
        ids.sort();
        let more = ids.len() > page.size as usize;
        ids.truncate(page.size as usize);
        let items = ids
            .iter()
            .map(|id| self.view(id))
            .collect::<ApiResult<Vec<_>>>()?;
        let next_token = more.then(|| ids.last().cloned()).flatten();
        Ok(Page { items, next_token })
    }

    pub(super) fn update(&self, tenant_id: &str, patch: TenantPatch) -> ApiResult<TenantView> {
        let (mut record, mut secrets) = self.stored(tenant_id)?;
        if let Some(token) = patch.verify_token {
            secrets.verify_token = token.map(verify_token);
        }
        let c = &mut record.tenant;
        if let Some(scheme) = patch.scheme {
            c.scheme = scheme;
            if scheme != Scheme::Hmac {
                c.hmac = None;
            }
        }
        if let Some(hmac) = patch.hmac {
            c.hmac = Some(hmac);
        }
        if let Some(tolerance) = patch.tolerance_secs {
            c.tolerance_secs = tolerance;
        }
        if let Some(url) = patch.destination_url {
            if let Some(url) = &url {
                self.check_destination(url)?;
            }
            c.destination_url = url;
        }
        if let Some(enabled) = patch.enabled {
            c.enabled = enabled;
        }
        if let Some(max) = patch.max_body_bytes {
            c.max_body_bytes = max as usize;
        }
        if let Some(fields) = patch.required_fields {
            c.required_fields = fields;
        }
        if patch.rate_limit_per_sec.is_some() || patch.rate_limit_burst.is_some() {
            let current = c.rate_limit.map_or((0.0, 0), |r| (r.per_sec, r.burst));
            let per_sec = patch.rate_limit_per_sec.unwrap_or(current.0);
            let burst = patch.rate_limit_burst.unwrap_or(current.1);
            c.rate_limit = RateLimit::from_api(per_sec, burst).map(rate_config);
        }
        if let Some(max) = patch.max_in_flight {
            c.max_in_flight = in_flight(max);
        }
        if let Some(url) = patch.public_url {
            c.public_url = url;
        }
        let settings = self.apply(&record, &secrets, Changed::Settings)?;
        tracing::info!(tenant = %tenant_id, "tenant updated");
        Ok(view_of(&settings, false, record.created_at_ms))
    }

    /// Needs only the tenant's record, so a tenant whose secrets no longer
    /// open can still be deleted. Its record, secrets and tokens go first,
    /// in one durable transaction with a drop marker naming its routes;
    /// then its data trees and each of its routes',
    /// between the committer's batches; then the marker. A crash in between
    /// is finished at the next start.
    pub(super) async fn delete(&self, tenant_id: &str) -> ApiResult<()> {
        let tenant =
            TenantId::try_from(tenant_id).map_err(|e| ApiError::InvalidArgument(e.to_string()))?;
        let id = tenant_id.to_owned();
        let routes = self
            .durably(move |b| {
                b.read_only(&id)?;
                if !b.catalog.contains(&id).map_err(api)? {
                    return Err(ApiError::NotFound(format!("tenant {id}")));
                }
                let routes = b.catalog.route_names(&id).map_err(api)?;
                b.registry.remove(&id);
                b.catalog.delete(&id).map_err(api)?;
                Ok(routes)
            })
            .await?;
        // Its watches end, and its tokens' sessions and watches with them.
        self.services.feed.close(&tenant);
        self.revoked();
        let scopes = routes.iter().map(|route| tenant.route_scope(route));
        let sinks = crate::alerts::SINK_NAMES.map(|sink| tenant.alert_scope(sink));
        for scope in scopes.chain(sinks).chain(std::iter::once(tenant.clone())) {
            self.services
                .store
                .drop_tenant_trees(&scope)
                .await
                .map_err(api)?;
        }
        let id = tenant_id.to_owned();
        self.durably(move |b| {
            let rejections = b.services.store.rejections().map_err(api)?;
            rejections.drop_tenant(&id).map_err(api)?;
            let rows = b.services.store.catalog_rows().map_err(api)?;
            let mut forgotten = HoldRecord::drop_tenant(&*rows, &id).map_err(api)?;
            forgotten.extend(ReplayOrder::forget(&*rows, &id, None).map_err(api)?);
            rows.apply(&forgotten).map_err(api)?;
            b.alerts.rows().drop_tenant(&id).map_err(api)
        })
        .await?;
        let id = tenant_id.to_owned();
        self.durably(move |b| b.catalog.data_dropped(&id).map_err(api))
            .await?;
        tracing::info!(tenant = %tenant_id, "tenant deleted with all its data");
        Ok(())
    }

    pub(super) fn rotate(
        &self,
        tenant_id: &str,
        overlap_secs: u64,
        provided: Option<ProvidedSecret>,
    ) -> ApiResult<RotatedSecret> {
        let (record, mut secrets) = self.stored(tenant_id)?;
        let now = self.now_ms();
        let overlap = if overlap_secs == 0 {
            DEFAULT_OVERLAP_SECS
        } else {
            overlap_secs
        };
        let previous_kid = secrets.current.kid.clone();
        let scheme = record.tenant.scheme;
        let provided = provided
            .map(|secret| provided_secret(scheme, &previous_kid, &secret))
            .transpose()?;
        let shown = provided.is_none();
        let current = secrets
            .rotate(scheme, now, (overlap as i64).saturating_mul(1000), provided)
            .ok_or_else(|| provider_key_needed(scheme))?;
        self.apply(&record, &secrets, Changed::Secrets)?;
        tracing::info!(tenant = %tenant_id, kid = %current.kid, previous_kid = %previous_kid, overlap_secs = overlap, provided_secret = !shown, "secret rotated");
        Ok(RotatedSecret {
            kid: current.kid,
            secret: shown_secret(shown, &current.secret),
            previous_kid,
            previous_expires_at_ms: now + (overlap as i64).saturating_mul(1000),
        })
    }

    pub(super) fn secrets(&self, tenant_id: &str) -> ApiResult<Vec<SecretInfo>> {
        let (_, mut secrets) = self.stored(tenant_id)?;
        secrets.expire(self.now_ms());
        let info = |e: &crate::catalog::SecretEntry, state| SecretInfo {
            kid: e.kid.clone(),
            state,
            created_at_ms: e.created_at_ms,
            expires_at_ms: e.expires_at_ms,
        };
        Ok(
            std::iter::once(info(&secrets.current, SecretState::Current))
                .chain(
                    secrets
                        .previous
                        .iter()
                        .map(|p| info(p, SecretState::Previous)),
                )
                .collect(),
        )
    }

    pub(super) fn revoke(&self, tenant_id: &str, kid: &str) -> ApiResult<()> {
        let (record, mut secrets) = self.stored(tenant_id)?;
        if secrets.current.kid == kid {
            return Err(ApiError::FailedPrecondition(format!(
                "{kid} is the current secret of {tenant_id}; rotate first, then revoke it"
            )));
        }
        if secrets.previous.as_ref().is_none_or(|p| p.kid != kid) {
            return Err(ApiError::NotFound(format!(
                "secret {kid} of tenant {tenant_id}"
            )));
        }
        secrets.previous = None;
        self.apply(&record, &secrets, Changed::Secrets)?;
        tracing::info!(tenant = %tenant_id, kid = %kid, "secret revoked");
        Ok(())
    }
}

/// A settings error in the API's field names: the config file's
/// `rate_limit.per_sec` is the API's `rate_limit_per_sec`.
fn api_field_names(message: &str) -> String {
    message.replacen("rate_limit.", "rate_limit_", 1)
}

/// A secret the caller supplied, checked for `scheme` the way the tenant
/// will load it (the problem is named, the value never).
fn provided_secret(scheme: Scheme, kid: &str, secret: &ProvidedSecret) -> ApiResult<SecretString> {
    Secret::from_provider(scheme, kid, secret.expose()).map_err(|e| {
        ApiError::InvalidArgument(format!("secret: not a valid {scheme} secret: {e}"))
    })?;
    Ok(SecretString::from(secret.expose().to_owned()))
}

/// What an answer shows of a new current secret: a generated one once; a
/// supplied one never (the caller has it).
fn shown_secret(shown: bool, secret: &SecretString) -> String {
    match shown {
        true => secret.expose_secret().to_owned(),
        false => String::new(),
    }
}

fn rate_config(rate: RateLimit) -> RateLimitConfig {
    RateLimitConfig {
        per_sec: rate.per_sec,
        burst: rate.burst,
    }
}

fn in_flight(max: u32) -> usize {
    if max == 0 {
        DEFAULT_MAX_IN_FLIGHT
    } else {
        max as usize
    }
}

/// What the control plane shows of a running tenant.
pub(super) fn view_of(s: &TenantSettings, from_config: bool, created_at_ms: i64) -> TenantView {
    TenantView {
        tenant_id: s.id.to_string(),
        scheme: s.scheme,
        hmac: s.hmac.as_ref().map(|spec| spec.fields().clone()),
        tolerance_secs: s.tolerance_secs,
        destination_url: s.forward.as_ref().map(|f| f.url.clone()),
        enabled: s.enabled,
        max_body_bytes: s.max_body_bytes as u64,
        required_fields: s.required_fields.clone(),
        from_config,
        max_in_flight: s
            .forward
            .as_ref()
            .map_or(DEFAULT_MAX_IN_FLIGHT, |f| f.max_in_flight) as u32,
        rate_limit: s.rate_limit.map(|r| RateLimit {
            per_sec: r.per_sec,
            burst: r.burst,
        }),
        event_id_field: s.event_id_field.clone(),
        public_url: s.public_url.clone(),
        has_verify_token: s.verify_token.is_some(),
        created_at_ms,
    }
}

/// A verify token as given over the API, kept sealed with the secrets; the
/// tenant's settings then refuse it for any scheme but `meta`.
fn verify_token(token: ProvidedSecret) -> SecretString {
    SecretString::from(token.expose().to_owned())
}

/// The refusal when hookd would have to make a key only the provider holds.
fn provider_key_needed(scheme: Scheme) -> ApiError {
    ApiError::FailedPrecondition(format!(
        "scheme {scheme} verifies with the provider's public key, which hookd cannot generate"
    ))
}
