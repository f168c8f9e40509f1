//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:<ts>:body`, with the timestamp in
//! `X-Slack-Request-Timestamp`.

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Slack-Signature";
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";

/// The Slack scheme.
pub(crate) struct Slack;

impl SchemeImpl for Slack {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        let hex = value
            .strip_prefix("v0=")
            .ok_or(codec::malformed("no v0= prefix"))?;
        let proofs = vec![Proof::sha256(codec::decode_hex(hex)?)];
        Ok(Claims {
            proofs,
            signed: Signed::around_body(signed_prefix(raw_timestamp)),
            timestamp: Some(codec::parse_timestamp(raw_timestamp)?),
            header_event_id: None,
            kid: None,
            alternate: None,
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let tag = tag_sha256(secret, signed_prefix(&timestamp), message.body);
        with_headers(
            message,
            vec![
                (SIGNATURE.to_owned(), format!("v0={}", hex::encode(tag))),
                (TIMESTAMP.to_owned(), timestamp),
            ],
        )
    }
}

/// The bytes before the body: `v0:timestamp:`.
fn signed_prefix(timestamp: &str) -> Vec<u8> {
    format!("v0:{timestamp}:").into_bytes()
}
