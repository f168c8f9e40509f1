//! The static cost bounds of a schema, checked before it is compiled.

use std::collections::{HashMap, HashSet};

use serde_json::{Map, Value};

/// Most subschemas in one schema as written.
pub const MAX_SCHEMA_NODES: usize = 2_000;
/// Most subschemas with every `$ref` replaced by its target: what kills a
/// chain of `anyOf`s each naming the next link twice (2^n).
pub const MAX_EXPANDED_NODES: usize = 10_000;
/// Most `$ref`s followed one inside another.
pub const MAX_REF_DEPTH: usize = 16;
/// Most regular expressions (`pattern`s and `patternProperties` keys) in
/// one schema.
pub const MAX_PATTERNS: usize = 32;
/// Longest regular expression, in bytes.
pub const MAX_PATTERN_LEN: usize = 256;

/// Keywords whose value is one subschema.
const ONE: [&str; 12] = [
    "additionalProperties",
    "propertyNames",
    "items",
    "contains",
    "not",
    "if",
    "then",
    "else",
    "unevaluatedItems",
    "unevaluatedProperties",
    "contentSchema",
    "additionalItems",
];
/// Keywords whose value is an array of subschemas.
const MANY: [&str; 4] = ["allOf", "anyOf", "oneOf", "prefixItems"];
/// Keywords whose value is an object of subschemas.
const NAMED: [&str; 5] = [
    "properties",
    "patternProperties",
    "$defs",
    "definitions",
    "dependentSchemas",
];
/// Keywords hookd refuses: dynamic references cannot be bounded by a walk,
/// and an embedded `$id` changes what a `$ref` below it means.
const REFUSED: [&str; 3] = ["$dynamicRef", "$recursiveRef", "$id"];

/// Keywords holding subschemas that apply only where a `$ref` names them.
const DEFINITIONS: [&str; 2] = ["$defs", "definitions"];

/// The direct subschemas of one schema object, in the order written.
pub(super) fn children(schema: &Map<String, Value>) -> impl Iterator<Item = &Value> {
    schema
        .iter()
        .flat_map(|(keyword, value)| subschemas(keyword, value))
}

/// The direct subschemas of one schema object, to change them.
pub(super) fn children_mut(schema: &mut Map<String, Value>) -> Vec<&mut Value> {
    schema
        .iter_mut()
        .flat_map(|(keyword, value)| {
            let keyword = keyword.as_str();
            if ONE.contains(&keyword) {
                vec![value]
            } else if MANY.contains(&keyword) {
                value
                    .as_array_mut()
                    .map(|a| a.iter_mut().collect())
                    .unwrap_or_default()
            } else if NAMED.contains(&keyword) {
                value
                    .as_object_mut()
                    .map(|o| o.values_mut().collect())
                    .unwrap_or_default()
            } else {
                Vec::new()
            }
        })
        .collect()
}

/// The subschemas in the value of `keyword`.
fn subschemas<'s>(keyword: &str, value: &'s Value) -> Vec<&'s Value> {
    if ONE.contains(&keyword) {
        vec![value]
    } else if MANY.contains(&keyword) {
        value
            .as_array()
            .map(|a| a.iter().collect())
            .unwrap_or_default()
    } else if NAMED.contains(&keyword) {
        value
            .as_object()
            .map(|o| o.values().collect())
            .unwrap_or_default()
    } else {
        Vec::new()
    }
}

/// Why a schema is refused: what is over its bounds or cannot be bounded,
/// starting with the keyword (`$ref ...`, `pattern ...`, `schema ...`).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub(super) struct OverBounds(String);

/// Checks `schema` against the bounds.
///
/// The static cost bounds of a schema, checked before it is compiled (when
/// a contract is saved and when a saved one is loaded): how many subschemas
/// it has as written and with every `$ref` expanded, how deep its `$ref`s
/// nest, and how many `pattern`s it holds and how long they are. The walk
/// is linear in the schema's size, whatever the schema.
pub(super) fn check(schema: &Value) -> Result<(), OverBounds> {
    let mut walk = Walk {
        root: schema,
        anchors: HashMap::new(),
        nodes: 0,
        patterns: 0,
    };
    walk.scan(schema, true)?;
    let mut expand = Expand {
        walk: &walk,
        done: HashMap::new(),
        open: HashSet::new(),
    };
    let (expanded, _) = expand.size(schema, "#")?;
    debug_assert!(expanded <= MAX_EXPANDED_NODES);
    Ok(())
}

struct Walk<'s> {
    root: &'s Value,
    anchors: HashMap<&'s str, &'s Value>,
    nodes: usize,
    patterns: usize,
}

impl<'s> Walk<'s> {
    /// Counts nodes and patterns, notes anchors, refuses what cannot be
    /// bounded.
    fn scan(&mut self, node: &'s Value, root: bool) -> Result<(), OverBounds> {
        self.nodes += 1;
        if self.nodes > MAX_SCHEMA_NODES {
            return Err(OverBounds(format!(
                "schema has more than {MAX_SCHEMA_NODES} subschemas"
            )));
        }
        let Some(schema) = node.as_object() else {
            return Ok(());
        };
        for keyword in REFUSED {
            if schema.contains_key(keyword) && !(root && keyword == "$id") {
                return Err(OverBounds(format!(
                    "{keyword} is not supported (only at the top for $id)"
                )));
            }
        }
        if let Some(anchor) = schema.get("$anchor").and_then(Value::as_str) {
            self.anchors.insert(anchor, node);
        }
        if let Some(pattern) = schema.get("pattern").and_then(Value::as_str) {
            self.pattern(pattern)?;
        }
        if let Some(named) = schema.get("patternProperties").and_then(Value::as_object) {
            for pattern in named.keys() {
                self.pattern(pattern)?;
            }
        }
        for child in children(schema) {
            self.scan(child, false)?;
        }
        Ok(())
    }

    fn pattern(&mut self, pattern: &str) -> Result<(), OverBounds> {
        self.patterns += 1;
        if self.patterns > MAX_PATTERNS {
            return Err(OverBounds(format!(
                "pattern: a schema holds at most {MAX_PATTERNS} patterns (pattern and patternProperties)"
            )));
        }
        if pattern.len() > MAX_PATTERN_LEN {
            return Err(OverBounds(format!(
                "pattern: at most {MAX_PATTERN_LEN} bytes, got {} bytes",
                pattern.len()
            )));
        }
        Ok(())
    }

    /// The subschema a `$ref` names: `#`, `#/json/pointer` or `#anchor`.
    fn target(&self, reference: &str) -> Result<&'s Value, OverBounds> {
        let Some(fragment) = reference.strip_prefix('#') else {
            return Err(OverBounds(format!(
                "$ref {reference:?}: only references inside the schema (#/$defs/name) are supported"
            )));
        };
        let found = if fragment.is_empty() {
            Some(self.root)
        } else if fragment.starts_with('/') {
            self.root.pointer(fragment)
        } else {
            self.anchors.get(fragment).copied()
        };
        found.ok_or_else(|| OverBounds(format!("$ref {reference:?} names nothing in the schema")))
    }
}

struct Expand<'w, 's> {
    walk: &'w Walk<'s>,
    /// (expanded size, `$ref` depth) of each node done, by address.
    done: HashMap<usize, (usize, usize)>,
    /// Nodes being expanded: meeting one again is a cycle.
    open: HashSet<usize>,
}

impl<'s> Expand<'_, 's> {
    /// The size and `$ref` depth of `node` with its references expanded.
    fn size(&mut self, node: &'s Value, reference: &str) -> Result<(usize, usize), OverBounds> {
        let address = std::ptr::from_ref(node) as usize;
        if let Some(known) = self.done.get(&address) {
            return Ok(*known);
        }
        if !self.open.insert(address) {
            return Err(OverBounds(format!(
                "$ref {reference:?} refers back to a schema containing it: recursive schemas are not supported"
            )));
        }
        let (mut size, mut depth) = (1usize, 0usize);
        if let Some(schema) = node.as_object() {
            if let Some(target) = schema.get("$ref").and_then(Value::as_str) {
                let (s, d) = self.size(self.walk.target(target)?, target)?;
                size = size.saturating_add(s);
                depth = depth.max(d + 1);
            }
            let applied = schema
                .iter()
                .filter(|(keyword, _)| !DEFINITIONS.contains(&keyword.as_str()))
                .flat_map(|(keyword, value)| subschemas(keyword, value));
            for child in applied {
                let (s, d) = self.size(child, reference)?;
                size = size.saturating_add(s);
                depth = depth.max(d);
            }
        }
        if size > MAX_EXPANDED_NODES {
            return Err(OverBounds(format!(
                "$ref: with every reference expanded the schema has more than {MAX_EXPANDED_NODES} subschemas"
            )));
        }
        if depth > MAX_REF_DEPTH {
            return Err(OverBounds(format!(
                "$ref: references nest more than {MAX_REF_DEPTH} deep"
            )));
        }
        self.open.remove(&address);
        self.done.insert(address, (size, depth));
        Ok((size, depth))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::{
        contracts::{Contract, ContractSource, ContractSpec, Policy},
        error::InvalidSetting,
    };

    /// `data` under `n` `anyOf`s each naming the next link twice.
    fn chain(n: usize) -> Value {
        let mut defs = Map::new();
        for i in 0..n {
            let next = json!({"$ref": format!("#/$defs/a{}", i + 1)});
            defs.insert(format!("a{i}"), json!({"anyOf": [next.clone(), next]}));
        }
        defs.insert(format!("a{n}"), json!({"type": "integer"}));
        json!({"$defs": defs, "properties": {"data": {"$ref": "#/$defs/a0"}}})
    }

    fn compile(schema: &Value) -> Result<Contract, InvalidSetting> {
        let spec = ContractSpec {
            event_type: "t".into(),
            version: None,
            schema: schema.to_string(),
            example: json!({"type": "t"}).to_string(),
        };
        Contract::compile(spec, &Policy::default(), ContractSource::Config)
    }

    #[test]
    fn an_exponential_ref_chain_is_refused_and_a_short_one_accepted() {
        let e = check(&chain(20)).unwrap_err().to_string();
        assert!(e.starts_with("$ref: with every reference expanded"), "{e}");
        assert!(check(&chain(12)).is_err());
        check(&chain(11)).unwrap();
        let hops = |n: usize| {
            let mut defs: Map<String, Value> = (0..n)
                .map(|i| {
                    (
                        format!("h{i}"),
                        json!({"$ref": format!("#/$defs/h{}", i + 1)}),
                    )
                })
                .collect();
            defs.insert(format!("h{n}"), json!({"type": "integer"}));
            json!({"$defs": defs, "$ref": "#/$defs/h0"})
        };
        check(&hops(MAX_REF_DEPTH - 1)).unwrap();
        let e = check(&hops(MAX_REF_DEPTH)).unwrap_err().to_string();
        assert!(
            e.starts_with("$ref: references nest more than 16 deep"),
            "{e}"
        );
    }

    #[test]
    fn recursive_remote_and_dynamic_references_are_refused() {
        for (schema, says) in [
            (json!({"properties": {"child": {"$ref": "#"}}}), "recursive"),
            (
                json!({"$defs": {"a": {"items": {"$ref": "#/$defs/a"}}}, "$ref": "#/$defs/a"}),
                "recursive",
            ),
            (
                json!({"$ref": "https://example.com/s.json"}),
                "only references inside",
            ),
            (json!({"$ref": "#/$defs/missing"}), "names nothing"),
            (json!({"$dynamicRef": "#x"}), "$dynamicRef is not supported"),
            (
                json!({"properties": {"a": {"$id": "other"}}}),
                "$id is not supported",
            ),
        ] {
            let e = check(&schema).unwrap_err().to_string();
            assert!(e.contains(says), "{schema}: {e}");
        }
        let anchored = json!({"$defs": {"a": {"$anchor": "amount", "type": "integer"}}, "properties": {"n": {"$ref": "#amount"}}});
        check(&anchored).unwrap();
    }

    #[test]
    fn patterns_are_bounded_in_number_length_and_compiled_size() {
        let many: Map<String, Value> = (0..=MAX_PATTERNS)
            .map(|i| (format!("p{i}"), json!({"pattern": "^a"})))
            .collect();
        let e = check(&json!({"properties": many})).unwrap_err().to_string();
        assert!(e.starts_with("pattern: a schema holds at most 32"), "{e}");
        let e = check(&json!({"pattern": "a".repeat(MAX_PATTERN_LEN + 1)}))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("pattern: at most 256 bytes"), "{e}");
        let keys = json!({"patternProperties": {"^x": true, "^y": true}});
        check(&keys).unwrap();
        // Within 256 bytes, but its compiled form is over the heap limit:
        // the same pattern compiles without the limit.
        let big = "^([a-z]{1,100}){1,20}$";
        let e = compile(&json!({"pattern": big})).unwrap_err().to_string();
        assert!(e.contains(r#"is not a "regex""#), "{e}");
        jsonschema::draft202012::options()
            .with_pattern_options(jsonschema::PatternOptions::regex())
            .build(&json!({"pattern": big}))
            .unwrap();
        compile(&json!({"pattern": "^[a-z0-9._%+-]+@[a-z0-9.-]+\\.[a-z]{2,}$"})).unwrap();
    }

    #[test]
    fn subschemas_as_written_are_bounded() {
        let wide: Vec<Value> = (0..MAX_SCHEMA_NODES).map(|_| json!({})).collect();
        let e = check(&json!({"anyOf": wide})).unwrap_err().to_string();
        assert!(e.starts_with("schema has more than 2000 subschemas"), "{e}");
    }
}
