//! Signature verification per scheme at 1 KiB, 16 KiB and 256 KiB bodies, as
//! the server runs it for every delivery.

use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hookd_sdk::signature::{
    sign_hmac, sign_message, verify_delivery, verify_hmac, Delivery, HmacFields, HmacSpec, KeyKind,
    Message, Scheme, Secret, Signing, VerifyError,
};
use sha2::{Digest, Sha256};

const SECRET: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const SIZES: [(usize, &str); 3] = [
    (1 << 10, "1KiB"),
    (16 << 10, "16KiB"),
    (256 << 10, "256KiB"),
];
/// Where the deliveries of the schemes that sign the URL go.
const URL: &str = "https://hooks.example.com/hooks/bench?src=bench";

/// A JSON object of `size` bytes (Linear reads its timestamp from the body).
fn event(size: usize) -> Vec<u8> {
    let skeleton = r#"{"pad":""}"#.len();
    format!(r#"{{"pad":"{}"}}"#, "x".repeat(size - skeleton)).into_bytes()
}

/// One measured case: its name and how it signs and verifies.
struct Case {
    name: String,
    scheme: Scheme,
    signing: Secret,
    spec: Option<HmacSpec>,
}

impl Case {
    fn preset(name: &str, scheme: Scheme, signing: Secret) -> Case {
        Case {
            name: name.to_owned(),
            scheme,
            signing,
            spec: None,
        }
    }

    /// The URL a delivery of `body` goes to: Twilio's carries the body's
    /// digest, as Twilio sends JSON bodies.
    fn url(&self, body: &[u8]) -> Option<String> {
        match self.scheme {
            Scheme::Twilio => Some(format!(
                "{URL}&bodySHA256={}",
                hex::encode(Sha256::digest(body))
            )),
            scheme => scheme.signs_url().then(|| URL.to_owned()),
        }
    }

    fn sign(&self, message: &Message<'_>) -> Signing {
        match &self.spec {
            Some(spec) => sign_hmac(spec, &self.signing, message, &[]).expect("the spec signs"),
            None => sign_message(self.scheme, &self.signing, message),
        }
    }

    fn verify(
        &self,
        delivery: &Delivery<'_, [(String, String)]>,
        keys: &[Secret],
        now: i64,
    ) -> Result<(), VerifyError> {
        match &self.spec {
            Some(spec) => verify_hmac(spec, delivery, keys, now, 300),
            None => verify_delivery(self.scheme, delivery, keys, now, 300),
        }
        .map(drop)
    }
}

fn cases() -> Vec<Case> {
    let shared = |scheme| Secret::from_provider(scheme, "k1", SECRET).expect("a shared secret");
    let mut cases: Vec<Case> = Scheme::ALL
        .into_iter()
        .filter(|scheme| *scheme != Scheme::Hmac)
        .map(|scheme| {
            let key = match scheme {
                Scheme::Discord => Secret::generate("k1", KeyKind::Ed25519Seed),
                Scheme::Sendgrid => Secret::generate("k1", KeyKind::P256Pkcs8),
                _ => shared(scheme),
            };
            Case::preset(scheme.as_str(), scheme, key)
        })
        .collect();
    cases.push(Case::preset(
        "standard-v1a",
        Scheme::Standard,
        Secret::generate("k1", KeyKind::Ed25519Seed),
    ));
    let spec = HmacSpec::new(HmacFields {
        signature: "header:X-Signature".into(),
        prefix: Some("v0=".into()),
        signed: Some("v0:{header:X-Timestamp}:{body}".into()),
        timestamp: Some("header:X-Timestamp".into()),
        ..HmacFields::default()
    })
    .expect("a valid spec");
    cases.push(Case {
        name: "hmac".into(),
        scheme: Scheme::Hmac,
        signing: shared(Scheme::Hmac),
        spec: Some(spec),
    });
    cases
}

/// Signature verification per scheme at 1 KiB, 16 KiB and 256 KiB bodies:
/// parsing the request, the signature check (HMAC-SHA1/256, the header token,
/// Ed25519, ECDSA P-256) and the tolerance, as the server runs them for every
/// delivery. Every preset, Standard Webhooks' `v1a` (Ed25519) beside its `v1`,
/// and a configured `hmac` tenant.
fn verification(c: &mut Criterion) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut group = c.benchmark_group("verify");
    for case in cases() {
        let keys = [case.signing.verifying()];
        for (size, label) in SIZES {
            let event = event(size);
            let url = case.url(&event);
            let message = Message {
                event_id: "evt_bench_1",
                timestamp: now,
                body: &event,
                method: "POST",
                url: url.as_deref(),
            };
            let signing = case.sign(&message);
            let delivery = Delivery {
                method: "POST",
                url: url.as_deref(),
                headers: signing.headers.as_slice(),
                body: &signing.body,
            };
            // A bench that measured a rejection would be measuring the wrong path.
            case.verify(&delivery, &keys, now)
                .unwrap_or_else(|e| panic!("{}: {e}", case.name));
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(
                BenchmarkId::new(&case.name, label),
                &delivery,
                |b, delivery| b.iter(|| case.verify(delivery, &keys, now).unwrap()),
            );
        }
    }
    group.finish();
}

criterion_group!(benches, verification);
criterion_main!(benches);
