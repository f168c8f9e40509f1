//! The event id of one body under its tenant's rule, and the rule every id
//! follows.

use std::collections::HashMap;

use hookd_sdk::signature::Verified;
use serde_json::{value::RawValue, Value};

use super::{invalid, missing, Body, Top};
use crate::{
    config::{EventIdRule, IdPart, CONTENT_EVENT_ID_PREFIX},
    ids::EventId,
    ingest::BodyError,
};

/// Longest event id accepted; it becomes a storage key and a header value.
pub const MAX_EVENT_ID_LEN: usize = 255;

/// The event id rule: 1 to 255 bytes of visible ASCII (`!` to `~`), so it
/// is a valid header value on every forward and a safe storage key.
pub(super) fn text(field: &str, value: &str) -> Result<EventId, BodyError> {
    let visible = value.bytes().all(|b| b.is_ascii_graphic());
    if value.is_empty() || value.len() > MAX_EVENT_ID_LEN || !visible {
        return Err(BodyError::InvalidEventId {
            field: field.to_owned(),
            max_bytes: MAX_EVENT_ID_LEN,
        });
    }
    Ok(EventId::new(value))
}

/// The event id of a delivery whose scheme carries none and whose tenant
/// names no place for one: [`CONTENT_EVENT_ID_PREFIX`] and the hex SHA-256
/// of the signed content, so a resend of the same signed delivery is the
/// same event.
pub fn content_event_id(verified: &Verified, body: &[u8]) -> String {
    format!(
        "{CONTENT_EVENT_ID_PREFIX}{}",
        hex::encode(verified.signature_digest(body))
    )
}

/// The id `rule` finds in `body` (whose top level is `top`).
///
/// The event id of one body under its tenant's rule: top-level fields, JSON
/// pointers (read without building the whole document), headers and form
/// fields, joined when the rule is a template; and the rule every id
/// follows.
pub(super) fn from_rule(
    rule: &EventIdRule,
    top: &Top<'_>,
    body: &Body<'_>,
) -> Result<EventId, BodyError> {
    let (name, parts) = match rule {
        EventIdRule::Parts { name, parts } => (name, parts),
        EventIdRule::SchemeHeader(header) => return Err(missing(header)),
        EventIdRule::Content => return Err(missing("event_id")),
    };
    if let [part] = parts.as_slice() {
        return text(&part.name(), &part_text(part, top, body)?);
    }
    let mut id = String::new();
    for part in parts {
        id.push_str(&part_text(part, top, body)?);
    }
    text(name, &id)
}

/// The text one part contributes.
fn part_text(part: &IdPart, top: &Top<'_>, body: &Body<'_>) -> Result<String, BodyError> {
    let name = || part.name();
    let raw = match part {
        IdPart::Literal(text) => return Ok(text.clone()),
        IdPart::Header(header) => {
            return body
                .headers
                .header(header)
                .map(str::to_owned)
                .ok_or_else(|| missing(&name()))
        }
        IdPart::Form(field) if body.form => top_field(top, field)?,
        IdPart::Form(_) => {
            return Err(invalid(
                &name(),
                "read from a form body (application/x-www-form-urlencoded)",
            ))
        }
        IdPart::Field(field) => top_field(top, field)?,
        IdPart::Pointer(pointer) => at_pointer(top, pointer),
    };
    let raw = raw
        .filter(|r| r.get() != "null")
        .ok_or_else(|| missing(&name()))?;
    match serde_json::from_str::<Value>(raw.get()) {
        Ok(Value::String(s)) => Ok(s),
        Ok(Value::Number(n)) if n.is_u64() || n.is_i64() => Ok(n.to_string()),
        _ => Err(invalid(&name(), "a string or an integer")),
    }
}

/// A top-level field: only an object has them.
fn top_field<'a>(top: &Top<'a>, field: &str) -> Result<Option<&'a RawValue>, BodyError> {
    match top {
        Top::Object(fields) => Ok(fields.get(field).copied()),
        Top::Array(_) => Err(BodyError::NotAnObject),
    }
}

/// The value `pointer` (RFC 6901, starting with `/`) names, if any.
fn at_pointer<'a>(top: &Top<'a>, pointer: &str) -> Option<&'a RawValue> {
    let mut tokens = pointer.split('/').skip(1).map(unescape);
    let first = tokens.next()?;
    let mut value = match top {
        Top::Object(fields) => fields.get(&first).copied(),
        Top::Array(items) => index(&first).and_then(|i| items.get(i).copied()),
    }?;
    for token in tokens {
        value = child(value, &token)?;
    }
    Some(value)
}

/// The member or item `token` of an object or array value.
fn child<'a>(value: &'a RawValue, token: &str) -> Option<&'a RawValue> {
    match value.get().as_bytes().first()? {
        b'{' => serde_json::from_str::<HashMap<String, &RawValue>>(value.get())
            .ok()?
            .remove(token),
        b'[' => {
            let items = serde_json::from_str::<Vec<&RawValue>>(value.get()).ok()?;
            items.get(index(token)?).copied()
        }
        _ => None,
    }
}

/// An array index token: digits, no leading zero.
fn index(token: &str) -> Option<usize> {
    let digits = !token.is_empty() && token.bytes().all(|b| b.is_ascii_digit());
    match digits && (token == "0" || !token.starts_with('0')) {
        true => token.parse().ok(),
        false => None,
    }
}

fn unescape(token: &str) -> String {
    token.replace("~1", "/").replace("~0", "~")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(body: &str, setting: &str) -> Result<String, BodyError> {
        let rule = EventIdRule::parse(setting).unwrap();
        let headers = [("X-Shop", "eu-1")];
        let body = Body {
            bytes: body.as_bytes(),
            form: false,
            headers: &headers,
        };
        let top = super::super::top(body.bytes)?;
        from_rule(&rule, &top, &body).map(|id| id.as_str().to_owned())
    }

    /// What a Standard Webhooks delivery of `body` verifies as.
    fn verified(body: &[u8]) -> Verified {
        use hookd_sdk::signature::{sign, verify, Scheme, Secret};
        let key = Secret::from_provider(
            Scheme::Standard,
            "k1",
            "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
        )
        .unwrap();
        let headers = sign(Scheme::Standard, &key, "msg_1", 1_700_000_000, body);
        verify(Scheme::Standard, &headers, body, &[key], 1_700_000_000, 300).unwrap()
    }

    #[test]
    fn a_content_id_is_the_prefixed_digest_of_the_signed_content() {
        let body = br#"[{"id":1}]"#;
        let id = content_event_id(&verified(body), body);
        let hex = id
            .strip_prefix(CONTENT_EVENT_ID_PREFIX)
            .expect("the prefix");
        assert_eq!(hex.len(), 64);
        assert!(hex
            .bytes()
            .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
        assert_eq!(text("id", &id).unwrap().as_str(), id, "a valid event id");
        assert_eq!(
            content_event_id(&verified(body), body),
            id,
            "a resend: the same"
        );
        let other = br#"[{"id":2}]"#;
        assert_ne!(content_event_id(&verified(other), other), id);
    }

    #[test]
    fn pointers_reach_into_objects_and_arrays() {
        let body = r#"{"data":{"a/b":{"~x":["zero",{"id":7}]}}}"#;
        assert_eq!(id(body, "/data/a~1b/~0x/1/id").unwrap(), "7");
        assert_eq!(id(body, "/data/a~1b/~0x/0").unwrap(), "zero");
        for absent in ["/data/nope", "/data/a~1b/~0x/01", "/data/a~1b/~0x/9"] {
            assert_eq!(
                id(body, absent),
                Err(BodyError::MissingField(absent.into()))
            );
        }
        assert_eq!(id(r#"[{"id":"e"}]"#, "/0/id").unwrap(), "e");
    }

    #[test]
    fn templates_join_their_parts_and_check_the_whole() {
        let body = r#"{"a":"x","b":2}"#;
        assert_eq!(id(body, "{/a}-{b}@{header:x-shop}").unwrap(), "x-2@eu-1");
        let long = format!(r#"{{"a":"{}"}}"#, "y".repeat(200));
        assert_eq!(
            id(&long, "{/a}{/a}"),
            Err(BodyError::InvalidEventId {
                field: "{/a}{/a}".into(),
                max_bytes: MAX_EVENT_ID_LEN
            })
        );
        assert!(matches!(
            id(body, "{/a}{/c}"),
            Err(BodyError::MissingField(f)) if f == "/c"
        ));
    }

    #[test]
    fn a_top_level_field_needs_an_object_and_a_form_field_a_form() {
        assert_eq!(id(r#"[{"id":1}]"#, "id"), Err(BodyError::NotAnObject));
        assert!(matches!(
            id(r#"{"Sid":"x"}"#, "form:Sid"),
            Err(BodyError::InvalidField { field, .. }) if field == "form:Sid"
        ));
        assert!(matches!(
            id(r#"{"a":{"b":1}}"#, "/a"),
            Err(BodyError::InvalidField { field, .. }) if field == "/a"
        ));
    }
}
