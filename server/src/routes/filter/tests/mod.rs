//! Tests of the route filter: matching by every operator and form, the
//! parts of an event, every compile error with its pointer, and properties.

mod budget;
mod errors;
mod matching;
mod parts;
mod props;

use serde_json::{json, Value};

use super::{
    FilterError, FilterInput, OverBudget, RouteFilter, Steps, INLINE_STEPS, MAX_FILTER_STEPS,
};

/// Whether the body filter `filter` matches `body`.
fn body_matches(filter: Value, body: Value) -> bool {
    let compiled = RouteFilter::compile(&json!({ "body": filter })).expect("compiles");
    compiled.decides(&input(&body))
}

impl RouteFilter {
    /// The verdict within the budget a filter thread gives, which every
    /// test filter keeps to.
    fn decides(&self, input: &FilterInput<'_>) -> bool {
        self.matches(input, &Steps::new(MAX_FILTER_STEPS))
            .expect("within its steps")
    }
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
