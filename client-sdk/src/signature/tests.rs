//! Cross-scheme unit tests: sign/verify round trips, key rotation, tampering, malformed
//! signatures and the order of checks.

use super::*;

const NOW: i64 = 1_764_480_000;
const TOLERANCE: u64 = 300;
const BODY: &[u8] = br#"{"event_id":"evt_1","id":"evt_1"}"#;

type Headers = Vec<(String, String)>;

/// Every scheme with a wire format of its own (`hmac`'s is its spec: see
/// `configured/tests.rs`).
fn presets() -> impl Iterator<Item = Scheme> {
    Scheme::ALL
        .into_iter()
        .filter(|scheme| *scheme != Scheme::Hmac)
}

fn current() -> Secret {
    Secret::from_bytes("k2", b"current-key-0123456789".to_vec())
}

fn previous() -> Secret {
    Secret::from_bytes("k1", b"previous-key-9876543210".to_vec())
}

fn check(scheme: Scheme, headers: &Headers, body: &[u8]) -> Result<Verified, VerifyError> {
    verify(
        scheme,
        headers,
        body,
        &[current(), previous()],
        NOW,
        TOLERANCE,
    )
}

fn set(headers: &mut Headers, name: &str, value: &str) {
    let slot = headers
        .iter_mut()
        .find(|(key, _)| key.eq_ignore_ascii_case(name));
    slot.expect("header present").1 = value.to_owned();
}

/// The header that holds the signature in `scheme`.
fn signature_header(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Standard => "webhook-signature",
        Scheme::Hookd => "X-Webhook-Signature",
        Scheme::Stripe => "Stripe-Signature",
        Scheme::Github => "X-Hub-Signature-256",
        Scheme::Shopify => "X-Shopify-Hmac-Sha256",
        Scheme::Slack => "X-Slack-Signature",
        Scheme::Hmac => unreachable!("hmac is not a preset"),
    }
}

/// A signature header value for `scheme` carrying `tag` as already encoded.
fn with_tag(scheme: Scheme, tag: &str) -> String {
    match scheme {
        Scheme::Standard => format!("v1,{tag}"),
        Scheme::Hookd | Scheme::Stripe => format!("t={NOW},v1={tag}"),
        Scheme::Github => format!("sha256={tag}"),
        Scheme::Shopify => tag.to_owned(),
        Scheme::Slack => format!("v0={tag}"),
        Scheme::Hmac => unreachable!("hmac is not a preset"),
    }
}

#[test]
fn sign_then_verify_round_trips_for_every_scheme() {
    for scheme in presets() {
        let headers = sign(scheme, &current(), "evt_1", NOW, BODY);
        let verified = check(scheme, &headers, BODY).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(verified.kid, "k2", "{scheme}");
        let expected_ts = scheme.has_timestamp().then_some(NOW);
        assert_eq!(verified.timestamp, expected_ts, "{scheme}");
        let header_id = scheme
            .body_event_id_field()
            .is_none()
            .then(|| "evt_1".to_owned());
        assert_eq!(verified.header_event_id, header_id, "{scheme}");
    }
}

#[test]
fn previous_key_is_accepted_for_every_scheme() {
    for scheme in presets() {
        let headers = sign(scheme, &previous(), "evt_1", NOW, BODY);
        let verified = check(scheme, &headers, BODY).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(verified.kid, "k1", "{scheme}");
    }
}

#[test]
fn tampered_body_is_a_bad_signature() {
    for scheme in presets() {
        let headers = sign(scheme, &current(), "evt_1", NOW, BODY);
        let tampered = br#"{"event_id":"evt_1","id":"evt_2"}"#;
        let result = check(scheme, &headers, tampered);
        assert_eq!(result, Err(VerifyError::BadSignature), "{scheme}");
    }
}

#[test]
fn empty_signature_is_malformed_not_a_match() {
    for scheme in presets() {
        let mut headers = sign(scheme, &current(), "evt_1", NOW, BODY);
        set(
            &mut headers,
            signature_header(scheme),
            &with_tag(scheme, ""),
        );
        let code = check(scheme, &headers, BODY).unwrap_err().code();
        assert_eq!(code, "INVALID_SIGNATURE_FORMAT", "{scheme}");
    }
}

#[test]
fn truncated_or_padded_signature_is_malformed() {
    for scheme in presets() {
        let tag = codec::hmac_sha256(current().key(), BODY);
        let (short, long) = match scheme {
            Scheme::Standard | Scheme::Shopify => {
                use base64::Engine;
                let engine = base64::engine::general_purpose::STANDARD;
                (
                    engine.encode(&tag[..16]),
                    engine.encode([&tag[..], &[0]].concat()),
                )
            }
            _ => (
                hex::encode(&tag[..16]),
                hex::encode([&tag[..], &[0]].concat()),
            ),
        };
        for bad in [short, long] {
            let mut headers = sign(scheme, &current(), "evt_1", NOW, BODY);
            set(
                &mut headers,
                signature_header(scheme),
                &with_tag(scheme, &bad),
            );
            let code = check(scheme, &headers, BODY).unwrap_err().code();
            assert_eq!(code, "INVALID_SIGNATURE_FORMAT", "{scheme} {bad}");
        }
    }
}

#[test]
fn empty_webhook_id_is_malformed() {
    let mut headers = sign(Scheme::Standard, &current(), "", NOW, BODY);
    let expected = Err(codec::malformed("webhook-id is empty"));
    assert_eq!(check(Scheme::Standard, &headers, BODY), expected);
    set(&mut headers, "webhook-id", "evt_1");
    assert_eq!(
        check(Scheme::Standard, &headers, BODY),
        Err(VerifyError::BadSignature)
    );
}

#[test]
fn missing_signature_header_names_the_header() {
    for scheme in presets() {
        let mut headers = sign(scheme, &current(), "evt_1", NOW, BODY);
        headers.retain(|(name, _)| name != signature_header(scheme));
        let header = signature_header(scheme);
        let expected = Err(VerifyError::MissingSignature { header });
        assert_eq!(check(scheme, &headers, BODY), expected, "{scheme}");
    }
}

#[test]
fn non_integer_timestamp_is_reported_before_the_mac() {
    for scheme in presets().filter(|s| s.has_timestamp()) {
        let mut headers = sign(scheme, &current(), "evt_1", NOW, BODY);
        for (_, value) in headers.iter_mut() {
            *value = value.replace(&NOW.to_string(), "17644800OO");
        }
        let result = verify(scheme, &headers, BODY, &[], NOW, TOLERANCE);
        assert_eq!(result, Err(VerifyError::InvalidTimestamp), "{scheme}");
    }
}

#[test]
fn tolerance_edges() {
    let tolerance = i64::try_from(TOLERANCE).unwrap();
    for scheme in presets().filter(|s| s.has_timestamp()) {
        let at = |ts: i64| check(scheme, &sign(scheme, &current(), "e", ts, BODY), BODY);
        assert!(at(NOW - tolerance).is_ok(), "{scheme}");
        assert!(at(NOW + tolerance).is_ok(), "{scheme}");
        let stale = Err(VerifyError::StaleTimestamp {
            age_secs: tolerance + 1,
        });
        assert_eq!(at(NOW - tolerance - 1), stale, "{scheme}");
        let future = Err(VerifyError::FutureTimestamp {
            ahead_secs: tolerance + 1,
        });
        assert_eq!(at(NOW + tolerance + 1), future, "{scheme}");
    }
}

#[test]
fn schemes_without_timestamp_ignore_the_clock() {
    for scheme in [Scheme::Github, Scheme::Shopify] {
        let headers = sign(scheme, &current(), "evt_1", 0, BODY);
        assert!(
            verify(scheme, &headers, BODY, &[current()], NOW, 0).is_ok(),
            "{scheme}"
        );
    }
}

#[test]
fn hookd_kid_selects_the_key() {
    let mut headers = sign(Scheme::Hookd, &previous(), "evt_1", NOW, BODY);
    assert!(headers[0].1.ends_with(",kid=k1"), "{}", headers[0].1);
    let wrong_kid = headers[0].1.replace("kid=k1", "kid=k2");
    set(&mut headers, "X-Webhook-Signature", &wrong_kid);
    assert_eq!(
        check(Scheme::Hookd, &headers, BODY),
        Err(VerifyError::BadSignature)
    );
    set(
        &mut headers,
        "X-Webhook-Signature",
        &wrong_kid.replace("kid=k2", "kid=k9"),
    );
    assert_eq!(
        check(Scheme::Hookd, &headers, BODY),
        Err(VerifyError::BadSignature)
    );
    set(
        &mut headers,
        "X-Webhook-Signature",
        &wrong_kid.replace(",kid=k2", ""),
    );
    assert_eq!(check(Scheme::Hookd, &headers, BODY).unwrap().kid, "k1");
}

#[test]
fn digest_ignores_decoy_signatures() {
    let headers = sign(Scheme::Standard, &current(), "evt_1", NOW, BODY);
    let mut decoyed = headers.clone();
    let decoy = format!("v1,{} {}", "A".repeat(43) + "=", headers[2].1);
    set(&mut decoyed, "webhook-signature", &decoy);
    let plain = check(Scheme::Standard, &headers, BODY).unwrap();
    let with_decoy = check(Scheme::Standard, &decoyed, BODY).unwrap();
    assert_eq!(
        plain.signature_digest(BODY),
        with_decoy.signature_digest(BODY)
    );
}

#[test]
fn errors_read_plainly_and_carry_stable_codes() {
    let cases = [
        (
            VerifyError::MissingSignature {
                header: "webhook-signature",
            },
            "MISSING_SIGNATURE",
            "signature header webhook-signature is missing",
        ),
        (
            codec::malformed("no v1 signature"),
            "INVALID_SIGNATURE_FORMAT",
            "signature header is malformed: no v1 signature",
        ),
        (
            VerifyError::InvalidTimestamp,
            "INVALID_TIMESTAMP",
            "timestamp is not an integer",
        ),
        (
            VerifyError::BadSignature,
            "BAD_SIGNATURE",
            "signature does not match any current or previous secret",
        ),
        (
            VerifyError::StaleTimestamp { age_secs: 412 },
            "STALE_TIMESTAMP",
            "timestamp too old (412 s old)",
        ),
        (
            VerifyError::FutureTimestamp { ahead_secs: 900 },
            "FUTURE_TIMESTAMP",
            "timestamp too far in the future (900 s ahead)",
        ),
    ];
    for (error, code, text) in cases {
        assert_eq!(error.code(), code);
        assert_eq!(error.to_string(), text);
    }
}
