//! hookd's own scheme: `X-Webhook-Signature: t=<unix>,v1=<hex>[,kid=<id>]` over
//! `t.body`; a `kid` pins verification to that one key.

use super::codec::Tag;
use super::{kv, Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Webhook-Signature";

/// The hookd scheme.
pub(crate) struct Hookd;

impl SchemeImpl for Hookd {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        kv::claims(headers, SIGNATURE, true)
    }

    fn prefix(_: &str, timestamp: &str) -> Vec<u8> {
        kv::signed_prefix(timestamp)
    }

    fn emit(tag: &Tag, secret: &Secret, _: &str, timestamp: &str) -> Vec<(String, String)> {
        let mut value = format!("t={timestamp},v1={}", hex::encode(tag));
        if !secret.kid().is_empty() {
            value.push_str(",kid=");
            value.push_str(secret.kid());
        }
        vec![(SIGNATURE.to_owned(), value)]
    }
}
