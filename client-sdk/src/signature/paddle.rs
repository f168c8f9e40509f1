//! Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=...]`, HMAC-SHA256
//! of `ts:body`.

use super::kv::{self, Shape};
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "Paddle-Signature";

const SHAPE: Shape = Shape {
    separator: ';',
    timestamp: "ts",
    signature: "h1",
    no_timestamp: "no ts= timestamp",
    no_signature: "no h1 signature",
};

/// The Paddle scheme.
///
/// Paddle Billing: `Paddle-Signature: ts=<unix>;h1=<hex>[;h1=...]`, HMAC-SHA256 of
/// `ts:body` keyed with the notification destination's secret key as written; during
/// a rotation Paddle sends one `h1` per live key. The event id is the body's
/// `event_id`.
pub(crate) struct Paddle;

impl SchemeImpl for Paddle {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let value = super::codec::required(delivery.headers, SIGNATURE)?;
        let header = kv::parse_shaped(value, &SHAPE)?;
        Ok(Claims {
            proofs: header.signatures.into_iter().map(Proof::sha256).collect(),
            signed: Signed::around_body(signed_prefix(header.raw_timestamp)),
            timestamp: Some(header.timestamp),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let tag = tag_sha256(secret, signed_prefix(&timestamp), message.body);
        let value = format!("ts={timestamp};h1={}", hex::encode(tag));
        with_headers(message, vec![(SIGNATURE.to_owned(), value)])
    }
}

/// The bytes before the body: `ts:`.
fn signed_prefix(timestamp: &str) -> Vec<u8> {
    format!("{timestamp}:").into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(value: &str) -> &'static str {
        match Paddle::parse(&Delivery::post(&[(SIGNATURE, value)], b"")) {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            Err(other) => panic!("{value:?}: unexpected {other:?}"),
            Ok(_) => panic!("{value:?}: unexpectedly parsed"),
        }
    }

    #[test]
    fn reads_every_h1_and_skips_other_hashes() {
        let (a, b) = ("ab".repeat(32), "cd".repeat(32));
        let value = format!("ts=1764480000;h1={a};h2=00;h1={b}");
        let claims = Paddle::parse(&Delivery::post(&[(SIGNATURE, value.as_str())], b"")).unwrap();
        assert_eq!(
            claims.proofs,
            vec![Proof::sha256([0xAB; 32]), Proof::sha256([0xCD; 32])]
        );
        assert_eq!(claims.timestamp, Some(1_764_480_000));
        assert_eq!(claims.signed.before, b"1764480000:");
    }

    #[test]
    fn rejects_malformed_headers() {
        let sig = "ab".repeat(32);
        assert_eq!(reason(&format!("h1={sig}")), "no ts= timestamp");
        assert_eq!(reason("ts=1;h2=00"), "no h1 signature");
        assert_eq!(reason(&format!("ts=1,h1={sig}")), "no h1 signature");
        assert_eq!(reason(&format!("t=1;v1={sig}")), "no ts= timestamp");
        assert_eq!(reason("ts=1;h1"), "entry is not key=value");
    }
}
