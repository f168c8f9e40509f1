//! Dashboard sessions: a random id in a cookie naming a server-side entry
//! bound to the token it signed in with.

use std::sync::{
    atomic::{AtomicUsize, Ordering},
    Arc,
};

use actix_web::{
    cookie::{Cookie, SameSite},
    dev::Payload,
    web, FromRequest, HttpRequest,
};
use futures_util::future::LocalBoxFuture;
use hookd_control::model::{Grant, Principal};
use moka::sync::Cache;
use rand::RngCore;
use subtle::ConstantTimeEq;

use super::{
    csrf::{SignInKey, CSRF_FIELD},
    error::DashError,
    Dashboard,
};
use crate::clock::SharedClock;

/// The session cookie.
pub(super) const SESSION_COOKIE: &str = "hookd_session";
/// The sign-in form's CSRF cookie, before there is a session.
pub(super) const SIGN_IN_COOKIE: &str = "hookd_sign_in";
/// Most sessions held at once; the least recently used go first.
const MAX_SESSIONS: u64 = 10_000;

/// One signed-in browser.
pub(super) struct Session {
    /// The token it signed in with, as the backend found it.
    grant: Grant,
    /// The token its forms carry.
    pub(super) csrf: String,
    /// When it signed in, on the server's clock (Unix ms).
    opened_at_ms: i64,
    /// Live tails it holds open.
    tails: Arc<AtomicUsize>,
}

impl Session {
    /// Who signed in.
    pub(super) fn principal(&self) -> &Principal {
        &self.grant.principal
    }

    /// The token it signed in with.
    pub(super) fn grant(&self) -> &Grant {
        &self.grant
    }

    /// Its count of open live tails.
    pub(super) fn tails(&self) -> &Arc<AtomicUsize> {
        &self.tails
    }
}

/// How long sessions live and how their cookies are set.
pub(super) struct SessionRules {
    /// Ends after this long without a request.
    pub(super) idle: std::time::Duration,
    /// Ends this long after sign-in, on the server's clock (ms).
    pub(super) max_age_ms: i64,
    /// Cookies are `Secure` (the dashboard serves TLS).
    pub(super) secure: bool,
}

/// Every live session, by id.
///
/// Dashboard sessions: a random id in an `HttpOnly`, `SameSite=Strict`
/// cookie (`Secure` under TLS) naming a server-side entry bound to the
/// token it signed in with (and, for a tenant token, to the incarnation of
/// its tenant). Every request checks that the token still holds and that
/// the session is younger than `dashboard.session_max_secs`; a session also
/// ends after `dashboard.session_idle_secs` without use. Each session
/// carries the CSRF token its state-changing forms must send, and counts
/// the live tails it holds open.
#[derive(Clone)]
pub(super) struct Sessions {
    live: Cache<String, Arc<Session>>,
    secure: bool,
    max_age_ms: i64,
    clock: SharedClock,
    sign_in: Arc<SignInKey>,
}

impl Sessions {
    /// Sessions under `rules`, aged on `clock`.
    pub(super) fn new(rules: SessionRules, clock: SharedClock) -> Sessions {
        Sessions {
            live: Cache::builder()
                .max_capacity(MAX_SESSIONS)
                .time_to_idle(rules.idle)
                .build(),
            secure: rules.secure,
            max_age_ms: rules.max_age_ms,
            clock,
            sign_in: Arc::new(SignInKey::random()),
        }
    }

    /// Starts a session for `grant`; returns its id.
    pub(super) fn open(&self, grant: Grant) -> String {
        let id = random_token();
        let session = Session {
            grant,
            csrf: random_token(),
            opened_at_ms: self.clock.now_ms(),
            tails: Arc::default(),
        };
        self.live.insert(id.clone(), Arc::new(session));
        id
    }

    /// Ends a session at once.
    pub(super) fn close(&self, id: &str) {
        self.live.invalidate(id);
    }

    /// The live session `id`, if it is younger than its absolute lifetime.
    fn get(&self, id: &str) -> Option<Arc<Session>> {
        let session = self.live.get(id)?;
        if self.clock.now_ms() - session.opened_at_ms > self.max_age_ms {
            self.close(id);
            return None;
        }
        Some(session)
    }

    /// A new sign-in form token (see [`super::csrf`]).
    pub(super) fn sign_in_token(&self) -> String {
        self.sign_in.issue(self.clock.now_ms())
    }

    /// Whether `token` is a sign-in form token this server issued lately.
    pub(super) fn sign_in_token_valid(&self, token: &str) -> bool {
        self.sign_in.verify(token, self.clock.now_ms())
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

/// A place in a count capped at some number; dropping it gives it back.
pub(super) struct Place(Arc<AtomicUsize>);

impl Place {
    /// A place in `count` if it holds fewer than `cap`.
    pub(super) fn take(count: &Arc<AtomicUsize>, cap: usize) -> Option<Place> {
        count
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < cap).then_some(n + 1)
            })
            .ok()
            .map(|_| Place(Arc::clone(count)))
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// 32 random bytes, hex: session ids and CSRF tokens.
pub(super) fn random_token() -> String {
    let mut bytes = [0u8; 32];
    rand::rng().fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// A request from a signed-in browser; extracting it from one without a
/// live session, or whose token was revoked since, ends that session and
/// sends the browser to the sign-in page.
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
        if self.session.principal().may_act_on(tenant_id) {
            return Ok(());
        }
        Err(DashError::Forbidden(format!(
            "you signed in with a token of another tenant and may not see tenant \"{tenant_id}\""
        )))
    }

    /// The token this session's forms carry.
    pub(super) fn csrf(&self) -> &str {
        &self.session.csrf
    }

    /// The form in `body`, if it carries this session's CSRF token.
    pub(super) fn form(&self, body: &[u8]) -> Result<PostedForm, DashError> {
        PostedForm::checked(body, &self.session.csrf)
    }
}

impl FromRequest for Signed {
    type Error = DashError;
    type Future = LocalBoxFuture<'static, Result<Signed, DashError>>;

    fn from_request(req: &HttpRequest, _: &mut Payload) -> Self::Future {
        let req = req.clone();
        Box::pin(async move { signed(&req).await })
    }
}

async fn signed(req: &HttpRequest) -> Result<Signed, DashError> {
    let dash = req
        .app_data::<web::Data<Dashboard>>()
        .ok_or_else(|| DashError::Internal("dashboard state missing".into()))?
        .clone();
    let id = req
        .cookie(SESSION_COOKIE)
        .map(|c| c.value().to_owned())
        .ok_or(DashError::SignIn)?;
    let session = dash.sessions.get(&id).ok_or(DashError::SignIn)?;
    if !dash.backend.still_valid(&session.grant).await {
        dash.sessions.close(&id);
        return Err(DashError::SignIn);
    }
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
    use std::time::Duration;

    use super::*;
    use crate::clock::ManualClock;

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

    fn sessions(idle: Duration, secure: bool) -> (Sessions, ManualClock) {
        let clock = ManualClock::at_secs(1_000);
        let rules = SessionRules {
            idle,
            max_age_ms: 3_600_000,
            secure,
        };
        (Sessions::new(rules, Arc::new(clock.clone())), clock)
    }

    #[test]
    fn session_ids_are_random_and_closing_ends_them() {
        let (sessions, _) = sessions(Duration::from_secs(60), false);
        let a = sessions.open(Grant::admin());
        let b = sessions.open(Grant::admin());
        assert_ne!(a, b);
        assert_eq!(a.len(), 64);
        assert!(sessions.get(&a).is_some());
        sessions.close(&a);
        assert!(sessions.get(&a).is_none());
        let cookie = sessions.cookie(SESSION_COOKIE, b);
        assert_eq!(cookie.http_only(), Some(true));
        assert_eq!(cookie.same_site(), Some(SameSite::Strict));
        assert_eq!(cookie.secure(), Some(false));
        let (tls, _) = self::sessions(Duration::from_secs(60), true);
        assert_eq!(tls.cookie(SESSION_COOKIE, a).secure(), Some(true));
    }

    #[test]
    fn an_idle_session_expires() {
        let (sessions, _) = sessions(Duration::from_millis(50), false);
        let id = sessions.open(Grant::admin());
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

    #[test]
    fn a_session_ends_at_its_absolute_lifetime() {
        let (sessions, clock) = sessions(Duration::from_secs(60), false);
        let id = sessions.open(Grant::admin());
        clock.advance_ms(3_600_000);
        assert!(sessions.get(&id).is_some());
        clock.advance_ms(1);
        assert!(sessions.get(&id).is_none());
    }

    #[test]
    fn a_place_is_given_back_when_dropped() {
        let count = Arc::new(AtomicUsize::new(0));
        let first = Place::take(&count, 1).unwrap();
        assert!(Place::take(&count, 1).is_none());
        drop(first);
        assert!(Place::take(&count, 1).is_some());
    }
}
