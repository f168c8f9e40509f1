//! The HTTP edge settings of `[http]`: their bounds, and the timers and
//! keep-alive actix is given from them.

use std::time::Duration;

use actix_web::http::KeepAlive;

use super::{
    bounds::{self, check_usize},
    HttpConfig,
};
use crate::error::InvalidSetting;

impl HttpConfig {
    /// The edge limits against [`bounds`], naming the key.
    pub(super) fn check_edge_bounds(&self) -> Result<(), InvalidSetting> {
        bounds::HTTP_REQUEST_TIMEOUT_SECS
            .check("http.request_timeout_secs", self.request_timeout_secs)?;
        check_usize(
            bounds::HTTP_MAX_HEADER_BYTES,
            "http.max_header_bytes",
            self.max_header_bytes,
        )?;
        check_usize(
            bounds::HTTP_MAX_CONNECTIONS,
            "http.max_connections",
            self.max_connections,
        )?;
        bounds::HTTP_KEEP_ALIVE_SECS.check("http.keep_alive_secs", self.keep_alive_secs)
    }

    /// Keep-alive as actix takes it.
    pub fn keep_alive(&self) -> KeepAlive {
        match self.keep_alive_secs {
            0 => KeepAlive::Disabled,
            secs => KeepAlive::Timeout(Duration::from_secs(secs)),
        }
    }

    /// How long the head of a request may take to arrive: a sixth of the
    /// request deadline, at most 5 s (actix's head timer).
    pub fn head_timeout(&self) -> Duration {
        (Duration::from_secs(self.request_timeout_secs) / 6).min(Duration::from_secs(5))
    }

    /// How long the body may take once the head is in: the rest of the
    /// request deadline, so head and body together stay within it.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs) - self.head_timeout()
    }
}
