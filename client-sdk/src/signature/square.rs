//! Square: `x-square-hmacsha256-signature: <base64>`, HMAC-SHA256 of the
//! notification URL followed by the raw body.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "x-square-hmacsha256-signature";

/// The Square scheme.
///
/// Square: `x-square-hmacsha256-signature: <base64>`, HMAC-SHA256 of the notification
/// URL (exactly as registered, query included) followed by the raw body, keyed with
/// the subscription's signature key as written. No timestamp; the event id is the
/// body's `event_id`. The legacy SHA-1 `x-square-signature` is not accepted.
pub(crate) struct Square;

impl SchemeImpl for Square {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let value = codec::required(delivery.headers, SIGNATURE)?;
        let proofs = vec![Proof::sha256(codec::decode_base64(value)?)];
        let url = codec::public_url(delivery.url)?;
        Ok(Claims {
            proofs,
            signed: Signed::around_body(url.as_bytes().to_vec()),
            ..Claims::default()
        })
    }

    /// Signs over `message.url`, or over the body alone when there is none
    /// (which no receiver will accept).
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let url = message.url.unwrap_or_default().as_bytes().to_vec();
        let tag = tag_sha256(secret, url, message.body);
        with_headers(message, vec![(SIGNATURE.to_owned(), STANDARD.encode(tag))])
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{sign_message, verify_delivery, Scheme};

    const URL: &str = "https://hooks.example.com/hooks/acme?x=1";

    fn message(url: Option<&str>) -> Message<'_> {
        Message {
            event_id: "e",
            timestamp: 0,
            body: b"{}",
            method: "POST",
            url,
        }
    }

    fn check(headers: &[(String, String)], url: Option<&str>) -> Result<(), VerifyError> {
        let key = Secret::from_provider(Scheme::Square, "k1", "sig-key").unwrap();
        let delivery = Delivery {
            method: "POST",
            url,
            headers,
            body: b"{}",
        };
        verify_delivery(Scheme::Square, &delivery, &[key], 0, 0).map(drop)
    }

    #[test]
    fn the_url_is_signed_query_and_all() {
        let key = Secret::from_provider(Scheme::Square, "k1", "sig-key").unwrap();
        let headers = sign_message(Scheme::Square, &key, &message(Some(URL))).headers;
        assert_eq!(check(&headers, Some(URL)), Ok(()));
        let other = URL.replace("x=1", "x=2");
        assert_eq!(
            check(&headers, Some(&other)),
            Err(VerifyError::BadSignature)
        );
    }

    #[test]
    fn without_a_public_url_nothing_verifies() {
        let key = Secret::from_provider(Scheme::Square, "k1", "sig-key").unwrap();
        let headers = sign_message(Scheme::Square, &key, &message(None)).headers;
        let err = check(&headers, None).unwrap_err();
        assert_eq!(
            err,
            codec::malformed("the scheme signs the URL and no public URL is known")
        );
    }
}
