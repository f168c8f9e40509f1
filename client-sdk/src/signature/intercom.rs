//! Intercom: `X-Hub-Signature: sha1=<hex>`, an HMAC-SHA1 of the raw body keyed
//! with the app's client secret, no timestamp; the event id is the body's `id`.

use super::codec::Hash;
use super::hub::Hub;
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const HUB: Hub = Hub {
    header: "X-Hub-Signature",
    prefix: "sha1=",
    no_prefix: "no sha1= prefix",
    hash: Hash::Sha1,
    delivery: None,
};

/// The Intercom scheme.
pub(crate) struct Intercom;

impl SchemeImpl for Intercom {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        HUB.claims(delivery.headers)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        HUB.sign(secret, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{sign, verify, Scheme};

    #[test]
    fn signs_with_sha1_and_refuses_a_sha256_tag() {
        let key = Secret::from_provider(Scheme::Intercom, "k1", "client-secret").unwrap();
        let headers = sign(Scheme::Intercom, &key, "ignored", 0, b"{}");
        assert_eq!(headers[0].0, "X-Hub-Signature");
        assert_eq!(headers[0].1.len(), "sha1=".len() + 40, "{headers:?}");
        assert!(verify(
            Scheme::Intercom,
            &headers,
            b"{}",
            std::slice::from_ref(&key),
            0,
            0
        )
        .is_ok());
        let sha256 = sign(Scheme::Github, &key, "d", 0, b"{}")[0]
            .1
            .replace("sha256=", "sha1=");
        let forged = vec![("X-Hub-Signature".to_owned(), sha256)];
        let err = verify(Scheme::Intercom, &forged, b"{}", &[key], 0, 0).unwrap_err();
        assert_eq!(err.code(), "INVALID_SIGNATURE_FORMAT");
    }
}
