//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:<ts>:body`, with the timestamp in
//! `X-Slack-Request-Timestamp`.

use super::v0::V0;
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const V0: V0 = V0 {
    signature: "X-Slack-Signature",
    timestamp: "X-Slack-Request-Timestamp",
};

/// The Slack scheme.
pub(crate) struct Slack;

impl SchemeImpl for Slack {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        V0.claims(delivery.headers)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        V0.sign(secret, message)
    }
}
