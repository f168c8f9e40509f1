//! Validating a spec and building its tree: every operator and operand is
//! checked here, with the bounds, so evaluation never meets a bad filter.

use std::io;

use serde_json::{Map, Value};

use super::{
    node::{Among, Bound, Compare, Entry, Literal, Node, Op, Parts},
    FilterError, MAX_ARRAY_ITEMS, MAX_DEPTH, MAX_NODES, MAX_SPEC_BYTES, MAX_STRING_BYTES,
};

/// Checks `spec` and compiles each of its parts.
pub(super) fn compile(spec: &Value) -> Result<Parts, FilterError> {
    let size = json_size(spec);
    if size > MAX_SPEC_BYTES {
        return Err(Path::ROOT.error(format!("is {size} bytes of JSON; at most {MAX_SPEC_BYTES}")));
    }
    let Value::Object(parts) = spec else {
        return Err(Path::ROOT.error("expects an object with body, headers, query or path"));
    };
    let root = Path::ROOT;
    let mut compiler = Compiler { nodes: 0 };
    let mut compiled = Parts::default();
    for (name, filter) in parts {
        let path = root.key(name);
        let slot = match name.as_str() {
            "body" => &mut compiled.body,
            "headers" => &mut compiled.headers,
            "query" => &mut compiled.query,
            "path" => &mut compiled.path,
            _ => return Err(path.error("unknown part; expected body, headers, query or path")),
        };
        *slot = Some(compiler.node(filter, &path)?);
    }
    Ok(compiled)
}

/// The length of `value` as compact JSON, counted without keeping it.
fn json_size(value: &Value) -> usize {
    struct Count(usize);
    impl io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> io::Result<usize> {
            self.0 += bytes.len();
            Ok(bytes.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` to a sink that never fails cannot fail.
    serde_json::to_writer(&mut count, value).map_or(usize::MAX, |()| count.0)
}

/// Where a value stands in the spec: a chain of segments up to the root,
/// turned into a JSON pointer only when an error names it.
struct Path<'a> {
    parent: Option<&'a Path<'a>>,
    segment: Segment<'a>,
    /// How many objects and arrays of the part enclose this value.
    depth: usize,
}

enum Segment<'a> {
    Root,
    Key(&'a str),
    Index(usize),
}

impl<'a> Path<'a> {
    const ROOT: Path<'static> = Path {
        parent: None,
        segment: Segment::Root,
        depth: 0,
    };

    /// The path of a part (depth 0) or of a field or operator in an object.
    fn key(&'a self, key: &'a str) -> Path<'a> {
        self.child(Segment::Key(key))
    }

    fn index(&'a self, index: usize) -> Path<'a> {
        self.child(Segment::Index(index))
    }

    fn child(&'a self, segment: Segment<'a>) -> Path<'a> {
        let depth = match self.segment {
            Segment::Root => 0,
            _ => self.depth + 1,
        };
        Path {
            parent: Some(self),
            segment,
            depth,
        }
    }

    fn error(&self, reason: impl Into<String>) -> FilterError {
        FilterError {
            pointer: self.pointer(),
            reason: reason.into(),
        }
    }

    /// The RFC 6901 pointer: `~` as `~0`, `/` as `~1`.
    fn pointer(&self) -> String {
        let mut segments = Vec::new();
        let mut at = Some(self);
        while let Some(path) = at {
            segments.push(&path.segment);
            at = path.parent;
        }
        let mut pointer = String::new();
        for segment in segments.into_iter().rev() {
            match segment {
                Segment::Root => {}
                Segment::Key(key) => {
                    pointer.push('/');
                    pointer.push_str(&key.replace('~', "~0").replace('/', "~1"));
                }
                Segment::Index(index) => pointer.push_str(&format!("/{index}")),
            }
        }
        pointer
    }

    /// Refuses an object or array nested deeper than [`MAX_DEPTH`].
    fn enter(&self) -> Result<(), FilterError> {
        if self.depth >= MAX_DEPTH {
            return Err(self.error(format!("nests deeper than {MAX_DEPTH} levels")));
        }
        Ok(())
    }
}

fn check_text(text: &str, path: &Path<'_>, what: &str) -> Result<(), FilterError> {
    let len = text.len();
    if len > MAX_STRING_BYTES {
        return Err(path.error(format!(
            "{what}is {len} bytes long; at most {MAX_STRING_BYTES}"
        )));
    }
    Ok(())
}

fn check_items(items: &[Value], path: &Path<'_>) -> Result<(), FilterError> {
    path.enter()?;
    let len = items.len();
    if len > MAX_ARRAY_ITEMS {
        return Err(path.error(format!("has {len} items; at most {MAX_ARRAY_ITEMS}")));
    }
    Ok(())
}

/// Compiles filters, counting their nodes (every operator, filter value
/// and literal, each item of a `$in` list or of a literal array or object
/// included) against [`MAX_NODES`].
struct Compiler {
    nodes: usize,
}

impl Compiler {
    fn count(&mut self, path: &Path<'_>) -> Result<(), FilterError> {
        self.nodes += 1;
        if self.nodes > MAX_NODES {
            return Err(path.error(format!("more than {MAX_NODES} filter nodes")));
        }
        Ok(())
    }

    fn node(&mut self, filter: &Value, path: &Path<'_>) -> Result<Node, FilterError> {
        match filter {
            Value::Array(items) => {
                self.count(path)?;
                check_items(items, path)?;
                let items = items.iter().enumerate();
                let nodes = items.map(|(i, item)| self.node(item, &path.index(i)));
                Ok(Node::All(nodes.collect::<Result<_, _>>()?))
            }
            Value::Object(entries) => {
                self.count(path)?;
                self.object(entries, path)
            }
            primitive => Ok(Node::Primitive(self.literal(primitive, path)?)),
        }
    }

    fn object(
        &mut self,
        entries: &Map<String, Value>,
        path: &Path<'_>,
    ) -> Result<Node, FilterError> {
        path.enter()?;
        let mut has_fields = false;
        let mut compiled = Vec::with_capacity(entries.len());
        for (key, value) in entries {
            let at = path.key(key);
            if key.starts_with('$') {
                compiled.push(Entry::Op(self.op(key, value, &at)?));
            } else {
                check_text(key, &at, "field name ")?;
                has_fields = true;
                compiled.push(Entry::Field(key.as_str().into(), self.node(value, &at)?));
            }
        }
        Ok(Node::Object {
            entries: compiled.into(),
            has_fields,
        })
    }

    fn op(&mut self, name: &str, operand: &Value, path: &Path<'_>) -> Result<Op, FilterError> {
        self.count(path)?;
        Ok(match name {
            "$eq" => Op::Eq(self.literal(operand, path)?),
            "$neq" => Op::Neq(self.literal(operand, path)?),
            "$in" => Op::In(self.among(operand, path)?),
            "$nin" => Op::Nin(self.among(operand, path)?),
            "$gt" => Op::Compare(Compare::Gt, bound(operand, path)?),
            "$gte" => Op::Compare(Compare::Gte, bound(operand, path)?),
            "$lt" => Op::Compare(Compare::Lt, bound(operand, path)?),
            "$lte" => Op::Compare(Compare::Lte, bound(operand, path)?),
            "$startsWith" => Op::StartsWith(text(operand, path)?),
            "$endsWith" => Op::EndsWith(text(operand, path)?),
            "$exist" => match operand {
                Value::Bool(present) => Op::Exist(*present),
                _ => return Err(path.error("expects true or false")),
            },
            "$or" => Op::Or(self.filters(operand, path)?),
            "$and" => Op::And(self.filters(operand, path)?),
            "$not" => Op::Not(Box::new(self.node(operand, path)?)),
            _ => return Err(path.error("unknown operator")),
        })
    }

    /// The operand of `$or` and `$and`: a non-empty array of filters.
    fn filters(&mut self, operand: &Value, path: &Path<'_>) -> Result<Box<[Node]>, FilterError> {
        match operand {
            Value::Array(items) if !items.is_empty() => {
                check_items(items, path)?;
                let items = items.iter().enumerate();
                items
                    .map(|(i, item)| self.node(item, &path.index(i)))
                    .collect()
            }
            _ => Err(path.error("expects a non-empty array of filters")),
        }
    }

    /// A literal of the spec, each of its items and members counted.
    fn literal(&mut self, value: &Value, path: &Path<'_>) -> Result<Literal, FilterError> {
        self.count(path)?;
        Ok(match value {
            Value::Null => Literal::Null,
            Value::Bool(b) => Literal::Bool(*b),
            Value::Number(n) => Literal::Number(n.clone()),
            Value::String(s) => {
                check_text(s, path, "")?;
                Literal::String(s.as_str().into())
            }
            Value::Array(items) => Literal::Array(self.literals(items, path)?),
            Value::Object(entries) => {
                path.enter()?;
                let mut fields = Vec::with_capacity(entries.len());
                for (key, value) in entries {
                    let at = path.key(key);
                    check_text(key, &at, "field name ")?;
                    fields.push((key.as_str().into(), self.literal(value, &at)?));
                }
                Literal::Object(fields.into())
            }
        })
    }

    fn literals(
        &mut self,
        items: &[Value],
        path: &Path<'_>,
    ) -> Result<Box<[Literal]>, FilterError> {
        check_items(items, path)?;
        let items = items.iter().enumerate();
        items
            .map(|(i, item)| self.literal(item, &path.index(i)))
            .collect()
    }

    fn among(&mut self, operand: &Value, path: &Path<'_>) -> Result<Among, FilterError> {
        match operand {
            Value::String(_) => Ok(Among::Text(text(operand, path)?)),
            Value::Array(items) => Ok(Among::List(self.literals(items, path)?)),
            _ => Err(path.error("expects an array or a string")),
        }
    }
}

fn bound(operand: &Value, path: &Path<'_>) -> Result<Bound, FilterError> {
    match operand {
        Value::Number(n) => Ok(Bound::Number(n.clone())),
        Value::String(_) => Ok(Bound::Text(text(operand, path)?)),
        _ => Err(path.error("expects a number or a string")),
    }
}

fn text(operand: &Value, path: &Path<'_>) -> Result<Box<str>, FilterError> {
    match operand {
        Value::String(s) => {
            check_text(s, path, "")?;
            Ok(s.as_str().into())
        }
        _ => Err(path.error("expects a string")),
    }
}
