//! The parts of an event: headers (case-insensitive names), query, path,
//! every given part at once; and the filter's own surface.

use serde_json::{json, Value};

use super::{FilterInput, RouteFilter};

fn event<'a>(
    body: &'a Value,
    headers: &'a [(&'a str, &'a str)],
    path: &'a str,
    query: &'a [(&'a str, &'a str)],
) -> FilterInput<'a> {
    FilterInput {
        body,
        headers,
        path,
        query,
    }
}

fn compiled(spec: Value) -> RouteFilter {
    RouteFilter::compile(&spec).expect("compiles")
}

const HEADERS: &[(&str, &str)] = &[
    ("Content-Type", "application/json"),
    ("Stripe-Signature", "t=1,v1=ab"),
    ("X-Repeat", "first"),
    ("x-repeat", "second"),
];

#[test]
fn header_names_compare_case_insensitively() {
    let body = json!({});
    let input = event(&body, HEADERS, "/", &[]);
    assert!(
        compiled(json!({"headers": {"stripe-signature": {"$startsWith": "t="}}})).matches(&input)
    );
    assert!(compiled(json!({"headers": {"CONTENT-TYPE": "application/json"}})).matches(&input));
    assert!(!compiled(json!({"headers": {"content-type": "application/JSON"}})).matches(&input));
    assert!(compiled(json!({"headers": {"x-repeat": "first"}})).matches(&input));
    assert!(!compiled(json!({"headers": {"x-repeat": "second"}})).matches(&input));
    assert!(compiled(json!({"headers": {"authorization": {"$exist": false}}})).matches(&input));
    assert!(!compiled(json!({"headers": {"authorization": {"$exist": true}}})).matches(&input));
    assert!(compiled(
        json!({"headers": {"$or": [{"x-a": "1"}, {"content-type": {"$endsWith": "/json"}}]}})
    )
    .matches(&input));
    assert!(
        !compiled(json!({"headers": {"$eq": {"content-type": "application/json"}}}))
            .matches(&input)
    );
}

#[test]
fn header_values_are_strings() {
    let body = json!({});
    let headers = [("x-count", "5")];
    let input = event(&body, &headers, "/", &[]);
    assert!(compiled(json!({"headers": {"x-count": "5"}})).matches(&input));
    assert!(!compiled(json!({"headers": {"x-count": 5}})).matches(&input));
    assert!(!compiled(json!({"headers": {"x-count": {"$gte": 1}}})).matches(&input));
    assert!(compiled(json!({"headers": {"x-count": {"$gte": "1"}}})).matches(&input));
}

#[test]
fn query_pairs_match_by_exact_name() {
    let body = json!({});
    let query = [("page", "2"), ("mode", "live"), ("page", "3")];
    let input = event(&body, &[], "/", &query);
    assert!(compiled(json!({"query": {"page": "2"}})).matches(&input));
    assert!(!compiled(json!({"query": {"page": "3"}})).matches(&input));
    assert!(!compiled(json!({"query": {"Page": "2"}})).matches(&input));
    assert!(compiled(json!({"query": {"mode": {"$in": ["live", "test"]}}})).matches(&input));
    assert!(compiled(json!({"query": {"debug": {"$exist": false}}})).matches(&input));
}

#[test]
fn the_path_is_a_string_at_the_root() {
    let body = json!({});
    let input = event(&body, &[], "/hooks/acme/orders", &[]);
    assert!(compiled(json!({"path": "/hooks/acme/orders"})).matches(&input));
    assert!(!compiled(json!({"path": "/hooks/acme"})).matches(&input));
    assert!(compiled(json!({"path": {"$startsWith": "/hooks/"}})).matches(&input));
    assert!(compiled(json!({"path": {"$in": "/acme/"}})).matches(&input));
    assert!(compiled(json!({"path": {"$not": {"$in": "/health"}}})).matches(&input));
    assert!(!compiled(json!({"path": {"segment": "x"}})).matches(&input));
}

#[test]
fn every_given_part_must_match() {
    let body = json!({"type": "charge.succeeded"});
    let query = [("v", "1")];
    let input = event(&body, HEADERS, "/hooks/acme", &query);
    let all = json!({
        "body": {"type": "charge.succeeded"},
        "headers": {"stripe-signature": {"$exist": true}},
        "query": {"v": "1"},
        "path": {"$endsWith": "/acme"}
    });
    assert!(compiled(all.clone()).matches(&input));
    for (part, wrong) in [
        ("body", json!({"type": "x"})),
        ("headers", json!({"x": "y"})),
        ("query", json!({"v": "2"})),
        ("path", json!("/")),
    ] {
        let mut spec = all.clone();
        spec[part] = wrong;
        assert!(
            !compiled(spec).matches(&input),
            "{part} alone fails the event"
        );
    }
    assert!(compiled(json!({})).matches(&input));
}

#[test]
fn a_filter_keeps_its_spec_and_is_shareable() {
    fn shareable<T: Send + Sync + Clone>(_: &T) {}
    let spec = json!({"body": {"type": {"$in": ["a", "b"]}}});
    let filter = compiled(spec.clone());
    shareable(&filter);
    assert_eq!(filter.clone().spec(), &spec);
}
