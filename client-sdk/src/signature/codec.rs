//! Helpers every scheme shares: header presence, exact-length signature decoding,
//! timestamp parsing, HMAC-SHA256 and the constant-time comparison.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hmac::{Hmac, KeyInit, Mac};
use sha2::{Digest, Sha256};
use subtle::{Choice, ConstantTimeEq};

use super::{HeaderLookup, HeaderSource};
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

/// HMAC-SHA256 over `prefix || body`, without copying the body.
pub(crate) fn hmac_sha256(key: &[u8], prefix: &[u8], body: &[u8]) -> Tag {
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(key)
        .expect("HMAC-SHA256 accepts keys of any length");
    mac.update(prefix);
    mac.update(body);
    mac.finalize().into_bytes().into()
}

/// SHA-256 over `prefix || body`.
pub(crate) fn sha256(prefix: &[u8], body: &[u8]) -> [u8; 32] {
    let mut digest = Sha256::new();
    digest.update(prefix);
    digest.update(body);
    digest.finalize().into()
}

/// Whether any presented tag equals `expected`, checking all of them in constant time.
pub(crate) fn any_matches(presented: &[Tag], expected: &Tag) -> bool {
    presented
        .iter()
        .fold(Choice::from(0), |found, tag| found | tag.ct_eq(expected))
        .into()
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
    fn any_matches_finds_a_tag_in_any_position() {
        let wanted = [7; MAC_LEN];
        assert!(any_matches(&[[0; MAC_LEN], wanted], &wanted));
        assert!(!any_matches(&[[0; MAC_LEN]], &wanted));
        assert!(!any_matches(&[], &wanted));
    }
}
