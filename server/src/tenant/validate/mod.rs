//! Body checks that run only after the signature is proven: the body's shape,
//! the event id and the fields the tenant requires.

mod event_id;
mod form;

use std::collections::HashMap;

use hookd_sdk::signature::HeaderSource;
use serde_json::{value::RawValue, Value};

#[cfg(test)]
use self::event_id::MAX_EVENT_ID_LEN;
pub use self::{event_id::content_event_id, form::is_form};
use crate::{config::EventIdRule, ids::EventId, ingest::BodyError};

/// Where the event id comes from for one delivery.
#[derive(Debug, Clone, Copy)]
pub enum EventIdSource<'a> {
    /// The tenant's rule (or its scheme's body field): fields, pointers,
    /// headers, form fields.
    Rule(&'a EventIdRule),
    /// A signed header the scheme defines, with its value when present.
    Header(&'a str, Option<&'a str>),
    /// Derived from the signed content (already made).
    Content(&'a str),
}

/// One delivery's body as the checks see it.
pub struct Body<'a> {
    /// The raw bytes, as stored.
    pub bytes: &'a [u8],
    /// Sent as `application/x-www-form-urlencoded`.
    pub form: bool,
    /// The request's headers, for `header:` parts of the event id.
    pub headers: &'a dyn HeaderSource,
}

/// What the checks found in an accepted body.
#[derive(Debug)]
pub struct Checked {
    /// The delivery's event id.
    pub event_id: EventId,
    /// A form body as a JSON object of strings, which contracts and route
    /// filters read instead of the raw bytes; `None` for a JSON body.
    pub form_json: Option<Vec<u8>>,
}

/// The top level of a JSON body.
enum Top<'a> {
    Object(HashMap<String, &'a RawValue>),
    Array(Vec<&'a RawValue>),
}

/// Validates the body and returns the event id (and a form's JSON view).
/// Required fields are top-level fields of an object (or a form): a body
/// that is a JSON array is accepted only when the tenant requires none and
/// its event id is not a top-level field.
///
/// Body checks that run only after the signature is proven: the body's shape
/// (a JSON object, a JSON array of events, or an
/// `application/x-www-form-urlencoded` form, read as a flat object of
/// strings: [`form`]), the event id from wherever the tenant's rule says
/// ([`event_id`]), and the fields the tenant requires. Unknown fields are
/// ignored. Rejections are [`BodyError`]s; `error.rs` decides what the
/// sender sees.
pub fn validate_body(
    body: &Body<'_>,
    id_source: EventIdSource<'_>,
    required: &[String],
) -> Result<Checked, BodyError> {
    let form_json = body.form.then(|| form::to_json(body.bytes)).transpose()?;
    let json = form_json.as_deref().unwrap_or(body.bytes);
    let top = top(json)?;
    let event_id = match id_source {
        EventIdSource::Header(name, value) => match value {
            Some(v) => event_id::text(name, v)?,
            None => return Err(missing(name)),
        },
        EventIdSource::Rule(rule) => event_id::from_rule(rule, &top, body)?,
        EventIdSource::Content(id) => EventId::new(id),
    };
    if !required.is_empty() {
        let Top::Object(fields) = &top else {
            return Err(BodyError::NotAnObject);
        };
        for field in required {
            let raw = fields
                .get(field.as_str())
                .filter(|r| r.get() != "null")
                .ok_or_else(|| missing(field))?;
            check_known_field(field, raw)?;
        }
    }
    Ok(Checked {
        event_id,
        form_json,
    })
}

/// The event id ingest would read from a pasted event (`bytes` and
/// `headers`) under `rule`, if it holds a valid one: what "Try a route"
/// shows it with. A content-derived id needs a signature, so it has none.
pub fn pasted_event_id(
    rule: &EventIdRule,
    bytes: &[u8],
    headers: &[(String, String)],
) -> Option<EventId> {
    let body = Body {
        bytes,
        form: is_form(headers.header("content-type")),
        headers: &headers,
    };
    let source = match rule {
        EventIdRule::SchemeHeader(name) => EventIdSource::Header(name, headers.header(name)),
        EventIdRule::Content => return None,
        rule => EventIdSource::Rule(rule),
    };
    validate_body(&body, source, &[])
        .ok()
        .map(|checked| checked.event_id)
}

/// The body's top level: an object or an array; anything else, or no JSON
/// at all, is refused.
fn top(json: &[u8]) -> Result<Top<'_>, BodyError> {
    let not_json = |e: serde_json::Error| match e.is_data() {
        true => None,
        false => Some(BodyError::NotJson(e.to_string())),
    };
    match serde_json::from_slice(json) {
        Ok(fields) => return Ok(Top::Object(fields)),
        Err(e) => {
            if let Some(e) = not_json(e) {
                return Err(e);
            }
        }
    }
    match serde_json::from_slice(json) {
        Ok(items) => Ok(Top::Array(items)),
        Err(e) => Err(not_json(e).unwrap_or(BodyError::NotAnObject)),
    }
}

/// `type` and `occurred_at` have a known shape; any other required field only
/// has to be present.
fn check_known_field(field: &str, raw: &RawValue) -> Result<(), BodyError> {
    match field {
        "type" => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::String(s)) if !s.is_empty() => Ok(()),
            _ => Err(invalid(field, "a non-empty string")),
        },
        "occurred_at" => match serde_json::from_str::<Value>(raw.get()) {
            Ok(Value::String(s))
                if time::OffsetDateTime::parse(
                    &s,
                    &time::format_description::well_known::Rfc3339,
                )
                .is_ok() =>
            {
                Ok(())
            }
            Ok(Value::Number(n)) if n.is_u64() => Ok(()),
            _ => Err(invalid(field, "an RFC 3339 date-time or Unix seconds")),
        },
        _ => Ok(()),
    }
}

fn missing(field: &str) -> BodyError {
    BodyError::MissingField(field.to_owned())
}

fn invalid(field: &str, expected: &'static str) -> BodyError {
    BodyError::InvalidField {
        field: field.to_owned(),
        expected,
    }
}

#[cfg(test)]
mod props;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::{ApiError, ErrorCode};

    /// The sender's answer to a body rejection.
    fn answer(e: BodyError) -> ApiError {
        ApiError::from(crate::ingest::IngestError::Body(e))
    }

    /// The checks of a JSON body with no headers.
    pub(super) fn json(bytes: &[u8]) -> Body<'_> {
        Body {
            bytes,
            form: false,
            headers: &[("", ""); 0],
        }
    }

    /// The rule of a top-level field.
    pub(super) fn field(name: &str) -> EventIdRule {
        EventIdRule::parse(name).unwrap()
    }

    fn body_id(body: &str, required: &[&str]) -> Result<EventId, ApiError> {
        let required: Vec<String> = required.iter().map(|s| s.to_string()).collect();
        let rule = field("event_id");
        validate_body(
            &json(body.as_bytes()),
            EventIdSource::Rule(&rule),
            &required,
        )
        .map(|checked| checked.event_id)
        .map_err(answer)
    }

    #[test]
    fn accepts_unknown_fields_and_reads_the_id() {
        let id = body_id(
            r#"{"event_id":"e1","type":"t","extra":{"x":[1,2]}}"#,
            &["type"],
        )
        .unwrap();
        assert_eq!(id.as_str(), "e1");
        assert_eq!(body_id(r#"{"event_id":42}"#, &[]).unwrap().as_str(), "42");
    }

    #[test]
    fn names_the_missing_or_invalid_field() {
        let e = body_id(r#"{"event_id":"e1"}"#, &["type"]).unwrap_err();
        assert_eq!(
            (e.code, e.details["field"].as_str()),
            (ErrorCode::MissingRequiredField, Some("type"))
        );
        let e = body_id(r#"{"type":"t"}"#, &[]).unwrap_err();
        assert_eq!(e.details["field"], "event_id");
        let e = body_id(r#"{"event_id":"e1","type":7}"#, &["type"]).unwrap_err();
        assert_eq!(
            (e.code, e.details["field"].as_str()),
            (ErrorCode::InvalidField, Some("type"))
        );
        let e = body_id(
            r#"{"event_id":"e1","occurred_at":"yesterday"}"#,
            &["occurred_at"],
        )
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidField);
        assert!(body_id(
            r#"{"event_id":"e1","occurred_at":"2026-11-30T05:20:00Z"}"#,
            &["occurred_at"]
        )
        .is_ok());
        let e = body_id(r#"{"event_id":["x"]}"#, &[]).unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidField);
    }

    #[test]
    fn rejects_broken_json_and_non_objects() {
        assert_eq!(
            body_id(r#"{"event_id":"e1""#, &[]).unwrap_err().code,
            ErrorCode::InvalidJson
        );
        assert_eq!(
            body_id("[1,2]", &[]).unwrap_err().code,
            ErrorCode::InvalidJson
        );
    }

    #[test]
    fn header_ids_are_bounded() {
        let long = "x".repeat(MAX_EVENT_ID_LEN + 1);
        let e = validate_body(
            &json(b"{}"),
            EventIdSource::Header("webhook-id", Some(&long)),
            &[],
        )
        .map_err(answer)
        .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidEventId);
        let id = validate_body(
            &json(b"{}"),
            EventIdSource::Header("webhook-id", Some("msg_1")),
            &[],
        )
        .unwrap();
        assert_eq!(id.event_id.as_str(), "msg_1");
    }

    #[test]
    fn a_pasted_event_has_the_id_its_rule_finds() {
        let headers = vec![("Webhook-Id".to_owned(), "msg_1".to_owned())];
        let header = EventIdRule::SchemeHeader("webhook-id");
        let found = pasted_event_id(&header, b"{}", &headers);
        assert_eq!(found.unwrap().as_str(), "msg_1");
        let pointer = EventIdRule::parse("/data/id").unwrap();
        let found = pasted_event_id(&pointer, br#"{"data":{"id":"e7"}}"#, &[]);
        assert_eq!(found.unwrap().as_str(), "e7");
        assert!(pasted_event_id(&pointer, b"{}", &[]).is_none());
        assert!(pasted_event_id(&EventIdRule::Content, b"{}", &headers).is_none());
    }

    #[test]
    fn arrays_are_bodies_unless_fields_are_required() {
        let body = json(br#"[{"id":"e1"}]"#);
        let id = validate_body(&body, EventIdSource::Content("sha256:ab"), &[]).unwrap();
        assert_eq!(id.event_id.as_str(), "sha256:ab");
        let e = validate_body(&body, EventIdSource::Content("sha256:ab"), &["type".into()])
            .map_err(answer)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidJson);
        for scalar in [&b"\"x\""[..], b"7", b"null"] {
            let e = validate_body(&json(scalar), EventIdSource::Content("c"), &[])
                .map_err(answer)
                .unwrap_err();
            assert_eq!(e.code, ErrorCode::InvalidJson);
        }
    }

    #[test]
    fn a_form_has_its_required_fields_and_a_json_view() {
        let rule = EventIdRule::parse("form:Sid").unwrap();
        let body = Body {
            bytes: b"Sid=SM1&type=sms",
            form: true,
            headers: &[("", ""); 0],
        };
        let checked = validate_body(&body, EventIdSource::Rule(&rule), &["type".into()]).unwrap();
        assert_eq!(checked.event_id.as_str(), "SM1");
        let view: serde_json::Value = serde_json::from_slice(&checked.form_json.unwrap()).unwrap();
        assert_eq!(view, serde_json::json!({"Sid": "SM1", "type": "sms"}));
        let broken = Body {
            bytes: b"Sid=%",
            ..body
        };
        let e = validate_body(&broken, EventIdSource::Rule(&rule), &[])
            .map_err(answer)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidForm);
    }
}
