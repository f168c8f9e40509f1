//! The check-time budget of a contract, counted in steps.

use std::{
    cell::Cell,
    panic::{catch_unwind, resume_unwind, AssertUnwindSafe},
};

use jsonschema::{Keyword, ValidationError};
use serde_json::{json, Map, Value};

use super::cost::children_mut;

// A check out of steps unwinds out of the validator: hookd is built to
// unwind on panic, and would abort instead of refusing otherwise.
#[cfg(panic = "abort")]
compile_error!("the contract check budget needs panic = \"unwind\"");

/// Most steps deciding whether one body passes may take (a few ms of one
/// core in a release build; see docs/benchmarks.md).
pub const MAX_CHECK_STEPS: u64 = 1_000_000;
/// Most steps listing the violations of a body that fails may take: a step
/// there builds an error, about 30 times the work of a step that only
/// decides, so this budget is a 32nd of [`MAX_CHECK_STEPS`].
pub const MAX_LISTING_STEPS: u64 = MAX_CHECK_STEPS / 32;

/// The keyword carrying the steps; its value is what one application
/// costs before the length of a string is counted.
pub(super) const STEP: &str = "x-hookd-step";

/// Bytes of a string that cost one more step per in-place subschema.
const STRING_BYTES_PER_STEP: usize = 256;
/// Items of an array or members of an object that cost one more step per
/// in-place subschema: applying a subschema costs in the size of the value
/// (failures record it, `$ref`s and `anyOf`s look it up).
const ITEMS_PER_STEP: usize = 16;

thread_local! {
    /// Steps left to the check running on this thread, if one is.
    static LEFT: Cell<Option<u64>> = const { Cell::new(None) };
}

/// A check ran out of steps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) struct OverBudget;

/// Runs `check` with `steps`; stops it when they run out.
///
/// Every subschema of a compiled schema carries a step keyword counting
/// what the check spends there (one step per subschema applied in place,
/// times the size of the value: one more per 256 bytes of a string, per 16
/// items of an array or members of an object), so a check that would run
/// past its budget stops at once and the body is refused instead of holding
/// the HTTP worker: [`MAX_CHECK_STEPS`] to decide whether a body passes,
/// [`MAX_LISTING_STEPS`] to list why one fails. Counting steps rather than
/// time makes the answer the same for the same body on any machine.
pub(super) fn within_budget<T>(steps: u64, check: impl FnOnce() -> T) -> Result<T, OverBudget> {
    let outer = LEFT.replace(Some(steps));
    let result = catch_unwind(AssertUnwindSafe(check));
    LEFT.set(outer);
    match result {
        Ok(value) => Ok(value),
        Err(payload) if payload.is::<OverBudget>() => Err(OverBudget),
        Err(payload) => resume_unwind(payload),
    }
}

/// `schema` with a step appended to the `allOf` of every subschema object.
/// `allOf` runs before the keywords that multiply work (`anyOf`, `oneOf`,
/// `not`, `if`, `$ref`), and a subschema that passes its cheap keywords
/// always reaches it. Appending keeps every `$ref` pointer valid.
pub(super) fn instrument(schema: &Value) -> Value {
    let mut schema = schema.clone();
    add_steps(&mut schema);
    schema
}

fn add_steps(node: &mut Value) {
    let Some(schema) = node.as_object_mut() else {
        return;
    };
    for child in children_mut(schema) {
        add_steps(child);
    }
    let step = json!({ STEP: 1 + in_place(schema) });
    match schema.get_mut("allOf") {
        Some(Value::Array(all)) => all.push(step),
        Some(_) => {}
        None => {
            schema.insert("allOf".into(), json!([step]));
        }
    }
}

/// How many subschemas apply to the same value as `schema` does.
fn in_place(schema: &Map<String, Value>) -> u64 {
    let listed = ["allOf", "anyOf", "oneOf"]
        .iter()
        .filter_map(|k| schema.get(*k).and_then(Value::as_array))
        .map(Vec::len)
        .sum::<usize>();
    let single = ["not", "if", "then", "else", "$ref"]
        .iter()
        .filter(|k| schema.contains_key(**k))
        .count();
    (listed + single) as u64
}

/// The step keyword as compiled: what one application costs.
pub(super) struct Step(u64);

impl Step {
    /// Compiles the keyword's value (a step count; anything else counts 1).
    pub(super) fn of(value: &Value) -> Step {
        Step(value.as_u64().unwrap_or(1).max(1))
    }

    fn spend(&self, instance: &Value) {
        let size = match instance {
            Value::String(s) => s.len() / STRING_BYTES_PER_STEP,
            Value::Array(items) => items.len() / ITEMS_PER_STEP,
            Value::Object(members) => members.len() / ITEMS_PER_STEP,
            _ => 0,
        };
        let cost = self.0.saturating_mul(1 + size as u64);
        LEFT.with(|left| {
            let Some(steps) = left.get() else { return };
            if cost > steps {
                left.set(Some(0));
                resume_unwind(Box::new(OverBudget));
            }
            left.set(Some(steps - cost));
        });
    }
}

impl<'i> Keyword<'i> for Step {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        self.spend(instance);
        Ok(())
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.spend(instance);
        true
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use serde_json::json;

    use crate::{
        contracts::{Contract, ContractSource, ContractSpec, Policy, TenantContracts},
        ingest::BodyError,
    };

    /// `data`: an integer, or strings each tried against 64 branches.
    fn wide() -> TenantContracts {
        let branches: Vec<_> = (0..64)
            .map(|i| json!({"type": "string", "minLength": i}))
            .collect();
        let schema = json!({"properties": {"data": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"anyOf": branches}}]}}});
        let spec = ContractSpec {
            event_type: "wide".into(),
            version: None,
            schema: schema.to_string(),
            example: json!({"type": "wide", "data": 1}).to_string(),
        };
        let policy = Policy::default();
        let contract = Contract::compile(spec, &policy, ContractSource::Config).unwrap();
        TenantContracts::new(policy, [Arc::new(contract)])
    }

    #[test]
    fn a_check_past_its_steps_is_refused_and_the_next_one_runs_in_full() {
        let set = wide();
        let body = |data: serde_json::Value| json!({"type": "wide", "data": data}).to_string();
        let over = set.check(body(json!(vec![0; 30_000])).as_bytes()).result;
        assert!(
            matches!(
                &over,
                Err(BodyError::ContractCheckTooCostly {
                    max_steps: 1_000_000,
                    ..
                })
            ),
            "{over:?}"
        );
        let under = set.check(body(json!(vec![0; 100])).as_bytes()).result;
        assert!(
            matches!(under, Err(BodyError::ContractViolation { .. })),
            "{under:?}"
        );
        assert!(set.check(body(json!(["a", "b"])).as_bytes()).result.is_ok());
    }

    #[test]
    fn an_example_past_its_steps_is_refused_at_save() {
        let branches: Vec<_> = (0..64).map(|i| json!({"minLength": i})).collect();
        let schema = json!({"properties": {"data": {"items": {"anyOf": branches}}}});
        let spec = ContractSpec {
            event_type: "t".into(),
            version: None,
            schema: schema.to_string(),
            example: json!({"type": "t", "data": vec!["a"; 16_000]}).to_string(),
        };
        let e = Contract::compile(spec, &Policy::default(), ContractSource::Config)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("example: its check takes more than"), "{e}");
    }
}
