//! Who is calling and what they may touch: the bearer token, checked by the
//! backend, and the rules every service applies to the [`Principal`].

use tonic::Request;

use crate::{
    backend::ControlBackend,
    convert,
    error::Error,
    model::{Grant, Principal},
    Result,
};

const UNAUTHENTICATED: &str = "missing or invalid bearer token";

/// The caller of `request`. A missing or malformed `authorization` header,
/// and a token the backend does not know, all answer the same
/// UNAUTHENTICATED so the answer does not tell which.
pub(crate) fn authenticate<B: ControlBackend, T>(
    backend: &B,
    request: &Request<T>,
) -> Result<Principal> {
    grant(backend, request).map(|grant| grant.principal)
}

/// [`authenticate`], keeping which token it was, for a call that outlives
/// the check (a watch) and must ask again.
///
/// Who is calling and what they may touch: the bearer token from the
/// `authorization` metadata, checked by the backend, and the rules every
/// service applies to the resulting [`Principal`].
pub(crate) fn grant<B: ControlBackend, T>(backend: &B, request: &Request<T>) -> Result<Grant> {
    request
        .metadata()
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .and_then(bearer_token)
        .and_then(|token| backend.authenticate(token))
        .ok_or_else(|| Error::Unauthenticated(UNAUTHENTICATED.into()))
}

/// The token of an `authorization` value: `Bearer <token>`, the scheme in
/// any case (RFC 9110), the token not empty.
fn bearer_token(value: &str) -> Option<&str> {
    let (scheme, token) = value.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Refuses tenant-scoped tokens: tenant lifecycle and tokens are the
/// operator's business.
pub(crate) fn require_admin(principal: &Principal) -> Result<()> {
    match principal {
        Principal::Admin => Ok(()),
        Principal::Tenant(own) => Err(Error::PermissionDenied(format!(
            "this call needs the admin token; the token used is scoped to tenant \"{own}\""
        ))),
    }
}

/// Refuses a tenant-scoped token naming another tenant.
pub(crate) fn require_tenant(principal: &Principal, tenant_id: &str) -> Result<()> {
    if principal.may_act_on(tenant_id) {
        return Ok(());
    }
    Err(Error::PermissionDenied(format!(
        "the token used may not act on tenant \"{tenant_id}\""
    )))
}

/// The usual preamble of a tenant-scoped call: authenticate, check that
/// `tenant_id` is well formed, then that the caller may act on it. Returns
/// the tenant id, owned, for the backend call.
pub(crate) fn authorize_tenant<B: ControlBackend, T>(
    backend: &B,
    request: &Request<T>,
    tenant_id: &str,
) -> Result<String> {
    let principal = authenticate(backend, request)?;
    let tenant_id = convert::tenant_id(tenant_id)?;
    require_tenant(&principal, &tenant_id)?;
    Ok(tenant_id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bearer_scheme_is_case_insensitive_and_token_required() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer  abc "), Some("abc"));
        assert_eq!(bearer_token("Bearer "), None);
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("abc"), None);
    }

    #[test]
    fn tenant_tokens_stay_in_their_tenant() {
        let acme = Principal::Tenant("acme".into());
        assert!(require_tenant(&acme, "acme").is_ok());
        match require_tenant(&acme, "globex") {
            Err(Error::PermissionDenied(message)) => assert!(message.contains("globex")),
            other => panic!("expected PermissionDenied, got {other:?}"),
        }
        assert!(require_admin(&acme).is_err());
        assert!(require_admin(&Principal::Admin).is_ok());
        assert!(require_tenant(&Principal::Admin, "globex").is_ok());
    }
}
