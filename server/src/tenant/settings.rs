//! A tenant's settings resolved: secrets loaded, contracts, filters and
//! transforms compiled, every route's forwarding checked.

use std::sync::Arc;

use hookd_proto::domain::{Scheme, SecretState};
use hookd_sdk::signature::{HmacSpec, Secret};
use secrecy::{ExposeSecret, SecretString};

use crate::{
    config::{
        bounds, check_public_url, load_secret, Config, EventIdRule, RateLimitConfig, SignedBody,
        TenantConfig,
    },
    contracts::{ConfigContracts, Policy},
    egress::AddressPolicy,
    error::{Error, InvalidSetting, Result},
    ids::TenantId,
    routes::{
        filter::RouteFilter,
        settings::{
            forward_settings, resolve_routes, ForwardSettings, RouteSettings, MAX_DELAY_MS,
        },
    },
};

/// A tenant's settings after validation, with secrets loaded.
#[derive(Debug, Clone)]
pub struct TenantSettings {
    /// The tenant id.
    pub id: TenantId,
    /// Signature scheme.
    pub scheme: Scheme,
    /// The spec `scheme = "hmac"` verifies with; `None` for every other scheme.
    pub hmac: Option<Arc<HmacSpec>>,
    /// Disabled tenants answer 403.
    pub enabled: bool,
    /// Timestamp tolerance in seconds.
    pub tolerance_secs: u64,
    /// Body limit in bytes.
    pub max_body_bytes: usize,
    /// Required body fields besides the event id.
    pub required_fields: Vec<String>,
    /// The `event_id_field` as set, for the control plane's views.
    pub event_id_field: Option<String>,
    /// Where the event id is read: the setting parsed, or the scheme's rule.
    pub event_id: EventIdRule,
    /// The public URL the provider calls, for the schemes that sign it.
    pub public_url: Option<String>,
    /// Meta's verify token, for its subscription handshake.
    pub verify_token: Option<SecretString>,
    /// Which bytes of a compressed body the signature covers.
    pub signed_body: SignedBody,
    /// Optional rate limit.
    pub rate_limit: Option<RateLimitConfig>,
    /// The current secret.
    pub current: Secret,
    /// The previous secret and when it stops being accepted (None = until removed).
    pub previous: Option<(Secret, Option<i64>)>,
    /// Forwarding, when the tenant has a destination (pull mode otherwise).
    pub forward: Option<ForwardSettings>,
    /// How long an unacknowledged delivery is retried (pull mode: pulled).
    pub retry_window_ms: i64,
    /// The contract policy and the config file's contracts, compiled.
    pub contracts: Arc<ConfigContracts>,
    /// Its routes besides the default one.
    pub routes: Vec<RouteSettings>,
    /// The default route's filter (`None`: every event).
    pub filter: Option<RouteFilter>,
    /// How long after acceptance the default route's first attempt is due
    /// (ms; 0: at once).
    pub delay_ms: i64,
}

/// A secret and when it stops being accepted (`None`: until removed).
type Expiring = (Secret, Option<i64>);

impl TenantSettings {
    /// [`resolve`](Self::resolve), with `max_body_bytes` also under the
    /// operator's cap (`limits.tenant_max_body_bytes`): how the config file,
    /// the control plane and the boot of stored tenants all validate.
    pub fn resolve_under(
        config: &TenantConfig,
        body_cap: usize,
    ) -> Result<TenantSettings, InvalidSetting> {
        bounds::check_body_under_cap(body_cap, config.max_body_bytes)?;
        TenantSettings::resolve(config)
    }

    /// Validates tenant `config`, compiles what it runs and loads its
    /// secrets.
    pub fn resolve(config: &TenantConfig) -> Result<TenantSettings, InvalidSetting> {
        let Ok(id) = TenantId::try_from(config.id.as_str()) else {
            return Err(InvalidSetting::new(
                "id",
                "must be 1-64 characters of a-z, 0-9, '-' or '_'",
            ));
        };
        let scheme: Scheme = config
            .scheme
            .parse()
            .map_err(|e| InvalidSetting::new("scheme", e))?;
        let hmac = config.hmac_spec(scheme)?;
        config.check_bounds()?;
        let event_id = EventIdRule::resolve(scheme, config.event_id_field.as_deref())?;
        check_public_url(scheme, config.public_url.as_deref())?;
        if hmac.as_ref().is_some_and(|spec| spec.signs_url()) && config.public_url.is_none() {
            return Err(InvalidSetting::new(
                "public_url",
                "the [hmac] template signs {url}, the URL the provider calls, so the tenant needs its public URL (e.g. https://hooks.example.com/hooks/<tenant>)",
            ));
        }
        let verify_token = verify_token(config, scheme)?;
        let (current, previous) = secrets(config, scheme)?;
        let policy = Policy {
            type_field: config.type_field.clone(),
            version_field: config.version_field.clone(),
            unknown: config.unknown_event_types,
        };
        let contracts = Arc::new(ConfigContracts::compile(policy, &config.contracts)?);
        let forward = forward_settings(&config.forwarding())?;
        let routes = resolve_routes(&id, &config.routes)?;
        if config.delay_ms > MAX_DELAY_MS {
            return Err(InvalidSetting::new(
                "delay_ms",
                format!("at most {MAX_DELAY_MS} (24 h)"),
            ));
        }
        let filter = config
            .filter
            .as_ref()
            .map(RouteFilter::compile)
            .transpose()
            .map_err(|e| InvalidSetting::new(format!("filter{}", e.pointer), e.reason))?;
        Ok(TenantSettings {
            filter,
            id,
            scheme,
            hmac,
            enabled: config.enabled,
            tolerance_secs: config.tolerance_secs,
            max_body_bytes: config.max_body_bytes,
            required_fields: config.required_fields.clone(),
            event_id_field: config.event_id_field.clone(),
            event_id,
            public_url: config.public_url.clone(),
            verify_token,
            signed_body: config.signed_body.unwrap_or_default(),
            rate_limit: config.rate_limit,
            current,
            previous,
            forward,
            retry_window_ms: (config.retry.window_secs * 1000.0).round() as i64,
            contracts,
            routes,
            delay_ms: config.delay_ms as i64,
        })
    }

    /// The URL a delivery with raw query string `query` was sent to, as the
    /// provider called it: the public URL, then `?` and the query when
    /// there is one. `None` without a public URL.
    pub fn delivery_url(&self, query: &str) -> Option<String> {
        let base = self.public_url.as_deref()?;
        Some(match query.is_empty() {
            true => base.to_owned(),
            false => format!("{base}?{query}"),
        })
    }

    /// Puts the destination under `policy`: for tenants whose destination
    /// was set over the control plane (the config file's are trusted).
    pub fn with_address_policy(mut self, policy: &Arc<AddressPolicy>) -> Self {
        let routes = self.routes.iter_mut().filter_map(|r| r.forward.as_mut());
        for forward in self.forward.iter_mut().chain(routes) {
            forward.address_policy = Some(policy.clone());
        }
        self
    }
}

/// Every tenant of the config file resolved, an error naming the tenant's
/// place in the file (`tenants[2] (acme)`) and the key.
pub fn resolve_tenants(config: &Config) -> Result<Vec<TenantSettings>> {
    config
        .tenants
        .iter()
        .enumerate()
        .map(|(i, tenant)| {
            TenantSettings::resolve_under(tenant, config.limits.tenant_max_body_bytes)
                .map_err(|e| Error::from(e.within(format_args!("tenants[{i}] ({})", tenant.id))))
        })
        .collect()
}

/// Loads the secrets of tenant `config`: the current one, required, and the
/// previous one with when it expires, if any.
fn secrets(
    config: &TenantConfig,
    scheme: Scheme,
) -> Result<(Secret, Option<Expiring>), InvalidSetting> {
    let mut current = None;
    let mut previous = None;
    for (i, s) in config.secrets.iter().enumerate() {
        let key = || format!("secrets[{i}] ({})", s.kid);
        let raw = load_secret(
            s.secret.as_ref(),
            s.secret_env.as_deref(),
            s.secret_file.as_deref(),
        )
        .map_err(|e| InvalidSetting::new(key(), e))?;
        let secret = Secret::from_provider(scheme, s.kid.clone(), raw.expose_secret())
            .map_err(|e| InvalidSetting::new(key(), e))?;
        let state = s.state.unwrap_or(if i == 0 {
            SecretState::Current
        } else {
            SecretState::Previous
        });
        let slot = match state {
            SecretState::Current => &mut current,
            SecretState::Previous => &mut previous,
        };
        if slot.is_some() {
            return Err(InvalidSetting::new(
                format!("secrets[{i}]"),
                "at most one current and one previous secret",
            ));
        }
        *slot = Some((secret, s.expires_at));
    }
    let (current, _) =
        current.ok_or_else(|| InvalidSetting::new("secrets", "a current secret is required"))?;
    Ok((current, previous))
}

/// The verify token, read from where it is given; only the `meta`
/// scheme's handshake presents one, so any other scheme is refused one.
fn verify_token(
    config: &TenantConfig,
    scheme: Scheme,
) -> Result<Option<SecretString>, InvalidSetting> {
    let (inline, env, file) = (
        config.verify_token.as_ref(),
        config.verify_token_env.as_deref(),
        config.verify_token_file.as_deref(),
    );
    if inline.is_none() && env.is_none() && file.is_none() {
        return Ok(None);
    }
    if scheme != Scheme::Meta {
        return Err(InvalidSetting::new(
            "verify_token",
            format!("only the meta scheme's handshake presents a verify token, not {scheme}'s"),
        ));
    }
    let token =
        load_secret(inline, env, file).map_err(|e| InvalidSetting::new("verify_token", e))?;
    if token.expose_secret().is_empty() {
        return Err(InvalidSetting::new("verify_token", "must not be empty"));
    }
    Ok(Some(token))
}
