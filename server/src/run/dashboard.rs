//! Starts `hookd-dashboard` on its listener, handing it what hookd decides:
//! the `[dashboard]` settings, hookd's clock and the `[http.tls]` certificate.

use std::sync::Arc;

use futures_util::future::BoxFuture;
use hookd_control::ControlBackend;

use crate::{
    clock::SharedClock,
    config::Config,
    error::{Error, Result},
    tls::ListenerTls,
};

/// The dashboard on `listener` (with TLS when `tls` is given), running once
/// awaited; sessions age on `clock`.
pub(super) fn server(
    config: &Config,
    backend: Arc<dyn ControlBackend>,
    clock: SharedClock,
    listener: std::net::TcpListener,
    tls: Option<ListenerTls>,
) -> Result<actix_web::dev::Server> {
    let settings = config.dashboard.settings(config.http.head_timeout());
    let clock = Arc::new(DashboardClock(clock));
    let tls = tls.map(|listener_tls| listener_tls.config);
    hookd_dashboard::server(&settings, backend, clock, listener, tls).map_err(|e| match e {
        hookd_dashboard::Error::Listen(io) => Error::from(io),
    })
}

/// hookd's clock as the dashboard reads it.
struct DashboardClock(SharedClock);

impl hookd_dashboard::Clock for DashboardClock {
    fn now_ms(&self) -> i64 {
        self.0.now_ms()
    }

    fn sleep_until(&self, at_ms: i64) -> BoxFuture<'static, ()> {
        self.0.sleep_until(at_ms)
    }
}
