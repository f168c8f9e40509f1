//! `application/x-www-form-urlencoded` bodies (Twilio, older Mailgun): checked
//! strictly and read as a flat JSON object of strings.

use serde_json::{Map, Value};

use crate::ingest::BodyError;

/// Whether a `Content-Type` value names a form.
pub fn is_form(content_type: Option<&str>) -> bool {
    content_type.is_some_and(|value| {
        let essence = value.split(';').next().unwrap_or_default().trim();
        essence.eq_ignore_ascii_case("application/x-www-form-urlencoded")
    })
}

/// The form as a JSON object of strings, or why it is not a valid form.
///
/// `application/x-www-form-urlencoded` bodies (Twilio, older Mailgun): checked
/// strictly (every `%` escape well formed, names and values UTF-8 once
/// decoded, no empty name) and read as a flat JSON object of strings (a
/// name sent more than once, as Twilio does for lists, holds the array of
/// its values in order), which the event id, required fields, contracts and
/// route filters see. The stored and forwarded body stays the raw form.
pub(super) fn to_json(body: &[u8]) -> Result<Vec<u8>, BodyError> {
    let mut fields = Map::new();
    let pairs = body.split(|b| *b == b'&').filter(|pair| !pair.is_empty());
    for (n, pair) in pairs.enumerate() {
        let at = |what: String| BodyError::InvalidForm(format!("field {}: {what}", n + 1));
        let (name, value) = match pair.iter().position(|b| *b == b'=') {
            Some(eq) => (&pair[..eq], &pair[eq + 1..]),
            None => (pair, &[][..]),
        };
        let name = decode(name).map_err(|e| at(format!("its name {e}")))?;
        let value = decode(value).map_err(|e| at(format!("its value {e}")))?;
        if name.is_empty() {
            return Err(at("has no name".to_owned()));
        }
        match fields.get_mut(&name) {
            None => {
                fields.insert(name, Value::String(value));
            }
            Some(Value::Array(values)) => values.push(Value::String(value)),
            Some(first) => *first = Value::Array(vec![first.take(), Value::String(value)]),
        }
    }
    Ok(serde_json::to_vec(&Value::Object(fields)).expect("strings serialize"))
}

/// Percent-decodes one name or value (`+` is a space).
fn decode(bytes: &[u8]) -> Result<String, &'static str> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut rest = bytes.iter();
    while let Some(&b) = rest.next() {
        out.push(match b {
            b'+' => b' ',
            b'%' => {
                let hex = [rest.next(), rest.next()];
                let [Some(hi), Some(lo)] = hex else {
                    return Err("has a '%' not followed by two hex digits");
                };
                match (hex_digit(*hi), hex_digit(*lo)) {
                    (Some(hi), Some(lo)) => hi << 4 | lo,
                    _ => return Err("has a '%' not followed by two hex digits"),
                }
            }
            other => other,
        });
    }
    String::from_utf8(out).map_err(|_| "is not UTF-8 once decoded")
}

fn hex_digit(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(body: &str) -> Result<Value, BodyError> {
        to_json(body.as_bytes()).map(|bytes| serde_json::from_slice(&bytes).unwrap())
    }

    #[test]
    fn a_form_reads_as_an_object_of_strings() {
        assert_eq!(
            json("Sid=SM1&From=%2B1415&Body=Hi+there%21&Empty=&Bare&&").unwrap(),
            serde_json::json!({"Sid": "SM1", "From": "+1415", "Body": "Hi there!", "Empty": "", "Bare": ""})
        );
        assert_eq!(json("").unwrap(), serde_json::json!({}));
    }

    #[test]
    fn a_repeated_name_holds_its_values_in_order() {
        assert_eq!(
            json("To=a&Media=1&Media=2&Media=3").unwrap(),
            serde_json::json!({"To": "a", "Media": ["1", "2", "3"]})
        );
    }

    #[test]
    fn a_broken_form_says_which_field_and_why() {
        for (body, words) in [
            ("a=1&b=%zz", "field 2: its value has a '%'"),
            ("a=%4", "field 1: its value has a '%'"),
            ("%C3%28=1", "field 1: its name is not UTF-8"),
            ("=1", "field 1: has no name"),
        ] {
            match json(body) {
                Err(BodyError::InvalidForm(reason)) => {
                    assert!(reason.contains(words), "{body}: {reason}")
                }
                other => panic!("{body}: {other:?}"),
            }
        }
    }

    #[test]
    fn the_content_type_decides() {
        assert!(is_form(Some("application/x-www-form-urlencoded")));
        assert!(is_form(Some(
            "Application/X-WWW-Form-Urlencoded; charset=utf-8"
        )));
        assert!(!is_form(Some("application/json")));
        assert!(!is_form(None));
    }
}
