//! The step budget: an evaluation that would take more steps than it is
//! given stops and says so, whatever the filter and the body; one within
//! them decides as before and takes the same steps every time.

use serde_json::{json, Value};

use super::{input, OverBudget, RouteFilter, Steps, INLINE_STEPS, MAX_FILTER_STEPS};

/// Four `$in` lists of 1,000 numbers under `$or`, against field `n`.
fn costly() -> RouteFilter {
    let lists: Vec<Value> = (0..4u64)
        .map(|n| json!({ "$in": (1 + n * 1_000..=(n + 1) * 1_000).collect::<Vec<_>>() }))
        .collect();
    RouteFilter::compile(&json!({ "body": { "n": { "$or": lists } } })).expect("compiles")
}

#[test]
fn a_filter_past_its_steps_stops_and_says_so() {
    let body = json!({ "n": vec![0; 200_000] });
    for budget in [INLINE_STEPS, MAX_FILTER_STEPS] {
        let steps = Steps::new(budget);
        assert_eq!(costly().matches(&input(&body), &steps), Err(OverBudget));
        assert!(steps.spent());
    }
}

#[test]
fn a_filter_within_its_steps_decides_taking_the_same_steps_each_time() {
    let body = json!({ "n": [0, 5, 2500] });
    let taken = |body: &Value| {
        let steps = Steps::new(INLINE_STEPS);
        let verdict = costly().matches(&input(body), &steps);
        (verdict, INLINE_STEPS - steps.left())
    };
    let (verdict, steps) = taken(&body);
    assert_eq!(verdict, Ok(true));
    assert_eq!(taken(&body), (Ok(true), steps));
    assert!(steps > 1_000, "each literal compared is a step: {steps}");
    assert_eq!(taken(&json!({ "n": [0] })).0, Ok(false));
}

#[test]
fn long_texts_and_header_lists_cost_in_their_length() {
    let filter = RouteFilter::compile(&json!({ "body": { "s": { "$in": "needle" } } })).unwrap();
    let short = json!({ "s": "haystack" });
    let long = json!({ "s": "x".repeat(1 << 20) });
    let cost = |body: &Value| {
        let steps = Steps::new(MAX_FILTER_STEPS);
        filter.matches(&input(body), &steps).unwrap();
        MAX_FILTER_STEPS - steps.left()
    };
    assert!(cost(&long) >= cost(&short) + (1 << 20) / 256);
}
