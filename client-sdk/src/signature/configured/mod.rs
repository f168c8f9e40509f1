//! `scheme = "hmac"`: a verifier built from configuration alone, for the
//! providers no preset covers.

mod template;
#[cfg(test)]
mod tests;
mod wire;

pub use hookd_domain::HmacFields;
use template::{Part, Slot, Template};
pub use wire::{sign_hmac, verify_hmac, CannotSign};

use super::Hash;

/// Why a `[tenants.hmac]` table cannot be used: the field and the reason.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("hmac.{field}: {reason}")]
pub struct InvalidHmacSpec {
    /// The field at fault, as written in the table.
    pub field: &'static str,
    /// What is wrong with it, in plain words.
    pub reason: String,
}

impl InvalidHmacSpec {
    fn new(field: &'static str, reason: impl Into<String>) -> Self {
        InvalidHmacSpec {
            field,
            reason: reason.into(),
        }
    }
}

/// Where a value is in the request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Location {
    /// A header, by name.
    Header(String),
    /// A JSON pointer (RFC 6901) into the body.
    Pointer(String),
}

impl Location {
    /// `header:Name` or `/json/pointer`.
    fn parse(text: &str) -> Result<Location, String> {
        if let Some(name) = text.strip_prefix("header:") {
            let token = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
            if name.is_empty() || !name.bytes().all(token) {
                return Err(format!("{name:?} is not a header name"));
            }
            return Ok(Location::Header(name.to_owned()));
        }
        if text.starts_with('/') {
            let bytes = text.as_bytes();
            let escapes_ok = bytes
                .iter()
                .enumerate()
                .filter(|(_, b)| **b == b'~')
                .all(|(i, _)| matches!(bytes.get(i + 1), Some(b'0' | b'1')));
            if !escapes_ok {
                return Err(format!(
                    "{text:?} is not a JSON pointer ('~' must be followed by 0 or 1)"
                ));
            }
            return Ok(Location::Pointer(text.to_owned()));
        }
        Err(format!(
            "{text:?} is neither header:Name nor a JSON pointer starting with '/'"
        ))
    }

    fn in_body(&self) -> bool {
        matches!(self, Location::Pointer(_))
    }
}

/// How a timestamp is counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Unit {
    Seconds,
    Milliseconds,
}

/// What the signature is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Kind {
    /// An HMAC of the signed string.
    Hmac {
        hash: Hash,
        base64: bool,
        signed: Template,
    },
    /// The shared secret itself.
    Token,
}

/// A validated `[tenants.hmac]`: how to find, decode and check a signature
/// with nothing but configuration.
///
/// `scheme = "hmac"`: a verifier built from configuration alone, for the
/// providers no preset covers. [`HmacFields`] (the shared vocabulary's) is
/// the `[tenants.hmac]` table (or the API's message) as written; [`HmacSpec`] is it validated, with plain
/// messages naming the field at fault. Verifying and signing with a spec are
/// in `wire.rs`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HmacSpec {
    fields: HmacFields,
    pub(crate) signature: Location,
    pub(crate) prefix: String,
    pub(crate) kind: Kind,
    pub(crate) timestamp: Option<(Location, Unit)>,
}

impl HmacSpec {
    /// Validates `fields`: every name known, every location and the template
    /// well formed, the timestamp signed when there is one, and nothing set
    /// that the mode does not use.
    pub fn new(fields: HmacFields) -> Result<HmacSpec, InvalidHmacSpec> {
        let signature = Location::parse(&fields.signature)
            .map_err(|reason| InvalidHmacSpec::new("signature", reason))?;
        let prefix = fields.prefix.clone().unwrap_or_default();
        if !prefix.bytes().all(|b| (b' '..=b'~').contains(&b)) {
            return Err(InvalidHmacSpec::new(
                "prefix",
                "must be printable ASCII text",
            ));
        }
        let timestamp = timestamp_of(&fields)?;
        let kind = match fields.mode.as_deref().unwrap_or("hmac") {
            "hmac" => hmac_kind(&fields, &signature, timestamp.as_ref())?,
            "token" => token_kind(&fields)?,
            other => {
                return Err(InvalidHmacSpec::new(
                    "mode",
                    format!("{other:?} is not a mode (expected \"hmac\" or \"token\")"),
                ))
            }
        };
        Ok(HmacSpec {
            fields,
            signature,
            prefix,
            kind,
            timestamp,
        })
    }

    /// The fields it was made from, to store or show.
    pub fn fields(&self) -> &HmacFields {
        &self.fields
    }

    /// Whether a timestamp is signed, so the tolerance bounds replays.
    pub fn has_timestamp(&self) -> bool {
        self.timestamp.is_some()
    }

    /// Whether the signed string includes `{url}`, so the tenant needs a
    /// `public_url`.
    pub fn signs_url(&self) -> bool {
        matches!(&self.kind, Kind::Hmac { signed, .. } if signed.has(Slot::Url))
    }

    /// Whether anything is read from the JSON body.
    fn reads_body_json(&self) -> bool {
        let template = matches!(&self.kind, Kind::Hmac { signed, .. } if signed.reads_body_json());
        self.signature.in_body()
            || self.timestamp.as_ref().is_some_and(|(at, _)| at.in_body())
            || template
    }
}

fn timestamp_of(fields: &HmacFields) -> Result<Option<(Location, Unit)>, InvalidHmacSpec> {
    let unit = match fields.timestamp_unit.as_deref() {
        None | Some("seconds") => Unit::Seconds,
        Some("milliseconds") => Unit::Milliseconds,
        Some(other) => {
            return Err(InvalidHmacSpec::new(
                "timestamp_unit",
                format!("{other:?} is not a unit (expected \"seconds\" or \"milliseconds\")"),
            ))
        }
    };
    match &fields.timestamp {
        Some(at) => Location::parse(at)
            .map(|at| Some((at, unit)))
            .map_err(|reason| InvalidHmacSpec::new("timestamp", reason)),
        None if fields.timestamp_unit.is_some() => Err(InvalidHmacSpec::new(
            "timestamp_unit",
            "set without hmac.timestamp",
        )),
        None => Ok(None),
    }
}

fn hmac_kind(
    fields: &HmacFields,
    signature: &Location,
    timestamp: Option<&(Location, Unit)>,
) -> Result<Kind, InvalidHmacSpec> {
    let hash = match fields.algorithm.as_deref().unwrap_or("sha256") {
        "sha1" => Hash::Sha1,
        "sha256" => Hash::Sha256,
        "sha512" => Hash::Sha512,
        other => {
            return Err(InvalidHmacSpec::new(
                "algorithm",
                format!("{other:?} is not supported (expected sha1, sha256 or sha512)"),
            ))
        }
    };
    let base64 = match fields.encoding.as_deref().unwrap_or("hex") {
        "hex" => false,
        "base64" => true,
        other => {
            return Err(InvalidHmacSpec::new(
                "encoding",
                format!("{other:?} is not an encoding (expected hex or base64)"),
            ))
        }
    };
    let signed = Template::parse(fields.signed.as_deref().unwrap_or("{body}"))?;
    if signature.in_body() && signed.parts.contains(&Part::Body) {
        return Err(InvalidHmacSpec::new(
            "signed",
            "{body} cannot be signed when the signature is inside the body",
        ));
    }
    if signed.has(Slot::Value(signature.clone())) {
        return Err(InvalidHmacSpec::new(
            "signed",
            "the signature cannot sign itself",
        ));
    }
    match timestamp {
        None if signed.has(Slot::Timestamp) => Err(InvalidHmacSpec::new(
            "signed",
            "{timestamp} is used but hmac.timestamp says where it is",
        )),
        Some((at, _)) if !signed.has(Slot::Timestamp) && !signed.has(Slot::Value(at.clone())) => {
            Err(InvalidHmacSpec::new(
                "timestamp",
                "the timestamp is not in hmac.signed, so it proves nothing; \
                 add {timestamp} to the template",
            ))
        }
        _ => Ok(Kind::Hmac {
            hash,
            base64,
            signed,
        }),
    }
}

fn token_kind(fields: &HmacFields) -> Result<Kind, InvalidHmacSpec> {
    let unused = [
        ("algorithm", fields.algorithm.is_some()),
        ("encoding", fields.encoding.is_some()),
        ("signed", fields.signed.is_some()),
        ("timestamp", fields.timestamp.is_some()),
        ("timestamp_unit", fields.timestamp_unit.is_some()),
    ];
    match unused.into_iter().find(|(_, set)| *set) {
        Some((field, _)) => Err(InvalidHmacSpec::new(
            field,
            "not used when mode = \"token\" (the secret itself is sent and nothing is signed)",
        )),
        None => Ok(Kind::Token),
    }
}
