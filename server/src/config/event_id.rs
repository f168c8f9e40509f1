//! Where a tenant's event id lives: the `event_id_field` setting's grammar and
//! the rule a tenant runs with when it sets none.

use hookd_proto::domain::Scheme;

use super::bounds::{MAX_EVENT_ID_RULE_LEN, MAX_TEMPLATE_PARTS};
use crate::error::InvalidSetting;

/// One place a piece of the event id is read from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IdPart {
    /// Text between a template's placeholders.
    Literal(String),
    /// A top-level body field (or form field) by name.
    Field(String),
    /// A JSON pointer (RFC 6901) into the body (a form's fields are its
    /// top level).
    Pointer(String),
    /// A request header, by name.
    Header(String),
    /// A field of a form body only.
    Form(String),
}

impl IdPart {
    /// How an error names the place: as it is written in the setting.
    pub fn name(&self) -> String {
        match self {
            IdPart::Literal(text) => text.clone(),
            IdPart::Field(name) | IdPart::Pointer(name) => name.clone(),
            IdPart::Header(name) => format!("header:{name}"),
            IdPart::Form(name) => format!("form:{name}"),
        }
    }
}

/// How a delivery's event id is found.
///
/// Where a tenant's event id lives: the `event_id_field` setting's grammar
/// (a top-level field, a JSON pointer, a header, a form field, or a template
/// of several), parsed once when the tenant is resolved, and the rule a
/// tenant runs with when it sets none (its scheme's header or body field,
/// else the digest of the signed content).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum EventIdRule {
    /// Read from these parts, joined (one part: no template). `name` is the
    /// setting as written, for the errors about the id as a whole.
    Parts {
        /// The setting as written.
        name: String,
        /// The places, in order.
        parts: Vec<IdPart>,
    },
    /// The scheme's own signed header (the verifier reads it).
    SchemeHeader(&'static str),
    /// The digest of the signed content, hex, after
    /// [`CONTENT_EVENT_ID_PREFIX`]: for schemes with no event id of their own.
    Content,
}

/// What a content-derived event id starts with.
pub const CONTENT_EVENT_ID_PREFIX: &str = "sha256:";

/// The content rule, for [`EventIdRule::for_body`] to lend.
static CONTENT: EventIdRule = EventIdRule::Content;

impl EventIdRule {
    /// This rule as it applies to a body that is a `form` or not, when the
    /// tenant `set` it or took its scheme's: a scheme's own rule that points
    /// into nested JSON (Mailgun's `/event-data/id`) cannot address a flat
    /// form, so that scheme's forms are keyed by their signed content.
    pub fn for_body(&self, form: bool, set: bool) -> &EventIdRule {
        let nested = match self {
            EventIdRule::Parts { parts, .. } => matches!(
                parts.as_slice(),
                [IdPart::Pointer(pointer)] if pointer[1..].contains('/')
            ),
            _ => false,
        };
        if form && !set && nested {
            &CONTENT
        } else {
            self
        }
    }

    /// The rule of a tenant with `scheme` and the `event_id_field` it set.
    pub fn resolve(scheme: Scheme, setting: Option<&str>) -> Result<EventIdRule, InvalidSetting> {
        if let Some(setting) = setting {
            return EventIdRule::parse(setting)
                .map_err(|reason| InvalidSetting::new("event_id_field", reason));
        }
        if let Some(field) = scheme.body_event_id_field() {
            let parsed = EventIdRule::parse(field);
            return Ok(parsed.expect("the schemes' body fields are valid rules"));
        }
        Ok(match scheme.event_id_header() {
            Some(header) => EventIdRule::SchemeHeader(header),
            None => EventIdRule::Content,
        })
    }

    /// Parses the setting: `header:Name`, `form:Name`, `/json/pointer`, a
    /// template of those in braces (`{/eventCode}:{/pspReference}`), or a
    /// top-level field name.
    pub fn parse(setting: &str) -> Result<EventIdRule, String> {
        if setting.is_empty() || setting.len() > MAX_EVENT_ID_RULE_LEN {
            return Err(format!(
                "must be 1 to {MAX_EVENT_ID_RULE_LEN} bytes: a field name, a JSON pointer (/a/b), header:Name, form:Name or a template such as {{/a}}:{{header:B}}"
            ));
        }
        let parts = if setting.contains(['{', '}']) {
            template(setting)?
        } else {
            vec![placeholder(setting)?]
        };
        Ok(EventIdRule::Parts {
            name: setting.to_owned(),
            parts,
        })
    }
}

/// The parts of a template: placeholders in braces, visible ASCII between.
fn template(setting: &str) -> Result<Vec<IdPart>, String> {
    let mut parts = Vec::new();
    let mut rest = setting;
    while !rest.is_empty() {
        let Some(open) = rest.find('{') else {
            parts.push(literal(rest)?);
            break;
        };
        if open > 0 {
            parts.push(literal(&rest[..open])?);
        }
        let after = &rest[open + 1..];
        let close = after
            .find('}')
            .ok_or_else(|| format!("template {setting:?}: a '{{' is not closed"))?;
        let inner = &after[..close];
        if inner.contains('{') {
            return Err(format!("template {setting:?}: placeholders do not nest"));
        }
        parts.push(placeholder(inner).map_err(|e| format!("template {setting:?}: {e}"))?);
        rest = &after[close + 1..];
    }
    let placeholders = parts
        .iter()
        .filter(|p| !matches!(p, IdPart::Literal(_)))
        .count();
    if placeholders == 0 || placeholders > MAX_TEMPLATE_PARTS {
        return Err(format!(
            "template {setting:?} must have 1 to {MAX_TEMPLATE_PARTS} placeholders"
        ));
    }
    Ok(parts)
}

fn literal(text: &str) -> Result<IdPart, String> {
    if text.contains('}') {
        return Err(format!("template text {text:?}: a '}}' without its '{{'"));
    }
    if !text.bytes().all(|b| b.is_ascii_graphic()) {
        return Err(format!(
            "template text {text:?} must be visible ASCII, as event ids are"
        ));
    }
    Ok(IdPart::Literal(text.to_owned()))
}

/// One place: `header:Name`, `form:Name`, `/pointer` or a field name.
fn placeholder(text: &str) -> Result<IdPart, String> {
    if let Some(name) = text.strip_prefix("header:") {
        let valid = !name.is_empty()
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        return match valid {
            true => Ok(IdPart::Header(name.to_owned())),
            false => Err(format!("{text:?}: not a valid header name")),
        };
    }
    if let Some(name) = text.strip_prefix("form:") {
        return match name.is_empty() {
            true => Err(format!("{text:?}: the form field name is empty")),
            false => Ok(IdPart::Form(name.to_owned())),
        };
    }
    if text.starts_with('/') {
        return pointer(text).map(|()| IdPart::Pointer(text.to_owned()));
    }
    match text.is_empty() {
        true => Err("an empty placeholder".to_owned()),
        false => Ok(IdPart::Field(text.to_owned())),
    }
}

/// A JSON pointer's escapes are `~0` and `~1` only.
fn pointer(text: &str) -> Result<(), String> {
    let mut chars = text.chars();
    while let Some(c) = chars.next() {
        if c == '~' && !matches!(chars.next(), Some('0' | '1')) {
            return Err(format!(
                "{text:?}: in a JSON pointer '~' must be followed by 0 or 1"
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(setting: &str) -> Vec<IdPart> {
        match EventIdRule::parse(setting).unwrap() {
            EventIdRule::Parts { parts, .. } => parts,
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_form_of_the_setting_parses() {
        assert_eq!(parts("id"), [IdPart::Field("id".into())]);
        assert_eq!(parts("/data/id"), [IdPart::Pointer("/data/id".into())]);
        assert_eq!(parts("header:X-Foo"), [IdPart::Header("X-Foo".into())]);
        assert_eq!(
            parts("form:MessageSid"),
            [IdPart::Form("MessageSid".into())]
        );
        assert_eq!(
            parts("{/eventCode}:{/pspReference}"),
            [
                IdPart::Pointer("/eventCode".into()),
                IdPart::Literal(":".into()),
                IdPart::Pointer("/pspReference".into()),
            ]
        );
        assert_eq!(
            parts("evt-{header:X-Shop}"),
            [
                IdPart::Literal("evt-".into()),
                IdPart::Header("X-Shop".into())
            ]
        );
    }

    #[test]
    fn malformed_settings_say_what_is_wrong() {
        for (setting, words) in [
            ("", "1 to 512 bytes"),
            ("{/a", "not closed"),
            ("{/a}}", "without its"),
            ("{{/a}}", "do not nest"),
            ("{/a} {/b}", "visible ASCII"),
            ("header:", "not a valid header name"),
            ("header:X Foo", "not a valid header name"),
            ("form:", "form field name is empty"),
            ("/a~2", "followed by 0 or 1"),
            ("{}", "an empty placeholder"),
            (
                "{/a}{/b}{/c}{/d}{/e}{/f}{/g}{/h}{/i}",
                "1 to 8 placeholders",
            ),
        ] {
            let err = EventIdRule::parse(setting).unwrap_err();
            assert!(err.contains(words), "{setting:?}: {err}");
        }
    }

    #[test]
    fn a_scheme_pointer_into_nested_json_keys_forms_by_content() {
        let mailgun = EventIdRule::resolve(Scheme::Mailgun, None).unwrap();
        assert_eq!(mailgun.for_body(true, false), &EventIdRule::Content);
        assert_eq!(mailgun.for_body(false, false), &mailgun);
        assert_eq!(
            mailgun.for_body(true, true),
            &mailgun,
            "a tenant's own rule holds"
        );
        let flat = EventIdRule::resolve(Scheme::Stripe, None).unwrap();
        assert_eq!(flat.for_body(true, false), &flat);
    }

    #[test]
    fn without_a_setting_the_scheme_decides() {
        assert_eq!(
            EventIdRule::resolve(Scheme::Standard, None),
            Ok(EventIdRule::SchemeHeader("webhook-id"))
        );
        assert!(matches!(
            EventIdRule::resolve(Scheme::Stripe, None),
            Ok(EventIdRule::Parts { name, .. }) if name == "id"
        ));
        let err = EventIdRule::resolve(Scheme::Stripe, Some("{/a")).unwrap_err();
        assert_eq!(err.key, "event_id_field");
        for scheme in Scheme::ALL {
            let rule = EventIdRule::resolve(scheme, None).unwrap();
            let own = scheme.body_event_id_field().is_some() || scheme.event_id_header().is_some();
            assert_eq!(rule == EventIdRule::Content, !own, "{scheme}");
        }
    }
}
