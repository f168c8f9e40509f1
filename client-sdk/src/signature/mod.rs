//! Webhook signature schemes: parse a delivery's headers, check its HMAC-SHA256
//! against the tenant's live keys and its timestamp against the tolerance; and sign.

mod codec;
mod github;
mod headers;
mod hookd;
mod kv;
#[cfg(test)]
mod props;
mod secret;
mod shopify;
mod slack;
mod standard;
mod stripe;
#[cfg(test)]
mod tests;

pub use crate::error::{InvalidSecret, UnknownScheme, VerifyError};
pub use headers::{HeaderLookup, HeaderSource};
pub use hookd_proto::domain::Scheme;
pub use secret::Secret;

use codec::Tag;

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
    /// Signed bytes that precede the body, for [`Verified::signature_digest`].
    prefix: Vec<u8>,
}

impl Verified {
    /// SHA-256 of the exact signed material (prefix and `body`, the body that was
    /// verified); the replay-cache key when there is no header event id. It does not
    /// depend on how the signature header was spelled, so a replay cannot dodge the
    /// cache by adding decoy signatures or changing hex case. Computed on demand: most
    /// deliveries are keyed by their event id and never need a second pass over the body.
    pub fn signature_digest(&self, body: &[u8]) -> [u8; 32] {
        codec::sha256(&self.prefix, body)
    }
}

/// Verify one delivery. `keys`: current first, then previous (if its overlap window is
/// open) — the caller decides which keys are live. Headers are parsed fully before any
/// MAC is computed, and the tolerance is checked only once a key matched.
pub fn verify(
    scheme: Scheme,
    headers: &(impl HeaderSource + ?Sized),
    body: &[u8],
    keys: &[Secret],
    now_unix: i64,
    tolerance_secs: u64,
) -> Result<Verified, VerifyError> {
    let claims = match scheme {
        Scheme::Standard => standard::Standard::parse(headers),
        Scheme::Hookd => hookd::Hookd::parse(headers),
        Scheme::Stripe => stripe::Stripe::parse(headers),
        Scheme::Github => github::Github::parse(headers),
        Scheme::Shopify => shopify::Shopify::parse(headers),
        Scheme::Slack => slack::Slack::parse(headers),
    }?;
    let key = keys
        .iter()
        .filter(|key| claims.kid.as_deref().is_none_or(|kid| key.kid() == kid))
        .find(|key| {
            let expected = codec::hmac_sha256(key.key(), &claims.prefix, body);
            codec::any_matches(&claims.signatures, &expected)
        })
        .ok_or(VerifyError::BadSignature)?;
    if let Some(timestamp) = claims.timestamp {
        check_tolerance(timestamp, now_unix, tolerance_secs)?;
    }
    Ok(Verified {
        kid: key.kid().to_owned(),
        timestamp: claims.timestamp,
        header_event_id: claims.header_event_id,
        prefix: claims.prefix,
    })
}

/// Headers a sender attaches (names in their canonical case). `event_id` is used by
/// schemes that carry it in a header (standard: `webhook-id`, github:
/// `X-GitHub-Delivery`, shopify: `X-Shopify-Webhook-Id`) and ignored otherwise; the kid
/// is emitted only by the hookd scheme (`,kid=<kid>`, when non-empty). `timestamp` must
/// be non-negative for the result to verify.
pub fn sign(
    scheme: Scheme,
    secret: &Secret,
    event_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(String, String)> {
    match scheme {
        Scheme::Standard => sign_with::<standard::Standard>(secret, event_id, timestamp, body),
        Scheme::Hookd => sign_with::<hookd::Hookd>(secret, event_id, timestamp, body),
        Scheme::Stripe => sign_with::<stripe::Stripe>(secret, event_id, timestamp, body),
        Scheme::Github => sign_with::<github::Github>(secret, event_id, timestamp, body),
        Scheme::Shopify => sign_with::<shopify::Shopify>(secret, event_id, timestamp, body),
        Scheme::Slack => sign_with::<slack::Slack>(secret, event_id, timestamp, body),
    }
}

/// What a scheme's headers claim, decoded and checked, ready for the MAC compare.
pub(crate) struct Claims {
    /// Every supported-version signature in the header(s), each exactly 32 bytes.
    pub(crate) signatures: Vec<Tag>,
    /// Signed bytes that precede the body, built from header values as received.
    pub(crate) prefix: Vec<u8>,
    pub(crate) timestamp: Option<i64>,
    pub(crate) header_event_id: Option<String>,
    /// A key id named by the header; only that key may then match.
    pub(crate) kid: Option<String>,
}

/// One wire format; each scheme file holds one implementation.
pub(crate) trait SchemeImpl {
    /// Reads the headers into claims; fails with the first missing, malformed or
    /// non-integer-timestamp problem, before any MAC is computed.
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError>;

    /// Bytes the MAC covers before the body, from the event id and timestamp text.
    fn prefix(event_id: &str, timestamp: &str) -> Vec<u8>;

    /// The headers that carry `tag` to the receiver.
    fn emit(tag: &Tag, secret: &Secret, event_id: &str, timestamp: &str) -> Vec<(String, String)>;
}

fn sign_with<S: SchemeImpl>(
    secret: &Secret,
    event_id: &str,
    timestamp: i64,
    body: &[u8],
) -> Vec<(String, String)> {
    let timestamp = timestamp.to_string();
    let tag = codec::hmac_sha256(secret.key(), &S::prefix(event_id, &timestamp), body);
    S::emit(&tag, secret, event_id, &timestamp)
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
