//! A tenant's answer to its provider's handshake
//! ([`hookd_sdk::signature::handshake`]).

use actix_web::http::header::HeaderMap;
use hookd_sdk::signature::{
    handshake::{self, Answering, Handshake, HandshakeError, Reply},
    Delivery,
};
use secrecy::ExposeSecret;

use super::{headers::SignedHeaders, TenantHandle};

/// A request that may be a handshake, as received.
///
/// A tenant's answer to its provider's handshake
/// ([`hookd_sdk::signature::handshake`]): the keys, clock, tolerance and
/// verify token come from the snapshot its actor published, as for a
/// delivery, and nothing is stored.
pub struct HandshakeRequest<'a> {
    pub method: &'a str,
    pub headers: &'a HeaderMap,
    pub query: &'a str,
    pub body: &'a [u8],
}

impl TenantHandle {
    /// `None` when `request` is not the handshake this tenant's scheme expects
    /// (it then goes through ingest, or for a `GET` is not allowed); otherwise
    /// the answer, or why it is refused, at the server clock `now_ms`.
    pub fn handshake(
        &self,
        request: &HandshakeRequest<'_>,
        now_ms: i64,
    ) -> Option<Result<Reply, HandshakeError>> {
        let snapshot = self.snapshot();
        let settings = snapshot.settings();
        // Most deliveries are to a scheme without a handshake, or by the
        // other method: they go to ingest without building anything here.
        Handshake::of(settings.scheme)
            .filter(|handshake| handshake.method().eq_ignore_ascii_case(request.method))?;
        let now_unix = now_ms.div_euclid(1000);
        let url = settings.delivery_url(request.query);
        let headers = SignedHeaders(request.headers);
        let delivery = Delivery {
            method: request.method,
            url: url.as_deref(),
            headers: &headers,
            body: request.body,
        };
        let tenant = Answering {
            keys: snapshot.live_keys(now_unix),
            now_unix,
            tolerance_secs: settings.tolerance_secs,
            verify_token: settings
                .verify_token
                .as_ref()
                .map(|token| token.expose_secret().as_bytes()),
        };
        handshake::answer(settings.scheme, &delivery, request.query, &tenant)
    }
}
