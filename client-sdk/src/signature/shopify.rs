//! Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the raw body, no timestamp; the
//! event id comes from `X-Shopify-Webhook-Id`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec::{self, Tag};
use super::{Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Shopify-Hmac-Sha256";
const WEBHOOK_ID: &str = "X-Shopify-Webhook-Id";

/// The Shopify scheme.
pub(crate) struct Shopify;

impl SchemeImpl for Shopify {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        let value = codec::required(headers, SIGNATURE)?;
        Ok(Claims {
            signatures: vec![codec::decode_base64(value)?],
            prefix: Vec::new(),
            timestamp: None,
            header_event_id: codec::optional_id(headers, WEBHOOK_ID)?,
            kid: None,
        })
    }

    fn prefix(_: &str, _: &str) -> Vec<u8> {
        Vec::new()
    }

    fn emit(tag: &Tag, _: &Secret, event_id: &str, _: &str) -> Vec<(String, String)> {
        vec![
            (SIGNATURE.to_owned(), STANDARD.encode(tag)),
            (WEBHOOK_ID.to_owned(), event_id.to_owned()),
        ]
    }
}
