//! The signed-string template of `scheme = "hmac"`: literal text around
//! placeholders.

use super::{InvalidHmacSpec, Location};

/// One piece of the signed string.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Part {
    /// Bytes written as they are.
    Literal(String),
    /// The raw body.
    Body,
    /// A value read from the request.
    Slot(Slot),
}

/// A placeholder whose value is read from the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Slot {
    /// The timestamp exactly as it was sent.
    Timestamp,
    /// The request method.
    Method,
    /// The public URL the provider called, query included.
    Url,
    /// A header's value, or a value inside the JSON body.
    Value(Location),
}

/// A parsed template.
///
/// The signed-string template of `scheme = "hmac"`: literal text around
/// `{timestamp}`, `{method}`, `{url}`, `{body}`, `{header:Name}` and
/// `{/json/pointer}` placeholders (`{{` and `}}` write a brace).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Template {
    pub(crate) parts: Vec<Part>,
}

impl Template {
    /// Parses `text`, naming the first problem.
    pub(crate) fn parse(text: &str) -> Result<Template, InvalidHmacSpec> {
        let bad = |reason: String| InvalidHmacSpec::new("signed", reason);
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find(['{', '}']) {
            literal.push_str(&rest[..at]);
            let tail = &rest[at..];
            let at = text.len() - tail.len();
            if let Some(after) = tail.strip_prefix("{{").or_else(|| tail.strip_prefix("}}")) {
                literal.push_str(&tail[..1]);
                rest = after;
                continue;
            }
            if tail.starts_with('}') {
                return Err(bad(format!(
                    "a '}}' at byte {at} closes no placeholder (write '}}}}' for a brace)"
                )));
            }
            let end = tail
                .find('}')
                .ok_or_else(|| bad(format!("the placeholder at byte {at} is not closed")))?;
            let name = &tail[1..end];
            if !literal.is_empty() {
                parts.push(Part::Literal(std::mem::take(&mut literal)));
            }
            parts.push(placeholder(name).map_err(bad)?);
            rest = &tail[end + 1..];
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Literal(literal));
        }
        let template = Template { parts };
        if template.count(|part| *part == Part::Body) > 1 {
            return Err(bad("{body} may appear at most once".to_owned()));
        }
        if template.parts.is_empty() {
            return Err(bad("the signed string is empty".to_owned()));
        }
        Ok(template)
    }

    /// How many parts `which` selects.
    pub(crate) fn count(&self, which: impl Fn(&Part) -> bool) -> usize {
        self.parts.iter().filter(|part| which(part)).count()
    }

    /// Whether the template uses `slot`.
    pub(crate) fn has(&self, slot: Slot) -> bool {
        self.parts.contains(&Part::Slot(slot))
    }

    /// Whether any value is read from the JSON body.
    pub(crate) fn reads_body_json(&self) -> bool {
        self.parts
            .iter()
            .any(|part| matches!(part, Part::Slot(Slot::Value(Location::Pointer(_)))))
    }
}

/// One `{...}` placeholder by its name.
fn placeholder(name: &str) -> Result<Part, String> {
    Ok(match name {
        "timestamp" => Part::Slot(Slot::Timestamp),
        "method" => Part::Slot(Slot::Method),
        "url" => Part::Slot(Slot::Url),
        "body" => Part::Body,
        _ if name.starts_with("header:") || name.starts_with('/') => {
            Part::Slot(Slot::Value(Location::parse(name)?))
        }
        _ => {
            return Err(format!(
                "unknown placeholder {{{name}}} (expected {{timestamp}}, {{method}}, {{url}}, \
                 {{body}}, {{header:Name}} or {{/json/pointer}})"
            ))
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_literals_and_placeholders() {
        let template = Template::parse("v0:{header:X-Ts}:{body}").unwrap();
        assert_eq!(
            template.parts,
            vec![
                Part::Literal("v0:".into()),
                Part::Slot(Slot::Value(Location::Header("X-Ts".into()))),
                Part::Literal(":".into()),
                Part::Body,
            ]
        );
        let mailgun = Template::parse("{/signature/timestamp}{/signature/token}").unwrap();
        assert_eq!(mailgun.parts.len(), 2);
        assert!(mailgun.reads_body_json());
        let braces = Template::parse("{{x}}{method}").unwrap();
        assert_eq!(
            braces.parts,
            vec![Part::Literal("{x}".into()), Part::Slot(Slot::Method)]
        );
    }

    #[test]
    fn names_what_is_wrong() {
        for (text, words) in [
            ("{bodyy}", "unknown placeholder {bodyy}"),
            ("{body", "not closed"),
            ("a}b", "closes no placeholder"),
            ("{body}{body}", "at most once"),
            ("", "empty"),
            ("{header:}", "header name"),
            ("{header:Bad Name}", "header name"),
            ("{/a/~2}", "JSON pointer"),
        ] {
            let error = Template::parse(text).unwrap_err().to_string();
            assert!(error.starts_with("hmac.signed: "), "{text:?}: {error}");
            assert!(error.contains(words), "{text:?}: {error}");
        }
    }
}
