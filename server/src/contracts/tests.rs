//! Contracts as a sender meets them: each kind of violation refused with the
//! pointer that failed, extra fields accepted, versions checked under their
//! own schemas, the unknown-type policy, and bad contracts refused with the
//! key named.

use std::sync::Arc;

use serde_json::json;

use super::*;
use crate::{
    error::{ApiError, ErrorCode},
    ingest::{BodyError, IngestError},
};

const ORDER_PAID: &str = r#"{
  "type": "object",
  "required": ["event_id", "type", "data"],
  "properties": {
    "data": {
      "type": "object",
      "required": ["order"],
      "properties": {
        "order": {
          "type": "object",
          "required": ["id", "status"],
          "properties": {
            "id": {"type": "string"},
            "status": {"enum": ["paid", "refunded"]},
            "email": {"type": "string", "format": "email"},
            "paid_at": {"type": "string", "format": "date-time"}
          }
        }
      }
    }
  }
}"#;

fn example() -> serde_json::Value {
    json!({"event_id": "evt_1", "type": "order.paid", "data": {"order": {
        "id": "o_1", "status": "paid", "email": "a@example.com",
        "paid_at": "2026-11-30T10:00:00Z"}}})
}

fn spec(
    event_type: &str,
    version: Option<&str>,
    schema: &str,
    example: &serde_json::Value,
) -> ContractSpec {
    ContractSpec {
        event_type: event_type.into(),
        version: version.map(str::to_owned),
        schema: schema.into(),
        example: example.to_string(),
    }
}

fn set(policy: Policy, specs: Vec<ContractSpec>) -> TenantContracts {
    let contracts = specs
        .into_iter()
        .map(|s| Arc::new(Contract::compile(s, &policy, ContractSource::Config).unwrap()))
        .collect::<Vec<_>>();
    TenantContracts::new(policy, contracts)
}

fn order_paid() -> TenantContracts {
    set(
        Policy::default(),
        vec![spec("order.paid", None, ORDER_PAID, &example())],
    )
}

/// The sender's answer for `body`: `Ok` or (code, details).
fn answer(
    set: &TenantContracts,
    body: &serde_json::Value,
) -> Result<(), (ErrorCode, serde_json::Value)> {
    set.check(body.to_string().as_bytes()).result.map_err(|e| {
        let api = ApiError::from(IngestError::Body(e));
        (api.code, api.details)
    })
}

/// (pointer, keyword) of each listed violation.
fn pointers(details: &serde_json::Value) -> Vec<(String, String)> {
    details["violations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["pointer"].as_str().unwrap().to_owned(),
                v["keyword"].as_str().unwrap().to_owned(),
            )
        })
        .collect()
}

#[test]
fn nested_required_enum_and_format_each_refused_at_their_pointer() {
    let set = order_paid();
    let mut missing = example();
    missing["data"]["order"]
        .as_object_mut()
        .unwrap()
        .remove("status");
    let (code, details) = answer(&set, &missing).unwrap_err();
    assert_eq!(code, ErrorCode::ContractViolation);
    assert_eq!(code.status().as_u16(), 422);
    assert_eq!(
        pointers(&details),
        [("/data/order/status".into(), "required".into())]
    );
    assert_eq!(details["event_type"], "order.paid");
    assert_eq!(details["violations_total"], 1);

    let mut not_in_enum = example();
    not_in_enum["data"]["order"]["status"] = json!("lost");
    let (_, details) = answer(&set, &not_in_enum).unwrap_err();
    assert_eq!(
        pointers(&details),
        [("/data/order/status".into(), "enum".into())]
    );
    let expected = details["violations"][0]["expected"].as_str().unwrap();
    assert!(
        expected.contains("paid") && !expected.contains("lost"),
        "{expected}"
    );

    let mut bad_formats = example();
    bad_formats["data"]["order"]["email"] = json!("not-an-email");
    bad_formats["data"]["order"]["paid_at"] = json!("yesterday");
    let (_, details) = answer(&set, &bad_formats).unwrap_err();
    let mut got = pointers(&details);
    got.sort();
    assert_eq!(
        got,
        [
            ("/data/order/email".into(), "format".into()),
            ("/data/order/paid_at".into(), "format".into())
        ]
    );
    assert_eq!(details["violations_total"], 2);
}

#[test]
fn extra_fields_anywhere_are_accepted() {
    let mut body = example();
    body["new_top_level"] = json!({"any": [1, 2]});
    body["data"]["order"]["new_nested"] = json!(true);
    assert_eq!(answer(&order_paid(), &body), Ok(()));
}

#[test]
fn violations_are_bounded_in_number_and_size() {
    let schema = json!({"type": "object", "properties": {"items": {"type": "array", "items": {"type": "integer"}}}});
    let set = set(
        Policy::default(),
        vec![spec(
            "bulk",
            None,
            &schema.to_string(),
            &json!({"type": "bulk"}),
        )],
    );
    let long_key = "k".repeat(1000);
    let body = json!({"type": "bulk", "items": vec!["x"; 50], long_key.clone(): 1});
    let (_, details) = answer(&set, &body).unwrap_err();
    assert_eq!(
        details["violations"].as_array().unwrap().len(),
        MAX_VIOLATIONS
    );
    assert_eq!(details["violations_total"], 50);
    let required = json!({"type": "object", "required": [long_key]});
    let set = TenantContracts::new(
        Policy::default(),
        [Arc::new(
            Contract::compile(
                spec(
                    "big",
                    None,
                    &required.to_string(),
                    &json!({"type": "big", long_key.clone(): 1}),
                ),
                &Policy::default(),
                ContractSource::Config,
            )
            .unwrap(),
        )],
    );
    let (_, details) = answer(&set, &json!({"type": "big"})).unwrap_err();
    let pointer = details["violations"][0]["pointer"].as_str().unwrap();
    assert!(
        pointer.len() <= MAX_VIOLATION_TEXT && pointer.ends_with('…'),
        "{}",
        pointer.len()
    );
}

#[test]
fn versions_are_checked_under_their_own_schemas() {
    let v1 =
        r#"{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer"}}}"#;
    let v2 = r#"{"type":"object","required":["amount"],"properties":{"amount":{"type":"object","required":["value","currency"]}}}"#;
    let set = set(
        Policy::default(),
        vec![
            spec(
                "charge",
                Some("1"),
                v1,
                &json!({"type": "charge", "version": "1", "amount": 5}),
            ),
            spec(
                "charge",
                Some("2"),
                v2,
                &json!({"type": "charge", "version": 2, "amount": {"value": 5, "currency": "EUR"}}),
            ),
        ],
    );
    let v1_body = json!({"type": "charge", "version": "1", "amount": 5});
    let v2_body =
        json!({"type": "charge", "version": "2", "amount": {"value": 5, "currency": "EUR"}});
    assert_eq!(answer(&set, &v1_body), Ok(()));
    assert_eq!(answer(&set, &v2_body), Ok(()));
    let (code, details) =
        answer(&set, &json!({"type": "charge", "version": 2, "amount": 5})).unwrap_err();
    assert_eq!(
        (code, details["version"].as_str()),
        (ErrorCode::ContractViolation, Some("2"))
    );
    assert_eq!(pointers(&details), [("/amount".into(), "type".into())]);
    let (_, details) = answer(
        &set,
        &json!({"type": "charge", "version": "1", "amount": {"value": 5}}),
    )
    .unwrap_err();
    assert_eq!(details["version"], "1");
    assert_eq!(
        answer(&set, &json!({"type": "charge", "version": "3"})),
        Ok(()),
        "accept policy"
    );
}

#[test]
fn unknown_types_follow_the_policy_and_custom_fields() {
    let policy = Policy {
        type_field: "kind".into(),
        version_field: "v".into(),
        unknown: UnknownEventTypes::Reject,
    };
    let set = set(
        policy,
        vec![spec(
            "ping",
            Some("1"),
            "{}",
            &json!({"kind": "ping", "v": 1}),
        )],
    );
    assert_eq!(answer(&set, &json!({"kind": "ping", "v": 1})), Ok(()));
    let (code, details) = answer(&set, &json!({"kind": "pong", "v": 1})).unwrap_err();
    assert_eq!(code, ErrorCode::UnknownEventType);
    assert_eq!(code.status().as_u16(), 422);
    assert_eq!(
        details,
        json!({"field": "kind", "event_type": "pong", "version": "1"})
    );
    let (code, _) = answer(&set, &json!({"kind": "ping", "v": 2})).unwrap_err();
    assert_eq!(
        code,
        ErrorCode::UnknownEventType,
        "a version without a contract"
    );
    let (code, details) = answer(&set, &json!({"type": "ping"})).unwrap_err();
    assert_eq!(
        (code, details["event_type"].clone()),
        (ErrorCode::UnknownEventType, json!(null))
    );
    assert_eq!(
        order_paid()
            .check(br#"{"type":"other"}"#)
            .event_type
            .as_deref(),
        Some("other")
    );
}

#[test]
fn bad_contracts_are_refused_naming_the_key() {
    let policy = Policy::default();
    let compile = |s: ContractSpec| {
        Contract::compile(s, &policy, ContractSource::Config)
            .unwrap_err()
            .to_string()
    };
    let e = compile(spec("order.paid", None, "{not json", &example()));
    assert!(e.starts_with("schema: not valid JSON"), "{e}");
    let e = compile(spec("order.paid", None, r#"{"type": 5}"#, &example()));
    assert!(e.starts_with("schema: not a valid JSON Schema"), "{e}");
    let mut bad = example();
    bad["data"]["order"]["status"] = json!("lost");
    let e = compile(spec("order.paid", None, ORDER_PAID, &bad));
    assert!(
        e.starts_with("example: does not pass the schema at \"/data/order/status\""),
        "{e}"
    );
    let e = compile(spec("order.refunded", None, ORDER_PAID, &example()));
    assert!(e.starts_with("example: its \"type\" field"), "{e}");
    let e = compile(spec("order.paid", Some("2"), ORDER_PAID, &example()));
    assert!(e.starts_with("example: its \"version\" field"), "{e}");
    let lookahead = r#"{"properties": {"type": {"pattern": "^(?=order)"}}}"#;
    let e = compile(spec("order.paid", None, lookahead, &example()));
    assert!(
        e.starts_with("schema: not a valid JSON Schema"),
        "backtracking patterns are refused: {e}"
    );
    let e = compile(spec("order paid", None, ORDER_PAID, &example()));
    assert!(e.starts_with("type: "), "{e}");

    let config = |example: &str| ContractConfig {
        event_type: "order.paid".into(),
        version: None,
        schema: Some(ORDER_PAID.into()),
        schema_file: None,
        example: example.into(),
    };
    let e = ConfigContracts::compile(
        Policy::default(),
        &[config(&example().to_string()), config("{}")],
    )
    .unwrap_err()
    .to_string();
    assert!(e.starts_with("contracts[1] (order.paid): example:"), "{e}");
    let twice = [
        config(&example().to_string()),
        config(&example().to_string()),
    ];
    let e = ConfigContracts::compile(Policy::default(), &twice)
        .unwrap_err()
        .to_string();
    assert!(e.contains("already declared"), "{e}");
}

#[test]
fn a_refusal_says_what_to_fix_without_the_body() {
    let mut body = example();
    body["data"]["order"]["status"] = json!("secret-value");
    let e = order_paid()
        .check(body.to_string().as_bytes())
        .result
        .unwrap_err();
    assert!(matches!(e, BodyError::ContractViolation { .. }));
    let api = ApiError::from(IngestError::Body(e));
    assert!(
        !api.details.to_string().contains("secret-value"),
        "{}",
        api.details
    );
    assert!(!api.message.contains("secret-value"));
    assert_eq!(
        api.message,
        "event \"order.paid\" breaks its contract in 1 place(s); details.violations lists them"
    );
}

#[test]
fn without_contracts_only_the_type_is_read() {
    let none = TenantContracts::default();
    let verdict =
        none.check(br#"{"data":{"type":"inner"},"type":"order.paid","x":[1,{"y":null}]}"#);
    assert_eq!(verdict.event_type.as_deref(), Some("order.paid"));
    assert!(verdict.result.is_ok());
    assert_eq!(none.check(br#"{"type":7}"#).event_type, None);
    assert_eq!(
        none.check(br#"{"ty\u0070e":"escaped"}"#)
            .event_type
            .as_deref(),
        Some("escaped")
    );
}
