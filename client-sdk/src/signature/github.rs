//! GitHub: `X-Hub-Signature-256: sha256=<hex>` over the raw body, no timestamp; the
//! delivery id comes from `X-GitHub-Delivery`. The legacy SHA-1 header is not accepted.

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Hub-Signature-256";
const DELIVERY: &str = "X-GitHub-Delivery";

/// The GitHub scheme.
pub(crate) struct Github;

impl SchemeImpl for Github {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        let hex = value
            .strip_prefix("sha256=")
            .ok_or(codec::malformed("no sha256= prefix"))?;
        Ok(Claims {
            proofs: vec![Proof::sha256(codec::decode_hex(hex)?)],
            signed: Signed::around_body(Vec::new()),
            timestamp: None,
            header_event_id: codec::optional_id(headers, DELIVERY)?,
            kid: None,
            alternate: None,
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let tag = tag_sha256(secret, Vec::new(), message.body);
        with_headers(
            message,
            vec![
                (SIGNATURE.to_owned(), format!("sha256={}", hex::encode(tag))),
                (DELIVERY.to_owned(), message.event_id.to_owned()),
            ],
        )
    }
}
