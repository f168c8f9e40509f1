//! Evaluating a compiled filter against one event, within a budget of steps.

use std::{cell::Cell, cmp::Ordering};

use serde_json::{Number, Value};

use super::{
    node::{Among, Bound, Compare, Entry, Literal, Node, Op, Parts},
    FilterInput,
};

/// Bytes of a string searched for a part that cost one more step.
pub(super) const BYTES_PER_STEP: usize = 256;
/// Header or query pairs looked through for a name that cost one more step.
pub(super) const PAIRS_PER_STEP: usize = 16;

/// The steps an evaluation may still take.
#[derive(Debug)]
pub struct Steps(Cell<u64>);

impl Steps {
    /// `steps` to take.
    pub fn new(steps: u64) -> Self {
        Steps(Cell::new(steps))
    }

    /// Steps not taken yet.
    pub fn left(&self) -> u64 {
        self.0.get()
    }

    /// Whether an evaluation ran out: then its answer means nothing.
    pub fn spent(&self) -> bool {
        self.0.get() == 0
    }

    /// Takes `n` steps; false (and none left) when fewer remain.
    fn take(&self, n: u64) -> bool {
        match self.0.get().checked_sub(n) {
            Some(left) => {
                self.0.set(left);
                true
            }
            None => {
                self.0.set(0);
                false
            }
        }
    }
}

/// Whether every part present matches, unless `steps` ran out (see
/// [`Steps::spent`]).
///
/// Allocates nothing: the walk borrows the tree and the input, and
/// every comparison works on borrowed strings and numbers. Every node
/// applied to a value, every item looked through and every literal compared
/// takes a step of the evaluation's [`Steps`] (a long string or header list
/// takes one per [`BYTES_PER_STEP`] bytes or [`PAIRS_PER_STEP`] pairs
/// more); once they are spent every node answers at once, and the caller
/// learns the evaluation ran out ([`Steps::spent`]), so its cost is bounded
/// whatever the filter and the body.
pub(super) fn matches(parts: &Parts, input: &FilterInput<'_>, steps: &Steps) -> bool {
    let part = |node: &Option<Node>, view: View<'_>| {
        node.as_ref()
            .is_none_or(|node| node.eval(Some(view), steps))
    };
    part(&parts.body, View::Json(input.body))
        && part(&parts.path, View::Text(input.path))
        && part(&parts.headers, View::Pairs(input.headers, Names::AnyCase))
        && part(&parts.query, View::Pairs(input.query, Names::Exact))
}

/// `any` over `items` that stops once the steps are spent.
fn any_item<'a>(items: &'a [Value], steps: &Steps, test: impl Fn(&'a Value) -> bool) -> bool {
    items
        .iter()
        .take_while(|_| !steps.spent())
        .any(|item| steps.take(1) && test(item))
}

/// How the names of a pairs view compare.
#[derive(Clone, Copy)]
enum Names {
    AnyCase,
    Exact,
}

/// A value of the input: JSON from the body, a string (the path, a header
/// or query value), or the headers or query as an object of strings.
#[derive(Clone, Copy)]
enum View<'a> {
    Json(&'a Value),
    Text(&'a str),
    Pairs(&'a [(&'a str, &'a str)], Names),
}

impl<'a> View<'a> {
    fn text(self) -> Option<&'a str> {
        match self {
            View::Json(Value::String(s)) => Some(s),
            View::Text(s) => Some(s),
            _ => None,
        }
    }

    fn items(self) -> Option<&'a [Value]> {
        match self {
            View::Json(Value::Array(items)) => Some(items),
            _ => None,
        }
    }

    fn is_map(self) -> bool {
        matches!(self, View::Json(Value::Object(_)) | View::Pairs(..))
    }

    /// The field `name` of an object (`None` for anything else). A repeated
    /// header or query name gives its first value.
    fn field(self, name: &str, steps: &Steps) -> Option<View<'a>> {
        match self {
            View::Json(Value::Object(fields)) => fields.get(name).map(View::Json),
            View::Pairs(pairs, names) => {
                if !steps.take((pairs.len() / PAIRS_PER_STEP) as u64) {
                    return None;
                }
                let same = |key: &str| match names {
                    Names::AnyCase => key.eq_ignore_ascii_case(name),
                    Names::Exact => key == name,
                };
                pairs
                    .iter()
                    .find(|(key, _)| same(key))
                    .map(|&(_, value)| View::Text(value))
            }
            _ => None,
        }
    }

    /// Deep equality with a literal of the spec.
    fn equals(self, literal: &Literal, steps: &Steps) -> bool {
        match (self, literal) {
            (View::Text(s), Literal::String(l)) => steps.take(1) && s == &**l,
            (View::Json(value), literal) => json_equals(value, literal, steps),
            _ => false,
        }
    }
}

fn json_equals(value: &Value, literal: &Literal, steps: &Steps) -> bool {
    if !steps.take(1) {
        return false;
    }
    match (value, literal) {
        (Value::Null, Literal::Null) => true,
        (Value::Bool(v), Literal::Bool(l)) => v == l,
        (Value::Number(v), Literal::Number(l)) => number_order(v, l) == Some(Ordering::Equal),
        (Value::String(v), Literal::String(l)) => v.as_str() == &**l,
        (Value::Array(items), Literal::Array(literals)) => {
            items.len() == literals.len()
                && items
                    .iter()
                    .zip(literals.iter())
                    .all(|(v, l)| json_equals(v, l, steps))
        }
        (Value::Object(fields), Literal::Object(literals)) => {
            fields.len() == literals.len()
                && literals
                    .iter()
                    .all(|(key, l)| fields.get(&**key).is_some_and(|v| json_equals(v, l, steps)))
        }
        _ => false,
    }
}

/// Numbers by value: exactly as integers when both are, else as floats.
fn number_order(a: &Number, b: &Number) -> Option<Ordering> {
    let int = |n: &Number| {
        n.as_i64()
            .map(i128::from)
            .or_else(|| n.as_u64().map(i128::from))
    };
    match (int(a), int(b)) {
        (Some(a), Some(b)) => Some(a.cmp(&b)),
        _ => a.as_f64()?.partial_cmp(&b.as_f64()?),
    }
}

impl Node {
    /// Whether this filter matches `value` (`None`: a missing field).
    fn eval(&self, value: Option<View<'_>>, steps: &Steps) -> bool {
        if !steps.take(1) {
            return false;
        }
        match self {
            Node::Primitive(literal) => value.is_some_and(|value| match value.items() {
                Some(items) => any_item(items, steps, |item| {
                    self.eval(Some(View::Json(item)), steps)
                }),
                None => value.equals(literal, steps),
            }),
            Node::All(filters) => value.and_then(View::items).is_some_and(|items| {
                filters.iter().all(|filter| {
                    any_item(items, steps, |item| {
                        filter.eval(Some(View::Json(item)), steps)
                    })
                })
            }),
            Node::Object {
                entries,
                has_fields,
            } => {
                if entries.is_empty() {
                    return value.is_some();
                }
                if let Some(items) = value.and_then(View::items).filter(|_| *has_fields) {
                    return any_item(items, steps, |item| {
                        self.eval(Some(View::Json(item)), steps)
                    });
                }
                entries.iter().all(|entry| entry.eval(value, steps))
            }
        }
    }
}

impl Entry {
    fn eval(&self, value: Option<View<'_>>, steps: &Steps) -> bool {
        match self {
            Entry::Field(name, filter) => match value {
                Some(map) if map.is_map() => filter.eval(map.field(name, steps), steps),
                _ => false,
            },
            Entry::Op(op) => op.eval(value, steps),
        }
    }
}

impl Op {
    /// Only `$exist`, `$or`, `$and` and `$not` can match a missing value.
    fn eval(&self, value: Option<View<'_>>, steps: &Steps) -> bool {
        if !steps.take(1) {
            return false;
        }
        let present = |test: &dyn Fn(View<'_>) -> bool| value.is_some_and(test);
        match self {
            Op::Exist(wanted) => value.is_some() == *wanted,
            Op::Or(filters) => filters.iter().any(|filter| filter.eval(value, steps)),
            Op::And(filters) => filters.iter().all(|filter| filter.eval(value, steps)),
            Op::Not(filter) => !filter.eval(value, steps),
            Op::Eq(literal) => present(&|v| v.equals(literal, steps)),
            Op::Neq(literal) => present(&|v| !v.equals(literal, steps)),
            Op::In(among) => present(&|v| contains(v, among, steps) == Some(true)),
            Op::Nin(among) => present(&|v| contains(v, among, steps) == Some(false)),
            Op::Compare(compare, bound) => {
                present(&|v| order(v, bound).is_some_and(|o| compare.holds(o)))
            }
            Op::StartsWith(prefix) => {
                present(&|v| v.text().is_some_and(|t| t.starts_with(&**prefix)))
            }
            Op::EndsWith(suffix) => present(&|v| v.text().is_some_and(|t| t.ends_with(&**suffix))),
        }
    }
}

/// What `$in` answers, or `None` where it does not apply (a type mismatch).
fn contains(value: View<'_>, among: &Among, steps: &Steps) -> Option<bool> {
    match (among, value.items()) {
        (Among::Text(part), Some(items)) => Some(any_item(items, steps, |item| {
            item.as_str() == Some(&**part)
        })),
        (Among::Text(part), None) => value.text().map(|text| {
            steps.take(1 + (text.len() / BYTES_PER_STEP) as u64) && text.contains(&**part)
        }),
        (Among::List(list), Some(items)) => Some(any_item(items, steps, |item| {
            list.iter()
                .take_while(|_| !steps.spent())
                .any(|l| View::Json(item).equals(l, steps))
        })),
        (Among::List(_), None) if value.is_map() => None,
        (Among::List(list), None) => Some(
            list.iter()
                .take_while(|_| !steps.spent())
                .any(|l| value.equals(l, steps)),
        ),
    }
}

/// How `value` compares with an ordering operand of the same type.
fn order(value: View<'_>, bound: &Bound) -> Option<Ordering> {
    match (bound, value) {
        (Bound::Number(bound), View::Json(Value::Number(n))) => number_order(n, bound),
        (Bound::Text(bound), value) => value.text().map(|text| text.cmp(&**bound)),
        _ => None,
    }
}

impl Compare {
    fn holds(self, ordering: Ordering) -> bool {
        match self {
            Compare::Gt => ordering.is_gt(),
            Compare::Gte => ordering.is_ge(),
            Compare::Lt => ordering.is_lt(),
            Compare::Lte => ordering.is_le(),
        }
    }
}
