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
        compiled(json!({"headers": {"stripe-signature": {"$startsWith": "t="}}})).decides(&input)
    );
    assert!(compiled(json!({"headers": {"CONTENT-TYPE": "application/json"}})).decides(&input));
    assert!(!compiled(json!({"headers": {"content-type": "application/JSON"}})).decides(&input));
    assert!(compiled(json!({"headers": {"x-repeat": "first"}})).decides(&input));
    assert!(!compiled(json!({"headers": {"x-repeat": "second"}})).decides(&input));
    assert!(compiled(json!({"headers": {"authorization": {"$exist": false}}})).decides(&input));
    assert!(!compiled(json!({"headers": {"authorization": {"$exist": true}}})).decides(&input));
    assert!(compiled(
        json!({"headers": {"$or": [{"x-a": "1"}, {"content-type": {"$endsWith": "/json"}}]}})
    )
    .decides(&input));
    assert!(
        !compiled(json!({"headers": {"$eq": {"content-type": "application/json"}}}))
            .decides(&input)
    );
}

#[test]
fn header_values_are_strings() {
    let body = json!({});
    let headers = [("x-count", "5")];
    let input = event(&body, &headers, "/", &[]);
    assert!(compiled(json!({"headers": {"x-count": "5"}})).decides(&input));
    assert!(!compiled(json!({"headers": {"x-count": 5}})).decides(&input));
    assert!(!compiled(json!({"headers": {"x-count": {"$gte": 1}}})).decides(&input));
    assert!(compiled(json!({"headers": {"x-count": {"$gte": "1"}}})).decides(&input));
}

#[test]
fn query_pairs_match_by_exact_name() {
    let body = json!({});
    let query = [("page", "2"), ("mode", "live"), ("page", "3")];
    let input = event(&body, &[], "/", &query);
    assert!(compiled(json!({"query": {"page": "2"}})).decides(&input));
    assert!(!compiled(json!({"query": {"page": "3"}})).decides(&input));
    assert!(!compiled(json!({"query": {"Page": "2"}})).decides(&input));
    assert!(compiled(json!({"query": {"mode": {"$in": ["live", "test"]}}})).decides(&input));
    assert!(compiled(json!({"query": {"debug": {"$exist": false}}})).decides(&input));
}

#[test]
fn the_path_is_a_string_at_the_root() {
    let body = json!({});
    let input = event(&body, &[], "/hooks/acme/orders", &[]);
    assert!(compiled(json!({"path": "/hooks/acme/orders"})).decides(&input));
    assert!(!compiled(json!({"path": "/hooks/acme"})).decides(&input));
    assert!(compiled(json!({"path": {"$startsWith": "/hooks/"}})).decides(&input));
    assert!(compiled(json!({"path": {"$in": "/acme/"}})).decides(&input));
    assert!(compiled(json!({"path": {"$not": {"$in": "/health"}}})).decides(&input));
    assert!(!compiled(json!({"path": {"segment": "x"}})).decides(&input));
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
    assert!(compiled(all.clone()).decides(&input));
    for (part, wrong) in [
        ("body", json!({"type": "x"})),
        ("headers", json!({"x": "y"})),
        ("query", json!({"v": "2"})),
        ("path", json!("/")),
    ] {
        let mut spec = all.clone();
        spec[part] = wrong;
        assert!(
            !compiled(spec).decides(&input),
            "{part} alone fails the event"
        );
    }
    assert!(compiled(json!({})).decides(&input));
}

#[test]
fn a_filter_keeps_its_spec_and_is_shareable() {
    fn shareable<T: Send + Sync + Clone>(_: &T) {}
    let spec = json!({"body": {"type": {"$in": ["a", "b"]}}});
    let filter = compiled(spec.clone());
    shareable(&filter);
    assert_eq!(filter.clone().spec(), &spec);
}
