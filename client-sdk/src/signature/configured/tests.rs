//! `scheme = "hmac"` specs: validation messages, sign→verify round trips for
//! header and in-body signatures, tokens, tampering and the tolerance.

use super::*;
use crate::error::VerifyError;
use crate::signature::{Delivery, Message, Secret};

const NOW: i64 = 1_764_480_000;

fn spec(fields: HmacFields) -> HmacSpec {
    HmacSpec::new(fields).expect("valid spec")
}

fn slack_like() -> HmacSpec {
    spec(HmacFields {
        signature: "header:X-Sig".into(),
        prefix: Some("v0=".into()),
        signed: Some("v0:{header:X-Ts}:{body}".into()),
        timestamp: Some("header:X-Ts".into()),
        ..HmacFields::default()
    })
}

fn mailgun_like() -> HmacSpec {
    spec(HmacFields {
        signature: "/signature/signature".into(),
        signed: Some("{/signature/timestamp}{/signature/token}".into()),
        timestamp: Some("/signature/timestamp".into()),
        ..HmacFields::default()
    })
}

fn key() -> Secret {
    Secret::from_bytes("k1", b"the-shared-key".to_vec())
}

fn message(body: &[u8], timestamp: i64) -> Message<'_> {
    Message {
        event_id: "",
        timestamp,
        body,
        method: "POST",
        url: None,
    }
}

fn check(spec: &HmacSpec, headers: &[(String, String)], body: &[u8]) -> Result<(), VerifyError> {
    verify_hmac(spec, &Delivery::post(headers, body), &[key()], NOW, 300).map(|_| ())
}

#[test]
fn header_signatures_round_trip_and_tampering_fails() {
    let spec = slack_like();
    let signed = sign_hmac(&spec, &key(), &message(b"{\"a\":1}", NOW), &[]).unwrap();
    assert!(signed.headers.iter().any(|(_, v)| v.starts_with("v0=")));
    assert_eq!(check(&spec, &signed.headers, &signed.body), Ok(()));
    assert_eq!(
        check(&spec, &signed.headers, b"{\"a\":2}"),
        Err(VerifyError::BadSignature)
    );
    let mut headers = signed.headers.clone();
    headers.retain(|(name, _)| name != "X-Ts");
    headers.push(("X-Ts".into(), (NOW + 1).to_string()));
    assert_eq!(
        check(&spec, &headers, &signed.body),
        Err(VerifyError::BadSignature)
    );
    let other = Secret::from_bytes("k1", b"another-key".to_vec());
    let result = verify_hmac(
        &spec,
        &Delivery::post(&signed.headers[..], &signed.body),
        &[other],
        NOW,
        300,
    );
    assert_eq!(result.unwrap_err(), VerifyError::BadSignature);
}

#[test]
fn in_body_signatures_round_trip() {
    let spec = mailgun_like();
    let body = br#"{"signature":{"token":"tok123"},"event-data":{"id":"e1"}}"#;
    let signed = sign_hmac(&spec, &key(), &message(body, NOW), &[]).unwrap();
    assert!(signed.headers.is_empty());
    let json: serde_json::Value = serde_json::from_slice(&signed.body).unwrap();
    assert_eq!(json["signature"]["timestamp"], NOW.to_string());
    assert_eq!(json["signature"]["signature"].as_str().unwrap().len(), 64);
    assert_eq!(check(&spec, &[], &signed.body), Ok(()));
    let tampered = String::from_utf8(signed.body.clone())
        .unwrap()
        .replace("tok123", "tok124");
    assert_eq!(
        check(&spec, &[], tampered.as_bytes()),
        Err(VerifyError::BadSignature)
    );
    // Only what is signed is proven: the event data is not in Mailgun's string.
    let unsigned = String::from_utf8(signed.body).unwrap().replace("e1", "e2");
    assert_eq!(check(&spec, &[], unsigned.as_bytes()), Ok(()));
}

#[test]
fn stale_and_future_timestamps_are_refused_once_the_key_matched() {
    let spec = slack_like();
    for (at, expected) in [
        (NOW - 301, VerifyError::StaleTimestamp { age_secs: 301 }),
        (NOW + 301, VerifyError::FutureTimestamp { ahead_secs: 301 }),
    ] {
        let signed = sign_hmac(&spec, &key(), &message(b"{}", at), &[]).unwrap();
        assert_eq!(check(&spec, &signed.headers, &signed.body), Err(expected));
    }
    let millis = spec_with(|f| {
        f.timestamp_unit = Some("milliseconds".into());
    });
    let signed = sign_hmac(&millis, &key(), &message(b"{}", NOW - 10), &[]).unwrap();
    assert!(signed
        .headers
        .iter()
        .any(|(_, v)| v == &((NOW - 10) * 1000).to_string()));
    assert_eq!(check(&millis, &signed.headers, &signed.body), Ok(()));
}

fn spec_with(edit: impl FnOnce(&mut HmacFields)) -> HmacSpec {
    let mut fields = slack_like().fields().clone();
    edit(&mut fields);
    spec(fields)
}

#[test]
fn tokens_are_the_secret_itself() {
    let spec = spec(HmacFields {
        signature: "header:X-Gitlab-Token".into(),
        mode: Some("token".into()),
        ..HmacFields::default()
    });
    let header = |value: &str| vec![("X-Gitlab-Token".to_owned(), value.to_owned())];
    assert_eq!(check(&spec, &header("the-shared-key"), b"{}"), Ok(()));
    assert_eq!(
        check(&spec, &header("the-shared-kez"), b"{}"),
        Err(VerifyError::BadSignature)
    );
    assert_eq!(
        check(&spec, &[], b"{}"),
        Err(VerifyError::MissingSignature {
            header: "hmac.signature"
        })
    );
    let signed = sign_hmac(&spec, &key(), &message(b"{}", NOW), &[]).unwrap();
    assert_eq!(signed.headers, header("the-shared-key"));
}

#[test]
fn malformed_requests_are_named_before_any_mac() {
    let spec = slack_like();
    let ts = ("X-Ts".to_owned(), NOW.to_string());
    let code = |headers: Vec<(String, String)>, body: &[u8]| {
        check(&spec, &headers, body).unwrap_err().code()
    };
    assert_eq!(code(vec![ts.clone()], b"{}"), "MISSING_SIGNATURE");
    let sig = |v: &str| ("X-Sig".to_owned(), v.to_owned());
    assert_eq!(
        code(vec![ts.clone(), sig(&"ab".repeat(32))], b"{}"),
        "INVALID_SIGNATURE_FORMAT"
    );
    assert_eq!(
        code(vec![ts.clone(), sig("v0=abcd")], b"{}"),
        "INVALID_SIGNATURE_FORMAT"
    );
    let bad_ts = ("X-Ts".to_owned(), "soon".to_owned());
    assert_eq!(
        code(vec![bad_ts, sig(&format!("v0={}", "ab".repeat(32)))], b"{}"),
        "INVALID_TIMESTAMP"
    );
    let in_body = mailgun_like();
    assert_eq!(
        check(&in_body, &[], b"not json").unwrap_err().code(),
        "INVALID_SIGNATURE_FORMAT"
    );
    assert_eq!(
        check(
            &in_body,
            &[],
            br#"{"signature":{"timestamp":"1","token":"t"}}"#
        ),
        Err(VerifyError::MissingSignature {
            header: "hmac.signature"
        })
    );
}

#[test]
fn the_preset_entry_point_refuses_hmac() {
    let result = crate::signature::verify(Scheme::Hmac, &[("a", "b")], b"{}", &[key()], NOW, 300);
    assert_eq!(result.unwrap_err().code(), "INVALID_SIGNATURE_FORMAT");
}

use crate::signature::Scheme;

#[test]
fn bad_specs_are_refused_with_the_field_and_the_reason() {
    let base = || HmacFields {
        signature: "header:X-Sig".into(),
        ..HmacFields::default()
    };
    let cases: Vec<(HmacFields, &str)> = vec![
        (
            HmacFields {
                signature: "X-Sig".into(),
                ..base()
            },
            "hmac.signature: \"X-Sig\" is neither header:Name nor a JSON pointer",
        ),
        (
            HmacFields {
                algorithm: Some("md5".into()),
                ..base()
            },
            "hmac.algorithm: \"md5\" is not supported",
        ),
        (
            HmacFields {
                encoding: Some("b32".into()),
                ..base()
            },
            "hmac.encoding: \"b32\" is not an encoding",
        ),
        (
            HmacFields {
                mode: Some("plain".into()),
                ..base()
            },
            "hmac.mode: \"plain\" is not a mode",
        ),
        (
            HmacFields {
                signed: Some("{nope}".into()),
                ..base()
            },
            "hmac.signed: unknown placeholder {nope}",
        ),
        (
            HmacFields {
                signed: Some("{timestamp}.{body}".into()),
                ..base()
            },
            "hmac.signed: {timestamp} is used but hmac.timestamp",
        ),
        (
            HmacFields {
                timestamp: Some("header:X-Ts".into()),
                ..base()
            },
            "hmac.timestamp: the timestamp is not in hmac.signed",
        ),
        (
            HmacFields {
                timestamp_unit: Some("seconds".into()),
                ..base()
            },
            "hmac.timestamp_unit: set without hmac.timestamp",
        ),
        (
            HmacFields {
                timestamp: Some("header:X-Ts".into()),
                signed: Some("{timestamp}{body}".into()),
                timestamp_unit: Some("hours".into()),
                ..base()
            },
            "hmac.timestamp_unit: \"hours\" is not a unit",
        ),
        (
            HmacFields {
                signature: "/sig".into(),
                ..base()
            },
            "hmac.signed: {body} cannot be signed when the signature is inside the body",
        ),
        (
            HmacFields {
                signed: Some("{header:X-Sig}".into()),
                ..base()
            },
            "hmac.signed: the signature cannot sign itself",
        ),
        (
            HmacFields {
                mode: Some("token".into()),
                algorithm: Some("sha1".into()),
                ..base()
            },
            "hmac.algorithm: not used when mode = \"token\"",
        ),
        (
            HmacFields {
                prefix: Some("v0=\n".into()),
                ..base()
            },
            "hmac.prefix: must be printable ASCII",
        ),
    ];
    for (fields, expected) in cases {
        let error = HmacSpec::new(fields.clone()).unwrap_err().to_string();
        assert!(error.starts_with(expected), "{fields:?}: {error}");
    }
    let spec = HmacSpec::new(base()).unwrap();
    assert!(!spec.has_timestamp() && !spec.signs_url());
    assert!(slack_like().has_timestamp());
}
