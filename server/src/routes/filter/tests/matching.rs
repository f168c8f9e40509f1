//! Matching a body: primitives, objects, arrays and each operator.

use serde_json::json;

use super::body_matches;

#[test]
fn primitives_match_by_equality() {
    assert!(body_matches(json!(false), json!(false)));
    assert!(!body_matches(json!(false), json!(true)));
    assert!(body_matches(
        json!({"type": "order/created"}),
        json!({"type": "order/created", "order": {"id": 123}})
    ));
    assert!(!body_matches(
        json!({"type": "order/created"}),
        json!({"type": "order/updated"})
    ));
    assert!(body_matches(json!({"n": 1}), json!({"n": 1.0})));
    assert!(!body_matches(json!({"n": 1}), json!({"n": "1"})));
    assert!(body_matches(json!({"ok": true}), json!({"ok": true})));
}

#[test]
fn null_matches_a_present_null_only() {
    assert!(body_matches(json!({"x": null}), json!({"x": null})));
    assert!(!body_matches(json!({"x": null}), json!({})));
    assert!(!body_matches(json!({"x": null}), json!({"x": 0})));
}

#[test]
fn nested_objects_match_field_by_field() {
    let body = json!({"product": {"title": "A product", "inventory": 0}});
    assert!(body_matches(
        json!({"product": {"inventory": 0}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"product": {"inventory": 1}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"product": {"missing": 0}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"product": {"inventory": {"deeper": 0}}}),
        body
    ));
}

#[test]
fn an_object_filter_against_an_array_matches_some_element() {
    let body =
        json!({"order": {"id": 123, "items": [{"id": 455}, {"id": 456, "title": "My product"}]}});
    assert!(body_matches(
        json!({"order": {"items": {"id": 456}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"order": {"items": {"id": 457}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"order": {"items": {"id": 455, "title": "My product"}}}),
        body
    ));
}

#[test]
fn a_primitive_against_an_array_means_contains() {
    let body = json!({"product": {"tags": ["gift", "something"]}});
    assert!(body_matches(
        json!({"product": {"tags": "gift"}}),
        body.clone()
    ));
    assert!(!body_matches(json!({"product": {"tags": "other"}}), body));
    assert!(!body_matches(
        json!({"tags": "gift"}),
        json!({"tags": {"gift": true}})
    ));
}

#[test]
fn an_array_against_an_array_means_contains_all() {
    let body = json!({"product": {"tags": ["gift", "something", "another"]}});
    assert!(body_matches(
        json!({"product": {"tags": ["gift", "something"]}}),
        body.clone()
    ));
    assert!(body_matches(json!({"product": {"tags": []}}), body.clone()));
    assert!(!body_matches(
        json!({"product": {"tags": ["gift", "missing"]}}),
        body
    ));
    assert!(!body_matches(
        json!({"tags": ["gift"]}),
        json!({"tags": "gift"})
    ));
}

#[test]
fn an_empty_object_matches_any_present_value() {
    assert!(body_matches(json!({"a": {}}), json!({"a": 5})));
    assert!(body_matches(json!({"a": {}}), json!({"a": {"b": 1}})));
    assert!(!body_matches(json!({"a": {}}), json!({"b": 1})));
    assert!(body_matches(json!({}), json!("anything")));
}

#[test]
fn eq_and_neq_compare_deeply() {
    let body = json!({"tags": ["gift"], "meta": {"a": 1, "b": [true, null]}});
    assert!(body_matches(
        json!({"tags": {"$eq": ["gift"]}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"tags": {"$eq": "gift"}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"meta": {"$eq": {"b": [true, null], "a": 1.0}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"meta": {"$eq": {"a": 1}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"meta": {"$eq": {"a": 1, "b": [null, true]}}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"meta": {"a": {"$eq": 1}}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"meta": {"a": {"$neq": 2}}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"meta": {"a": {"$neq": "1"}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"meta": {"a": {"$neq": 1}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"meta": {"z": {"$neq": 1}}}),
        body.clone()
    ));
    assert!(!body_matches(json!({"meta": {"z": {"$eq": null}}}), body));
}

#[test]
fn in_with_a_string_is_contains() {
    assert!(body_matches(
        json!({"type": {"$in": "order"}}),
        json!({"type": "new_order.created"})
    ));
    assert!(!body_matches(
        json!({"type": {"$in": "order"}}),
        json!({"type": "invoice.paid"})
    ));
    assert!(body_matches(
        json!({"roles": {"$in": "admin"}}),
        json!({"roles": ["user", "admin"]})
    ));
    assert!(!body_matches(
        json!({"roles": {"$in": "admin"}}),
        json!({"roles": ["administrator"]})
    ));
    assert!(!body_matches(json!({"n": {"$in": "1"}}), json!({"n": 1})));
    assert!(!body_matches(json!({"n": {"$in": "1"}}), json!({})));
}

#[test]
fn in_with_a_list_is_membership() {
    let filter = json!({"type": {"$in": ["charge.succeeded", "invoice.paid", 7, null]}});
    assert!(body_matches(
        filter.clone(),
        json!({"type": "invoice.paid"})
    ));
    assert!(body_matches(filter.clone(), json!({"type": 7.0})));
    assert!(body_matches(filter.clone(), json!({"type": null})));
    assert!(body_matches(
        filter.clone(),
        json!({"type": ["x", "charge.succeeded"]})
    ));
    assert!(!body_matches(
        filter.clone(),
        json!({"type": "charge.failed"})
    ));
    assert!(!body_matches(filter.clone(), json!({"type": {"x": 1}})));
    assert!(!body_matches(filter, json!({})));
}

#[test]
fn nin_negates_in_where_in_applies() {
    assert!(body_matches(
        json!({"tags": {"$nin": "spam"}}),
        json!({"tags": ["ham"]})
    ));
    assert!(!body_matches(
        json!({"tags": {"$nin": "spam"}}),
        json!({"tags": ["spam"]})
    ));
    assert!(body_matches(
        json!({"type": {"$nin": "test"}}),
        json!({"type": "live.event"})
    ));
    assert!(!body_matches(
        json!({"type": {"$nin": "test"}}),
        json!({"type": "a.test.event"})
    ));
    assert!(body_matches(
        json!({"type": {"$nin": ["a", "b"]}}),
        json!({"type": "c"})
    ));
    assert!(!body_matches(
        json!({"type": {"$nin": ["a", "b"]}}),
        json!({"type": "a"})
    ));
    assert!(!body_matches(json!({"n": {"$nin": "1"}}), json!({"n": 1})));
    assert!(!body_matches(
        json!({"o": {"$nin": ["a"]}}),
        json!({"o": {"k": "a"}})
    ));
    assert!(!body_matches(json!({"t": {"$nin": ["a"]}}), json!({})));
}

#[test]
fn ordering_on_numbers_and_strings() {
    let body = json!({"amount": 1000, "big": 18446744073709551615u64, "neg": -5, "at": "2024-05-01T10:00:00Z"});
    assert!(body_matches(
        json!({"amount": {"$gte": 1000}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"amount": {"$gt": 1000}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"amount": {"$gt": 999.5}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"amount": {"$lte": 1000}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"amount": {"$lt": 1000}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"big": {"$gt": 9223372036854775807i64}}),
        body.clone()
    ));
    assert!(body_matches(json!({"neg": {"$lt": 0}}), body.clone()));
    assert!(body_matches(
        json!({"at": {"$gte": "2024-01-01T00:00:00Z"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"at": {"$lt": "2024-01-01T00:00:00Z"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"amount": {"$gte": "100"}}),
        body.clone()
    ));
    assert!(!body_matches(json!({"at": {"$gte": 0}}), body.clone()));
    assert!(!body_matches(json!({"missing": {"$lt": 0}}), body));
    assert!(!body_matches(json!({"a": {"$gt": 0}}), json!({"a": [5]})));
}

#[test]
fn starts_with_and_ends_with_take_strings() {
    let body = json!({"url": "https://example.com/hook", "n": 12});
    assert!(body_matches(
        json!({"url": {"$startsWith": "https://"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"url": {"$startsWith": "http://"}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"url": {"$endsWith": "/hook"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"url": {"$endsWith": "/hooks"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"n": {"$startsWith": "1"}}),
        body.clone()
    ));
    assert!(!body_matches(json!({"none": {"$endsWith": ""}}), body));
}

#[test]
fn exist_tells_present_from_missing() {
    let body = json!({"metadata": {"k": 1}, "deleted_at": null});
    assert!(body_matches(
        json!({"metadata": {"$exist": true}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"deleted_at": {"$exist": true}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"deleted_at": {"$exist": false}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"gone": {"$exist": false}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"gone": {"$exist": true}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"metadata": {"k": {"$exist": true}, "j": {"$exist": false}}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"other": {"k": {"$exist": false}}}),
        body
    ));
}

#[test]
fn or_and_and_not_combine() {
    let body = json!({"status": "pending", "amount": 250, "event": {"type": "message", "subtype": "bot"}, "team_id": "t9"});
    assert!(body_matches(
        json!({"status": {"$or": ["active", "pending"]}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"status": {"$or": ["active", "done"]}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"$or": [{"status": "active"}, {"amount": {"$gt": 100}}]}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"amount": {"$and": [{"$gte": 100}, {"$lte": 500}]}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"amount": {"$and": [{"$gte": 300}, {"$lte": 500}]}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"amount": {"$gte": 100, "$lte": 500}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"amount": {"$gte": 100, "$lte": 200}}),
        body.clone()
    ));
    assert!(body_matches(
        json!({"$not": {"status": "deleted"}}),
        body.clone()
    ));
    assert!(!body_matches(
        json!({"$not": {"status": "pending"}}),
        body.clone()
    ));
    assert!(body_matches(json!({"$not": {"gone": 1}}), body.clone()));
    assert!(body_matches(
        json!({"status": {"$not": {"$in": ["x", "y"]}}}),
        body.clone()
    ));
    let mixed = json!({
        "event": {"type": "message"},
        "$not": {"$or": [
            {"event": {"subtype": {"$or": ["message_changed", "message_deleted"]}}},
            {"team_id": {"$or": ["team1", "team2"]}}
        ]}
    });
    assert!(body_matches(mixed.clone(), body.clone()));
    assert!(!body_matches(
        mixed.clone(),
        json!({"event": {"type": "message"}, "team_id": "team2"})
    ));
    assert!(!body_matches(
        mixed,
        json!({"event": {"type": "message", "subtype": "message_deleted"}})
    ));
    assert!(body_matches(
        json!({"tags": {"$not": "spam"}}),
        json!({"tags": ["ham"]})
    ));
    assert!(!body_matches(
        json!({"tags": {"$not": "spam"}}),
        json!({"tags": ["ham", "spam"]})
    ));
}

#[test]
fn operators_and_fields_mix_at_one_level() {
    let filter = json!({"callback": {"$exist": true, "$startsWith": "https://"}, "$or": [{"a": 1}, {"b": 2}]});
    assert!(body_matches(
        filter.clone(),
        json!({"callback": "https://x", "b": 2})
    ));
    assert!(!body_matches(
        filter.clone(),
        json!({"callback": "http://x", "b": 2})
    ));
    assert!(!body_matches(
        filter,
        json!({"callback": "https://x", "b": 3})
    ));
}
