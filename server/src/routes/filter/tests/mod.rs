//! Tests of the route filter: matching by every operator and form, the
//! parts of an event, every compile error with its pointer, and properties.

mod errors;
mod matching;
mod parts;
mod props;

use serde_json::{json, Value};

use super::{FilterError, FilterInput, RouteFilter};

/// Whether the body filter `filter` matches `body`.
fn body_matches(filter: Value, body: Value) -> bool {
    let compiled = RouteFilter::compile(&json!({ "body": filter })).expect("compiles");
    compiled.matches(&input(&body))
}

fn input(body: &Value) -> FilterInput<'_> {
    FilterInput {
        body,
        headers: &[],
        path: "/",
        query: &[],
    }
}

/// The error `spec` is refused with.
fn refusal(spec: Value) -> FilterError {
    RouteFilter::compile(&spec).expect_err("refused")
}
