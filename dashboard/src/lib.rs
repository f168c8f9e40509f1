//! hookd's delivery dashboard: server-rendered pages for support and
//! on-call people. It reaches deliveries, dead letters and secrets only
//! through [`ControlBackend`], signs in with the same tokens as the gRPC
//! control plane and enforces the same tenant scoping. Every asset is
//! embedded; the only script is the live tail's, served from here so the
//! Content-Security-Policy can stay `default-src 'self'`. hookd hands it
//! its [`Settings`], a [`Clock`], a bound listener and, under TLS, a ready
//! rustls configuration.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

mod alerts;
mod assets;
mod auth;
mod clock;
mod csrf;
mod dead;
mod deliveries;
mod error;
mod layout;
mod rejections;
mod replays;
mod routes;
mod session;
mod tail;
mod tenants;

use std::{
    sync::{atomic::AtomicUsize, Arc},
    time::Duration,
};

use actix_web::{middleware::DefaultHeaders, web, App, HttpServer};
use hookd_control::{model::DEFAULT_ROUTE, ControlBackend};
use hookd_domain::TenantId;

pub use clock::{Clock, SharedClock};
use error::DashError;
pub use error::{Error, Result};
use session::{SessionRules, Sessions};

/// What hookd's `[dashboard]` and `[http]` config sections decide.
#[derive(Debug, Clone)]
pub struct Settings {
    /// A session ends after this many seconds without a request.
    pub session_idle_secs: u64,
    /// A session ends this many seconds after sign-in, however busy.
    pub session_max_secs: u64,
    /// Most live tails one session holds open at once.
    pub tail_streams_per_session: usize,
    /// Most live tails of all sessions together; kept at least 50 below
    /// [`MAX_CONNECTIONS`] so pages are still answered.
    pub tail_streams_total: usize,
    /// How long a client has to send a request's head.
    pub request_head_timeout: Duration,
}

/// What every dashboard request shares.
struct Dashboard {
    backend: Arc<dyn ControlBackend>,
    sessions: Sessions,
    /// The server's clock: session ages, live-tail keep-alives.
    clock: SharedClock,
    /// Live tails of every session together.
    tails: Arc<AtomicUsize>,
    /// [`Settings::tail_streams_per_session`] and [`Settings::tail_streams_total`].
    tail_caps: TailCaps,
}

/// Most live tails one session, and all together, hold open.
#[derive(Clone, Copy)]
struct TailCaps {
    per_session: usize,
    total: usize,
}

/// Connections the dashboard serves at once; [`Settings::tail_streams_total`]
/// stays below it so live tails cannot take them all.
pub const MAX_CONNECTIONS: usize = 256;

/// Only this origin's styles, script and forms; never framed.
const CSP: &str = "default-src 'self'; img-src 'self'; form-action 'self'; \
                   frame-ancestors 'none'; base-uri 'none'; object-src 'none'";

/// The dashboard on `listener` (with TLS when `tls` is given, its cookies
/// then `Secure`), running once awaited; sessions age on `clock`.
pub fn server(
    settings: &Settings,
    backend: Arc<dyn ControlBackend>,
    clock: SharedClock,
    listener: std::net::TcpListener,
    tls: Option<rustls::ServerConfig>,
) -> Result<actix_web::dev::Server> {
    let rules = SessionRules {
        idle: Duration::from_secs(settings.session_idle_secs),
        max_age_ms: (settings.session_max_secs as i64).saturating_mul(1000),
        secure: tls.is_some(),
    };
    let state = web::Data::new(Dashboard {
        backend,
        sessions: Sessions::new(rules, clock.clone()),
        clock,
        tails: Arc::default(),
        tail_caps: TailCaps {
            per_session: settings.tail_streams_per_session,
            total: settings.tail_streams_total,
        },
    });
    let server = HttpServer::new(move || {
        App::new()
            .app_data(state.clone())
            .wrap(
                DefaultHeaders::new()
                    .add(("content-security-policy", CSP))
                    .add(("x-content-type-options", "nosniff"))
                    .add(("referrer-policy", "no-referrer"))
                    .add(("x-frame-options", "DENY")),
            )
            .configure(pages)
    })
    .workers(1)
    .max_connections(MAX_CONNECTIONS)
    .client_request_timeout(settings.request_head_timeout)
    .disable_signals()
    .shutdown_timeout(1);
    let server = match tls {
        Some(tls) => server.listen_rustls_0_23(listener, tls)?,
        None => server.listen(listener)?,
    };
    Ok(server.run())
}

fn pages(cfg: &mut web::ServiceConfig) {
    cfg.route("/", web::get().to(auth::home))
        .route("/sign-in", web::get().to(auth::sign_in_page))
        .route("/sign-in", web::post().to(auth::sign_in))
        .route("/sign-out", web::post().to(auth::sign_out))
        .route("/assets/{name}", web::get().to(assets::asset))
        .route("/tenants", web::get().to(tenants::overview))
        .route("/tail", web::get().to(tail::page_all))
        .route("/events", web::get().to(tail::events_all))
        .service(
            web::scope("/t/{tenant}")
                .route("/deliveries", web::get().to(deliveries::list))
                .route("/deliveries/{id}", web::get().to(deliveries::one))
                .route(
                    "/deliveries/{id}/redirect",
                    web::post().to(deliveries::redirect),
                )
                .route("/dead-letters", web::get().to(dead::list))
                .route("/dead-letters/redeliver", web::post().to(dead::redeliver))
                .route("/rejections", web::get().to(rejections::list))
                .route("/alerts", web::get().to(alerts::list))
                .route(
                    "/alerts/{id}/acknowledge",
                    web::post().to(alerts::acknowledge),
                )
                .route("/routes", web::get().to(routes::list))
                .route("/routes/{route}/test", web::get().to(routes::test_page))
                .route("/routes/{route}/test", web::post().to(routes::test))
                .route(
                    "/routes/{route}/retry-now",
                    web::post().to(routes::retry_now),
                )
                .route("/routes/{route}/pause", web::post().to(routes::pause))
                .route(
                    "/routes/{route}/cancel-held",
                    web::post().to(routes::cancel_held),
                )
                .route("/routes/{route}/resume", web::post().to(routes::resume))
                .route("/replays", web::post().to(routes::start_replay))
                .route("/replays/{id}/pause", web::post().to(routes::pause_replay))
                .route(
                    "/replays/{id}/resume",
                    web::post().to(routes::resume_replay),
                )
                .route(
                    "/replays/{id}/cancel",
                    web::post().to(routes::cancel_replay),
                )
                .route("/tail", web::get().to(tail::page))
                .route("/events", web::get().to(tail::events))
                .route("/secrets", web::get().to(tenants::secrets))
                .route("/secrets/rotate", web::post().to(tenants::rotate)),
        )
        .default_service(web::to(|| async {
            Err::<actix_web::HttpResponse, _>(DashError::NotFound("no such page".into()))
        }));
}

/// The route a `route` field names: empty is the default route; a name
/// that cannot be a route's is bad input (one the tenant lacks is the
/// backend's `NotFound`).
fn route_param(value: &str) -> Result<&str, DashError> {
    match value.trim() {
        "" => Ok(DEFAULT_ROUTE),
        name if TenantId::is_valid(name) => Ok(name),
        name => Err(DashError::BadInput(format!(
            "route: {name:?} must be 1-64 characters of a-z, 0-9, '-' or '_'"
        ))),
    }
}

/// A tenant named in a path, well formed and visible to the signed-in
/// token; the backend is only asked about tenants that pass.
fn tenant_in_path(
    signed: &session::Signed,
    tenant: &str,
) -> std::result::Result<String, DashError> {
    let id = TenantId::try_from(tenant)
        .map(String::from)
        .map_err(|e| DashError::NotFound(format!("no tenant \"{tenant}\": {e}")))?;
    signed.may_see(&id)?;
    Ok(id)
}
