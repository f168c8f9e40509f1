//! Property tests: random headers, timestamps and bodies never make a parser or
//! the verifier panic, and every outcome is one of the defined verdicts.

use proptest::prelude::*;

use super::{
    codec, kv, sign_message, verify_delivery, Delivery, HeaderLookup, Message, Scheme, Secret,
    Verified, VerifyError,
};

/// The public URL the provider calls, for the schemes that sign it.
const URL: &str = "https://hooks.example.com/hooks/acme";

/// What `scheme`'s sender sends for `body`: headers and the body with any
/// signature it carries.
fn deliver(
    scheme: Scheme,
    event_id: &str,
    timestamp: i64,
    body: &[u8],
) -> (Vec<(String, String)>, Vec<u8>) {
    let body = event_body(scheme, body);
    let message = Message {
        event_id,
        timestamp,
        body: &body,
        method: "POST",
        url: scheme.signs_url().then_some(URL),
    };
    let signing = sign_message(scheme, &signing_key(scheme), &message);
    (signing.headers, signing.body)
}

/// An event body from random bytes: as they are, except for Linear, whose
/// timestamp lives in the body, so its events are JSON objects.
fn event_body(scheme: Scheme, raw: &[u8]) -> Vec<u8> {
    match scheme {
        Scheme::Linear => serde_json::to_vec(&serde_json::json!({
            "data": String::from_utf8_lossy(raw),
        }))
        .expect("a JSON object serializes"),
        _ => raw.to_vec(),
    }
}

/// Whether `body` read as a form decodes to UTF-8 text (what Twilio signs).
fn utf8_form(body: &[u8]) -> bool {
    form_urlencoded::parse(body)
        .all(|(name, value)| !name.contains('\u{fffd}') && !value.contains('\u{fffd}'))
}

/// Verifies what [`deliver`] sent at `now`, with the tenant's keys.
fn receive(
    scheme: Scheme,
    headers: &[(String, String)],
    body: &[u8],
    now: i64,
) -> Result<Verified, VerifyError> {
    let delivery = Delivery {
        method: "POST",
        url: scheme.signs_url().then_some(URL),
        headers,
        body,
    };
    verify_delivery(scheme, &delivery, &keys(scheme), now, 300)
}

/// Every header name any scheme reads, in assorted case, plus a stranger.
const NAMES: [&str; 37] = [
    "webhook-id",
    "webhook-timestamp",
    "webhook-signature",
    "X-Webhook-Signature",
    "stripe-signature",
    "X-Hub-Signature-256",
    "x-github-delivery",
    "X-Shopify-Hmac-Sha256",
    "X-Shopify-Webhook-Id",
    "X-Slack-Signature",
    "x-slack-request-timestamp",
    "X-Gitlab-Token",
    "Idempotency-Key",
    "authorization",
    "X-Signature-Ed25519",
    "x-signature-timestamp",
    "X-Twilio-Email-Event-Webhook-Signature",
    "X-Twilio-Email-Event-Webhook-Timestamp",
    "X-Twilio-Signature",
    "X-Twilio-Webhooks-Signature-Settings",
    "I-Twilio-Idempotency-Token",
    "WEBHOOK-SIGNATURE",
    "svix-signature",
    "x-hub-signature",
    "paddle-signature",
    "x-zm-signature",
    "X-ZM-Request-Timestamp",
    "twitch-eventsub-message-id",
    "Twitch-Eventsub-Message-Timestamp",
    "twitch-eventsub-message-signature",
    "linear-signature",
    "Linear-Delivery",
    "x-square-hmacsha256-signature",
    "x-hubspot-signature-v3",
    "X-HubSpot-Request-Timestamp",
    "content-type",
    "x-other",
];

/// The schemes with a wire format of their own (`hmac`'s is its spec).
fn scheme() -> impl Strategy<Value = Scheme> {
    let presets = Scheme::ALL.into_iter().filter(|s| *s != Scheme::Hmac);
    prop::sample::select(presets.collect::<Vec<_>>())
}

/// Header values built from the pieces the formats use, with any character
/// thrown in, so parsers get past their first check often.
fn value() -> impl Strategy<Value = String> {
    prop::collection::vec(
        prop_oneof![
            Just("v1,".to_owned()),
            Just("v1=".to_owned()),
            Just("t=".to_owned()),
            Just("ts=".to_owned()),
            Just(";h1=".to_owned()),
            Just("sha256=".to_owned()),
            Just("sha1=".to_owned()),
            Just("v0=".to_owned()),
            Just("kid=".to_owned()),
            Just(",".to_owned()),
            Just(" ".to_owned()),
            "[0-9]{1,20}",
            "[0-9a-fA-F]{0,70}",
            "[A-Za-z0-9+/=]{0,50}",
            any::<String>(),
        ],
        0..8,
    )
    .prop_map(|parts| parts.concat())
}

fn headers() -> impl Strategy<Value = Vec<(String, String)>> {
    prop::collection::vec(
        (
            prop::sample::select(NAMES.to_vec()).prop_map(str::to_owned),
            value(),
        ),
        0..8,
    )
}

/// The key a sender signs with: a shared secret, or a key pair's private half.
fn signing_key(scheme: Scheme) -> Secret {
    let raw = match scheme {
        Scheme::Standard | Scheme::Svix => "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
        // libsodium's secret key for the seed 01..20: the seed, then its public key.
        Scheme::Discord => concat!(
            "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
            "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664"
        ),
        Scheme::Sendgrid => concat!(
            "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
            "AAAAEAKhRANCAARg0CYP3rZNKmrDgx6x/W/gwlnCrlPlRx3Wto+pail3wZn5yyjimWrGKLzUdddqifFu90BP",
            "rIMHNuhP4V6vidPg"
        ),
        _ => "a-shared-secret",
    };
    Secret::from_provider(scheme, "k1", raw).unwrap()
}

/// The tenant's keys: what verifies `signing_key`'s signatures.
fn keys(scheme: Scheme) -> Vec<Secret> {
    vec![signing_key(scheme).verifying()]
}

const CODES: [&str; 6] = [
    "MISSING_SIGNATURE",
    "INVALID_SIGNATURE_FORMAT",
    "INVALID_TIMESTAMP",
    "BAD_SIGNATURE",
    "STALE_TIMESTAMP",
    "FUTURE_TIMESTAMP",
];

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Any headers, any body, any clock: a verdict, never a panic; random
    /// material never verifies.
    #[test]
    fn verify_maps_any_input_to_a_defined_verdict(
        scheme in scheme(),
        headers in headers(),
        body in prop::collection::vec(any::<u8>(), 0..64),
        now in any::<i64>(),
        tolerance in any::<u64>(),
    ) {
        let delivery = Delivery {
            method: "POST",
            url: Some(URL),
            headers: &headers,
            body: &body,
        };
        match verify_delivery(scheme, &delivery, &keys(scheme), now, tolerance) {
            Ok(verified) => prop_assert!(false, "random headers verified: {verified:?}"),
            Err(e) => prop_assert!(CODES.contains(&e.code()), "{e:?}"),
        }
    }

    /// What hookd signs verifies at the signing time, for every scheme, any
    /// visible-ASCII event id and any body.
    #[test]
    fn signed_deliveries_verify(
        scheme in scheme(),
        event_id in "[!-~]{1,64}",
        body in prop::collection::vec(any::<u8>(), 0..256),
        timestamp in 0i64..=4_102_444_800,
    ) {
        prop_assume!(scheme != Scheme::Twilio || utf8_form(&body), "Twilio signs UTF-8 forms");
        let (headers, body) = deliver(scheme, &event_id, timestamp, &body);
        let verified = receive(scheme, &headers, &body, timestamp);
        prop_assert!(verified.is_ok(), "{verified:?}");
    }

    /// Sending any signed header twice is malformed, never a pick of one line.
    #[test]
    fn a_repeated_signed_header_is_malformed(
        scheme in scheme(),
        which in any::<prop::sample::Index>(),
        body in prop::collection::vec(any::<u8>(), 0..32),
    ) {
        let (mut headers, body) = deliver(scheme, "evt_1", 1_000, &body);
        prop_assume!(!headers.is_empty(), "the scheme signs inside the body");
        let repeated = headers[which.index(headers.len())].clone();
        headers.push(repeated);
        let err = receive(scheme, &headers, &body, 1_000).unwrap_err();
        prop_assert_eq!(err.code(), "INVALID_SIGNATURE_FORMAT");
    }

    /// The timestamp parser accepts exactly the plain decimal integers that
    /// fit an i64.
    #[test]
    fn timestamps_are_plain_integers_or_refused(text in prop_oneof!["[0-9]{0,25}", any::<String>()]) {
        let plain = !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit());
        match codec::parse_timestamp(&text) {
            Ok(n) => {
                prop_assert!(plain);
                prop_assert_eq!(Some(n), text.parse::<i64>().ok());
            }
            Err(e) => {
                prop_assert_eq!(e, VerifyError::InvalidTimestamp);
                prop_assert!(!plain || text.parse::<i64>().is_err());
            }
        }
    }

    /// The `t=..,v1=..` parser: a header or a format verdict, and what it
    /// returns holds only full-length tags.
    #[test]
    fn kv_headers_parse_or_are_malformed(text in value()) {
        match kv::parse(&text) {
            Ok(header) => {
                prop_assert!(!header.signatures.is_empty());
                prop_assert!(header.signatures.len() <= codec::MAX_SIGNATURES);
                prop_assert!(header.timestamp >= 0);
            }
            Err(e) => prop_assert!(
                matches!(e, VerifyError::InvalidSignatureFormat { .. } | VerifyError::InvalidTimestamp),
                "{e:?}"
            ),
        }
    }

    /// Tag decoders give exactly 32 bytes or a format verdict.
    #[test]
    fn tags_decode_to_32_bytes_or_are_malformed(text in value()) {
        for decoded in [codec::decode_hex(&text), codec::decode_base64(&text)] {
            if let Err(e) = decoded {
                prop_assert_eq!(e.code(), "INVALID_SIGNATURE_FORMAT");
            }
        }
    }

    /// A header value is text exactly when every byte is visible ASCII,
    /// space or tab.
    #[test]
    fn header_values_are_text_or_not(text in any::<String>()) {
        let text_only = text.bytes().all(|b| b == b'\t' || (b' '..=b'~').contains(&b));
        let lookup = HeaderLookup::of_value(&text);
        prop_assert_eq!(lookup == HeaderLookup::One(&text), text_only);
        prop_assert_eq!(lookup == HeaderLookup::NotText, !text_only);
    }
}
