//! Cross-scheme unit tests: sign/verify round trips, key rotation, tampering, malformed
//! signatures and the order of checks.

use super::*;

const NOW: i64 = 1_764_480_000;
/// `NOW` as the schemes with RFC 3339 timestamps write it.
const NOW_RFC3339: &str = "2025-11-30T05:20:00.000000000Z";
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

/// The tenant's current key for `scheme`, as its sender holds it (the private half
/// for the schemes that sign with a key pair).
fn current(scheme: Scheme) -> Secret {
    key(scheme, "k2", b"current-key-0123456789")
}

/// The previous key, still accepted during a rotation.
fn previous(scheme: Scheme) -> Secret {
    key(scheme, "k1", b"previous-key-9876543210")
}

/// P-256 private keys (PKCS#8, base64) for the current and previous key.
const P256_CURRENT: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAKhRANCAARg0CYP3rZNKmrDgx6x/W/gwlnCrlPlRx3Wto+pail3wZn5yyjimWrGKLzUdddqifFu90BPrIMHNuhP4V6vidPg";
const P256_PREVIOUS: &str = "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAEAGhRANCAAQPdenpalv/f011z3jL0orJo6PBrWEWbEXAyalCQt8sTl+ZWajyOnfOJVymr8YoXbN0oI8nBKsQaEPi2zAnUKUN";

fn key(scheme: Scheme, kid: &str, shared: &[u8]) -> Secret {
    match scheme {
        Scheme::Sendgrid => {
            let pkcs8 = if kid == "k2" {
                P256_CURRENT
            } else {
                P256_PREVIOUS
            };
            Secret::from_provider(scheme, kid, pkcs8).expect("a P-256 PKCS#8 key")
        }
        Scheme::Discord => {
            let mut seed = vec![0; 32];
            seed[..shared.len()].copy_from_slice(shared);
            Secret::of_kind(kid, KeyKind::Ed25519Seed, seed).expect("any 32 bytes are a seed")
        }
        _ => Secret::from_bytes(kid, shared.to_vec()),
    }
}

/// The public URL the provider calls, for the schemes that sign it.
const URL: &str = "https://hooks.example.com/hooks/acme?source=test";

/// `scheme`'s sender's request for `BODY`: its headers and the body it sends (the
/// body carries the signature for the schemes that sign inside it).
fn signed(scheme: Scheme, key: &Secret, event_id: &str, timestamp: i64) -> (Headers, Vec<u8>) {
    let message = Message {
        event_id,
        timestamp,
        body: BODY,
        method: "POST",
        url: scheme.signs_url().then_some(URL),
    };
    let signing = sign_message(scheme, key, &message);
    (signing.headers, signing.body)
}

/// Verifies at `now` with `keys`, as the server does (with the public URL for the
/// schemes that sign it).
fn check_with(
    scheme: Scheme,
    headers: &Headers,
    body: &[u8],
    keys: &[Secret],
    now: i64,
    tolerance: u64,
) -> Result<Verified, VerifyError> {
    let delivery = Delivery {
        method: "POST",
        url: scheme.signs_url().then_some(URL),
        headers,
        body,
    };
    verify_delivery(scheme, &delivery, keys, now, tolerance)
}

fn check(scheme: Scheme, headers: &Headers, body: &[u8]) -> Result<Verified, VerifyError> {
    let keys = [current(scheme).verifying(), previous(scheme).verifying()];
    check_with(scheme, headers, body, &keys, NOW, TOLERANCE)
}

fn set(headers: &mut Headers, name: &str, value: &str) {
    let slot = headers
        .iter_mut()
        .find(|(key, _)| key.eq_ignore_ascii_case(name));
    slot.expect("header present").1 = value.to_owned();
}

/// The header that holds the signature in `scheme`; `None` when it travels in the body.
fn signature_header(scheme: Scheme) -> Option<&'static str> {
    Some(match scheme {
        Scheme::Standard => "webhook-signature",
        Scheme::Hookd => "X-Webhook-Signature",
        Scheme::Stripe => "Stripe-Signature",
        Scheme::Github | Scheme::Meta => "X-Hub-Signature-256",
        Scheme::Shopify => "X-Shopify-Hmac-Sha256",
        Scheme::Slack => "X-Slack-Signature",
        Scheme::Gitlab => "X-Gitlab-Token",
        Scheme::Okta => "Authorization",
        Scheme::Discord => "X-Signature-Ed25519",
        Scheme::Sendgrid => "X-Twilio-Email-Event-Webhook-Signature",
        Scheme::Twilio => "X-Twilio-Signature",
        Scheme::Twitch => "Twitch-Eventsub-Message-Signature",
        Scheme::Zoom => "x-zm-signature",
        Scheme::Paddle => "Paddle-Signature",
        Scheme::Intercom => "X-Hub-Signature",
        Scheme::Svix => "svix-signature",
        Scheme::Linear => "Linear-Signature",
        Scheme::Square => "x-square-hmacsha256-signature",
        Scheme::Hubspot => "X-HubSpot-Signature-v3",
        Scheme::Mailgun => return None,
        Scheme::Hmac => unreachable!("hmac is not a preset"),
    })
}

/// The schemes with a signature header, and its name.
fn header_schemes() -> impl Iterator<Item = (Scheme, &'static str)> {
    presets().filter_map(|scheme| Some((scheme, signature_header(scheme)?)))
}

/// A signature header value for `scheme` carrying `tag` as already encoded.
fn with_tag(scheme: Scheme, tag: &str) -> String {
    match scheme {
        Scheme::Standard | Scheme::Svix => format!("v1,{tag}"),
        Scheme::Hookd | Scheme::Stripe => format!("t={NOW},v1={tag}"),
        Scheme::Github | Scheme::Meta | Scheme::Twitch => format!("sha256={tag}"),
        Scheme::Intercom => format!("sha1={tag}"),
        Scheme::Paddle => format!("ts={NOW};h1={tag}"),
        Scheme::Slack | Scheme::Zoom => format!("v0={tag}"),
        _ => tag.to_owned(),
    }
}

/// Whether `scheme` sends the secret itself, which has no length of its own.
fn sends_token(scheme: Scheme) -> bool {
    matches!(scheme, Scheme::Gitlab | Scheme::Okta)
}

/// Whether `scheme`'s proof covers the body (Mailgun's covers only its timestamp
/// and token, which travel in the body).
fn covers_body(scheme: Scheme) -> bool {
    !sends_token(scheme) && scheme != Scheme::Mailgun
}

#[test]
fn sign_then_verify_round_trips_for_every_scheme() {
    for scheme in presets() {
        let (headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
        let verified = check(scheme, &headers, &body).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(verified.kid, "k2", "{scheme}");
        let expected_ts = scheme.has_timestamp().then_some(NOW);
        assert_eq!(verified.timestamp, expected_ts, "{scheme}");
        let header_id = scheme
            .event_id_header()
            .is_some()
            .then(|| "evt_1".to_owned());
        assert_eq!(verified.header_event_id, header_id, "{scheme}");
    }
}

#[test]
fn previous_key_is_accepted_for_every_scheme() {
    for scheme in presets() {
        let (headers, body) = signed(scheme, &previous(scheme), "evt_1", NOW);
        let verified = check(scheme, &headers, &body).unwrap_or_else(|e| panic!("{scheme}: {e}"));
        assert_eq!(verified.kid, "k1", "{scheme}");
    }
}

#[test]
fn tampered_body_is_a_bad_signature() {
    for scheme in presets().filter(|s| covers_body(*s)) {
        let (headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
        let mut tampered = body.clone();
        tampered[2] ^= 1;
        let result = check(scheme, &headers, &tampered);
        assert_eq!(result, Err(VerifyError::BadSignature), "{scheme}");
    }
}

#[test]
fn empty_signature_is_malformed_not_a_match() {
    for (scheme, header) in header_schemes() {
        let (mut headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
        set(&mut headers, header, &with_tag(scheme, ""));
        let code = check(scheme, &headers, &body).unwrap_err().code();
        assert_eq!(code, "INVALID_SIGNATURE_FORMAT", "{scheme}");
    }
}

#[test]
fn truncated_or_padded_signature_is_malformed() {
    for (scheme, header) in header_schemes().filter(|(s, _)| !sends_token(*s)) {
        let tag = codec::hmac_sha256(b"any key", BODY);
        let (short, long) = match scheme {
            Scheme::Standard
            | Scheme::Shopify
            | Scheme::Sendgrid
            | Scheme::Svix
            | Scheme::Square
            | Scheme::Hubspot => {
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
            let (mut headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
            set(&mut headers, header, &with_tag(scheme, &bad));
            let code = check(scheme, &headers, &body).unwrap_err().code();
            assert_eq!(code, "INVALID_SIGNATURE_FORMAT", "{scheme} {bad}");
        }
    }
}

#[test]
fn empty_webhook_id_is_malformed() {
    let (mut headers, _) = signed(Scheme::Standard, &current(Scheme::Standard), "", NOW);
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
    for (scheme, header) in header_schemes() {
        let (mut headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
        headers.retain(|(name, _)| name != header);
        let expected = Err(VerifyError::MissingSignature { header });
        assert_eq!(check(scheme, &headers, &body), expected, "{scheme}");
    }
}

#[test]
fn non_integer_timestamp_is_reported_before_the_mac() {
    for scheme in presets().filter(|s| s.has_timestamp()) {
        let (mut headers, body) = signed(scheme, &current(scheme), "evt_1", NOW);
        for (_, value) in headers.iter_mut() {
            *value = value
                .replace(&NOW.to_string(), "17644800OO")
                .replace(NOW_RFC3339, "17644800OO");
        }
        let body = String::from_utf8(body)
            .unwrap()
            .replace(&NOW.to_string(), "17644800OO");
        let result = check_with(scheme, &headers, body.as_bytes(), &[], NOW, TOLERANCE);
        assert_eq!(result, Err(VerifyError::InvalidTimestamp), "{scheme}");
    }
}

#[test]
fn tolerance_edges() {
    let tolerance = i64::try_from(TOLERANCE).unwrap();
    for scheme in presets().filter(|s| s.has_timestamp()) {
        let at = |ts: i64| {
            let (headers, body) = signed(scheme, &current(scheme), "e", ts);
            check(scheme, &headers, &body)
        };
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
    for scheme in presets().filter(|s| !s.has_timestamp()) {
        let (headers, body) = signed(scheme, &current(scheme), "evt_1", 0);
        let keys = [current(scheme).verifying()];
        let verified = check_with(scheme, &headers, &body, &keys, NOW, 0);
        assert!(verified.is_ok(), "{scheme}: {verified:?}");
    }
}

#[test]
fn hookd_kid_selects_the_key() {
    let (mut headers, _) = signed(Scheme::Hookd, &previous(Scheme::Hookd), "evt_1", NOW);
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
    let (headers, _) = signed(Scheme::Standard, &current(Scheme::Standard), "evt_1", NOW);
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

#[test]
fn token_schemes_do_not_cover_the_body() {
    for scheme in presets().filter(|s| sends_token(*s)) {
        let (headers, _) = signed(scheme, &current(scheme), "evt_1", NOW);
        let changed = br#"{"event_id":"evt_1","id":"evt_2"}"#;
        assert_eq!(
            check(scheme, &headers, changed).unwrap().kid,
            "k2",
            "{scheme}"
        );
        let mut wrong = headers.clone();
        let header = signature_header(scheme).expect("token schemes send a header");
        set(&mut wrong, header, "current-key-012345678");
        assert_eq!(
            check(scheme, &wrong, BODY),
            Err(VerifyError::BadSignature),
            "{scheme}"
        );
    }
}
