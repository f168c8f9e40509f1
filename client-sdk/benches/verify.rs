//! Signature verification per scheme at 1 KiB, 16 KiB and 256 KiB bodies:
//! header parsing, the HMAC-SHA256 compare and the replay digest, as the
//! server runs them for every delivery.

use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hookd_sdk::signature::{sign_message, verify_delivery, Delivery, Message, Scheme, Secret};

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

fn verification(c: &mut Criterion) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut group = c.benchmark_group("verify");
    // Header signatures under a shared secret over a POST body: not the key-pair
    // schemes (another secret form), Mailgun (signs inside the body), Twilio
    // (signs the URL) nor `hmac` (no format of its own: its spec is the tenant's).
    let schemes = Scheme::ALL.into_iter().filter(|scheme| {
        !matches!(
            scheme,
            Scheme::Discord | Scheme::Sendgrid | Scheme::Mailgun | Scheme::Twilio | Scheme::Hmac
        )
    });
    for scheme in schemes {
        let keys = [Secret::from_provider(scheme, "k1", SECRET).unwrap()];
        let url = scheme.signs_url().then_some(URL);
        for (size, label) in SIZES {
            let event = event(size);
            let message = Message {
                event_id: "evt_bench_1",
                timestamp: now,
                body: &event,
                method: "POST",
                url,
            };
            let signing = sign_message(scheme, &keys[0], &message);
            let delivery = Delivery {
                method: "POST",
                url,
                headers: &signing.headers,
                body: &signing.body,
            };
            // A bench that measured a rejection would be measuring the wrong path.
            verify_delivery(scheme, &delivery, &keys, now, 300).unwrap();
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(
                BenchmarkId::new(scheme.as_str(), label),
                &delivery,
                |b, delivery| {
                    b.iter(|| verify_delivery(scheme, delivery, &keys, now, 300).unwrap());
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, verification);
criterion_main!(benches);
