//! Mailgun: the hex HMAC-SHA256 of a timestamp and a token, carried inside the
//! body (JSON or form), under the webhook signing key.

use serde_json::{json, Map, Value};

use super::codec;
use super::{Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret, Signed, Signing};
use crate::error::VerifyError;

const SIGNATURE: &str = "signature";
const TIMESTAMP: &str = "timestamp";
const TOKEN: &str = "token";

/// Length of the token hookd's sender makes, as Mailgun's.
const TOKEN_LEN: usize = 50;

/// The Mailgun scheme.
///
/// Mailgun: the signature travels inside the body. JSON webhooks carry
/// `{"signature": {"timestamp", "token", "signature"}, "event-data": {..}}`; the
/// older form-encoded webhooks carry `timestamp`, `token` and `signature` fields.
/// A body that is not a JSON object is read as a form.
/// The signature is the hex HMAC-SHA256 of the timestamp followed by the token,
/// under the webhook signing key: the event data itself is not covered. The token
/// is unique per delivery, so the digest of what is signed keys replays.
pub(crate) struct Mailgun;

impl SchemeImpl for Mailgun {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let fields = match serde_json::from_slice::<Value>(delivery.body) {
            Ok(Value::Object(event)) => json_fields(&event)?,
            _ => form_fields(delivery.body)?,
        };
        if fields.token.is_empty() {
            return Err(codec::malformed("the token is empty"));
        }
        let tag = codec::decode_hex(&fields.signature)?;
        let timestamp = codec::parse_timestamp(&fields.timestamp)?;
        Ok(Claims {
            proofs: vec![Proof::sha256(tag)],
            signed: Signed::bytes(signed_bytes(&fields.timestamp, &fields.token)),
            timestamp: Some(timestamp),
            ..Claims::default()
        })
    }

    /// A JSON object body gets a `signature` member; any other body is taken as a
    /// form and gets the three fields appended.
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = message.timestamp.to_string();
        let token = token_for(message.event_id, &timestamp);
        let tag = hex::encode(codec::hmac_sha256(
            secret.key(),
            &signed_bytes(&timestamp, &token),
        ));
        let body = match serde_json::from_slice::<Value>(message.body) {
            Ok(Value::Object(mut event)) => {
                let signature = json!({ TIMESTAMP: timestamp, TOKEN: token, SIGNATURE: tag });
                event.insert(SIGNATURE.to_owned(), signature);
                serde_json::to_vec(&event).expect("a JSON object serializes")
            }
            _ => {
                let mut form = form_urlencoded::Serializer::new(String::new());
                form.append_pair(TIMESTAMP, &timestamp)
                    .append_pair(TOKEN, &token)
                    .append_pair(SIGNATURE, &tag);
                let fields = form.finish();
                let mut body = message.body.to_vec();
                if !body.is_empty() {
                    body.push(b'&');
                }
                body.extend_from_slice(fields.as_bytes());
                body
            }
        };
        Signing {
            headers: Vec::new(),
            body,
        }
    }
}

/// The signature fields exactly as sent.
struct Fields {
    timestamp: String,
    token: String,
    signature: String,
}

/// The signed bytes: the timestamp as sent, then the token.
fn signed_bytes(timestamp: &str, token: &str) -> Vec<u8> {
    format!("{timestamp}{token}").into_bytes()
}

/// A token unique to the event and the moment, of Mailgun's length.
fn token_for(event_id: &str, timestamp: &str) -> String {
    let mut token = codec::sha256_hex(format!("{event_id}.{timestamp}").as_bytes());
    token.truncate(TOKEN_LEN);
    token
}

/// The fields of a JSON webhook's `signature` object.
fn json_fields(event: &Map<String, Value>) -> Result<Fields, VerifyError> {
    let signature = event
        .get(SIGNATURE)
        .ok_or(VerifyError::MissingSignature { header: SIGNATURE })?;
    if !signature.is_object() {
        return Err(codec::malformed("signature is not an object"));
    }
    let field = |name: &'static str| match signature.get(name) {
        None | Some(Value::Null) => Err(VerifyError::MissingSignature { header: name }),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Number(number)) if name == TIMESTAMP => Ok(number.to_string()),
        Some(_) => Err(codec::malformed("a signature field is not a string")),
    };
    let signature = field(SIGNATURE)?;
    Ok(Fields {
        timestamp: field(TIMESTAMP)?,
        token: field(TOKEN)?,
        signature,
    })
}

/// The fields of a form body (any body that is not a JSON object).
fn form_fields(body: &[u8]) -> Result<Fields, VerifyError> {
    let (mut timestamp, mut token, mut signature) = (None, None, None);
    for (name, value) in form_urlencoded::parse(body) {
        let slot = match name.as_ref() {
            TIMESTAMP => &mut timestamp,
            TOKEN => &mut token,
            SIGNATURE => &mut signature,
            _ => continue,
        };
        if slot.replace(value.into_owned()).is_some() {
            return Err(codec::malformed("a signature field is sent more than once"));
        }
    }
    let signature = signature.ok_or(VerifyError::MissingSignature { header: SIGNATURE })?;
    Ok(Fields {
        timestamp: timestamp.ok_or(VerifyError::MissingSignature { header: TIMESTAMP })?,
        token: token.ok_or(VerifyError::MissingSignature { header: TOKEN })?,
        signature,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(body: &str) -> Result<Claims, VerifyError> {
        let headers: [(&str, &str); 0] = [];
        Mailgun::parse(&Delivery::post(&headers, body.as_bytes()))
    }

    fn reason(body: &str) -> &'static str {
        match parse(body) {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            other => panic!("{body}: {:?}", other.err()),
        }
    }

    #[test]
    fn reads_json_and_form_alike() {
        let tag = "ab".repeat(32);
        let json = format!(
            r#"{{"signature":{{"timestamp":"12","token":"tk","signature":"{tag}"}},"event-data":{{}}}}"#
        );
        let form = format!("event=opened&timestamp=12&token=tk&signature={tag}");
        let numeric = json.replace(r#""timestamp":"12""#, r#""timestamp":12"#);
        for body in [json, form, numeric] {
            let claims = parse(&body).unwrap();
            assert_eq!(claims.signed, Signed::bytes(b"12tk".to_vec()), "{body}");
            assert_eq!(claims.timestamp, Some(12));
        }
    }

    #[test]
    fn missing_and_malformed_fields_are_told_apart() {
        let tag = "ab".repeat(32);
        assert_eq!(
            parse(r#"{"event-data":{}}"#).err(),
            Some(VerifyError::MissingSignature { header: SIGNATURE })
        );
        assert_eq!(
            parse(&format!("timestamp=1&signature={tag}")).err(),
            Some(VerifyError::MissingSignature { header: TOKEN })
        );
        assert_eq!(
            parse("{not json").err(),
            Some(VerifyError::MissingSignature { header: SIGNATURE })
        );
        assert_eq!(reason(r#"{"signature":"x"}"#), "signature is not an object");
        assert_eq!(
            reason(r#"{"signature":{"timestamp":"1","token":7,"signature":"00"}}"#),
            "a signature field is not a string"
        );
        assert_eq!(
            reason(&format!("timestamp=1&token=a&token=b&signature={tag}")),
            "a signature field is sent more than once"
        );
        assert_eq!(
            reason(&format!("timestamp=1&token=&signature={tag}")),
            "the token is empty"
        );
        assert_eq!(
            parse(&format!("timestamp=1.5&token=a&signature={tag}")).err(),
            Some(VerifyError::InvalidTimestamp)
        );
    }

    #[test]
    fn signing_puts_the_signature_into_the_body() {
        let key = Secret::from_bytes("k", b"key-1".to_vec());
        let message = |body: &'static [u8]| Message {
            event_id: "evt_1",
            timestamp: 1_764_480_000,
            body,
            method: "POST",
            url: None,
        };
        for body in [
            &br#"{"event-data":{"id":"evt_1"}}"#[..],
            b"event=opened",
            b"",
        ] {
            let signing = Mailgun::sign(&key, &message(body));
            assert!(signing.headers.is_empty());
            let claims = Mailgun::parse(&Delivery::post(&signing.headers, &signing.body)).unwrap();
            assert_eq!(claims.timestamp, Some(1_764_480_000));
            let token = token_for("evt_1", "1764480000");
            assert_eq!(token.len(), TOKEN_LEN);
            assert_eq!(
                claims.signed,
                Signed::bytes(signed_bytes("1764480000", &token))
            );
        }
        let signed = Mailgun::sign(&key, &message(br#"{"event-data":{"id":"evt_1"}}"#)).body;
        let value: Value = serde_json::from_slice(&signed).unwrap();
        assert_eq!(value.pointer("/event-data/id"), Some(&json!("evt_1")));
    }
}
