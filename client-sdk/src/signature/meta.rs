//! Meta (Facebook, WhatsApp, Instagram): `X-Hub-Signature-256: sha256=<hex>`,
//! an HMAC-SHA256 of the raw body keyed with the app secret.

use super::codec::Hash;
use super::hub::Hub;
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const HUB: Hub = Hub {
    header: "X-Hub-Signature-256",
    prefix: "sha256=",
    no_prefix: "no sha256= prefix",
    hash: Hash::Sha256,
    delivery: None,
};

/// The Meta scheme.
///
/// Meta (Facebook, WhatsApp, Instagram): `X-Hub-Signature-256: sha256=<hex>`, an
/// HMAC-SHA256 of the raw body keyed with the app secret, no timestamp and no
/// event id (the server keys the event by the digest of the body). The legacy
/// SHA-1 `X-Hub-Signature` is not accepted.
pub(crate) struct Meta;

impl SchemeImpl for Meta {
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
    fn a_github_delivery_id_is_not_an_event_id() {
        let key =
            Secret::from_provider(Scheme::Meta, "k1", "0123456789abcdef0123456789abcdef").unwrap();
        let mut headers = sign(Scheme::Meta, &key, "evt_1", 0, b"{}");
        assert_eq!(headers.len(), 1, "{headers:?}");
        headers.push(("X-GitHub-Delivery".to_owned(), "d1".to_owned()));
        let verified = verify(Scheme::Meta, &headers, b"{}", &[key], 0, 0).unwrap();
        assert_eq!(verified.header_event_id, None);
    }
}
