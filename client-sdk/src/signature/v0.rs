//! The `v0=<hex>` signature with its timestamp in a header of its own, HMAC-SHA256
//! of `v0:<timestamp>:body`: Slack's format, which Zoom copied under other names.

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, HeaderSource, Message, Proof, Secret, Signed, Signing,
};
use crate::error::VerifyError;

/// Where one sender puts the signature and the timestamp.
pub(crate) struct V0 {
    pub(crate) signature: &'static str,
    pub(crate) timestamp: &'static str,
}

impl V0 {
    /// Claims of a delivery signed this way.
    pub(crate) fn claims<H: HeaderSource + ?Sized>(
        &self,
        headers: &H,
    ) -> Result<Claims, VerifyError> {
        let value = codec::required(headers, self.signature)?;
        let raw_timestamp = codec::required(headers, self.timestamp)?;
        let hex = value
            .strip_prefix("v0=")
            .ok_or(codec::malformed("no v0= prefix"))?;
        let proofs = vec![Proof::sha256(codec::decode_hex(hex)?)];
        Ok(Claims {
            proofs,
            signed: Signed::around_body(signed_prefix(raw_timestamp)),
            timestamp: Some(codec::parse_timestamp(raw_timestamp)?),
            ..Claims::default()
        })
    }

    /// Signs `message` as such a sender does.
    pub(crate) fn sign(&self, secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let tag = tag_sha256(secret, signed_prefix(&timestamp), message.body);
        with_headers(
            message,
            vec![
                (
                    self.signature.to_owned(),
                    format!("v0={}", hex::encode(tag)),
                ),
                (self.timestamp.to_owned(), timestamp),
            ],
        )
    }
}

/// The bytes before the body: `v0:timestamp:`.
fn signed_prefix(timestamp: &str) -> Vec<u8> {
    format!("v0:{timestamp}:").into_bytes()
}
