//! Reading a delivery by an [`HmacSpec`] (the signature, the timestamp, the
//! signed string) and signing one as its provider would.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use serde_json::Value;

use super::{HmacSpec, Kind, Location, Part, Slot, Unit};
use crate::error::VerifyError;
use crate::signature::{
    check_claims, codec, Claims, Delivery, HeaderLookup, HeaderSource, Message, Proof, Secret,
    Signed, Signing, Verified,
};

/// What a missing value is reported as, for each role a value plays.
const SIGNATURE: &str = "hmac.signature";
const TIMESTAMP: &str = "hmac.timestamp";
const SIGNED: &str = "hmac.signed";

/// Verifies one delivery against `spec`, as [`verify_delivery`] does for
/// the presets: the request is read fully before any MAC is computed, and the
/// tolerance is checked only once a key matched.
///
/// [`verify_delivery`]: crate::signature::verify_delivery
pub fn verify_hmac<H: HeaderSource + ?Sized>(
    spec: &HmacSpec,
    delivery: &Delivery<'_, H>,
    keys: &[Secret],
    now_unix: i64,
    tolerance_secs: u64,
) -> Result<Verified, VerifyError> {
    let claims = parse(spec, delivery)?;
    check_claims(claims, delivery.body, keys, now_unix, tolerance_secs)
}

/// Reads the request into claims, failing with the first missing or
/// malformed value.
fn parse<H: HeaderSource + ?Sized>(
    spec: &HmacSpec,
    delivery: &Delivery<'_, H>,
) -> Result<Claims, VerifyError> {
    let json = if spec.reads_body_json() {
        Some(serde_json::from_slice::<Value>(delivery.body).map_err(|_| {
            codec::malformed("the body is not JSON, so the values inside it cannot be read")
        })?)
    } else {
        None
    };
    let request = Request { delivery, json };
    let presented = request.value(&spec.signature, SIGNATURE)?;
    let presented = presented
        .strip_prefix(spec.prefix.as_str())
        .ok_or(codec::malformed(
            "the signature lacks its configured prefix",
        ))?;
    let raw_timestamp = match &spec.timestamp {
        Some((at, _)) => Some(request.value(at, TIMESTAMP)?),
        None => None,
    };
    let timestamp = match (&spec.timestamp, &raw_timestamp) {
        (Some((_, unit)), Some(raw)) => Some(seconds(codec::parse_timestamp(raw)?, *unit)),
        _ => None,
    };
    let (proof, signed) = match &spec.kind {
        Kind::Token => {
            if presented.is_empty() {
                return Err(codec::malformed("signature is empty"));
            }
            (
                Proof::Token(presented.as_bytes().to_vec()),
                Signed::around_body(Vec::new()),
            )
        }
        Kind::Hmac {
            hash,
            base64,
            signed,
        } => {
            let tag = if *base64 {
                codec::decode_base64_len(presented, hash.tag_len())?
            } else {
                codec::decode_hex_len(presented, hash.tag_len())?
            };
            let signed = render(&signed.parts, |part| match part {
                Slot::Timestamp => Ok(raw_timestamp.clone().unwrap_or_default()),
                Slot::Method => Ok(delivery.method.to_owned()),
                Slot::Url => delivery.url.map(str::to_owned).ok_or(codec::malformed(
                    "the signed string has {url} but the tenant has no public_url",
                )),
                Slot::Value(at) => request.value(at, SIGNED),
            })?;
            (Proof::Hmac(*hash, tag), signed)
        }
    };
    Ok(Claims {
        proofs: vec![proof],
        signed,
        timestamp,
        ..Claims::default()
    })
}

/// The parts around the body, each value from `value`.
fn render<E>(
    parts: &[Part],
    mut value: impl FnMut(&Slot) -> Result<String, E>,
) -> Result<Signed, E> {
    let mut signed = Signed::default();
    for part in parts {
        let target = if signed.body {
            &mut signed.after
        } else {
            &mut signed.before
        };
        match part {
            Part::Literal(text) => target.extend_from_slice(text.as_bytes()),
            Part::Body => signed.body = true,
            Part::Slot(slot) => target.extend_from_slice(value(slot)?.as_bytes()),
        }
    }
    Ok(signed)
}

fn seconds(value: i64, unit: Unit) -> i64 {
    match unit {
        Unit::Seconds => value,
        Unit::Milliseconds => value.div_euclid(1000),
    }
}

/// One delivery and its body read as JSON, when the spec reads inside it.
struct Request<'d, 'h, H: ?Sized> {
    delivery: &'d Delivery<'h, H>,
    json: Option<Value>,
}

impl<H: HeaderSource + ?Sized> Request<'_, '_, H> {
    /// The text at `at`; absent is reported as `role` missing.
    fn value(&self, at: &Location, role: &'static str) -> Result<String, VerifyError> {
        let missing = VerifyError::MissingSignature { header: role };
        match at {
            Location::Header(name) => match self.delivery.headers.lookup(name) {
                HeaderLookup::Absent => Err(missing),
                HeaderLookup::One(value) => Ok(value.to_owned()),
                HeaderLookup::Repeated => Err(codec::malformed(
                    "a signature header is sent more than once",
                )),
                HeaderLookup::NotText => {
                    Err(codec::malformed("a signature header is not ASCII text"))
                }
            },
            Location::Pointer(pointer) => {
                let found = self.json.as_ref().and_then(|json| json.pointer(pointer));
                match found {
                    None | Some(Value::Null) => Err(missing),
                    Some(value) => text_of(value).ok_or(codec::malformed(
                        "a value read from the body is not a string or a number",
                    )),
                }
            }
        }
    }
}

fn text_of(value: &Value) -> Option<String> {
    match value {
        Value::String(text) => Some(text.clone()),
        Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Why a message cannot be signed by a spec.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("cannot sign: {0}")]
pub struct CannotSign(String);

/// Signs `message` as a provider configured by `spec` does: the timestamp
/// (in the spec's unit) and the signature go where the spec reads them, in
/// a header or written into the JSON body. `sent` are the other headers the
/// request carries, for `{header:Name}` values; the result holds only the
/// headers signing adds.
pub fn sign_hmac(
    spec: &HmacSpec,
    secret: &Secret,
    message: &Message<'_>,
    sent: &[(String, String)],
) -> Result<Signing, CannotSign> {
    let mut headers = Vec::new();
    let mut json = match spec.reads_body_json() {
        true => Some(
            serde_json::from_slice::<Value>(message.body)
                .map_err(|_| CannotSign("the body is not JSON".to_owned()))?,
        ),
        false => None,
    };
    let timestamp = spec.timestamp.as_ref().map(|(at, unit)| {
        let value = match unit {
            Unit::Seconds => message.timestamp,
            Unit::Milliseconds => message.timestamp.saturating_mul(1000),
        };
        (at, value.to_string())
    });
    if let Some((at, value)) = &timestamp {
        put(at, value, &mut headers, json.as_mut())?;
    }
    let value = |at: &Location| -> Result<String, CannotSign> {
        let found = match at {
            Location::Header(name) => headers
                .iter()
                .chain(sent)
                .find(|(key, _)| key.eq_ignore_ascii_case(name))
                .map(|(_, value)| value.clone()),
            Location::Pointer(pointer) => json
                .as_ref()
                .and_then(|json| json.pointer(pointer))
                .and_then(text_of),
        };
        found.ok_or_else(|| CannotSign(format!("no value for {at:?}")))
    };
    let presented = match &spec.kind {
        Kind::Token => String::from_utf8_lossy(secret.key()).into_owned(),
        Kind::Hmac {
            hash,
            base64,
            signed,
        } => {
            let signed = render(&signed.parts, |part| match part {
                Slot::Timestamp => Ok(timestamp
                    .as_ref()
                    .map(|(_, t)| t.clone())
                    .unwrap_or_default()),
                Slot::Method => Ok(message.method.to_owned()),
                Slot::Url => message
                    .url
                    .map(str::to_owned)
                    .ok_or_else(|| CannotSign("the message has no url".to_owned())),
                Slot::Value(at) => value(at),
            })?;
            let tag = codec::hmac(*hash, secret.key(), &signed, message.body);
            if *base64 {
                STANDARD.encode(tag)
            } else {
                hex::encode(tag)
            }
        }
    };
    let signature = format!("{}{presented}", spec.prefix);
    put(&spec.signature, &signature, &mut headers, json.as_mut())?;
    let body = match json {
        Some(json)
            if spec.signature.in_body()
                || matches!(&spec.timestamp, Some((at, _)) if at.in_body()) =>
        {
            serde_json::to_vec(&json).map_err(|e| CannotSign(e.to_string()))?
        }
        _ => message.body.to_vec(),
    };
    Ok(Signing { headers, body })
}

/// Writes `value` at `at`: a header, or a string inside the JSON body
/// (making the objects on its way).
fn put(
    at: &Location,
    value: &str,
    headers: &mut Vec<(String, String)>,
    json: Option<&mut Value>,
) -> Result<(), CannotSign> {
    match at {
        Location::Header(name) => headers.push((name.clone(), value.to_owned())),
        Location::Pointer(pointer) => {
            let mut node = json.ok_or_else(|| CannotSign("the body is not JSON".to_owned()))?;
            for token in pointer.split('/').skip(1) {
                let key = token.replace("~1", "/").replace("~0", "~");
                node = node
                    .as_object_mut()
                    .ok_or_else(|| {
                        CannotSign(format!("{pointer} crosses a value that is not an object"))
                    })?
                    .entry(key)
                    .or_insert_with(|| Value::Object(Default::default()));
            }
            *node = Value::String(value.to_owned());
        }
    }
    Ok(())
}
