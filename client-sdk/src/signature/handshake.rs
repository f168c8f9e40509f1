//! Handshakes: the checks some providers make of an endpoint before they send
//! it events (Slack, Zoom, Meta, Twitch, Discord, Okta), and the answers they
//! expect. A handshake is answered only for a tenant whose scheme expects it
//! and, where the provider signs it, only once its signature verifies; it is
//! never an event.

use serde_json::Value;

use super::{codec, verify_delivery, Delivery, HeaderSource, Scheme, Secret, VerifyError};

/// One provider's handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Handshake {
    /// Slack Events API: a signed `POST` of `{"type":"url_verification","challenge":…}`,
    /// answered with the challenge.
    SlackUrlVerification,
    /// Zoom: a signed `POST` of `{"event":"endpoint.url_validation","payload":{"plainToken":…}}`,
    /// answered with the token and its HMAC-SHA256 under the secret token.
    ZoomUrlValidation,
    /// Meta (also WhatsApp, Instagram): a `GET` with `hub.mode=subscribe`,
    /// `hub.verify_token` and `hub.challenge`, answered with the challenge when the
    /// token is the tenant's verify token.
    MetaSubscribe,
    /// Twitch EventSub: a signed `POST` with message type
    /// `webhook_callback_verification`, answered with the challenge as plain text.
    TwitchCallbackVerification,
    /// Discord interactions: a signed `POST` of `{"type":1}` (PING), answered `{"type":1}`.
    DiscordPing,
    /// Okta event hooks: a `GET` with `X-Okta-Verification-Challenge` and the
    /// hook's secret header, answered `{"verification":…}`.
    OktaVerification,
}

impl Handshake {
    /// The handshake `scheme`'s provider makes, if any.
    pub fn of(scheme: Scheme) -> Option<Handshake> {
        match scheme {
            Scheme::Slack => Some(Handshake::SlackUrlVerification),
            Scheme::Zoom => Some(Handshake::ZoomUrlValidation),
            Scheme::Meta => Some(Handshake::MetaSubscribe),
            Scheme::Twitch => Some(Handshake::TwitchCallbackVerification),
            Scheme::Discord => Some(Handshake::DiscordPing),
            Scheme::Okta => Some(Handshake::OktaVerification),
            _ => None,
        }
    }

    /// Stable name, for logs, metrics and the dashboard.
    pub fn as_str(self) -> &'static str {
        match self {
            Handshake::SlackUrlVerification => "slack.url_verification",
            Handshake::ZoomUrlValidation => "zoom.endpoint.url_validation",
            Handshake::MetaSubscribe => "meta.hub.challenge",
            Handshake::TwitchCallbackVerification => "twitch.webhook_callback_verification",
            Handshake::DiscordPing => "discord.ping",
            Handshake::OktaVerification => "okta.verification",
        }
    }

    /// The method the provider sends it with.
    pub fn method(self) -> &'static str {
        match self {
            Handshake::MetaSubscribe | Handshake::OktaVerification => "GET",
            _ => "POST",
        }
    }
}

/// The answer a provider expects to its handshake.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reply {
    /// Which handshake this answers.
    pub handshake: Handshake,
    /// `Content-Type` of the answer.
    pub content_type: &'static str,
    /// The answer's body (status 200).
    pub body: Vec<u8>,
}

/// Why a handshake was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum HandshakeError {
    /// The signature (or secret header) of a signed handshake did not verify.
    #[error("{0}")]
    Verify(VerifyError),
    /// Meta's `hub.verify_token` is not the tenant's verify token (or the tenant has none).
    #[error("hub.verify_token does not match this tenant's verify token")]
    BadVerifyToken,
    /// The handshake lacks a field its provider always sends.
    #[error("handshake is malformed: {0}")]
    Malformed(&'static str),
}

/// What a tenant knows to answer handshakes: its live keys (current first),
/// clock, tolerance and, for Meta, its verify token.
#[derive(Debug, Clone, Copy)]
pub struct Answering<'a> {
    /// The tenant's live keys, current first.
    pub keys: &'a [Secret],
    /// The server clock, Unix seconds.
    pub now_unix: i64,
    /// The tenant's timestamp tolerance.
    pub tolerance_secs: u64,
    /// Meta's `hub.verify_token`, as the tenant configured it.
    pub verify_token: Option<&'a [u8]>,
}

/// `None` when `delivery` is not `scheme`'s handshake (it is then an event, or
/// for a `GET`, nothing hookd takes); otherwise the answer to send, or why it
/// is refused. `query` is the request's raw query string.
pub fn answer<H: HeaderSource + ?Sized>(
    scheme: Scheme,
    delivery: &Delivery<'_, H>,
    query: &str,
    tenant: &Answering<'_>,
) -> Option<Result<Reply, HandshakeError>> {
    let handshake = Handshake::of(scheme)?;
    if !delivery.method.eq_ignore_ascii_case(handshake.method()) {
        return None;
    }
    let verified = |delivery: &Delivery<'_, H>| {
        verify_delivery(
            scheme,
            delivery,
            tenant.keys,
            tenant.now_unix,
            tenant.tolerance_secs,
        )
        .map_err(HandshakeError::Verify)
    };
    let json = || serde_json::from_slice::<Value>(delivery.body).ok();
    let reply = |content_type, body| {
        Ok(Reply {
            handshake,
            content_type,
            body,
        })
    };
    const JSON: &str = "application/json";
    const TEXT: &str = "text/plain; charset=utf-8";
    Some(match handshake {
        Handshake::SlackUrlVerification => {
            let body = json().filter(|b| b["type"] == "url_verification")?;
            let challenge = string(&body["challenge"]);
            verified(delivery).and_then(|_| {
                let challenge = challenge.ok_or(HandshakeError::Malformed("no challenge"))?;
                reply(JSON, serde_json::json!({ "challenge": challenge }).to_string().into())
            })
        }
        Handshake::ZoomUrlValidation => {
            let body = json().filter(|b| b["event"] == "endpoint.url_validation")?;
            let token = string(&body["payload"]["plainToken"]);
            verified(delivery).and_then(|ok| {
                let token = token.ok_or(HandshakeError::Malformed("no payload.plainToken"))?;
                let key = tenant
                    .keys
                    .iter()
                    .find(|key| key.kid() == ok.kid)
                    .expect("the key that verified is live");
                let encrypted = hex::encode(codec::hmac_sha256(key.key(), token.as_bytes()));
                let answer = serde_json::json!({ "plainToken": token, "encryptedToken": encrypted });
                reply(JSON, answer.to_string().into())
            })
        }
        Handshake::MetaSubscribe => {
            let params = query_params(query);
            let param = |name: &str| {
                params
                    .iter()
                    .find(|(key, _)| key == name)
                    .map(|(_, value)| value.as_str())
            };
            if param("hub.mode") != Some("subscribe") {
                return None;
            }
            let presented = param("hub.verify_token").unwrap_or_default().as_bytes();
            let matches = tenant
                .verify_token
                .is_some_and(|token| bool::from(codec::token_matches(presented, token)));
            match (matches, param("hub.challenge")) {
                (false, _) => Err(HandshakeError::BadVerifyToken),
                (true, None) => Err(HandshakeError::Malformed("no hub.challenge")),
                (true, Some(challenge)) => reply(TEXT, challenge.as_bytes().to_vec()),
            }
        }
        Handshake::TwitchCallbackVerification => {
            let kind = delivery.headers.header("Twitch-Eventsub-Message-Type")?;
            if kind != "webhook_callback_verification" {
                return None;
            }
            let challenge = json().and_then(|body| string(&body["challenge"]));
            verified(delivery).and_then(|_| {
                let challenge = challenge.ok_or(HandshakeError::Malformed("no challenge"))?;
                reply(TEXT, challenge.into_bytes())
            })
        }
        Handshake::DiscordPing => {
            json().filter(|b| b["type"] == 1)?;
            verified(delivery).and_then(|_| reply(JSON, br#"{"type":1}"#.to_vec()))
        }
        Handshake::OktaVerification => {
            let challenge = delivery.headers.header("X-Okta-Verification-Challenge")?;
            let challenge = challenge.to_owned();
            verified(delivery).and_then(|_| {
                let answer = serde_json::json!({ "verification": challenge });
                reply(JSON, answer.to_string().into())
            })
        }
    })
}

fn string(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

fn query_params(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

