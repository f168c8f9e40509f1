//! Webhook signature schemes: parse a delivery, check its signature against
//! the tenant's live keys and its timestamp against the tolerance; and sign.

mod codec;
mod configured;
mod discord;
mod github;
mod gitlab;
pub mod handshake;
mod headers;
mod hookd;
mod hub;
mod hubspot;
mod intercom;
mod kv;
mod linear;
mod mailgun;
mod meta;
mod okta;
mod paddle;
mod pair;
#[cfg(test)]
mod props;
mod secret;
mod sendgrid;
mod shopify;
mod slack;
mod square;
mod standard;
mod stripe;
mod svix;
#[cfg(test)]
mod tests;
mod twilio;
mod twitch;
mod v0;
mod zoom;

pub use crate::error::{InvalidSecret, UnknownScheme, VerifyError};
pub use headers::{HeaderLookup, HeaderSource};
pub use hookd_domain::Scheme;
pub use secret::Secret;

use codec::Tag;
use subtle::Choice;

pub use codec::Hash;
pub use configured::{sign_hmac, verify_hmac, CannotSign, HmacFields, HmacSpec, InvalidHmacSpec};
pub use secret::KeyKind;

/// One delivery as a scheme sees it: the request line, the headers and the
/// raw body. `url` is the public URL the provider called (the tenant's
/// `public_url` and the query string as received), for the schemes that sign it.
#[derive(Debug, Clone, Copy)]
pub struct Delivery<'a, H: ?Sized> {
    /// The request method as received (`POST`, or `GET` for some handshakes).
    pub method: &'a str,
    /// The public URL the provider called, when the tenant has one.
    pub url: Option<&'a str>,
    /// The request headers.
    pub headers: &'a H,
    /// The raw body, exactly the bytes the provider signed.
    pub body: &'a [u8],
}

impl<'a, H: ?Sized> Delivery<'a, H> {
    /// A `POST` with no known URL: enough for every scheme that signs only
    /// headers and body.
    pub fn post(headers: &'a H, body: &'a [u8]) -> Self {
        Delivery {
            method: "POST",
            url: None,
            headers,
            body,
        }
    }
}

/// What a verified delivery proved, for the server's replay cache and audit log.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// Which key matched, so operators can see when senders finish a rotation.
    pub kid: String,
    /// Signed unix timestamp; `None` for schemes that sign no timestamp.
    pub timestamp: Option<i64>,
    /// `webhook-id` / `X-GitHub-Delivery` / `X-Shopify-Webhook-Id` when the scheme
    /// carries the event id in a header and it is non-empty.
    pub header_event_id: Option<String>,
    /// The signed material besides the body, for [`Verified::signature_digest`].
    signed: Signed,
}

impl Verified {
    /// SHA-256 of the exact signed material (what surrounds `body`, the body that
    /// was verified); the replay-cache key when there is no header event id. It does
    /// not depend on how the signature header was spelled, so a replay cannot dodge
    /// the cache by adding decoy signatures or changing hex case. Computed on demand:
    /// most deliveries are keyed by their event id and never need a second pass over
    /// the body.
    pub fn signature_digest(&self, body: &[u8]) -> [u8; 32] {
        codec::sha256(&self.signed, body)
    }
}

/// Verify one `POST` whose scheme signs only headers and body; see [`verify_delivery`].
pub fn verify(
    scheme: Scheme,
    headers: &(impl HeaderSource + ?Sized),
    body: &[u8],
    keys: &[Secret],
    now_unix: i64,
    tolerance_secs: u64,
) -> Result<Verified, VerifyError> {
    verify_delivery(
        scheme,
        &Delivery::post(headers, body),
        keys,
        now_unix,
        tolerance_secs,
    )
}

/// Verify one delivery. `keys`: current first, then previous (if its overlap window is
/// open) — the caller decides which keys are live. The request is parsed fully before
/// any MAC is computed or signature checked, and the tolerance is checked only once a
/// key matched. [`Scheme::Hmac`] has no wire format of its own: it refuses every
/// delivery here, as `INVALID_SIGNATURE_FORMAT`; verify it with [`verify_hmac`] and
/// the tenant's [`HmacSpec`].
pub fn verify_delivery<H: HeaderSource + ?Sized>(
    scheme: Scheme,
    delivery: &Delivery<'_, H>,
    keys: &[Secret],
    now_unix: i64,
    tolerance_secs: u64,
) -> Result<Verified, VerifyError> {
    let claims = match scheme {
        Scheme::Standard => standard::Standard::parse(delivery),
        Scheme::Hookd => hookd::Hookd::parse(delivery),
        Scheme::Stripe => stripe::Stripe::parse(delivery),
        Scheme::Github => github::Github::parse(delivery),
        Scheme::Shopify => shopify::Shopify::parse(delivery),
        Scheme::Slack => slack::Slack::parse(delivery),
        Scheme::Gitlab => gitlab::Gitlab::parse(delivery),
        Scheme::Okta => okta::Okta::parse(delivery),
        Scheme::Discord => discord::Discord::parse(delivery),
        Scheme::Sendgrid => sendgrid::Sendgrid::parse(delivery),
        Scheme::Mailgun => mailgun::Mailgun::parse(delivery),
        Scheme::Twilio => twilio::Twilio::parse(delivery),
        Scheme::Svix => svix::Svix::parse(delivery),
        Scheme::Meta => meta::Meta::parse(delivery),
        Scheme::Intercom => intercom::Intercom::parse(delivery),
        Scheme::Paddle => paddle::Paddle::parse(delivery),
        Scheme::Zoom => zoom::Zoom::parse(delivery),
        Scheme::Twitch => twitch::Twitch::parse(delivery),
        Scheme::Linear => linear::Linear::parse(delivery),
        Scheme::Square => square::Square::parse(delivery),
        Scheme::Hubspot => hubspot::Hubspot::parse(delivery),
        Scheme::Hmac => Err(codec::malformed(
            "scheme hmac is verified with its tenant's [hmac] spec",
        )),
    }?;
    check_claims(claims, delivery.body, keys, now_unix, tolerance_secs)
}

/// The checks after parsing: a live key made a presented proof (the key the
/// request names, if it names one), then the tolerance.
pub(crate) fn check_claims(
    claims: Claims,
    body: &[u8],
    keys: &[Secret],
    now_unix: i64,
    tolerance_secs: u64,
) -> Result<Verified, VerifyError> {
    let key = keys
        .iter()
        .filter(|key| claims.kid.as_deref().is_none_or(|kid| key.kid() == kid))
        .find(|key| proves(key, &claims, body))
        .ok_or(VerifyError::BadSignature)?;
    if let Some(timestamp) = claims.timestamp {
        check_tolerance(timestamp, now_unix, tolerance_secs)?;
    }
    Ok(Verified {
        kid: key.kid().to_owned(),
        timestamp: claims.timestamp,
        header_event_id: claims.header_event_id,
        signed: claims.signed,
    })
}

/// Whether `key` made any of the presented proofs, over the signed bytes or their
/// alternate spelling. Every HMAC and token proof is compared in constant time,
/// all of them, whichever matches.
fn proves(key: &Secret, claims: &Claims, body: &[u8]) -> bool {
    match key.kind() {
        KeyKind::Shared => {
            let mut found = Choice::from(0);
            for signed in std::iter::once(&claims.signed).chain(&claims.alternate) {
                for hash in Hash::ALL {
                    let mut expected = None;
                    for proof in &claims.proofs {
                        if let Proof::Hmac(of, presented) = proof {
                            if *of == hash {
                                let tag = expected.get_or_insert_with(|| {
                                    codec::hmac(hash, key.key(), signed, body)
                                });
                                found |= codec::equal(presented, tag);
                            }
                        }
                    }
                }
            }
            for proof in &claims.proofs {
                if let Proof::Token(presented) = proof {
                    found |= codec::token_matches(presented, key.key());
                }
            }
            found.into()
        }
        KeyKind::Ed25519Public | KeyKind::P256Public => {
            let message = claims.signed.joined(body);
            claims.proofs.iter().any(|proof| match (proof, key.kind()) {
                (Proof::Ed25519(signature), KeyKind::Ed25519Public) => {
                    pair::verify_ed25519(key.key(), &message, signature)
                }
                (Proof::EcdsaP256(signature), KeyKind::P256Public) => {
                    pair::verify_p256(key.key(), &message, signature)
                }
                _ => false,
            })
        }
        KeyKind::Ed25519Seed | KeyKind::P256Pkcs8 => false,
    }
}

/// What to sign: the event and the request it travels in.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// Used by schemes that carry the event id in a header (standard: `webhook-id`,
    /// github: `X-GitHub-Delivery`, shopify: `X-Shopify-Webhook-Id`), ignored otherwise.
    pub event_id: &'a str,
    /// Unix seconds; must be non-negative for the result to verify.
    pub timestamp: i64,
    /// The event's bytes (for schemes that sign inside the body, the body before
    /// the signature is added).
    pub body: &'a [u8],
    /// The request method.
    pub method: &'a str,
    /// The URL the request goes to, for the schemes that sign it.
    pub url: Option<&'a str>,
}

/// A signed request: the headers to attach and the body to send, which is the
/// message's body except for schemes that sign inside the body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signing {
    /// Headers to attach, names in their canonical case.
    pub headers: Vec<(String, String)>,
    /// The body to send.
    pub body: Vec<u8>,
}

/// Headers a sender attaches (names in their canonical case) to `POST` `body`, for
/// schemes that sign only headers and body; see [`sign_message`]. The kid is emitted
/// only by the hookd scheme (`,kid=<kid>`, when non-empty).
pub fn sign(
    scheme: Scheme,
    secret: &Secret,
    event_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(String, String)> {
    let message = Message {
        event_id,
        timestamp,
        body,
        method: "POST",
        url: None,
    };
    sign_message(scheme, secret, &message).headers
}

/// Signs `message` as `scheme`'s sender does, with `secret` (a shared key, or the
/// private half of a key pair for the schemes that sign with one). A key that
/// cannot sign for the scheme (a public key, or a shared secret where a key pair
/// signs) yields no signature header, so the receiver answers `MISSING_SIGNATURE`;
/// so does [`Scheme::Hmac`], whose format is the tenant's [`HmacSpec`]: sign it
/// with [`sign_hmac`].
pub fn sign_message(scheme: Scheme, secret: &Secret, message: &Message<'_>) -> Signing {
    match scheme {
        Scheme::Standard => standard::Standard::sign(secret, message),
        Scheme::Hookd => hookd::Hookd::sign(secret, message),
        Scheme::Stripe => stripe::Stripe::sign(secret, message),
        Scheme::Github => github::Github::sign(secret, message),
        Scheme::Shopify => shopify::Shopify::sign(secret, message),
        Scheme::Slack => slack::Slack::sign(secret, message),
        Scheme::Gitlab => gitlab::Gitlab::sign(secret, message),
        Scheme::Okta => okta::Okta::sign(secret, message),
        Scheme::Discord => discord::Discord::sign(secret, message),
        Scheme::Sendgrid => sendgrid::Sendgrid::sign(secret, message),
        Scheme::Mailgun => mailgun::Mailgun::sign(secret, message),
        Scheme::Twilio => twilio::Twilio::sign(secret, message),
        Scheme::Svix => svix::Svix::sign(secret, message),
        Scheme::Meta => meta::Meta::sign(secret, message),
        Scheme::Intercom => intercom::Intercom::sign(secret, message),
        Scheme::Paddle => paddle::Paddle::sign(secret, message),
        Scheme::Zoom => zoom::Zoom::sign(secret, message),
        Scheme::Twitch => twitch::Twitch::sign(secret, message),
        Scheme::Linear => linear::Linear::sign(secret, message),
        Scheme::Square => square::Square::sign(secret, message),
        Scheme::Hubspot => hubspot::Hubspot::sign(secret, message),
        Scheme::Hmac => with_headers(message, Vec::new()),
    }
}

/// The bytes a signature covers: `before`, the body if `body`, then `after`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub(crate) struct Signed {
    pub(crate) before: Vec<u8>,
    pub(crate) body: bool,
    pub(crate) after: Vec<u8>,
}

impl Signed {
    /// `before` then the body.
    pub(crate) fn around_body(before: Vec<u8>) -> Signed {
        Signed {
            before,
            body: true,
            after: Vec::new(),
        }
    }

    /// Exactly `bytes`, without the body.
    pub(crate) fn bytes(bytes: Vec<u8>) -> Signed {
        Signed {
            before: bytes,
            body: false,
            after: Vec::new(),
        }
    }

    /// Hands each part to `sink`, in order, without copying the body.
    pub(crate) fn feed(&self, body: &[u8], mut sink: impl FnMut(&[u8])) {
        sink(&self.before);
        if self.body {
            sink(body);
        }
        sink(&self.after);
    }

    /// The parts joined, for the signatures that need one contiguous message.
    pub(crate) fn joined(&self, body: &[u8]) -> Vec<u8> {
        let mut message = Vec::new();
        self.feed(body, |part| message.extend_from_slice(part));
        message
    }
}

/// One signature as presented, decoded and of the right length for its kind.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Proof {
    Hmac(Hash, Vec<u8>),
    /// The shared secret itself, sent in a header (GitLab, Okta).
    Token(Vec<u8>),
    Ed25519(Vec<u8>),
    /// DER-encoded ECDSA P-256 signature over SHA-256.
    EcdsaP256(Vec<u8>),
}

impl Proof {
    /// An HMAC-SHA256 tag.
    pub(crate) fn sha256(tag: Tag) -> Proof {
        Proof::Hmac(Hash::Sha256, tag.to_vec())
    }
}

/// What a scheme's request claims, decoded and checked, ready for the compare;
/// by default no timestamp, no event id, no kid and no alternate.
#[derive(Default)]
pub(crate) struct Claims {
    /// Every supported-version signature in the request.
    pub(crate) proofs: Vec<Proof>,
    /// What the signatures cover.
    pub(crate) signed: Signed,
    pub(crate) timestamp: Option<i64>,
    pub(crate) header_event_id: Option<String>,
    /// A key id named by the request; only that key may then match.
    pub(crate) kid: Option<String>,
    /// Another spelling of the signed bytes the sender may have used (Twilio: the
    /// URL with or without its port); a proof over either matches.
    pub(crate) alternate: Option<Signed>,
}

/// One wire format; each scheme file holds one implementation.
pub(crate) trait SchemeImpl {
    /// Reads the request into claims; fails with the first missing, malformed or
    /// non-integer-timestamp problem, before any signature is checked.
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError>;

    /// Signs `message` as the scheme's sender does.
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing;
}

/// HMAC-SHA256 of `before` and the message body under `secret`: the tag most
/// schemes send.
pub(crate) fn tag_sha256(secret: &Secret, before: Vec<u8>, body: &[u8]) -> Tag {
    let tag = codec::hmac(
        Hash::Sha256,
        secret.key(),
        &Signed::around_body(before),
        body,
    );
    Tag::try_from(tag).expect("HMAC-SHA256 tags are 32 bytes")
}

/// `headers` attached to the message's own body.
pub(crate) fn with_headers(message: &Message<'_>, headers: Vec<(String, String)>) -> Signing {
    Signing {
        headers,
        body: message.body.to_vec(),
    }
}

fn check_tolerance(timestamp: i64, now: i64, tolerance_secs: u64) -> Result<(), VerifyError> {
    let age = i128::from(now) - i128::from(timestamp);
    let tolerance = i128::from(tolerance_secs);
    let secs = |value: i128| i64::try_from(value).unwrap_or(i64::MAX);
    if age > tolerance {
        Err(VerifyError::StaleTimestamp {
            age_secs: secs(age),
        })
    } else if -age > tolerance {
        Err(VerifyError::FutureTimestamp {
            ahead_secs: secs(-age),
        })
    } else {
        Ok(())
    }
}
