//! How a plan reads to a person: one line per resource, then its fields as
//! `old -> new`.

use std::fmt::Write;

use serde_json::Value;

use super::plan::{Action, Change, Plan, SecretChange, Step};

/// The whole plan as text, notes last.
///
/// How a plan reads to a person: one line per resource (`+` create, `~`
/// update, `-` delete), then its fields as `old -> new`; secrets only as
/// set, changed or removed.
pub fn plan_text(plan: &Plan) -> String {
    let mut text = String::new();
    for step in &plan.changes {
        text.push_str(&step_text(step));
    }
    if plan.is_empty() {
        text.push_str("No changes: hookd matches the file.\n");
    } else {
        let _ = writeln!(text, "{} to change.", count(plan.changes.len()));
    }
    for note in &plan.notes {
        let _ = writeln!(text, "note: {note}");
    }
    text
}

/// `1 resource`, `2 resources`.
pub fn count(n: usize) -> String {
    match n {
        1 => "1 resource".to_owned(),
        n => format!("{n} resources"),
    }
}

/// The sign and verb of an action, as diff prints it.
pub fn verb(action: Action) -> (char, &'static str) {
    match action {
        Action::Create => ('+', "create"),
        Action::Update => ('~', "update"),
        Action::Delete => ('-', "delete"),
    }
}

/// One step: its head line and its fields.
pub fn step_text(step: &Step) -> String {
    let (sign, verb) = verb(step.action);
    let mut text = format!("{sign} {verb} {}\n", step.resource);
    for change in &step.fields {
        let _ = writeln!(text, "    {}", change_text(change, step.action));
    }
    text
}

fn change_text(change: &Change, action: Action) -> String {
    match change {
        Change::Value { field, new, .. } if action == Action::Create => {
            format!("{field}: {}", value(new))
        }
        Change::Value { field, old, new } => format!("{field}: {} -> {}", value(old), value(new)),
        Change::Secret { field, secret } => {
            let what = match secret {
                SecretChange::Set => "set",
                SecretChange::Changed => "changed",
                SecretChange::Removed => "removed",
            };
            format!("{field}: ({what})")
        }
    }
}

/// A value as compact JSON; none as `(none)`.
fn value(value: &Value) -> String {
    match value {
        Value::Null => "(none)".to_owned(),
        other => other.to_string(),
    }
}
