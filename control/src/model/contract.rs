//! Event contracts as the control plane sees them: as written, as in force, a
//! tenant's list with its policy, and the verdict on a sample payload.

/// A contract as written by the caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractDef {
    /// The event type it covers.
    pub event_type: String,
    /// The version it covers; `None` covers versions without their own.
    pub version: Option<String>,
    /// JSON Schema (draft 2020-12) text.
    pub schema: String,
    /// One example payload, JSON text.
    pub example: String,
}

/// A contract in force.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractView {
    /// The contract as written.
    pub contract: ContractDef,
    /// Revision of a contract saved over the API; 0 for the config file's.
    pub revision: u64,
    /// When that revision was put (Unix ms); 0 for the config file's.
    pub updated_at_ms: i64,
    /// Declared in the config file: read-only over the API.
    pub from_config: bool,
    /// The top-level fields its schema requires.
    pub required_fields: Vec<String>,
}

/// A tenant's contracts and how its bodies name their type and version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ContractList {
    /// Every contract in force, by type then version.
    pub contracts: Vec<ContractView>,
    /// Body field of the event type.
    pub type_field: String,
    /// Body field of the version.
    pub version_field: String,
    /// `accept` or `reject`: types without a contract.
    pub unknown_event_types: String,
}

/// One way a payload breaks its contract.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViolationView {
    /// JSON pointer of the value that failed.
    pub pointer: String,
    /// The schema keyword that failed.
    pub keyword: String,
    /// What was expected.
    pub expected: String,
}

/// What the contract check at ingest would say about a sample payload.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ContractCheck {
    /// The error code ingest would answer; `None` when it passes.
    pub code: Option<String>,
    /// What was wrong, in words (empty when it passes).
    pub message: String,
    /// The type read from the payload.
    pub event_type: Option<String>,
    /// The version read from the payload.
    pub version: Option<String>,
    /// The first violations.
    pub violations: Vec<ViolationView>,
    /// How many violations in all.
    pub violations_total: u32,
}
