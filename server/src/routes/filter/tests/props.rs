//! Properties: a filter made from a body's own values matches it, and
//! `$not F` matches exactly when `F` does not.

use proptest::prelude::*;
use serde_json::{json, Map, Value};

use super::body_matches;

/// JSON values a few levels deep; field names never start with `$`.
fn value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<i64>().prop_map(Value::from),
        (-1.0e9f64..1.0e9).prop_map(Value::from),
        "[a-c]{0,3}".prop_map(Value::from),
    ];
    leaf.prop_recursive(3, 48, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::btree_map("[a-d]{1,2}", inner, 0..4)
                .prop_map(|m| Value::Object(m.into_iter().collect())),
        ]
    })
}

/// A filter drawn from `body` itself: a subset of its fields and elements,
/// some values wrapped in an operator that holds for them.
fn filter_from(body: &Value, choices: &mut impl Iterator<Item = u8>) -> Value {
    let mut pick = || choices.next().unwrap_or(0);
    match pick() % 6 {
        0 => return json!({ "$eq": body }),
        1 => return json!({ "$exist": true }),
        _ => {}
    }
    match body {
        Value::Object(fields) => {
            let mut kept = Map::new();
            for (name, field) in fields {
                if choices.next().unwrap_or(1) % 2 == 1 {
                    kept.insert(name.clone(), filter_from(field, choices));
                }
            }
            Value::Object(kept)
        }
        Value::Array(items) => {
            let mut kept = Vec::new();
            for item in items {
                if choices.next().unwrap_or(1) % 2 == 1 {
                    kept.push(filter_from(item, choices));
                }
            }
            Value::Array(kept)
        }
        primitive => match choices.next().unwrap_or(0) % 3 {
            0 => json!({ "$in": [primitive, "other"] }),
            1 => json!({ "$or": ["other", primitive] }),
            _ => primitive.clone(),
        },
    }
}

proptest! {
    #[test]
    fn a_filter_from_the_body_matches_it(body in value(), choices in prop::collection::vec(any::<u8>(), 64)) {
        let filter = filter_from(&body, &mut choices.into_iter());
        prop_assert!(body_matches(filter.clone(), body.clone()), "filter {filter} against {body}");
    }

    #[test]
    fn not_negates(filter in value(), body in value(), at in 0u8..3) {
        // At the root, at a present field, at a missing field.
        let (plain, negated, body) = match at {
            0 => (filter.clone(), json!({ "$not": filter }), body),
            1 => (json!({ "k": filter }), json!({ "k": { "$not": filter } }), json!({ "k": body })),
            _ => (json!({ "k": filter }), json!({ "k": { "$not": filter } }), json!({})),
        };
        prop_assert_eq!(body_matches(negated, body.clone()), !body_matches(plain, body));
    }
}
