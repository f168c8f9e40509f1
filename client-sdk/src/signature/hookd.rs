//! hookd's own scheme: `X-Webhook-Signature: t=<unix>,v1=<hex>[,kid=<id>]` over
//! `t.body`; a `kid` pins verification to that one key.

use super::{
    kv, tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret,
    Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Webhook-Signature";

/// The hookd scheme.
pub(crate) struct Hookd;

impl SchemeImpl for Hookd {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        kv::claims(delivery.headers, SIGNATURE, true)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let tag = tag_sha256(secret, kv::signed_prefix(&timestamp), message.body);
        let mut value = format!("t={timestamp},v1={}", hex::encode(tag));
        if !secret.kid().is_empty() {
            value.push_str(",kid=");
            value.push_str(secret.kid());
        }
        with_headers(message, vec![(SIGNATURE.to_owned(), value)])
    }
}
