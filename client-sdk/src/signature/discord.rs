//! Discord interactions: `X-Signature-Ed25519: <hex>`, an Ed25519 signature of
//! `X-Signature-Timestamp` followed by the raw body.

use super::codec;
use super::{
    pair, with_headers, Claims, Delivery, HeaderSource, KeyKind, Message, Proof, SchemeImpl,
    Secret, Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Signature-Ed25519";
const TIMESTAMP: &str = "X-Signature-Timestamp";

/// The Discord scheme.
///
/// Discord interactions: `X-Signature-Ed25519: <hex>`, the application key's
/// Ed25519 signature of `X-Signature-Timestamp` (as sent) followed by the raw body.
/// The tenant holds the public key Discord shows (hex); the event id is the
/// body's `id`.
pub(crate) struct Discord;

impl SchemeImpl for Discord {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let signature = codec::required(headers, SIGNATURE)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        let signature = codec::decode_hex_len(signature, pair::ED25519_SIGNATURE_LEN)?;
        Ok(Claims {
            proofs: vec![Proof::Ed25519(signature)],
            signed: Signed::around_body(raw_timestamp.as_bytes().to_vec()),
            timestamp: Some(codec::parse_timestamp(raw_timestamp)?),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let mut headers = Vec::new();
        if secret.kind() == KeyKind::Ed25519Seed {
            let signed = Signed::around_body(timestamp.clone().into_bytes()).joined(message.body);
            let signature = pair::sign_ed25519(secret.key(), &signed);
            headers.push((SIGNATURE.to_owned(), hex::encode(signature)));
        }
        headers.push((TIMESTAMP.to_owned(), timestamp));
        with_headers(message, headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(signature: &str, timestamp: &str) -> Result<Claims, VerifyError> {
        let headers = [(SIGNATURE, signature), (TIMESTAMP, timestamp)];
        Discord::parse(&Delivery::post(&headers, b"{}"))
    }

    #[test]
    fn signs_the_timestamp_as_sent_then_the_body() {
        let claims = parse(&"ab".repeat(64), "1764480000").unwrap();
        assert_eq!(claims.signed.joined(b"{}"), b"1764480000{}");
        assert_eq!(claims.timestamp, Some(1_764_480_000));
    }

    #[test]
    fn the_signature_must_be_64_bytes_of_hex() {
        let reason = |signature: &str| match parse(signature, "1") {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            other => panic!("{signature:?}: {:?}", other.err()),
        };
        assert_eq!(reason(&"ab".repeat(63)), "signature has the wrong length");
        assert_eq!(reason(&"zz".repeat(64)), "signature is not hex");
        assert_eq!(reason(""), "signature is empty");
        assert_eq!(
            parse(&"ab".repeat(64), "1.5").err(),
            Some(VerifyError::InvalidTimestamp)
        );
    }

    #[test]
    fn a_public_key_cannot_sign() {
        let public = Secret::of_kind("k", KeyKind::Ed25519Public, vec![1; 32]).unwrap();
        let message = Message {
            event_id: "e",
            timestamp: 1,
            body: b"{}",
            method: "POST",
            url: None,
        };
        let headers = Discord::sign(&public, &message).headers;
        assert_eq!(headers, vec![(TIMESTAMP.to_owned(), "1".to_owned())]);
    }
}
