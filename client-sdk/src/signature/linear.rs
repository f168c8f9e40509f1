//! Linear: `Linear-Signature: <hex>`, HMAC-SHA256 of the raw body, with the
//! timestamp signed inside the body.

use serde::Deserialize;

use super::codec;
use super::{
    tag_sha256, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret, Signed, Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "Linear-Signature";
const DELIVERY: &str = "Linear-Delivery";
const TIMESTAMP_FIELD: &str = "webhookTimestamp";

/// The Linear scheme.
///
/// Linear: `Linear-Signature: <hex>`, HMAC-SHA256 of the raw body keyed with the
/// webhook's signing secret as written. The timestamp is signed inside the body:
/// `webhookTimestamp`, unix milliseconds (Linear's `Linear-Timestamp` header is
/// not signed and is ignored). The event id is the `Linear-Delivery` header.
pub(crate) struct Linear;

impl SchemeImpl for Linear {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        let proofs = vec![Proof::sha256(codec::decode_hex(value)?)];
        let header_event_id = codec::optional_id(headers, DELIVERY)?;
        Ok(Claims {
            proofs,
            signed: Signed::around_body(Vec::new()),
            timestamp: Some(body_timestamp(delivery.body)?),
            header_event_id,
            ..Claims::default()
        })
    }

    /// Sets `webhookTimestamp` in a JSON object body (re-serialized, keys sorted),
    /// then signs it; a body that is not a JSON object is signed as it is and
    /// will not verify.
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let body = with_timestamp(message.body, message.timestamp);
        let tag = tag_sha256(secret, Vec::new(), &body);
        Signing {
            headers: vec![
                (SIGNATURE.to_owned(), hex::encode(tag)),
                (DELIVERY.to_owned(), message.event_id.to_owned()),
            ],
            body,
        }
    }
}

/// The body's top-level `webhookTimestamp`; other fields are skipped unread.
#[derive(Deserialize)]
struct Stamped {
    #[serde(rename = "webhookTimestamp")]
    webhook_timestamp: Option<serde_json::Number>,
}

/// Unix seconds of the body's `webhookTimestamp` (milliseconds, an integer).
/// A body that is not a JSON object, or has no such integer, has no timestamp.
fn body_timestamp(body: &[u8]) -> Result<i64, VerifyError> {
    // A derived struct also reads a JSON array positionally; Linear sends objects.
    if body.trim_ascii_start().first() != Some(&b'{') {
        return Err(VerifyError::InvalidTimestamp);
    }
    let stamped: Stamped =
        serde_json::from_slice(body).map_err(|_| VerifyError::InvalidTimestamp)?;
    let millis = stamped
        .webhook_timestamp
        .and_then(|number| number.as_i64())
        .ok_or(VerifyError::InvalidTimestamp)?;
    Ok(millis.div_euclid(1000))
}

/// `body` with `webhookTimestamp` set to `timestamp` in milliseconds, when it is a
/// JSON object.
fn with_timestamp(body: &[u8], timestamp: i64) -> Vec<u8> {
    let Ok(mut object) = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(body)
    else {
        return body.to_vec();
    };
    let millis = timestamp.saturating_mul(1000);
    object.insert(TIMESTAMP_FIELD.to_owned(), millis.into());
    serde_json::to_vec(&object).expect("a JSON map serializes")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_timestamp_from_the_body_in_millis() {
        let body = br#"{"action":"create","data":{"webhookTimestamp":1},"webhookTimestamp":1764480000999}"#;
        assert_eq!(body_timestamp(body), Ok(1_764_480_000));
        for bad in [
            &br#"{"webhookTimestamp":"1764480000000"}"#[..],
            br#"{"webhookTimestamp":1764480000000.5}"#,
            br#"{"webhookTimestamp":null}"#,
            br#"{"data":{"webhookTimestamp":1764480000000}}"#,
            br#"{"webhookTimestamp":1,"webhookTimestamp":2}"#,
            b"[1764480000000]",
            b"not json",
        ] {
            let text = String::from_utf8_lossy(bad);
            assert_eq!(
                body_timestamp(bad),
                Err(VerifyError::InvalidTimestamp),
                "{text}"
            );
        }
    }

    #[test]
    fn signing_stamps_the_body_and_the_header_is_bare_hex() {
        let key = Secret::from_bytes("k1", b"lin_wh_secret".to_vec());
        let message = Message {
            event_id: "d1",
            timestamp: 1_764_480_000,
            body: br#"{"type":"Issue","webhookTimestamp":5}"#,
            method: "POST",
            url: None,
        };
        let signing = Linear::sign(&key, &message);
        assert_eq!(
            signing.body,
            br#"{"type":"Issue","webhookTimestamp":1764480000000}"#
        );
        assert_eq!(signing.headers[0].1.len(), 64, "{:?}", signing.headers);
        let claims = Linear::parse(&Delivery::post(&signing.headers, &signing.body)).unwrap();
        assert_eq!(claims.timestamp, Some(1_764_480_000));
        assert_eq!(claims.header_event_id.as_deref(), Some("d1"));
    }
}
