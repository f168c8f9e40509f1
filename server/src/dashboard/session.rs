//! Dashboard sessions: a random id in an `HttpOnly`, `SameSite=Strict`
//! cookie (`Secure` under TLS) naming a server-side entry that expires after
//! `dashboard.session_idle_secs` without use, and the CSRF token every
//! state-changing form must carry.

use std::{
    future::{ready, Ready},
    sync::Arc,
    time::Duration,
};

use actix_web::{
    cookie::{Cookie, SameSite},
    dev::Payload,
    web, FromRequest, HttpRequest,
};
use hookd_control::model::Principal;
use moka::sync::Cache;
use rand::RngCore;
use subtle::ConstantTimeEq;

use super::{error::DashError, Dashboard};

/// The session cookie.
pub(super) const SESSION_COOKIE: &str = "hookd_session";
/// The sign-in form's CSRF cookie, before there is a session.
pub(super) const SIGN_IN_COOKIE: &str = "hookd_sign_in";
/// The form field every POST carries its CSRF token in.
pub(super) const CSRF_FIELD: &str = "csrf";
/// Most sessions held at once; the least recently used go first.
const MAX_SESSIONS: u64 = 10_000;

/// One signed-in browser.
pub(super) struct Session {
    /// Who signed in.
    pub(super) principal: Principal,
    /// The token its forms carry.
    pub(super) csrf: String,
}

/// Every live session, by id.
#[derive(Clone)]
pub(super) struct Sessions {
    live: Cache<String, Arc<Session>>,
    secure: bool,
}

impl Sessions {
    /// Sessions ending after `idle` without a request; cookies are `Secure`
    /// when `secure` (the dashboard serves TLS).
    pub(super) fn new(idle: Duration, secure: bool) -> Sessions {
        Sessions {
            live: Cache::builder()
                .max_capacity(MAX_SESSIONS)
                .time_to_idle(idle)
                .build(),
            secure,
        }
    }

    /// Starts a session for `principal`; returns its id.
    pub(super) fn open(&self, principal: Principal) -> String {
        let id = random_token();
        let session = Session {
            principal,
            csrf: random_token(),
        };
        self.live.insert(id.clone(), Arc::new(session));
        id
    }

    /// Ends a session at once.
    pub(super) fn close(&self, id: &str) {
        self.live.invalidate(id);
    }

    /// A dashboard cookie with every protection set.
    pub(super) fn cookie(&self, name: &'static str, value: String) -> Cookie<'static> {
        Cookie::build(name, value)
            .path("/")
            .http_only(true)
            .same_site(SameSite::Strict)
            .secure(self.secure)
            .finish()
    }

    /// The cookie that deletes `name` in the browser.
    pub(super) fn removal(&self, name: &'static str) -> Cookie<'static> {
        let mut cookie = self.cookie(name, String::new());
        cookie.make_removal();
        cookie
    }
}

/// 32 random bytes, hex: session ids and CSRF tokens.
pub(super) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A request from a signed-in browser; extracting it from one without a
/// live session sends the browser to the sign-in page.
pub(super) struct Signed {
    /// The session id.
    pub(super) id: String,
    /// The session.
    pub(super) session: Arc<Session>,
}

impl Signed {
    /// Refuses a tenant token looking at another tenant, as the gRPC
    /// services do.
    pub(super) fn may_see(&self, tenant_id: &str) -> Result<(), DashError> {
        if self.session.principal.may_act_on(tenant_id) {
            return Ok(());
        }
        Err(DashError::Forbidden(format!(
            "you signed in with a token of another tenant and may not see tenant \"{tenant_id}\""
        )))
    }

    /// The form in `body`, if it carries this session's CSRF token.
    pub(super) fn form(&self, body: &[u8]) -> Result<PostedForm, DashError> {
        PostedForm::checked(body, &self.session.csrf)
    }
}

impl FromRequest for Signed {
    type Error = DashError;
    type Future = Ready<Result<Signed, DashError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        ready(signed(req))
    }
}

fn signed(req: &HttpRequest) -> Result<Signed, DashError> {
    let dash = req
        .app_data::<web::Data<Dashboard>>()
        .ok_or_else(|| DashError::Internal("dashboard state missing".into()))?;
    let id = req
        .cookie(SESSION_COOKIE)
        .map(|c| c.value().to_owned())
        .ok_or(DashError::SignIn)?;
    let session = dash.sessions.live.get(&id).ok_or(DashError::SignIn)?;
    Ok(Signed { id, session })
}

/// A posted `application/x-www-form-urlencoded` form.
pub(super) struct PostedForm(Vec<(String, String)>);

impl PostedForm {
    /// The form, if its CSRF field equals `expected` (compared in constant
    /// time); otherwise [`DashError::Csrf`].
    pub(super) fn checked(body: &[u8], expected: &str) -> Result<PostedForm, DashError> {
        let form = PostedForm(form_urlencoded::parse(body).into_owned().collect());
        let got = form.get(CSRF_FIELD).unwrap_or_default().as_bytes();
        if expected.is_empty() || !bool::from(got.ct_eq(expected.as_bytes())) {
            return Err(DashError::Csrf);
        }
        Ok(form)
    }

    /// The first value of `key`, trimmed; `None` when missing or blank.
    pub(super) fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.trim())
            .filter(|v| !v.is_empty())
    }

    /// Every non-blank value of `key`, in order.
    pub(super) fn all(&self, key: &str) -> Vec<String> {
        self.0
            .iter()
            .filter(|(k, v)| k == key && !v.trim().is_empty())
            .map(|(_, v)| v.trim().to_owned())
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_form_needs_the_exact_csrf_token() {
        let token = random_token();
        let ok = format!("csrf={token}&ids=a&ids=b&ids=");
        let form = PostedForm::checked(ok.as_bytes(), &token).unwrap();
        assert_eq!(form.all("ids"), ["a", "b"]);
        for bad in ["ids=a", "csrf=&ids=a", "csrf=00"] {
            assert!(
                matches!(
                    PostedForm::checked(bad.as_bytes(), &token),
                    Err(DashError::Csrf)
                ),
                "{bad}"
            );
        }
        assert!(matches!(
            PostedForm::checked(b"csrf=", ""),
            Err(DashError::Csrf)
        ));
    }

    #[test]
    fn session_ids_are_random_and_closing_ends_them() {
        let sessions = Sessions::new(Duration::from_secs(60), false);
        let a = sessions.open(Principal::Admin);
        let b = sessions.open(Principal::Tenant("acme".into()));
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(sessions.live.get(&a).is_some());
        sessions.close(&a);
        assert!(sessions.live.get(&a).is_none());
        let cookie = sessions.cookie(SESSION_COOKIE, b);
        assert_eq!(cookie.http_only(), Some(true));
        assert_eq!(cookie.same_site(), Some(SameSite::Strict));
        assert_eq!(cookie.secure(), Some(false));
        let tls = Sessions::new(Duration::from_secs(60), true);
        assert_eq!(tls.cookie(SESSION_COOKIE, a).secure(), Some(true));
    }

    #[test]
    fn an_idle_session_expires() {
        let sessions = Sessions::new(Duration::from_millis(50), false);
        let id = sessions.open(Principal::Admin);
        assert!(sessions.live.get(&id).is_some());
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        // `contains_key` does not count as use; `get` (a request) would.
        while sessions.live.contains_key(&id) {
            assert!(
                std::time::Instant::now() < deadline,
                "session never expired"
            );
            std::thread::yield_now();
        }
    }
}
