//! One contract: checked as written and compiled once.

use jsonschema::{PatternCache, PatternOptions, Validator};
use serde_json::Value;

use super::{
    budget::{self, Step, STEP},
    cost, Policy, MAX_CONTRACT_BYTES, MAX_TYPE_LEN, MAX_VERSION_LEN,
};
use crate::error::InvalidSetting;

/// Most heap one compiled `pattern` may take (`regex` `size_limit`).
pub const PATTERN_SIZE_LIMIT: usize = 64 * 1024;
/// Most heap the lazy DFA of one `pattern` may take per thread using it
/// (`regex` `dfa_size_limit`).
pub const PATTERN_DFA_SIZE_LIMIT: usize = 64 * 1024;

/// A contract as written: the event type, optional version, the JSON
/// Schema text and one example payload.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractSpec {
    /// The event type it covers.
    pub event_type: String,
    /// The version it covers; `None` covers versions without their own.
    pub version: Option<String>,
    /// JSON Schema (draft 2020-12), as JSON text.
    pub schema: String,
    /// One real payload, as JSON text.
    pub example: String,
}

/// Where a contract was declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ContractSource {
    /// The config file: read-only over the API.
    Config,
    /// The control plane, stored with this revision (1 for the first put).
    Api {
        /// The revision number of this put.
        revision: u64,
        /// When it was put, Unix ms.
        updated_at_ms: i64,
    },
}

/// A compiled contract.
///
/// One contract: checked as written (names, sizes, a schema within the
/// cost bounds that compiles under draft 2020-12 with formats asserted, an
/// example that passes it) and compiled once.
pub struct Contract {
    spec: ContractSpec,
    required: Vec<String>,
    validator: Validator,
    source: ContractSource,
}

impl std::fmt::Debug for Contract {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Contract")
            .field("event_type", &self.spec.event_type)
            .field("version", &self.spec.version)
            .field("source", &self.source)
            .finish_non_exhaustive()
    }
}

impl Contract {
    /// Checks and compiles `spec`. The schema must keep within the cost
    /// bounds, the example must pass it and name the contract's type (and
    /// version) in the policy's fields. Errors name the key: `type`,
    /// `version`, `schema` or `example`.
    pub fn compile(
        spec: ContractSpec,
        policy: &Policy,
        source: ContractSource,
    ) -> Result<Contract, InvalidSetting> {
        let contract = Contract::load(spec, source)?;
        contract.check_example(policy)?;
        Ok(contract)
    }

    /// Compiles a contract saved earlier: its names, sizes and cost bounds
    /// are checked again (they are cheap, and bounds may have tightened
    /// since), its example is not (it passed when it was saved).
    pub fn load(spec: ContractSpec, source: ContractSource) -> Result<Contract, InvalidSetting> {
        check_name("type", &spec.event_type, MAX_TYPE_LEN)?;
        if let Some(version) = &spec.version {
            check_name("version", version, MAX_VERSION_LEN)?;
        }
        let schema = json_text("schema", &spec.schema)?;
        cost::check(&schema).map_err(|e| InvalidSetting::new("schema", e))?;
        let validator = validator(&schema)?;
        let required = schema
            .get("required")
            .and_then(Value::as_array)
            .map(|fields| {
                fields
                    .iter()
                    .filter_map(|f| f.as_str().map(str::to_owned))
                    .collect()
            })
            .unwrap_or_default();
        Ok(Contract {
            spec,
            required,
            validator,
            source,
        })
    }

    /// The example passes the schema within the check budget and names the
    /// contract's type and version.
    fn check_example(&self, policy: &Policy) -> Result<(), InvalidSetting> {
        let spec = &self.spec;
        let example = json_text("example", &spec.example)?;
        let invalid = |reason: String| InvalidSetting::new("example", reason);
        let over = |steps| invalid(format!("its check takes more than {steps} steps"));
        let passes = budget::within_budget(budget::MAX_CHECK_STEPS, || {
            self.validator.is_valid(&example)
        })
        .map_err(|_| over(budget::MAX_CHECK_STEPS))?;
        let first = if passes {
            None
        } else {
            budget::within_budget(budget::MAX_LISTING_STEPS, || {
                self.validator.iter_errors(&example).next().map(|error| {
                    invalid(format!(
                        "does not pass the schema at {:?}: {}",
                        error.instance_path().as_str(),
                        error.masked()
                    ))
                })
            })
            .map_err(|_| over(budget::MAX_LISTING_STEPS))?
        };
        if let Some(error) = first {
            return Err(error);
        }
        if example.get(&policy.type_field).and_then(Value::as_str) != Some(&spec.event_type) {
            return Err(invalid(format!(
                "its {:?} field must be {:?}",
                policy.type_field, spec.event_type
            )));
        }
        if let Some(version) = &spec.version {
            if version_of(&example, &policy.version_field).as_deref() != Some(version) {
                return Err(invalid(format!(
                    "its {:?} field must be {version:?}",
                    policy.version_field
                )));
            }
        }
        Ok(())
    }

    /// The same contract, declared by `source` (a put's revision once it
    /// is saved).
    pub fn with_source(self, source: ContractSource) -> Contract {
        Contract { source, ..self }
    }

    /// The contract as written.
    pub fn spec(&self) -> &ContractSpec {
        &self.spec
    }

    /// Where it was declared.
    pub fn source(&self) -> ContractSource {
        self.source
    }

    /// (type, version): one contract per key and tenant.
    pub fn key(&self) -> (&str, Option<&str>) {
        (&self.spec.event_type, self.spec.version.as_deref())
    }

    /// The top-level fields the schema requires.
    pub fn required(&self) -> &[String] {
        &self.required
    }

    /// The compiled schema.
    pub(super) fn validator(&self) -> &Validator {
        &self.validator
    }
}

/// Compiles `schema` with a step in every subschema. `pattern`s run on the
/// `regex` engine (linear time whatever the pattern) within heap limits,
/// each distinct one compiled once per contract.
fn validator(schema: &Value) -> Result<Validator, InvalidSetting> {
    jsonschema::draft202012::options()
        .should_validate_formats(true)
        .with_pattern_options(
            PatternOptions::regex()
                .size_limit(PATTERN_SIZE_LIMIT)
                .dfa_size_limit(PATTERN_DFA_SIZE_LIMIT),
        )
        .with_pattern_cache(PatternCache::new())
        .with_keyword(STEP, |_, value, _| Ok(Box::new(Step::of(value))))
        .build(&budget::instrument(schema))
        .map_err(|e| {
            InvalidSetting::new(
                "schema",
                format!("not a valid JSON Schema (draft 2020-12): {e}"),
            )
        })
}

/// The version in `field` of a body: a string, or an integer as its
/// decimal text.
pub(super) fn version_of(body: &Value, field: &str) -> Option<String> {
    match body.get(field)? {
        Value::String(s) => Some(s.clone()),
        Value::Number(n) if n.is_i64() || n.is_u64() => Some(n.to_string()),
        _ => None,
    }
}

/// A type or version name: 1 to `max` bytes of visible ASCII.
fn check_name(key: &str, value: &str, max: usize) -> Result<(), InvalidSetting> {
    if value.is_empty() || value.len() > max || !value.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(InvalidSetting::new(
            key,
            format!("must be 1 to {max} bytes of visible ASCII, got {value:?}"),
        ));
    }
    Ok(())
}

fn json_text(key: &str, text: &str) -> Result<Value, InvalidSetting> {
    if text.len() > MAX_CONTRACT_BYTES {
        return Err(InvalidSetting::new(
            key,
            format!(
                "larger than {MAX_CONTRACT_BYTES} bytes ({} bytes)",
                text.len()
            ),
        ));
    }
    serde_json::from_str(text).map_err(|e| InvalidSetting::new(key, format!("not valid JSON: {e}")))
}
