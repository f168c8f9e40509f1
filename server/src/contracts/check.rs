//! A tenant's compiled contracts and the check of one body against them.

use std::{collections::HashMap, sync::Arc};

use jsonschema::error::ValidationErrorKind;
use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, Visitor};
use serde_json::Value;

use super::{
    budget::{within_budget, MAX_CHECK_STEPS, MAX_LISTING_STEPS},
    compile::version_of,
    Contract, Policy, UnknownEventTypes, MAX_TYPE_LEN, MAX_VERSION_LEN, MAX_VIOLATIONS,
    MAX_VIOLATION_TEXT,
};
use crate::ingest::{BodyError, Violation};

/// One tenant's contracts, compiled, by type then version.
///
/// Published with its tenant's snapshot; [`TenantContracts::check`] checks
/// a body against it.
///
/// A tenant's compiled contracts and the check of one body against them:
/// find the contract of its type and version, list every violation (each
/// with the JSON pointer that failed and what was expected, bounded), or
/// apply the unknown-type policy.
#[derive(Debug, Default)]
pub struct TenantContracts {
    policy: Policy,
    by_type: HashMap<String, TypeContracts>,
}

#[derive(Debug, Default)]
struct TypeContracts {
    /// The contract without a version: every version without its own.
    any: Option<Arc<Contract>>,
    versions: HashMap<String, Arc<Contract>>,
}

/// What the check of one body found.
#[derive(Debug)]
pub struct Checked {
    /// The body's event type, when it names one (for metrics by type).
    pub event_type: Option<String>,
    /// Accepted, or why not.
    pub result: Result<(), BodyError>,
}

impl TenantContracts {
    /// The set of `contracts` under `policy`; a later contract with the key
    /// of an earlier one replaces it.
    pub fn new(policy: Policy, contracts: impl IntoIterator<Item = Arc<Contract>>) -> Self {
        let mut by_type: HashMap<String, TypeContracts> = HashMap::new();
        for contract in contracts {
            let entry = by_type
                .entry(contract.spec().event_type.clone())
                .or_default();
            match contract.spec().version.clone() {
                Some(version) => {
                    entry.versions.insert(version, contract);
                }
                None => entry.any = Some(contract),
            }
        }
        TenantContracts { policy, by_type }
    }

    /// How many contracts are in force.
    pub fn len(&self) -> usize {
        self.by_type
            .values()
            .map(|t| usize::from(t.any.is_some()) + t.versions.len())
            .sum()
    }

    /// True when no contract is in force.
    pub fn is_empty(&self) -> bool {
        self.by_type.is_empty()
    }

    /// How types are read and unknown ones treated.
    pub fn policy(&self) -> &Policy {
        &self.policy
    }

    /// Every contract, by type then version (unversioned first).
    pub fn contracts(&self) -> Vec<Arc<Contract>> {
        let mut all: Vec<Arc<Contract>> = self
            .by_type
            .values()
            .flat_map(|t| t.any.iter().chain(t.versions.values()).cloned())
            .collect();
        all.sort_by(|a, b| a.key().cmp(&b.key()));
        all
    }

    /// The contract for `event_type` and `version`: the version's own, else
    /// the type's unversioned one.
    pub fn find(&self, event_type: &str, version: Option<&str>) -> Option<&Arc<Contract>> {
        let entry = self.by_type.get(event_type)?;
        version
            .and_then(|v| entry.versions.get(v))
            .or(entry.any.as_ref())
    }

    /// The contract declared for exactly (type, version), not falling back
    /// to the type's unversioned one.
    pub fn find_exact(&self, event_type: &str, version: Option<&str>) -> Option<&Arc<Contract>> {
        let entry = self.by_type.get(event_type)?;
        match version {
            Some(v) => entry.versions.get(v),
            None => entry.any.as_ref(),
        }
    }

    /// The event type a JSON object body names in the type field, read
    /// without building the rest of the body.
    pub fn event_type(&self, body: &[u8]) -> Option<String> {
        let mut reader = serde_json::Deserializer::from_slice(body);
        TypeField(&self.policy.type_field)
            .deserialize(&mut reader)
            .ok()
            .flatten()
    }

    /// Checks an (authentic, JSON object) body. Without contracts and under
    /// `accept`, only the type is read, skipping over everything else.
    pub fn check(&self, body: &[u8]) -> Checked {
        if self.by_type.is_empty() && self.policy.unknown == UnknownEventTypes::Accept {
            return Checked {
                event_type: self.event_type(body),
                result: Ok(()),
            };
        }
        let Ok(body) = serde_json::from_slice::<Value>(body) else {
            // The body checks before this one already refused non-JSON.
            return Checked {
                event_type: None,
                result: Err(BodyError::NotAnObject),
            };
        };
        let event_type = body
            .get(&self.policy.type_field)
            .and_then(Value::as_str)
            .map(str::to_owned);
        let version = version_of(&body, &self.policy.version_field);
        let contract = event_type
            .as_deref()
            .and_then(|t| self.find(t, version.as_deref()));
        let result = match (contract, self.policy.unknown) {
            (Some(contract), _) => violations(contract, &body),
            (None, UnknownEventTypes::Accept) => Ok(()),
            (None, UnknownEventTypes::Reject) => Err(BodyError::UnknownEventType {
                field: self.policy.type_field.clone(),
                event_type: event_type.clone().map(|t| cut(t, MAX_TYPE_LEN)),
                version: version.map(|v| cut(v, MAX_VERSION_LEN)),
            }),
        };
        Checked { event_type, result }
    }
}

/// Reads one top-level string field of a JSON object, skipping the other
/// values without building them.
struct TypeField<'f>(&'f str);

impl<'de> DeserializeSeed<'de> for TypeField<'_> {
    type Value = Option<String>;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for TypeField<'_> {
    type Value = Option<String>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut found = None;
        while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
            if found.is_none() && key == self.0 {
                found = Some(map.next_value::<Value>()?);
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found.and_then(|v| v.as_str().map(str::to_owned)))
    }
}

/// Every way `body` breaks `contract`, the first [`MAX_VIOLATIONS`] listed,
/// or the refusal of a check that would run past its budget: deciding
/// whether it passes first (cheap steps), listing why not only if it fails.
fn violations(contract: &Contract, body: &Value) -> Result<(), BodyError> {
    let too_costly = || {
        Err(BodyError::ContractCheckTooCostly {
            event_type: contract.spec().event_type.clone(),
            version: contract.spec().version.clone(),
            max_steps: MAX_CHECK_STEPS,
        })
    };
    match within_budget(MAX_CHECK_STEPS, || contract.validator().is_valid(body)) {
        Ok(true) => Ok(()),
        Ok(false) => within_budget(MAX_LISTING_STEPS, || listed_violations(contract, body))
            .unwrap_or_else(|_| too_costly()),
        Err(_) => too_costly(),
    }
}

fn listed_violations(contract: &Contract, body: &Value) -> Result<(), BodyError> {
    let mut listed = Vec::new();
    let mut total = 0;
    for error in contract.validator().iter_errors(body) {
        total += 1;
        if listed.len() == MAX_VIOLATIONS {
            continue;
        }
        let mut pointer = error.instance_path().as_str().to_owned();
        if let ValidationErrorKind::Required { property } = error.kind() {
            if let Some(name) = property.as_str() {
                pointer.push('/');
                pointer.push_str(&name.replace('~', "~0").replace('/', "~1"));
            }
        }
        listed.push(Violation {
            pointer: bounded(pointer),
            keyword: error.kind().keyword().to_owned(),
            expected: bounded(error.masked().to_string()),
        });
    }
    if total == 0 {
        return Ok(());
    }
    Err(BodyError::ContractViolation {
        event_type: contract.spec().event_type.clone(),
        version: contract.spec().version.clone(),
        violations: listed,
        total,
    })
}

/// `text` cut to [`MAX_VIOLATION_TEXT`] bytes on a character boundary.
fn bounded(text: String) -> String {
    cut(text, MAX_VIOLATION_TEXT)
}

/// `text` cut to `max` bytes on a character boundary, ending in `…` when
/// cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}
