//! Slack: `X-Slack-Signature: v0=<hex>` over `v0:<ts>:body`, with the timestamp in
//! `X-Slack-Request-Timestamp`.

use super::codec::{self, Tag};
use super::{Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Slack-Signature";
const TIMESTAMP: &str = "X-Slack-Request-Timestamp";

/// The Slack scheme.
pub(crate) struct Slack;

impl SchemeImpl for Slack {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        let value = codec::required(headers, SIGNATURE)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        let hex = value
            .strip_prefix("v0=")
            .ok_or(codec::malformed("no v0= prefix"))?;
        let signatures = vec![codec::decode_hex(hex)?];
        Ok(Claims {
            signatures,
            prefix: Self::prefix("", raw_timestamp),
            timestamp: Some(codec::parse_timestamp(raw_timestamp)?),
            header_event_id: None,
            kid: None,
        })
    }

    fn prefix(_: &str, timestamp: &str) -> Vec<u8> {
        format!("v0:{timestamp}:").into_bytes()
    }

    fn emit(tag: &Tag, _: &Secret, _: &str, timestamp: &str) -> Vec<(String, String)> {
        vec![
            (SIGNATURE.to_owned(), format!("v0={}", hex::encode(tag))),
            (TIMESTAMP.to_owned(), timestamp.to_owned()),
        ]
    }
}
