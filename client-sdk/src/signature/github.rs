//! GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body, no timestamp; the
//! delivery id comes from `X-GitHub-Delivery`. The legacy SHA-1 header is not accepted.

use super::codec::Hash;
use super::hub::Hub;
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const HUB: Hub = Hub {
    header: "X-Hub-Signature-256",
    prefix: "sha256=",
    no_prefix: "no sha256= prefix",
    hash: Hash::Sha256,
    delivery: Some("X-GitHub-Delivery"),
};

/// The GitHub scheme.
pub(crate) struct Github;

impl SchemeImpl for Github {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        HUB.claims(delivery.headers)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        HUB.sign(secret, message)
    }
}
