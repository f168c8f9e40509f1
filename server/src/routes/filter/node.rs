//! The compiled form of a filter: a tree of owned nodes, walked at
//! evaluation against the input only.

use serde_json::Number;

/// One compiled filter per part of the spec; `None` matches anything.
#[derive(Debug, Default)]
pub(super) struct Parts {
    pub body: Option<Node>,
    pub headers: Option<Node>,
    pub query: Option<Node>,
    pub path: Option<Node>,
}

/// A filter value.
#[derive(Debug)]
pub(super) enum Node {
    /// A primitive: equality, or an array containing a match.
    Primitive(Literal),
    /// An array: the input array contains a match for every item.
    All(Box<[Node]>),
    /// An object: every entry matches; `has_fields` when one is a field.
    Object {
        entries: Box<[Entry]>,
        has_fields: bool,
    },
}

/// One entry of an object filter.
#[derive(Debug)]
pub(super) enum Entry {
    /// `"name": F`, matched against the input's field `name`.
    Field(Box<str>, Node),
    /// `"$op": …`, applied to the input itself.
    Op(Op),
}

/// An operator with its compiled operand.
#[derive(Debug)]
pub(super) enum Op {
    Eq(Literal),
    Neq(Literal),
    In(Among),
    Nin(Among),
    Compare(Compare, Bound),
    StartsWith(Box<str>),
    EndsWith(Box<str>),
    Exist(bool),
    Or(Box<[Node]>),
    And(Box<[Node]>),
    Not(Box<Node>),
}

/// A JSON value from the spec, owned by the tree.
#[derive(Debug)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    Number(Number),
    String(Box<str>),
    Array(Box<[Literal]>),
    /// Keys are unique (they come from one JSON object).
    Object(Box<[(Box<str>, Literal)]>),
}

/// The operand of `$in` / `$nin`.
#[derive(Debug)]
pub(super) enum Among {
    /// A string: substring of a string input, or element of an array.
    Text(Box<str>),
    /// A list of values the input (or an element of it) must equal.
    List(Box<[Literal]>),
}

/// Which ordering `$gt`, `$gte`, `$lt` and `$lte` ask for.
#[derive(Debug, Clone, Copy)]
pub(super) enum Compare {
    Gt,
    Gte,
    Lt,
    Lte,
}

/// The operand of an ordering operator.
#[derive(Debug)]
pub(super) enum Bound {
    Number(Number),
    Text(Box<str>),
}
