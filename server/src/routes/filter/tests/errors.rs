//! Every compile error, with the JSON pointer it names and its text.

use serde_json::{json, Value};

use super::{refusal, RouteFilter};
use crate::routes::filter::{
    MAX_ARRAY_ITEMS, MAX_DEPTH, MAX_NODES, MAX_SPEC_BYTES, MAX_STRING_BYTES,
};

fn assert_refused(spec: Value, pointer: &str, reason: &str) {
    let error = refusal(spec);
    assert_eq!(
        (error.pointer.as_str(), error.reason.as_str()),
        (pointer, reason)
    );
}

#[test]
fn the_display_names_the_pointer() {
    let error = refusal(json!({"body": {"amount": {"$gte": true}}}));
    assert_eq!(
        error.to_string(),
        "filter/body/amount/$gte: expects a number or a string"
    );
}

#[test]
fn the_spec_is_an_object_of_known_parts() {
    assert_refused(
        json!([]),
        "",
        "expects an object with body, headers, query or path",
    );
    assert_refused(
        json!({"bodyy": {}}),
        "/bodyy",
        "unknown part; expected body, headers, query or path",
    );
}

#[test]
fn unknown_operators_are_refused_where_they_stand() {
    assert_refused(
        json!({"body": {"a": {"$regex": "x"}}}),
        "/body/a/$regex",
        "unknown operator",
    );
    assert_refused(
        json!({"headers": {"$ref": "a"}}),
        "/headers/$ref",
        "unknown operator",
    );
    assert_refused(
        json!({"body": {"a/b~c": {"$x": 1}}}),
        "/body/a~1b~0c/$x",
        "unknown operator",
    );
}

#[test]
fn operands_have_the_types_their_operators_need() {
    let cases = [
        ("$in", json!(5), "expects an array or a string"),
        ("$nin", json!({"a": 1}), "expects an array or a string"),
        ("$gt", json!(null), "expects a number or a string"),
        ("$gte", json!(true), "expects a number or a string"),
        ("$lt", json!([1]), "expects a number or a string"),
        ("$lte", json!({}), "expects a number or a string"),
        ("$startsWith", json!(1), "expects a string"),
        ("$endsWith", json!(["a"]), "expects a string"),
        ("$exist", json!("yes"), "expects true or false"),
        (
            "$or",
            json!({"a": 1}),
            "expects a non-empty array of filters",
        ),
        ("$and", json!([]), "expects a non-empty array of filters"),
    ];
    for (op, operand, reason) in cases {
        assert_refused(
            json!({"body": {"f": {op: operand}}}),
            &format!("/body/f/{op}"),
            reason,
        );
    }
}

#[test]
fn errors_inside_logical_operators_point_inside() {
    assert_refused(
        json!({"body": {"$or": [{"a": 1}, {"a": {"$bad": 1}}]}}),
        "/body/$or/1/a/$bad",
        "unknown operator",
    );
    assert_refused(
        json!({"query": {"$and": [{"$lt": []}]}}),
        "/query/$and/0/$lt",
        "expects a number or a string",
    );
    assert_refused(
        json!({"path": {"$not": {"$startsWith": 3}}}),
        "/path/$not/$startsWith",
        "expects a string",
    );
    assert_refused(
        json!({"body": {"tags": ["a", {"$in": 1}]}}),
        "/body/tags/1/$in",
        "expects an array or a string",
    );
}

fn nested(levels: usize) -> Value {
    (0..levels).fold(json!(1), |inner, _| json!({ "a": inner }))
}

#[test]
fn depth_is_bounded() {
    assert_eq!(MAX_DEPTH, 16);
    RouteFilter::compile(&json!({ "body": nested(MAX_DEPTH) })).expect("16 levels compile");
    let pointer = format!("/body{}", "/a".repeat(MAX_DEPTH));
    assert_refused(
        json!({ "body": nested(MAX_DEPTH + 1) }),
        &pointer,
        "nests deeper than 16 levels",
    );
    let deep_literal = json!({"body": {"$eq": nested(MAX_DEPTH)}});
    assert_refused(
        deep_literal,
        &format!("/body/$eq{}", "/a".repeat(MAX_DEPTH - 1)),
        "nests deeper than 16 levels",
    );
}

#[test]
fn filter_nodes_are_bounded() {
    assert_eq!(MAX_NODES, 4_096);
    // The root object and `$or` are two nodes; each item is one more.
    let items = |n: usize| Value::Array(vec![json!(0); n]);
    RouteFilter::compile(&json!({"body": {"$or": items(1_000)}})).expect("1002 nodes compile");
    // Nested in objects, the items take more of them.
    let spread = |n: usize| {
        let ors: Vec<Value> = (0..n).map(|_| json!({"$or": items(1_000)})).collect();
        json!({ "body": { "$and": ors } })
    };
    RouteFilter::compile(&spread(4)).expect("4010 nodes compile");
    assert_refused(
        spread(5),
        "/body/$and/4/$or/84",
        "more than 4096 filter nodes",
    );
}

#[test]
fn every_literal_of_a_list_counts_as_a_node() {
    // Five lists of 1,000 literals: two nodes for the root and `$or`, two
    // for each list's object and `$in`, and one for each literal.
    let list = |len: u64| json!({ "$in": (0..len).collect::<Vec<_>>() });
    let lists = |last: u64| {
        let mut lists: Vec<Value> = (0..4).map(|_| list(1_000)).collect();
        lists.push(list(last));
        json!({ "body": { "$or": lists } })
    };
    RouteFilter::compile(&lists(84)).expect("4096 nodes compile");
    assert_refused(
        lists(85),
        "/body/$or/4/$in/84",
        "more than 4096 filter nodes",
    );
    let literal = json!({ "body": { "$eq": { "a": (0..1_000).collect::<Vec<_>>() } } });
    RouteFilter::compile(&literal).expect("1004 nodes compile");
    let literals: Vec<Value> = (0..5).map(|_| literal["body"].clone()).collect();
    assert_refused(
        json!({ "body": { "$and": literals } }),
        "/body/$and/4/$eq/a/74",
        "more than 4096 filter nodes",
    );
}

#[test]
fn arrays_are_bounded() {
    assert_eq!(MAX_ARRAY_ITEMS, 1_000);
    let items = |n: usize| Value::Array((0..n).map(|i| json!(i)).collect());
    RouteFilter::compile(&json!({"body": {"id": {"$in": items(MAX_ARRAY_ITEMS)}}}))
        .expect("1000 items compile");
    assert_refused(
        json!({"body": {"id": {"$in": items(MAX_ARRAY_ITEMS + 1)}}}),
        "/body/id/$in",
        "has 1001 items; at most 1000",
    );
    assert_refused(
        json!({"body": {"id": {"$eq": items(MAX_ARRAY_ITEMS + 1)}}}),
        "/body/id/$eq",
        "has 1001 items; at most 1000",
    );
}

#[test]
fn strings_are_bounded() {
    assert_eq!(MAX_STRING_BYTES, 4096);
    let text = |n: usize| "x".repeat(n);
    RouteFilter::compile(&json!({"body": {"a": text(MAX_STRING_BYTES)}})).expect("4 KiB compiles");
    assert_refused(
        json!({"body": {"a": text(MAX_STRING_BYTES + 1)}}),
        "/body/a",
        "is 4097 bytes long; at most 4096",
    );
    assert_refused(
        json!({"body": {"a": {"$startsWith": text(5000)}}}),
        "/body/a/$startsWith",
        "is 5000 bytes long; at most 4096",
    );
    assert_refused(
        json!({"body": {"a": {"$in": ["ok", text(4097)]}}}),
        "/body/a/$in/1",
        "is 4097 bytes long; at most 4096",
    );
    let long = text(MAX_STRING_BYTES + 1);
    assert_refused(
        json!({"body": { long.as_str(): 1 }}),
        &format!("/body/{long}"),
        "field name is 4097 bytes long; at most 4096",
    );
}

#[test]
fn the_whole_spec_is_bounded() {
    assert_eq!(MAX_SPEC_BYTES, 65_536);
    let strings = Value::Array(vec![json!("y".repeat(4000)); 17]);
    let spec = json!({"body": {"a": {"$in": strings}}});
    let size = serde_json::to_vec(&spec).expect("serializes").len();
    assert!(size > MAX_SPEC_BYTES);
    assert_refused(spec, "", &format!("is {size} bytes of JSON; at most 65536"));
}
