//! Parser for the `t=<unix>,v1=<hex>[,...]` header shape that Stripe and hookd share,
//! and its `ts=<unix>;h1=<hex>[;...]` spelling that Paddle sends.

use super::{
    codec::{self, Tag, MAX_SIGNATURES},
    Claims, HeaderSource, Proof, Signed,
};
use crate::error::VerifyError;

/// How one sender spells the header: the entry separator, the timestamp and
/// signature keys, and the format errors that name them.
pub(crate) struct Shape {
    pub(crate) separator: char,
    pub(crate) timestamp: &'static str,
    pub(crate) signature: &'static str,
    pub(crate) no_timestamp: &'static str,
    pub(crate) no_signature: &'static str,
}

/// Stripe's and hookd's `t=..,v1=..`.
pub(crate) const COMMA: Shape = Shape {
    separator: ',',
    timestamp: "t",
    signature: "v1",
    no_timestamp: "no t= timestamp",
    no_signature: "no v1 signature",
};

/// Claims of a `t=..,v1=..` header named `name`, signed over `t.body`. Only
/// hookd honours a `kid` (`keep_kid`); Stripe has none.
pub(crate) fn claims<H: HeaderSource + ?Sized>(
    headers: &H,
    name: &'static str,
    keep_kid: bool,
) -> Result<Claims, VerifyError> {
    let header = parse(codec::required(headers, name)?)?;
    Ok(Claims {
        proofs: header.signatures.into_iter().map(Proof::sha256).collect(),
        signed: Signed::around_body(signed_prefix(header.raw_timestamp)),
        timestamp: Some(header.timestamp),
        kid: header.kid.filter(|_| keep_kid).map(str::to_owned),
        ..Claims::default()
    })
}

/// The bytes before the body: `t.`.
pub(crate) fn signed_prefix(timestamp: &str) -> Vec<u8> {
    format!("{timestamp}.").into_bytes()
}

/// What a `t=..,v1=..` header says, already decoded and checked.
pub(crate) struct KvHeader<'h> {
    /// The timestamp exactly as sent, because the MAC covers these bytes.
    pub(crate) raw_timestamp: &'h str,
    pub(crate) timestamp: i64,
    pub(crate) signatures: Vec<Tag>,
    pub(crate) kid: Option<&'h str>,
}

/// Reads a `t=..,v1=..` header; see [`parse_shaped`].
pub(crate) fn parse(value: &str) -> Result<KvHeader<'_>, VerifyError> {
    parse_shaped(value, &COMMA)
}

/// Reads the header; entries with other keys (`v0`, future versions) are skipped, but
/// they still count towards the signature cap.
pub(crate) fn parse_shaped<'h>(value: &'h str, shape: &Shape) -> Result<KvHeader<'h>, VerifyError> {
    let mut raw_timestamp = None;
    let mut kid = None;
    let mut v1 = Vec::new();
    let mut entries = 0;
    for item in value.split(shape.separator) {
        let (key, val) = item
            .split_once('=')
            .ok_or(codec::malformed("entry is not key=value"))?;
        match key {
            _ if key == shape.timestamp => {
                if raw_timestamp.replace(val).is_some() {
                    return Err(codec::malformed("timestamp appears twice"));
                }
            }
            "kid" if val.is_empty() || kid.replace(val).is_some() => {
                return Err(codec::malformed("kid is empty or appears twice"))
            }
            "kid" => {}
            _ => {
                entries += 1;
                if key == shape.signature {
                    v1.push(val);
                }
            }
        }
    }
    if entries > MAX_SIGNATURES {
        return Err(codec::malformed("too many signatures"));
    }
    let raw_timestamp = raw_timestamp.ok_or(codec::malformed(shape.no_timestamp))?;
    if v1.is_empty() {
        return Err(codec::malformed(shape.no_signature));
    }
    let signatures = v1
        .into_iter()
        .map(codec::decode_hex)
        .collect::<Result<_, _>>()?;
    Ok(KvHeader {
        raw_timestamp,
        timestamp: codec::parse_timestamp(raw_timestamp)?,
        signatures,
        kid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reason(value: &str) -> &'static str {
        match parse(value) {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            Err(other) => panic!("{value:?}: unexpected {other:?}"),
            Ok(_) => panic!("{value:?}: unexpectedly parsed"),
        }
    }

    #[test]
    fn reads_timestamp_signatures_and_kid() {
        let sig = "ab".repeat(32);
        let value = format!("t=12,v0=00,v1={sig},kid=k2");
        let header = parse(&value).unwrap();
        assert_eq!(header.raw_timestamp, "12");
        assert_eq!(header.timestamp, 12);
        assert_eq!(header.signatures, vec![[0xAB; 32]]);
        assert_eq!(header.kid, Some("k2"));
    }

    #[test]
    fn rejects_malformed_headers() {
        let sig = "ab".repeat(32);
        assert_eq!(reason("hello"), "entry is not key=value");
        assert_eq!(reason(&format!("v1={sig}")), "no t= timestamp");
        assert_eq!(
            reason(&format!("t=1,t=2,v1={sig}")),
            "timestamp appears twice"
        );
        assert_eq!(reason("t=1,v0=00"), "no v1 signature");
        assert_eq!(reason("t=1,v1="), "signature is empty");
        assert_eq!(
            reason(&format!("t=1,v1={sig},kid=")),
            "kid is empty or appears twice"
        );
        let many = vec![format!("v1={sig}"); MAX_SIGNATURES + 1].join(",");
        assert_eq!(reason(&format!("t=1,{many}")), "too many signatures");
    }

    #[test]
    fn format_errors_win_over_a_bad_timestamp() {
        assert_eq!(reason("t=abc,v1=00"), "signature is not 32 bytes");
        let sig = "ab".repeat(32);
        let err = parse(&format!("t=abc,v1={sig}")).err();
        assert_eq!(err, Some(VerifyError::InvalidTimestamp));
    }
}
