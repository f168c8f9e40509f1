//! Route filters: a declarative JSON filter over an event's body, headers,
//! query and path, in Hookdeck's filter syntax (semantics: docs/routes.md).

mod compile;
mod eval;
mod node;
pub mod pool;
#[cfg(test)]
mod tests;

use std::sync::Arc;

use serde_json::Value;

pub use eval::Steps;

/// Largest spec, in bytes of compact JSON.
pub const MAX_SPEC_BYTES: usize = 64 * 1024;
/// Deepest nesting of objects and arrays within one part of a spec.
pub const MAX_DEPTH: usize = 16;
/// Most filter nodes (filter values, operators and literals, each item of a
/// list counted) in a whole spec.
pub const MAX_NODES: usize = 4_096;
/// Steps a filter may take on the HTTP worker that holds the request: a
/// few tens of microseconds. A filter that needs more is evaluated again
/// on a filter thread.
pub const INLINE_STEPS: u64 = 20_000;
/// Steps a filter may take on a filter thread (about 3 ms of one core,
/// docs/benchmarks.md); past them it does not pass the event.
pub const MAX_FILTER_STEPS: u64 = 1_000_000;
/// Steps all of a tenant's filters may take together on one event (about
/// 11 ms): once they are spent, the filters not yet evaluated do not pass.
pub const MAX_EVENT_FILTER_STEPS: u64 = 4 * MAX_FILTER_STEPS;
/// Most items in any one array of a spec.
pub const MAX_ARRAY_ITEMS: usize = 1_000;
/// Longest string (field name or value) in a spec, in bytes.
pub const MAX_STRING_BYTES: usize = 4 * 1024;

/// Whether each filter passes an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Passes {
    /// The default route's.
    pub(crate) default: bool,
    /// Each other route's, in order.
    pub(crate) routes: Vec<bool>,
}

/// A route's compiled filter. Cheap to clone; keeps its source spec.
///
/// Validated and compiled once ([`RouteFilter::compile`]) and evaluated on
/// the ingest path without allocating ([`RouteFilter::matches`]). Bounds,
/// checked at compile with the JSON pointer of the offence:
/// `MAX_SPEC_BYTES`, `MAX_DEPTH`, `MAX_NODES` (every literal counts,
/// each item of a `$in` list included), `MAX_ARRAY_ITEMS`,
/// `MAX_STRING_BYTES`. Evaluation is bounded too, whatever the body: it
/// counts its steps ([`Steps`]; one per node applied to a value, per item
/// looked through and per literal compared) and stops when they run out
/// ([`RouteFilter::matches`] then says [`OverBudget`]). The ingest path
/// gives each filter `INLINE_STEPS` on the HTTP worker and, if that is
/// not enough, `MAX_FILTER_STEPS` on a filter thread (`pool`), all of
/// an event's filters together at most `MAX_EVENT_FILTER_STEPS`; a
/// filter out of steps does not pass the event.
#[derive(Debug, Clone)]
pub struct RouteFilter(Arc<Compiled>);

#[derive(Debug)]
struct Compiled {
    spec: Value,
    parts: node::Parts,
}

/// What a filter looks at: one event as it was received.
#[derive(Debug, Clone, Copy)]
pub struct FilterInput<'a> {
    /// The parsed JSON body.
    pub body: &'a Value,
    /// The request's headers as (name, value); names compare
    /// case-insensitively.
    pub headers: &'a [(&'a str, &'a str)],
    /// The request path.
    pub path: &'a str,
    /// The query string's decoded (name, value) pairs, parsed once per
    /// event by the caller so every route's filter shares them.
    pub query: &'a [(&'a str, &'a str)],
}

/// A spec refused at compile: where (an RFC 6901 pointer into the spec) and
/// why. Shown to the tenant as `INVALID_ARGUMENT`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter{pointer}: {reason}")]
pub struct FilterError {
    /// JSON pointer of the offending operator or value; empty for the root.
    pub pointer: String,
    /// What is wrong there.
    pub reason: String,
}

/// A filter ran out of its steps before it could decide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the filter ran out of its budget of {MAX_FILTER_STEPS} steps on this event")]
pub struct OverBudget;

impl RouteFilter {
    /// Validates `spec` against the syntax and bounds and compiles it.
    pub fn compile(spec: &Value) -> Result<Self, FilterError> {
        let parts = compile::compile(spec)?;
        Ok(Self(Arc::new(Compiled {
            spec: spec.clone(),
            parts,
        })))
    }

    /// Whether the event passes every part of the filter, taking at most
    /// `steps`: [`OverBudget`] when they run out first. Allocates nothing.
    pub fn matches(&self, input: &FilterInput<'_>, steps: &Steps) -> Result<bool, OverBudget> {
        let matched = eval::matches(&self.0.parts, input, steps);
        match steps.spent() {
            true => Err(OverBudget),
            false => Ok(matched),
        }
    }

    /// The spec this filter was compiled from, for display.
    pub fn spec(&self) -> &Value {
        &self.0.spec
    }
}
