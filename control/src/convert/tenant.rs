//! Tenants, secrets and tokens between `hookd.v1` and the domain, with the
//! defaults the API documents for zero values.

use hookd_proto::v1 as pb;

use super::non_empty;
use crate::{
    error::Error,
    model::{
        CreatedTenant, CreatedToken, HmacFields, NewTenant, ProvidedSecret, RateLimit,
        RotatedSecret, Scheme, SecretInfo, TenantPatch, TenantView, TokenInfo,
    },
    Result,
};

use hookd_proto::domain::defaults::{
    MAX_BODY_BYTES as DEFAULT_MAX_BODY_BYTES, MAX_IN_FLIGHT as DEFAULT_MAX_IN_FLIGHT,
    SCHEME as DEFAULT_SCHEME, TOLERANCE_SECS as DEFAULT_TOLERANCE_SECS,
};
const DEFAULT_OVERLAP_SECS: u64 = 24 * 3600;
const MAX_OVERLAP_SECS: u64 = 30 * 24 * 3600;
const MAX_DESCRIPTION_BYTES: usize = 256;

impl From<TenantView> for pb::Tenant {
    fn from(t: TenantView) -> Self {
        let (rate_limit_per_sec, rate_limit_burst) =
            t.rate_limit.map_or((0.0, 0), |r| (r.per_sec, r.burst));
        pb::Tenant {
            ingest_path: format!("/hooks/{}", t.tenant_id),
            tenant_id: t.tenant_id,
            scheme: t.scheme.as_str().to_owned(),
            tolerance_secs: t.tolerance_secs,
            destination_url: t.destination_url.unwrap_or_default(),
            enabled: t.enabled,
            max_body_bytes: t.max_body_bytes,
            required_fields: t.required_fields,
            from_config: t.from_config,
            max_in_flight: t.max_in_flight,
            rate_limit_per_sec,
            rate_limit_burst,
            event_id_field: t.event_id_field.unwrap_or_default(),
            created_at_unix_ms: t.created_at_ms,
            public_url: t.public_url.unwrap_or_default(),
            hmac: t.hmac.map(pb::HmacSpec::from),
            has_verify_token: t.has_verify_token,
        }
    }
}

impl TryFrom<pb::CreateTenantRequest> for NewTenant {
    type Error = Error;

    fn try_from(r: pb::CreateTenantRequest) -> Result<Self> {
        let rate_limit_per_sec = rate("rate_limit_per_sec", r.rate_limit_per_sec)?;
        if rate_limit_per_sec == 0.0 && r.rate_limit_burst != 0 {
            return Err(Error::InvalidArgument(
                "rate_limit_burst needs a rate_limit_per_sec above 0".into(),
            ));
        }
        Ok(NewTenant {
            tenant_id: super::tenant_id(&r.tenant_id)?,
            scheme: match r.scheme.as_str() {
                "" => DEFAULT_SCHEME,
                name => scheme(name)?,
            },
            hmac: r.hmac.map(HmacFields::from),
            tolerance_secs: or_default(r.tolerance_secs, DEFAULT_TOLERANCE_SECS),
            destination_url: destination_url(r.destination_url)?,
            max_body_bytes: or_default(r.max_body_bytes, DEFAULT_MAX_BODY_BYTES),
            required_fields: required_fields(r.required_fields)?,
            event_id_field: non_empty(r.event_id_field),
            max_in_flight: or_default(r.max_in_flight, DEFAULT_MAX_IN_FLIGHT),
            rate_limit: RateLimit::from_api(rate_limit_per_sec, r.rate_limit_burst),
            public_url: non_empty(r.public_url),
            secret: ProvidedSecret::of(r.secret),
            verify_token: ProvidedSecret::of(r.verify_token),
        })
    }
}

/// Reads only the optional fields; the caller checks `tenant_id`.
impl TryFrom<pb::UpdateTenantRequest> for TenantPatch {
    type Error = Error;

    fn try_from(r: pb::UpdateTenantRequest) -> Result<Self> {
        Ok(TenantPatch {
            scheme: r.scheme.as_deref().map(scheme).transpose()?,
            hmac: r.hmac.map(HmacFields::from),
            tolerance_secs: r
                .tolerance_secs
                .map(|t| or_default(t, DEFAULT_TOLERANCE_SECS)),
            destination_url: r.destination_url.map(destination_url).transpose()?,
            enabled: r.enabled,
            max_body_bytes: r
                .max_body_bytes
                .map(|b| or_default(b, DEFAULT_MAX_BODY_BYTES)),
            required_fields: r
                .required_fields
                .map(|list| required_fields(list.fields))
                .transpose()?,
            rate_limit_per_sec: r
                .rate_limit_per_sec
                .map(|per_sec| rate("rate_limit_per_sec", per_sec))
                .transpose()?,
            rate_limit_burst: r.rate_limit_burst,
            max_in_flight: r
                .max_in_flight
                .map(|n| or_default(n, DEFAULT_MAX_IN_FLIGHT)),
            public_url: r.public_url.map(non_empty),
            verify_token: r.verify_token.map(ProvidedSecret::of),
        })
    }
}

impl From<CreatedTenant> for pb::CreateTenantResponse {
    fn from(c: CreatedTenant) -> Self {
        pb::CreateTenantResponse {
            tenant: Some(c.tenant.into()),
            kid: c.kid,
            secret: c.secret,
            destination_secret: c.destination_secret,
        }
    }
}

impl From<RotatedSecret> for pb::RotateSecretResponse {
    fn from(r: RotatedSecret) -> Self {
        pb::RotateSecretResponse {
            kid: r.kid,
            secret: r.secret,
            previous_kid: r.previous_kid,
            previous_expires_at_unix_ms: r.previous_expires_at_ms,
        }
    }
}

impl From<SecretInfo> for pb::SecretInfo {
    fn from(s: SecretInfo) -> Self {
        pb::SecretInfo {
            kid: s.kid,
            state: s.state.as_str().to_owned(),
            created_at_unix_ms: s.created_at_ms,
            expires_at_unix_ms: s.expires_at_ms.unwrap_or(0),
        }
    }
}

impl From<CreatedToken> for pb::CreateTokenResponse {
    fn from(t: CreatedToken) -> Self {
        pb::CreateTokenResponse {
            token_id: t.token_id,
            token: t.token,
        }
    }
}

impl From<TokenInfo> for pb::TokenInfo {
    fn from(t: TokenInfo) -> Self {
        pb::TokenInfo {
            token_id: t.token_id,
            tenant_id: t.tenant_id,
            description: t.description,
            created_at_unix_ms: t.created_at_ms,
        }
    }
}

/// RotateSecret's overlap: 0 means a day, at most 30 days.
pub(crate) fn overlap_secs(value: u64) -> Result<u64> {
    if value > MAX_OVERLAP_SECS {
        return Err(Error::InvalidArgument(format!(
            "overlap_secs {value} is over the limit of {MAX_OVERLAP_SECS} (30 days)"
        )));
    }
    Ok(or_default(value, DEFAULT_OVERLAP_SECS))
}

/// A token description of at most 256 bytes.
pub(crate) fn token_description(value: String) -> Result<String> {
    if value.len() > MAX_DESCRIPTION_BYTES {
        return Err(Error::InvalidArgument(format!(
            "description is {} bytes; at most {MAX_DESCRIPTION_BYTES} are allowed",
            value.len()
        )));
    }
    Ok(value)
}

fn or_default<T: Default + PartialEq>(value: T, default: T) -> T {
    if value == T::default() {
        default
    } else {
        value
    }
}

fn scheme(name: &str) -> Result<Scheme> {
    Scheme::try_from(name).map_err(|_| {
        let known: Vec<&str> = Scheme::ALL.iter().map(|s| s.as_str()).collect();
        Error::InvalidArgument(format!(
            "scheme {name:?} is unknown; use one of {}",
            known.join(", ")
        ))
    })
}

/// Empty is pull mode; anything else must look like an absolute http(s)
/// URL. The backend may refuse more (it parses the URL for real).
pub(super) fn destination_url(url: String) -> Result<Option<String>> {
    if url.is_empty() {
        return Ok(None);
    }
    if !super::is_absolute_http_url(&url) {
        return Err(Error::InvalidArgument(format!(
            "destination_url {url:?} is not an absolute http(s) URL; leave it empty for pull mode"
        )));
    }
    Ok(Some(url))
}

fn required_fields(fields: Vec<String>) -> Result<Vec<String>> {
    super::ids("required_fields", fields)
}

pub(super) fn rate(field: &str, per_sec: f64) -> Result<f64> {
    if !per_sec.is_finite() || per_sec < 0.0 {
        return Err(Error::InvalidArgument(format!(
            "{field} must be a finite number of deliveries per second, 0 or more"
        )));
    }
    Ok(per_sec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn create_fills_the_documented_defaults() {
        let new = NewTenant::try_from(pb::CreateTenantRequest {
            tenant_id: "acme".into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(new.scheme, Scheme::Standard);
        assert_eq!(new.tolerance_secs, 300);
        assert_eq!(new.max_body_bytes, 1_048_576);
        assert_eq!(new.max_in_flight, 8);
        assert_eq!(new.destination_url, None);
        assert_eq!(new.rate_limit, None);
        assert_eq!((new.public_url, new.secret), (None, None));
    }

    #[test]
    fn a_public_url_and_a_supplied_secret_reach_the_backend() {
        let new = NewTenant::try_from(pb::CreateTenantRequest {
            tenant_id: "acme".into(),
            public_url: "https://hooks.example.com/hooks/acme".into(),
            secret: "pdl_ntfset_1".into(),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(
            new.public_url.as_deref(),
            Some("https://hooks.example.com/hooks/acme")
        );
        assert_eq!(
            new.secret.as_ref().map(|s| s.expose()),
            Some("pdl_ntfset_1")
        );
        let patch = TenantPatch::try_from(pb::UpdateTenantRequest {
            tenant_id: "acme".into(),
            public_url: Some(String::new()),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(patch.public_url, Some(None), "\"\" removes it");
        let untouched = TenantPatch::try_from(pb::UpdateTenantRequest::default()).unwrap();
        assert_eq!(untouched.public_url, None);
    }

    #[test]
    fn create_refuses_what_the_proto_calls_invalid() {
        let base = pb::CreateTenantRequest {
            tenant_id: "acme".into(),
            ..Default::default()
        };
        let cases = [
            (
                "scheme",
                pb::CreateTenantRequest {
                    scheme: "webhookz".into(),
                    ..base.clone()
                },
            ),
            (
                "destination_url",
                pb::CreateTenantRequest {
                    destination_url: "ftp://x".into(),
                    ..base.clone()
                },
            ),
            (
                "destination_url",
                pb::CreateTenantRequest {
                    destination_url: "https://".into(),
                    ..base.clone()
                },
            ),
            (
                "rate_limit_per_sec",
                pb::CreateTenantRequest {
                    rate_limit_per_sec: f64::NAN,
                    ..base.clone()
                },
            ),
            (
                "rate_limit_burst",
                pb::CreateTenantRequest {
                    rate_limit_burst: 5,
                    ..base.clone()
                },
            ),
            (
                "required_fields[1]",
                pb::CreateTenantRequest {
                    required_fields: vec!["type".into(), String::new()],
                    ..base.clone()
                },
            ),
            (
                "tenant_id",
                pb::CreateTenantRequest {
                    tenant_id: String::new(),
                    ..base
                },
            ),
        ];
        for (field, request) in cases {
            match NewTenant::try_from(request) {
                Err(Error::InvalidArgument(message)) => {
                    assert!(message.contains(field), "{message}")
                }
                other => panic!("{field}: expected InvalidArgument, got {other:?}"),
            }
        }
    }

    #[test]
    fn update_tells_unset_from_cleared() {
        let patch = TenantPatch::try_from(pb::UpdateTenantRequest {
            tenant_id: "acme".into(),
            destination_url: Some(String::new()),
            tolerance_secs: Some(0),
            required_fields: Some(pb::RequiredFields { fields: vec![] }),
            ..Default::default()
        })
        .unwrap();
        assert_eq!(patch.destination_url, Some(None));
        assert_eq!(patch.tolerance_secs, Some(300));
        assert_eq!(patch.required_fields, Some(vec![]));
        assert_eq!(patch.scheme, None);
        assert_eq!(patch.enabled, None);
    }

    #[test]
    fn overlap_defaults_to_a_day_and_stops_at_thirty() {
        assert_eq!(overlap_secs(0).unwrap(), 86_400);
        assert_eq!(overlap_secs(60).unwrap(), 60);
        assert!(overlap_secs(2_592_001).is_err());
    }
}
