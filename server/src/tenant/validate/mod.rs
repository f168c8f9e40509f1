//! Body checks that run only after the signature is proven: JSON shape, the
//! event id, and the fields the tenant requires. Unknown fields are ignored.
//! Rejections are [`BodyError`]s; `error.rs` decides what the sender sees.

use std::collections::HashMap;

use serde_json::{value::RawValue, Value};

use crate::{ids::EventId, ingest::BodyError};

/// Longest event id accepted; it becomes a storage key and a header value.
pub const MAX_EVENT_ID_LEN: usize = 255;

/// Where the event id comes from for one tenant.
#[derive(Debug, Clone, Copy)]
pub enum EventIdSource<'a> {
    /// A signed header the scheme defines, with its value when present.
    Header(&'a str, Option<&'a str>),
    /// A top-level body field.
    BodyField(&'a str),
}

/// Validates the body and returns the event id.
pub fn validate_body(
    body: &[u8],
    id_source: EventIdSource<'_>,
    required: &[String],
) -> Result<EventId, BodyError> {
    let fields: HashMap<String, &RawValue> = serde_json::from_slice(body).map_err(|e| {
        if e.is_data() {
            BodyError::NotAnObject
        } else {
            BodyError::NotJson(e.to_string())
        }
    })?;
    let event_id = match id_source {
        EventIdSource::Header(name, value) => match value {
            Some(v) => event_id_text(name, v)?,
            None => return Err(missing(name)),
        },
        EventIdSource::BodyField(name) => {
            let found = match name.strip_prefix('/') {
                Some(_) => pointed(body, name),
                None => fields
                    .get(name)
                    .and_then(|raw| serde_json::from_str::<Value>(raw.get()).ok()),
            };
            match found.filter(|value| !value.is_null()) {
                None => return Err(missing(name)),
                Some(Value::String(s)) => event_id_text(name, &s)?,
                Some(Value::Number(n)) if n.is_u64() || n.is_i64() => {
                    event_id_text(name, &n.to_string())?
                }
                Some(_) => return Err(invalid(name, "a string or an integer")),
            }
        }
    };
    for field in required {
        let raw = fields
            .get(field.as_str())
            .filter(|r| r.get() != "null")
            .ok_or_else(|| missing(field))?;
        check_known_field(field, raw)?;
    }
    Ok(event_id)
}

/// The value a JSON pointer (RFC 6901) names in `body`, for event ids nested
/// inside it (`/event-data/id`).
fn pointed(body: &[u8], pointer: &str) -> Option<Value> {
    let mut value: Value = serde_json::from_slice(body).ok()?;
    value.pointer_mut(pointer).map(Value::take)
}

/// The event id rule: 1 to 255 bytes of visible ASCII (`!` to `~`), so it
/// is a valid header value on every forward and a safe storage key.
fn event_id_text(field: &str, value: &str) -> Result<EventId, BodyError> {
    let visible = value.bytes().all(|b| b.is_ascii_graphic());
    if value.is_empty() || value.len() > MAX_EVENT_ID_LEN || !visible {
        return Err(BodyError::InvalidEventId {
            field: field.to_owned(),
            max_bytes: MAX_EVENT_ID_LEN,
        });
    }
    Ok(EventId::new(value))
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

    fn body_id(body: &str, required: &[&str]) -> Result<EventId, ApiError> {
        let required: Vec<String> = required.iter().map(|s| s.to_string()).collect();
        validate_body(
            body.as_bytes(),
            EventIdSource::BodyField("event_id"),
            &required,
        )
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
    fn a_field_starting_with_a_slash_is_a_json_pointer() {
        let source = EventIdSource::BodyField("/event-data/id");
        let id = validate_body(br#"{"event-data":{"id":"e7"}}"#, source, &[]).unwrap();
        assert_eq!(id.as_str(), "e7");
        let e = answer(validate_body(br#"{"event-data":{}}"#, source, &[]).unwrap_err());
        assert_eq!(
            (e.code, e.details["field"].as_str()),
            (ErrorCode::MissingRequiredField, Some("/event-data/id"))
        );
        let e = answer(validate_body(br#"{"event-data":{"id":[1]}}"#, source, &[]).unwrap_err());
        assert_eq!(e.code, ErrorCode::InvalidField);
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
        let e = validate_body(b"{}", EventIdSource::Header("webhook-id", Some(&long)), &[])
            .map_err(answer)
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::InvalidEventId);
        let id = validate_body(
            b"{}",
            EventIdSource::Header("webhook-id", Some("msg_1")),
            &[],
        )
        .unwrap();
        assert_eq!(id.as_str(), "msg_1");
    }
}
