//! The wire form of a tenant's `hmac` spec: [`HmacFields`] to and from
//! `hookd.v1.HmacSpec`.

use super::HmacFields;

impl From<HmacFields> for crate::v1::HmacSpec {
    fn from(f: HmacFields) -> Self {
        crate::v1::HmacSpec {
            signature: f.signature,
            mode: f.mode.unwrap_or_default(),
            algorithm: f.algorithm.unwrap_or_default(),
            encoding: f.encoding.unwrap_or_default(),
            prefix: f.prefix.unwrap_or_default(),
            signed: f.signed.unwrap_or_default(),
            timestamp: f.timestamp.unwrap_or_default(),
            timestamp_unit: f.timestamp_unit.unwrap_or_default(),
        }
    }
}

/// Empty strings are the defaults; validation is the SDK's.
impl From<crate::v1::HmacSpec> for HmacFields {
    fn from(s: crate::v1::HmacSpec) -> Self {
        let set = |value: String| (!value.is_empty()).then_some(value);
        HmacFields {
            signature: s.signature,
            mode: set(s.mode),
            algorithm: set(s.algorithm),
            encoding: set(s.encoding),
            prefix: set(s.prefix),
            signed: set(s.signed),
            timestamp: set(s.timestamp),
            timestamp_unit: set(s.timestamp_unit),
        }
    }
}
