//! Helpers every scheme shares: header presence, exact-length signature decoding,
//! timestamp parsing, the HMACs and the constant-time comparisons.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use sha2::{Digest, Sha256, Sha512};
use subtle::{Choice, ConstantTimeEq};

use super::{HeaderLookup, HeaderSource, Proof, Signed};
use crate::error::VerifyError;

/// Length of an HMAC-SHA256 tag; anything else is refused before comparing.
pub(crate) const MAC_LEN: usize = 32;

/// An HMAC-SHA256 tag, decoded from the wire or freshly computed.
pub(crate) type Tag = [u8; MAC_LEN];

/// Cap on signatures in one header, so a sender cannot make us run unbounded MACs.
pub(crate) const MAX_SIGNATURES: usize = 16;

/// Shorthand for the malformed-header error.
pub(crate) fn malformed(reason: &'static str) -> VerifyError {
    VerifyError::InvalidSignatureFormat { reason }
}

/// A header the scheme cannot do without; present but empty is left to the format
/// checks, which report it as malformed. Sent twice or not as ASCII text, it is
/// malformed: hookd never guesses which line the sender meant.
pub(crate) fn required<'h, H: HeaderSource + ?Sized>(
    headers: &'h H,
    name: &'static str,
) -> Result<&'h str, VerifyError> {
    single(headers, name)?.ok_or(VerifyError::MissingSignature { header: name })
}

/// An event-id header, kept only when it has a value; repeated or non-text is
/// malformed, as for [`required`].
pub(crate) fn optional_id<H: HeaderSource + ?Sized>(
    headers: &H,
    name: &str,
) -> Result<Option<String>, VerifyError> {
    Ok(single(headers, name)?
        .filter(|value| !value.is_empty())
        .map(str::to_owned))
}

/// The one value of header `name`, if sent.
fn single<'h, H: HeaderSource + ?Sized>(
    headers: &'h H,
    name: &str,
) -> Result<Option<&'h str>, VerifyError> {
    match headers.lookup(name) {
        HeaderLookup::Absent => Ok(None),
        HeaderLookup::One(value) => Ok(Some(value)),
        HeaderLookup::Repeated => Err(malformed("a signature header is sent more than once")),
        HeaderLookup::NotText => Err(malformed("a signature header is not ASCII text")),
    }
}

/// The secret token a provider sends as is in header `name` (GitLab, Okta): a
/// [`Proof::Token`], refused as malformed when empty.
pub(crate) fn token<H: HeaderSource + ?Sized>(
    headers: &H,
    name: &'static str,
) -> Result<Proof, VerifyError> {
    let token = required(headers, name)?;
    if token.is_empty() {
        return Err(malformed("the token is empty"));
    }
    Ok(Proof::Token(token.as_bytes().to_vec()))
}

/// The public URL a URL-signing scheme needs; without one (the tenant has no
/// `public_url`) no signature can be checked, which is reported as malformed.
pub(crate) fn public_url(url: Option<&str>) -> Result<&str, VerifyError> {
    url.ok_or(malformed(
        "the scheme signs the URL and no public URL is known",
    ))
}

/// Decodes a hex tag, insisting on exactly 32 bytes.
pub(crate) fn decode_hex(text: &str) -> Result<Tag, VerifyError> {
    let bytes = hex::decode(text).map_err(|_| malformed("signature is not hex"))?;
    exact_len(bytes)
}

/// Decodes a standard-alphabet base64 tag, insisting on exactly 32 bytes.
pub(crate) fn decode_base64(text: &str) -> Result<Tag, VerifyError> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|_| malformed("signature is not base64"))?;
    exact_len(bytes)
}

fn exact_len(bytes: Vec<u8>) -> Result<Tag, VerifyError> {
    if bytes.is_empty() {
        return Err(malformed("signature is empty"));
    }
    Tag::try_from(bytes).map_err(|_| malformed("signature is not 32 bytes"))
}

/// Parses a signed unix timestamp: ASCII digits only, no sign, no spaces, no fraction.
pub(crate) fn parse_timestamp(text: &str) -> Result<i64, VerifyError> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err(VerifyError::InvalidTimestamp);
    }
    text.parse().map_err(|_| VerifyError::InvalidTimestamp)
}

/// The hash an HMAC is computed with.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Hash {
    /// Only for the providers that still sign with it (Twilio, Intercom).
    Sha1,
    /// HMAC-SHA256, what most providers use.
    Sha256,
    /// HMAC-SHA512.
    Sha512,
}

impl Hash {
    /// Every hash, in a fixed order.
    pub const ALL: [Hash; 3] = [Hash::Sha1, Hash::Sha256, Hash::Sha512];

    /// Length of this hash's HMAC tag.
    pub fn tag_len(self) -> usize {
        match self {
            Hash::Sha1 => 20,
            Hash::Sha256 => 32,
            Hash::Sha512 => 64,
        }
    }
}

/// HMAC over `signed` around `body`, without copying the body.
pub(crate) fn hmac(hash: Hash, key: &[u8], signed: &Signed, body: &[u8]) -> Vec<u8> {
    fn run<M: Mac + KeyInit>(key: &[u8], signed: &Signed, body: &[u8]) -> Vec<u8> {
        let mut mac = <M as KeyInit>::new_from_slice(key).expect("HMAC accepts keys of any length");
        signed.feed(body, |part| mac.update(part));
        mac.finalize().into_bytes().to_vec()
    }
    match hash {
        Hash::Sha1 => run::<Hmac<Sha1>>(key, signed, body),
        Hash::Sha256 => run::<Hmac<Sha256>>(key, signed, body),
        Hash::Sha512 => run::<Hmac<Sha512>>(key, signed, body),
    }
}

/// HMAC-SHA256 of `message` alone (tokens some handshakes answer with).
pub(crate) fn hmac_sha256(key: &[u8], message: &[u8]) -> Vec<u8> {
    hmac(Hash::Sha256, key, &Signed::bytes(message.to_vec()), b"")
}

/// SHA-256 of `signed` around `body`.
pub(crate) fn sha256(signed: &Signed, body: &[u8]) -> [u8; 32] {
    let mut digest = Sha256::new();
    signed.feed(body, |part| digest.update(part));
    digest.finalize().into()
}

/// SHA-256 of `bytes`, hex-encoded (digests providers put in headers or URLs).
pub(crate) fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Whether `presented` equals `expected`, in time that depends on neither's contents.
pub(crate) fn equal(presented: &[u8], expected: &[u8]) -> Choice {
    presented.ct_eq(expected)
}

/// Whether a presented token is the secret itself, comparing digests so that
/// neither the contents nor the length of the secret shows in the timing.
pub(crate) fn token_matches(presented: &[u8], secret: &[u8]) -> Choice {
    Sha256::digest(presented).ct_eq(&Sha256::digest(secret))
}

/// Decodes a hex value of exactly `len` bytes.
pub(crate) fn decode_hex_len(text: &str, len: usize) -> Result<Vec<u8>, VerifyError> {
    let bytes = hex::decode(text).map_err(|_| malformed("signature is not hex"))?;
    sized(bytes, len)
}

/// Decodes a standard-alphabet base64 value of exactly `len` bytes.
pub(crate) fn decode_base64_len(text: &str, len: usize) -> Result<Vec<u8>, VerifyError> {
    let bytes = STANDARD
        .decode(text)
        .map_err(|_| malformed("signature is not base64"))?;
    sized(bytes, len)
}

fn sized(bytes: Vec<u8>, len: usize) -> Result<Vec<u8>, VerifyError> {
    if bytes.is_empty() {
        return Err(malformed("signature is empty"));
    }
    if bytes.len() != len {
        return Err(malformed("signature has the wrong length"));
    }
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tags_must_be_exactly_32_bytes() {
        let code = |r: Result<Tag, VerifyError>| r.unwrap_err().code();
        assert_eq!(code(decode_hex("")), "INVALID_SIGNATURE_FORMAT");
        assert_eq!(code(decode_hex("abcd")), "INVALID_SIGNATURE_FORMAT");
        assert_eq!(
            code(decode_hex(&"ab".repeat(33))),
            "INVALID_SIGNATURE_FORMAT"
        );
        assert_eq!(
            code(decode_hex(&"zz".repeat(32))),
            "INVALID_SIGNATURE_FORMAT"
        );
        assert_eq!(code(decode_base64("")), "INVALID_SIGNATURE_FORMAT");
        assert_eq!(code(decode_base64("AAAA")), "INVALID_SIGNATURE_FORMAT");
        assert_eq!(decode_hex(&"AB".repeat(32)), Ok([0xAB; 32]));
    }

    #[test]
    fn timestamps_are_plain_integers() {
        assert_eq!(parse_timestamp("1764480000"), Ok(1_764_480_000));
        for bad in [
            "",
            "17644800OO",
            "-1",
            "+1",
            " 1",
            "1.5",
            "99999999999999999999",
        ] {
            assert_eq!(
                parse_timestamp(bad),
                Err(VerifyError::InvalidTimestamp),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn tokens_match_only_the_secret() {
        assert!(bool::from(token_matches(b"s3cret", b"s3cret")));
        assert!(!bool::from(token_matches(b"s3cre", b"s3cret")));
        assert!(!bool::from(token_matches(b"", b"s3cret")));
    }

    #[test]
    fn hmacs_match_known_answers() {
        // RFC 4231 / RFC 2202 test case 2: key "Jefe".
        let signed = Signed::bytes(b"what do ya want for nothing?".to_vec());
        let hex = |hash| hex::encode(hmac(hash, b"Jefe", &signed, b""));
        assert_eq!(hex(Hash::Sha1), "effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        assert_eq!(
            hex(Hash::Sha256),
            "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        assert!(hex(Hash::Sha512).starts_with("164b7a7bfcf819e2e395fbe73b56e0a387bd6422"));
    }
}
