//! Shopify: `X-Shopify-Hmac-Sha256: <base64>` over the raw body, no timestamp; the
//! event id comes from `X-Shopify-Webhook-Id`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Shopify-Hmac-Sha256";
const WEBHOOK_ID: &str = "X-Shopify-Webhook-Id";

/// The Shopify scheme.
pub(crate) struct Shopify;

impl SchemeImpl for Shopify {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        Ok(Claims {
            proofs: vec![Proof::sha256(codec::decode_base64(value)?)],
            signed: Signed::around_body(Vec::new()),
            header_event_id: codec::optional_id(headers, WEBHOOK_ID)?,
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let tag = tag_sha256(secret, Vec::new(), message.body);
        with_headers(
            message,
            vec![
                (SIGNATURE.to_owned(), STANDARD.encode(tag)),
                (WEBHOOK_ID.to_owned(), message.event_id.to_owned()),
            ],
        )
    }
}
