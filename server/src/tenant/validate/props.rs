//! Property tests of the body checks: any body and any event-id source give
//! an event id that follows the rule or a documented code, never a panic.

use proptest::prelude::*;
use serde_json::json;

use super::{
    tests::{field, json},
    validate_body, EventIdSource, MAX_EVENT_ID_LEN,
};
use crate::{
    error::{ApiError, ErrorCode},
    ingest::IngestError,
};

/// The event id rule as documented: 1 to 255 bytes of visible ASCII.
fn follows_rule(id: &str) -> bool {
    (1..=MAX_EVENT_ID_LEN).contains(&id.len()) && id.bytes().all(|b| b.is_ascii_graphic())
}

const BODY_CODES: [ErrorCode; 4] = [
    ErrorCode::InvalidJson,
    ErrorCode::MissingRequiredField,
    ErrorCode::InvalidField,
    ErrorCode::InvalidEventId,
];

/// Bodies that are often JSON objects, sometimes nearly, sometimes noise.
fn body() -> impl Strategy<Value = Vec<u8>> {
    let field = prop_oneof![
        Just("event_id".to_owned()),
        Just("type".to_owned()),
        Just("occurred_at".to_owned()),
        "[a-z_]{1,8}",
    ];
    let value = prop_oneof![
        any::<String>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<f64>().prop_map(|f| json!(f)),
        Just(serde_json::Value::Null),
        Just(json!(["x"])),
        Just(json!({"nested": true})),
        Just(json!("2026-11-30T05:20:00Z")),
    ];
    prop_oneof![
        prop::collection::btree_map(field, value, 0..5)
            .prop_map(|map| serde_json::to_vec(&map).unwrap()),
        prop::collection::vec(any::<u8>(), 0..64),
        any::<String>().prop_map(String::into_bytes),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any body with any id source and required fields: an id that follows
    /// the rule, or a documented body code.
    #[test]
    fn any_body_gives_a_valid_id_or_a_documented_code(
        body in body(),
        header in prop::option::of(any::<String>()),
        from_header in any::<bool>(),
        required in prop::collection::vec(
            prop::sample::select(vec!["type".to_owned(), "occurred_at".to_owned(), "x".to_owned()]),
            0..3,
        ),
    ) {
        let rule = field("event_id");
        let source = match from_header {
            true => EventIdSource::Header("webhook-id", header.as_deref()),
            false => EventIdSource::Rule(&rule),
        };
        match validate_body(&json(&body), source, &required) {
            Ok(c) => prop_assert!(follows_rule(c.event_id.as_str()), "{:?}", c.event_id.as_str()),
            Err(e) => {
                let code = ApiError::from(IngestError::Body(e)).code;
                prop_assert!(BODY_CODES.contains(&code), "{:?}", code)
            }
        }
    }

    /// A string event id is accepted exactly when it follows the rule, and
    /// then unchanged.
    #[test]
    fn string_ids_follow_the_rule(id in prop_oneof!["[!-~]{1,300}", any::<String>()]) {
        let body = serde_json::to_vec(&json!({ "event_id": id })).unwrap();
        let rule = field("event_id");
        match validate_body(&json(&body), EventIdSource::Rule(&rule), &[]) {
            Ok(got) => {
                prop_assert!(follows_rule(&id));
                prop_assert_eq!(got.event_id.as_str(), id.as_str());
            }
            Err(e) => {
                prop_assert!(!follows_rule(&id));
                prop_assert_eq!(ApiError::from(IngestError::Body(e)).code, ErrorCode::InvalidEventId);
            }
        }
        let header = validate_body(&json(b"{}"), EventIdSource::Header("webhook-id", Some(&id)), &[]);
        prop_assert_eq!(header.is_ok(), follows_rule(&id));
    }

    /// Integer ids become their decimal text.
    #[test]
    fn integer_ids_are_their_decimal_text(n in any::<i64>()) {
        let body = serde_json::to_vec(&json!({ "event_id": n })).unwrap();
        let rule = field("event_id");
        let id = validate_body(&json(&body), EventIdSource::Rule(&rule), &[]).unwrap();
        prop_assert_eq!(id.event_id.as_str(), n.to_string());
    }
}
