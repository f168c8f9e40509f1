//! Signature verification per scheme at 1 KiB, 16 KiB and 256 KiB bodies:
//! header parsing, the HMAC-SHA256 compare and the replay digest, as the
//! server runs them for every delivery.

use std::time::{SystemTime, UNIX_EPOCH};

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hookd_sdk::signature::{sign, verify, Scheme, Secret};

const SECRET: &str = "whsec_MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY=";
const SIZES: [(usize, &str); 3] = [
    (1 << 10, "1KiB"),
    (16 << 10, "16KiB"),
    (256 << 10, "256KiB"),
];

fn verification(c: &mut Criterion) {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    let mut group = c.benchmark_group("verify");
    // `hmac` has no format of its own to measure: its spec is the tenant's.
    for scheme in Scheme::ALL.into_iter().filter(|s| *s != Scheme::Hmac) {
        let keys = [Secret::from_provider(scheme, "k1", SECRET).unwrap()];
        for (size, label) in SIZES {
            let body = vec![b'x'; size];
            let headers = sign(scheme, &keys[0], "evt_bench_1", now, &body);
            // A bench that measured a rejection would be measuring the wrong path.
            verify(scheme, &headers, &body, &keys, now, 300).unwrap();
            group.throughput(Throughput::Bytes(size as u64));
            group.bench_with_input(
                BenchmarkId::new(scheme.as_str(), label),
                &body,
                |b, body| {
                    b.iter(|| verify(scheme, &headers, body, &keys, now, 300).unwrap());
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, verification);
criterion_main!(benches);
