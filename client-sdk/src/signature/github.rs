//! GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body, no timestamp; the
//! delivery id comes from `X-GitHub-Delivery`. The legacy SHA-1 header is not accepted.

use super::codec::{self, Tag};
use super::{Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Hub-Signature-256";
const DELIVERY: &str = "X-GitHub-Delivery";

/// The GitHub scheme.
pub(crate) struct Github;

impl SchemeImpl for Github {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        let value = codec::required(headers, SIGNATURE)?;
        let hex = value
            .strip_prefix("sha256=")
            .ok_or(codec::malformed("no sha256= prefix"))?;
        Ok(Claims {
            signatures: vec![codec::decode_hex(hex)?],
            prefix: Vec::new(),
            timestamp: None,
            header_event_id: codec::optional_id(headers, DELIVERY)?,
            kid: None,
        })
    }

    fn prefix(_: &str, _: &str) -> Vec<u8> {
        Vec::new()
    }

    fn emit(tag: &Tag, _: &Secret, event_id: &str, _: &str) -> Vec<(String, String)> {
        vec![
            (SIGNATURE.to_owned(), format!("sha256={}", hex::encode(tag))),
            (DELIVERY.to_owned(), event_id.to_owned()),
        ]
    }
}
