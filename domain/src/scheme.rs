//! The `Scheme` enum: the closed set of wire formats a tenant can choose, and
//! the per-scheme facts the server needs.

use std::fmt;
use std::str::FromStr;

/// A scheme name that hookd does not implement.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown signature scheme {0:?} (expected one of: {names})", names = scheme_names())]
pub struct UnknownScheme(pub String);

fn scheme_names() -> String {
    Scheme::ALL.map(Scheme::as_str).join(", ")
}

/// Which provider's wire format a tenant's deliveries use; picked once per tenant.
///
/// The `Scheme` enum: the closed set of wire formats a tenant can choose, with the
/// per-scheme facts the server needs besides the signature itself. The SDK, the
/// control plane and the server all use this one type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Scheme {
    /// Standard Webhooks (Svix): `webhook-id`, `webhook-timestamp`, `webhook-signature`.
    Standard,
    /// hookd's own format: `X-Webhook-Signature: t=..,v1=..[,kid=..]`.
    Hookd,
    /// Stripe: `Stripe-Signature: t=..,v1=..`.
    Stripe,
    /// GitHub: `X-Hub-Signature-256: sha256=..`.
    Github,
    /// Shopify: `X-Shopify-Hmac-Sha256: <base64>`.
    Shopify,
    /// Slack: `X-Slack-Signature: v0=..` with `X-Slack-Request-Timestamp`.
    Slack,
    /// GitLab: the secret token itself in `X-Gitlab-Token`; nothing is signed.
    Gitlab,
    /// Okta event hooks: the configured secret itself in `Authorization`; nothing is signed.
    Okta,
    /// Discord: `X-Signature-Ed25519: <hex>` over `X-Signature-Timestamp` and the body,
    /// checked with the application's public key.
    Discord,
    /// SendGrid signed event webhook: `X-Twilio-Email-Event-Webhook-Signature: <base64
    /// DER ECDSA P-256>` over `X-Twilio-Email-Event-Webhook-Timestamp` and the body.
    Sendgrid,
    /// Mailgun: inside the body, `signature.{timestamp,token,signature}` (JSON) or the
    /// `timestamp`, `token`, `signature` fields (form), an HMAC of timestamp and token.
    Mailgun,
    /// Twilio: `X-Twilio-Signature: <base64>` HMAC-SHA1 over the public URL and the
    /// sorted form parameters (a JSON body through `bodySHA256` in the URL).
    Twilio,
    /// Svix: Standard Webhooks under `svix-id`, `svix-timestamp`, `svix-signature`.
    Svix,
    /// Meta (WhatsApp, Instagram): `X-Hub-Signature-256: sha256=..`, no timestamp, no event id.
    Meta,
    /// Intercom: `X-Hub-Signature: sha1=..` (HMAC-SHA1 of the body), no timestamp.
    Intercom,
    /// Paddle Billing: `Paddle-Signature: ts=..;h1=..[;h1=..]` over `ts:body`.
    Paddle,
    /// Zoom: `x-zm-signature: v0=..` over `v0:<x-zm-request-timestamp>:body`.
    Zoom,
    /// Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=..` over id + RFC 3339
    /// timestamp + body.
    Twitch,
    /// Linear: `Linear-Signature: <hex>` over the body, which carries `webhookTimestamp` (ms).
    Linear,
    /// Square: `x-square-hmacsha256-signature: <base64>` over notification URL + body.
    Square,
    /// HubSpot v3: `X-HubSpot-Signature-v3: <base64>` over method + URI + body +
    /// `X-HubSpot-Request-Timestamp` (ms).
    Hubspot,
    /// Built from the tenant's configuration alone (`[tenants.hmac]`): where the
    /// signature is (a header or a JSON pointer into the body), its hash and
    /// encoding, the signed string's template and the timestamp's source; or a
    /// secret token sent in a header.
    Hmac,
}

impl Scheme {
    /// Every scheme, so configuration UIs and tests can enumerate them.
    pub const ALL: [Scheme; 22] = [
        Scheme::Standard,
        Scheme::Hookd,
        Scheme::Stripe,
        Scheme::Github,
        Scheme::Shopify,
        Scheme::Slack,
        Scheme::Gitlab,
        Scheme::Okta,
        Scheme::Discord,
        Scheme::Sendgrid,
        Scheme::Mailgun,
        Scheme::Twilio,
        Scheme::Svix,
        Scheme::Meta,
        Scheme::Intercom,
        Scheme::Paddle,
        Scheme::Zoom,
        Scheme::Twitch,
        Scheme::Linear,
        Scheme::Square,
        Scheme::Hubspot,
        Scheme::Hmac,
    ];

    /// The name used in configuration and on the wire; `FromStr` accepts it back.
    pub fn as_str(self) -> &'static str {
        match self {
            Scheme::Standard => "standard",
            Scheme::Hookd => "hookd",
            Scheme::Stripe => "stripe",
            Scheme::Github => "github",
            Scheme::Shopify => "shopify",
            Scheme::Slack => "slack",
            Scheme::Gitlab => "gitlab",
            Scheme::Okta => "okta",
            Scheme::Discord => "discord",
            Scheme::Sendgrid => "sendgrid",
            Scheme::Mailgun => "mailgun",
            Scheme::Twilio => "twilio",
            Scheme::Svix => "svix",
            Scheme::Meta => "meta",
            Scheme::Intercom => "intercom",
            Scheme::Paddle => "paddle",
            Scheme::Zoom => "zoom",
            Scheme::Twitch => "twitch",
            Scheme::Linear => "linear",
            Scheme::Square => "square",
            Scheme::Hubspot => "hubspot",
            Scheme::Hmac => "hmac",
        }
    }

    /// Body field that carries the event id when the headers do not, so the server
    /// knows where to look for its dedup key: a top-level name, or a JSON pointer
    /// (RFC 6901) when it starts with `/`. A scheme with neither this nor an
    /// [`Scheme::event_id_header`] has no event id of its own.
    pub fn body_event_id_field(self) -> Option<&'static str> {
        match self {
            Scheme::Hookd | Scheme::Slack | Scheme::Paddle | Scheme::Square => Some("event_id"),
            Scheme::Stripe | Scheme::Discord | Scheme::Intercom => Some("id"),
            Scheme::Okta => Some("eventId"),
            Scheme::Sendgrid => Some("/0/sg_event_id"),
            Scheme::Mailgun => Some("/event-data/id"),
            Scheme::Hubspot => Some("/0/eventId"),
            Scheme::Standard
            | Scheme::Github
            | Scheme::Shopify
            | Scheme::Gitlab
            | Scheme::Twilio
            | Scheme::Svix
            | Scheme::Meta
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::Linear
            | Scheme::Hmac => None,
        }
    }

    /// Header that carries the event id for schemes that sign it in a header,
    /// so an error can name it when it is absent.
    pub fn event_id_header(self) -> Option<&'static str> {
        match self {
            Scheme::Linear => Some("Linear-Delivery"),
            Scheme::Twitch => Some("Twitch-Eventsub-Message-Id"),
            Scheme::Standard => Some("webhook-id"),
            Scheme::Github => Some("X-GitHub-Delivery"),
            Scheme::Shopify => Some("X-Shopify-Webhook-Id"),
            Scheme::Gitlab => Some("Idempotency-Key"),
            Scheme::Twilio => Some("I-Twilio-Idempotency-Token"),
            Scheme::Svix => Some("svix-id"),
            Scheme::Hookd
            | Scheme::Stripe
            | Scheme::Slack
            | Scheme::Okta
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Mailgun
            | Scheme::Meta
            | Scheme::Intercom
            | Scheme::Paddle
            | Scheme::Zoom
            | Scheme::Square
            | Scheme::Hubspot
            | Scheme::Hmac => None,
        }
    }

    /// Whether the signature covers the URL the provider called, so the tenant
    /// needs a `public_url` (behind a load balancer hookd cannot see it).
    /// `hmac` answers `false`: whether its template signs `{url}` is the
    /// spec's to say.
    pub fn signs_url(self) -> bool {
        match self {
            Scheme::Twilio | Scheme::Square | Scheme::Hubspot => true,
            Scheme::Standard
            | Scheme::Hookd
            | Scheme::Stripe
            | Scheme::Github
            | Scheme::Shopify
            | Scheme::Slack
            | Scheme::Gitlab
            | Scheme::Okta
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Mailgun
            | Scheme::Svix
            | Scheme::Meta
            | Scheme::Intercom
            | Scheme::Paddle
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::Linear
            | Scheme::Hmac => false,
        }
    }

    /// Whether the signature covers the event id (a signed header, or a
    /// field of a signed body), so a resend under another id is no longer
    /// genuine. When it does not (an id header outside the signature, a body
    /// the signature does not cover), the server also keys the event by its
    /// signed content, in the replay cache and the idempotency log.
    pub fn signs_event_id(self) -> bool {
        match self {
            Scheme::Standard
            | Scheme::Svix
            | Scheme::Hookd
            | Scheme::Stripe
            | Scheme::Slack
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Intercom
            | Scheme::Paddle
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::Square
            | Scheme::Hubspot
            | Scheme::Meta => true,
            Scheme::Github
            | Scheme::Shopify
            | Scheme::Gitlab
            | Scheme::Okta
            | Scheme::Mailgun
            | Scheme::Twilio
            | Scheme::Linear
            | Scheme::Hmac => false,
        }
    }

    /// Whether the signed material has a timestamp; without one the tolerance window
    /// cannot bound replays and the server must lean on its replay cache alone.
    /// `hmac` answers `false`: its spec may name no timestamp, so the server
    /// keeps the content key that does not rely on one.
    pub fn has_timestamp(self) -> bool {
        match self {
            Scheme::Standard
            | Scheme::Hookd
            | Scheme::Stripe
            | Scheme::Slack
            | Scheme::Discord
            | Scheme::Sendgrid
            | Scheme::Mailgun
            | Scheme::Svix
            | Scheme::Paddle
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::Linear
            | Scheme::Hubspot => true,
            Scheme::Github
            | Scheme::Shopify
            | Scheme::Gitlab
            | Scheme::Okta
            | Scheme::Twilio
            | Scheme::Meta
            | Scheme::Intercom
            | Scheme::Square
            | Scheme::Hmac => false,
        }
    }
}

/// The config file's spelling: any letter case (`GitHub` is `github`).
impl FromStr for Scheme {
    type Err = UnknownScheme;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Scheme::ALL
            .into_iter()
            .find(|scheme| scheme.as_str().eq_ignore_ascii_case(s))
            .ok_or_else(|| UnknownScheme(s.to_owned()))
    }
}

/// The API's spelling: exactly as [`Scheme::as_str`] writes it.
impl TryFrom<&str> for Scheme {
    type Error = UnknownScheme;

    fn try_from(name: &str) -> Result<Self, Self::Error> {
        Scheme::ALL
            .into_iter()
            .find(|scheme| scheme.as_str() == name)
            .ok_or_else(|| UnknownScheme(name.to_owned()))
    }
}

/// Stored as its name.
#[cfg(feature = "serde")]
impl serde::Serialize for Scheme {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(self.as_str())
    }
}

/// Read back from its name, in any letter case.
#[cfg(feature = "serde")]
impl<'de> serde::Deserialize<'de> for Scheme {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let name = <std::borrow::Cow<'de, str>>::deserialize(deserializer)?;
        name.parse().map_err(serde::de::Error::custom)
    }
}

impl fmt::Display for Scheme {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        for scheme in Scheme::ALL {
            assert_eq!(scheme.as_str().parse::<Scheme>(), Ok(scheme));
            assert_eq!(scheme.to_string(), scheme.as_str());
        }
        assert_eq!("GitHub".parse::<Scheme>(), Ok(Scheme::Github));
    }

    #[test]
    fn api_names_are_exact() {
        for scheme in Scheme::ALL {
            assert_eq!(Scheme::try_from(scheme.as_str()), Ok(scheme));
        }
        assert_eq!(
            Scheme::try_from("Standard"),
            Err(UnknownScheme("Standard".to_owned()))
        );
    }

    #[test]
    fn an_event_id_comes_from_one_place_at_most() {
        for scheme in Scheme::ALL {
            let both = scheme.body_event_id_field().is_some() && scheme.event_id_header().is_some();
            assert!(!both, "{scheme}");
        }
        let signing_url: Vec<Scheme> = Scheme::ALL.into_iter().filter(|s| s.signs_url()).collect();
        assert_eq!(
            signing_url,
            [Scheme::Twilio, Scheme::Square, Scheme::Hubspot]
        );
    }

    #[test]
    fn unknown_name_lists_valid_ones() {
        let err = "webhookz".parse::<Scheme>().unwrap_err();
        assert_eq!(err, UnknownScheme("webhookz".to_owned()));
        let text = err.to_string();
        assert!(text.contains("\"webhookz\""), "{text}");
        for scheme in Scheme::ALL {
            assert!(text.contains(scheme.as_str()), "{text}");
        }
    }
}
