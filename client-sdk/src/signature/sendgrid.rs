//! SendGrid signed event webhook: an ECDSA P-256/SHA-256 signature of the
//! timestamp and the raw body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec;
use super::{
    pair, with_headers, Claims, Delivery, HeaderSource, KeyKind, Message, Proof, SchemeImpl,
    Secret, Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Twilio-Email-Event-Webhook-Signature";
const TIMESTAMP: &str = "X-Twilio-Email-Event-Webhook-Timestamp";

/// The SendGrid scheme.
///
/// SendGrid signed event webhook: `X-Twilio-Email-Event-Webhook-Signature`, the
/// base64 DER ECDSA P-256/SHA-256 signature of
/// `X-Twilio-Email-Event-Webhook-Timestamp` (as sent) followed by the raw body.
/// The tenant holds the verification key SendGrid shows (base64 DER
/// `SubjectPublicKeyInfo`); the body is a JSON array of events, the first one's
/// `sg_event_id` is the event id.
pub(crate) struct Sendgrid;

impl SchemeImpl for Sendgrid {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let signature = codec::required(headers, SIGNATURE)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        let signature = STANDARD
            .decode(signature)
            .map_err(|_| codec::malformed("signature is not base64"))?;
        if signature.is_empty() {
            return Err(codec::malformed("signature is empty"));
        }
        if !pair::is_der_ecdsa_p256(&signature) {
            return Err(codec::malformed(
                "signature is not a DER ECDSA P-256 signature",
            ));
        }
        Ok(Claims {
            proofs: vec![Proof::EcdsaP256(signature)],
            signed: Signed::around_body(raw_timestamp.as_bytes().to_vec()),
            timestamp: Some(codec::parse_timestamp(raw_timestamp)?),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let mut headers = Vec::new();
        if secret.kind() == KeyKind::P256Pkcs8 {
            let signed = Signed::around_body(timestamp.clone().into_bytes()).joined(message.body);
            let signature = pair::sign_p256(secret.key(), &signed);
            headers.push((SIGNATURE.to_owned(), STANDARD.encode(signature)));
        }
        headers.push((TIMESTAMP.to_owned(), timestamp));
        with_headers(message, headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(signature: &str) -> &'static str {
        let headers = [(SIGNATURE, signature), (TIMESTAMP, "1")];
        match Sendgrid::parse(&Delivery::post(&headers, b"[]")) {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            other => panic!("{signature:?}: {:?}", other.err()),
        }
    }

    #[test]
    fn the_signature_must_be_base64_der() {
        assert_eq!(reason("@@"), "signature is not base64");
        assert_eq!(reason(""), "signature is empty");
        assert_eq!(
            reason(&STANDARD.encode([9u8; 70])),
            "signature is not a DER ECDSA P-256 signature"
        );
    }

    #[test]
    fn signs_the_timestamp_as_sent_then_the_body() {
        let pkcs8 = pair::generate_p256();
        let key = Secret::of_kind("k", KeyKind::P256Pkcs8, pkcs8).unwrap();
        let message = Message {
            event_id: "e",
            timestamp: 1_764_480_000,
            body: b"[{}]",
            method: "POST",
            url: None,
        };
        let signing = Sendgrid::sign(&key, &message);
        let claims = Sendgrid::parse(&Delivery::post(&signing.headers, b"[{}]")).unwrap();
        assert_eq!(claims.signed.joined(b"[{}]"), b"1764480000[{}]");
        let Proof::EcdsaP256(signature) = &claims.proofs[0] else {
            panic!("{:?}", claims.proofs)
        };
        let public = key.verifying();
        assert!(pair::verify_p256(
            public.key(),
            b"1764480000[{}]",
            signature
        ));
    }
}
