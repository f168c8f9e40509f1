//! Stripe: `Stripe-Signature: t=<unix>,v1=<hex>[,v1=...]` over `t.body`, keyed with the
//! `whsec_...` string literally; `v0` and unknown entries are ignored.

use super::codec::Tag;
use super::{kv, Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const SIGNATURE: &str = "Stripe-Signature";

/// The Stripe scheme.
pub(crate) struct Stripe;

impl SchemeImpl for Stripe {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        kv::claims(headers, SIGNATURE, false)
    }

    fn prefix(_: &str, timestamp: &str) -> Vec<u8> {
        kv::signed_prefix(timestamp)
    }

    fn emit(tag: &Tag, _: &Secret, _: &str, timestamp: &str) -> Vec<(String, String)> {
        let value = format!("t={timestamp},v1={}", hex::encode(tag));
        vec![(SIGNATURE.to_owned(), value)]
    }
}
