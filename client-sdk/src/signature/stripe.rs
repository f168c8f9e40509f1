//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]` over `t.body`, keyed with the
//! `whsec_...` string literally; `v0` and unknown entries are ignored.

use super::{
    kv, tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret,
    Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "Stripe-Signature";

/// The Stripe scheme.
pub(crate) struct Stripe;

impl SchemeImpl for Stripe {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        kv::claims(delivery.headers, SIGNATURE, false)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let tag = tag_sha256(secret, kv::signed_prefix(&timestamp), message.body);
        let value = format!("t={timestamp},v1={}", hex::encode(tag));
        with_headers(message, vec![(SIGNATURE.to_owned(), value)])
    }
}
