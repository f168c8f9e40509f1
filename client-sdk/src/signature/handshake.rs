//! Handshakes: the checks some providers make of an endpoint before they send
//! it events (Slack, Zoom, Meta, Twitch, Discord, Okta), and their answers.

use serde_json::Value;

use super::{
    codec, verify_delivery, Delivery, HeaderSource, Scheme, Secret, Verified, VerifyError,
};

/// One provider's handshake.
///
/// The checks some providers make of an endpoint before they send it events,
/// and the answers they expect. A handshake is answered only for a tenant
/// whose scheme expects it and, where the provider signs it, only once its
/// signature verifies; it is never an event.
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
    let asked = Asked {
        handshake,
        scheme,
        delivery,
        query,
        tenant,
    };
    match handshake {
        Handshake::SlackUrlVerification => asked.slack(),
        Handshake::ZoomUrlValidation => asked.zoom(),
        Handshake::MetaSubscribe => asked.meta(),
        Handshake::TwitchCallbackVerification => asked.twitch(),
        Handshake::DiscordPing => asked.discord(),
        Handshake::OktaVerification => asked.okta(),
    }
}

/// `Content-Type` of a JSON answer.
const JSON: &str = "application/json";
/// `Content-Type` of a plain-text answer.
const TEXT: &str = "text/plain; charset=utf-8";

/// A request of a tenant whose scheme makes `handshake`, being answered.
struct Asked<'r, H: ?Sized> {
    handshake: Handshake,
    scheme: Scheme,
    delivery: &'r Delivery<'r, H>,
    query: &'r str,
    tenant: &'r Answering<'r>,
}

impl<H: HeaderSource + ?Sized> Asked<'_, H> {
    /// The request's signature, verified with the tenant's keys.
    fn verified(&self) -> Result<Verified, HandshakeError> {
        verify_delivery(
            self.scheme,
            self.delivery,
            self.tenant.keys,
            self.tenant.now_unix,
            self.tenant.tolerance_secs,
        )
        .map_err(HandshakeError::Verify)
    }

    /// The body as JSON, if it names `marker` and parses.
    fn json(&self, marker: &str) -> Option<Value> {
        // Every event of these schemes passes here: a body that cannot be the
        // handshake (it lacks the handshake's name) is not parsed.
        let bytes = self.delivery.body;
        let named = bytes.windows(marker.len()).any(|w| w == marker.as_bytes());
        named
            .then(|| serde_json::from_slice::<Value>(bytes).ok())
            .flatten()
    }

    /// The answer `body`, sent as `content_type`.
    fn reply(&self, content_type: &'static str, body: Vec<u8>) -> Result<Reply, HandshakeError> {
        Ok(Reply {
            handshake: self.handshake,
            content_type,
            body,
        })
    }

    /// Slack's `url_verification`: its challenge back, as JSON.
    fn slack(&self) -> Option<Result<Reply, HandshakeError>> {
        let body = self
            .json("url_verification")
            .filter(|b| b["type"] == "url_verification")?;
        let challenge = string(&body["challenge"]);
        Some(self.verified().and_then(|_| {
            let challenge = challenge.ok_or(HandshakeError::Malformed("no challenge"))?;
            self.reply(
                JSON,
                serde_json::json!({ "challenge": challenge })
                    .to_string()
                    .into(),
            )
        }))
    }

    /// Zoom's `endpoint.url_validation`: the plain token and its HMAC under
    /// the key that verified.
    fn zoom(&self) -> Option<Result<Reply, HandshakeError>> {
        let body = self
            .json("endpoint.url_validation")
            .filter(|b| b["event"] == "endpoint.url_validation")?;
        let token = string(&body["payload"]["plainToken"]);
        Some(self.verified().and_then(|ok| {
            let token = token.ok_or(HandshakeError::Malformed("no payload.plainToken"))?;
            let key = self
                .tenant
                .keys
                .iter()
                .find(|key| key.kid() == ok.kid)
                .expect("the key that verified is live");
            let encrypted = hex::encode(codec::hmac_sha256(key.key(), token.as_bytes()));
            let answer = serde_json::json!({ "plainToken": token, "encryptedToken": encrypted });
            self.reply(JSON, answer.to_string().into())
        }))
    }

    /// Meta's subscription: its challenge back when the verify token is the
    /// tenant's.
    fn meta(&self) -> Option<Result<Reply, HandshakeError>> {
        let params = query_params(self.query);
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
        let matches = self
            .tenant
            .verify_token
            .is_some_and(|token| bool::from(codec::token_matches(presented, token)));
        Some(match (matches, param("hub.challenge")) {
            (false, _) => Err(HandshakeError::BadVerifyToken),
            (true, None) => Err(HandshakeError::Malformed("no hub.challenge")),
            (true, Some(challenge)) => self.reply(TEXT, challenge.as_bytes().to_vec()),
        })
    }

    /// Twitch's `webhook_callback_verification`: its challenge back, as text.
    fn twitch(&self) -> Option<Result<Reply, HandshakeError>> {
        let kind = self
            .delivery
            .headers
            .header("Twitch-Eventsub-Message-Type")?;
        if kind != "webhook_callback_verification" {
            return None;
        }
        let challenge = self
            .json("challenge")
            .and_then(|body| string(&body["challenge"]));
        Some(self.verified().and_then(|_| {
            let challenge = challenge.ok_or(HandshakeError::Malformed("no challenge"))?;
            self.reply(TEXT, challenge.into_bytes())
        }))
    }

    /// Discord's PING: answered with a PONG of the same type.
    fn discord(&self) -> Option<Result<Reply, HandshakeError>> {
        self.json("\"type\"").filter(|b| b["type"] == 1)?;
        Some(
            self.verified()
                .and_then(|_| self.reply(JSON, br#"{"type":1}"#.to_vec())),
        )
    }

    /// Okta's verification: its challenge header back, as JSON.
    fn okta(&self) -> Option<Result<Reply, HandshakeError>> {
        let challenge = self
            .delivery
            .headers
            .header("X-Okta-Verification-Challenge")?;
        let challenge = challenge.to_owned();
        Some(self.verified().and_then(|_| {
            let answer = serde_json::json!({ "verification": challenge });
            self.reply(JSON, answer.to_string().into())
        }))
    }
}

fn string(value: &Value) -> Option<String> {
    value.as_str().filter(|s| !s.is_empty()).map(str::to_owned)
}

fn query_params(query: &str) -> Vec<(String, String)> {
    form_urlencoded::parse(query.as_bytes())
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use hmac::{Hmac, KeyInit, Mac};
    use sha2::Sha256;

    use super::*;
    use crate::signature::{sign_message, KeyKind, Message};

    const NOW: i64 = 1_764_480_000;
    const URL: &str = "https://hooks.example.com/hooks/acme";

    type Headers = Vec<(String, String)>;

    fn sender_key(scheme: Scheme) -> Secret {
        match scheme {
            Scheme::Discord => Secret::generate("k1", KeyKind::Ed25519Seed),
            _ => Secret::from_bytes("k1", b"handshake-secret".to_vec()),
        }
    }

    /// `body` signed as `scheme`'s sender signs it, with `extra` headers.
    fn signed(
        scheme: Scheme,
        key: &Secret,
        body: &str,
        extra: &[(&str, &str)],
    ) -> (Headers, Vec<u8>) {
        let message = Message {
            event_id: "evt_1",
            timestamp: NOW,
            body: body.as_bytes(),
            method: "POST",
            url: None,
        };
        let mut signing = sign_message(scheme, key, &message);
        for (name, value) in extra {
            signing
                .headers
                .push(((*name).to_owned(), (*value).to_owned()));
        }
        (signing.headers, signing.body)
    }

    fn ask(
        scheme: Scheme,
        method: &str,
        headers: &Headers,
        body: &[u8],
        query: &str,
        keys: &[Secret],
        verify_token: Option<&[u8]>,
    ) -> Option<Result<Reply, HandshakeError>> {
        let delivery = Delivery {
            method,
            url: Some(URL),
            headers,
            body,
        };
        let tenant = Answering {
            keys,
            now_unix: NOW,
            tolerance_secs: 300,
            verify_token,
        };
        answer(scheme, &delivery, query, &tenant)
    }

    fn post(
        scheme: Scheme,
        key: &Secret,
        body: &str,
        extra: &[(&str, &str)],
    ) -> Option<Result<Reply, HandshakeError>> {
        let (headers, body) = signed(scheme, key, body, extra);
        ask(
            scheme,
            "POST",
            &headers,
            &body,
            "",
            &[key.verifying()],
            None,
        )
    }

    fn json(reply: &Reply) -> Value {
        assert_eq!(reply.content_type, "application/json");
        serde_json::from_slice(&reply.body).unwrap()
    }

    #[test]
    fn slack_url_verification_is_answered_once_signed() {
        let key = sender_key(Scheme::Slack);
        let body = r#"{"token":"t","challenge":"3eZbrw1aBm","type":"url_verification"}"#;
        let reply = post(Scheme::Slack, &key, body, &[]).unwrap().unwrap();
        assert_eq!(reply.handshake, Handshake::SlackUrlVerification);
        assert_eq!(
            json(&reply),
            serde_json::json!({ "challenge": "3eZbrw1aBm" })
        );
        let stranger = Secret::from_bytes("k1", b"another-secret".to_vec());
        let (headers, body) = signed(Scheme::Slack, &stranger, body, &[]);
        let refused = ask(Scheme::Slack, "POST", &headers, &body, "", &[key], None);
        assert_eq!(
            refused,
            Some(Err(HandshakeError::Verify(VerifyError::BadSignature)))
        );
    }

    #[test]
    fn events_and_other_schemes_are_not_handshakes() {
        let key = sender_key(Scheme::Slack);
        let event = r#"{"type":"event_callback","event_id":"Ev1"}"#;
        assert_eq!(post(Scheme::Slack, &key, event, &[]), None);
        let slack_like = r#"{"challenge":"c","type":"url_verification"}"#;
        for scheme in [Scheme::Stripe, Scheme::Github, Scheme::Standard] {
            assert_eq!(post(scheme, &key, slack_like, &[]), None, "{scheme}");
        }
        assert_eq!(Handshake::of(Scheme::Stripe), None);
    }

    #[test]
    fn zoom_url_validation_returns_the_token_and_its_hmac() {
        let key = sender_key(Scheme::Zoom);
        let body = r#"{"payload":{"plainToken":"qgg8vlvZRS6UYooatFL8Aw"},"event_ts":1654503849680,"event":"endpoint.url_validation"}"#;
        let reply = post(Scheme::Zoom, &key, body, &[]).unwrap().unwrap();
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(b"handshake-secret").unwrap();
        mac.update(b"qgg8vlvZRS6UYooatFL8Aw");
        let expected = hex::encode(mac.finalize().into_bytes());
        assert_eq!(
            json(&reply),
            serde_json::json!({ "plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected })
        );
        let no_token = r#"{"payload":{},"event":"endpoint.url_validation"}"#;
        let malformed = post(Scheme::Zoom, &key, no_token, &[]).unwrap();
        assert_eq!(
            malformed,
            Err(HandshakeError::Malformed("no payload.plainToken"))
        );
    }

    #[test]
    fn meta_challenge_needs_the_verify_token() {
        let keys = [sender_key(Scheme::Meta)];
        let query = "hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token=meatyhamhock";
        let get = |query: &str, token: Option<&[u8]>| {
            ask(Scheme::Meta, "GET", &Vec::new(), b"", query, &keys, token)
        };
        let reply = get(query, Some(b"meatyhamhock")).unwrap().unwrap();
        assert_eq!(
            (reply.content_type, &reply.body[..]),
            ("text/plain; charset=utf-8", &b"1158201444"[..])
        );
        assert_eq!(
            get(query, Some(b"other")),
            Some(Err(HandshakeError::BadVerifyToken))
        );
        assert_eq!(get(query, None), Some(Err(HandshakeError::BadVerifyToken)));
        assert_eq!(get("hub.challenge=1", Some(b"meatyhamhock")), None);
        let post = ask(
            Scheme::Meta,
            "POST",
            &Vec::new(),
            b"{}",
            query,
            &keys,
            Some(b"meatyhamhock"),
        );
        assert_eq!(post, None);
    }

    #[test]
    fn twitch_callback_verification_answers_the_challenge_as_text() {
        let key = sender_key(Scheme::Twitch);
        let body =
            r#"{"challenge":"pogchamp-kappa-360noscope-vohiyo","subscription":{"id":"f1c2"}}"#;
        let verification = [(
            "Twitch-Eventsub-Message-Type",
            "webhook_callback_verification",
        )];
        let reply = post(Scheme::Twitch, &key, body, &verification)
            .unwrap()
            .unwrap();
        assert_eq!(reply.content_type, "text/plain; charset=utf-8");
        assert_eq!(reply.body, b"pogchamp-kappa-360noscope-vohiyo");
        let notification = [("Twitch-Eventsub-Message-Type", "notification")];
        assert_eq!(post(Scheme::Twitch, &key, body, &notification), None);
    }

    #[test]
    fn discord_ping_is_answered_only_when_signed_by_the_application_key() {
        let key = sender_key(Scheme::Discord);
        let reply = post(Scheme::Discord, &key, r#"{"type":1,"id":"1"}"#, &[])
            .unwrap()
            .unwrap();
        assert_eq!(json(&reply), serde_json::json!({ "type": 1 }));
        assert_eq!(
            post(Scheme::Discord, &key, r#"{"type":2,"id":"1"}"#, &[]),
            None
        );
        let (headers, body) = signed(Scheme::Discord, &key, r#"{"type":1}"#, &[]);
        let other = Secret::generate("k1", KeyKind::Ed25519Public);
        let refused = ask(Scheme::Discord, "POST", &headers, &body, "", &[other], None);
        assert_eq!(
            refused,
            Some(Err(HandshakeError::Verify(VerifyError::BadSignature)))
        );
    }

    #[test]
    fn okta_verification_needs_the_hook_secret() {
        let key = sender_key(Scheme::Okta);
        let challenge = "X-Okta-Verification-Challenge";
        let headers = |auth: &str| -> Headers {
            vec![
                (
                    challenge.to_owned(),
                    "dPm8ccLaSk8h-ZXdAK4ss5eUrf5Z0Yq-f_SdD7zD".to_owned(),
                ),
                ("Authorization".to_owned(), auth.to_owned()),
            ]
        };
        let get = |headers: &Headers| {
            ask(
                Scheme::Okta,
                "GET",
                headers,
                b"",
                "",
                std::slice::from_ref(&key),
                None,
            )
        };
        let reply = get(&headers("handshake-secret")).unwrap().unwrap();
        assert_eq!(
            json(&reply),
            serde_json::json!({ "verification": "dPm8ccLaSk8h-ZXdAK4ss5eUrf5Z0Yq-f_SdD7zD" })
        );
        assert_eq!(
            get(&headers("wrong")),
            Some(Err(HandshakeError::Verify(VerifyError::BadSignature)))
        );
        assert_eq!(
            get(&vec![(
                "Authorization".to_owned(),
                "handshake-secret".to_owned()
            )]),
            None
        );
    }
}
