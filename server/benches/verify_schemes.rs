//! The key-pair verification schemes per delivery against HMAC, through a
//! tenant's ingest gate.

use std::{sync::Arc, time::Instant};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use hookd_sdk::signature::{sign_message, Message, Scheme, Secret};
use hookd_server::{
    clock::{ManualClock, SharedClock},
    config::TenantConfig,
    ids::TenantId,
    testing::{DeliveryFeed, Gate, Ingest, SledStore, Spans, Storage, TenantSettings},
};

const NOW_SECS: i64 = 1_700_000_000;
/// A Standard Webhooks shared secret.
const WHSEC: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
/// Standard Webhooks v1a: an Ed25519 private key and its public key.
const STANDARD_PRIVATE: &str = "whsk_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";
const STANDARD_PUBLIC: &str = "whpk_ebVWLo/mVPlAeLES6KmLp5AfhTrmlb7X4OORC60ElmQ=";
/// Discord: libsodium's secret key (seed, then public key); the tenant
/// holds the public key.
const DISCORD_PUBLIC: &str = "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664";
const DISCORD_PRIVATE: &str = concat!(
    "0102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
    "79b5562e8fe654f94078b112e8a98ba7901f853ae695bed7e0e3910bad049664"
);
/// SendGrid: a P-256 private key (PKCS#8) and its verification key (SPKI).
const SENDGRID_PRIVATE: &str = concat!(
    "MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
    "AAAAEAKhRANCAARg0CYP3rZNKmrDgx6x/W/gwlnCrlPlRx3Wto+pail3wZn5yyjimWrGKLzUdddqifFu90BP",
    "rIMHNuhP4V6vidPg"
);
const SENDGRID_PUBLIC: &str = concat!(
    "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAEYNAmD962TSpqw4Mesf1v4MJZwq5T5Ucd1raPqWopd8GZ+cso4pl",
    "qxii81HXXaonxbvdAT6yDBzboT+Fer4nT4A=="
);

/// One measured tenant: its scheme, the key it holds and the key its
/// sender signs with.
struct Case {
    name: &'static str,
    scheme: Scheme,
    held: &'static str,
    signing: &'static str,
}

const CASES: [Case; 4] = [
    Case {
        name: "hmac-standard",
        scheme: Scheme::Standard,
        held: WHSEC,
        signing: WHSEC,
    },
    Case {
        name: "ed25519-standard-v1a",
        scheme: Scheme::Standard,
        held: STANDARD_PUBLIC,
        signing: STANDARD_PRIVATE,
    },
    Case {
        name: "ed25519-discord",
        scheme: Scheme::Discord,
        held: DISCORD_PUBLIC,
        signing: DISCORD_PRIVATE,
    },
    Case {
        name: "ecdsa-p256-sendgrid",
        scheme: Scheme::Sendgrid,
        held: SENDGRID_PUBLIC,
        signing: SENDGRID_PRIVATE,
    },
];

impl Case {
    fn settings(&self) -> TenantSettings {
        let config: TenantConfig = serde_json::from_value(serde_json::json!({
            "id": "bench",
            "scheme": self.scheme.as_str(),
            "tolerance_secs": 600,
            "secrets": [{ "kid": "k1", "secret": self.held }],
        }))
        .expect("tenant config");
        TenantSettings::resolve_under(&config, 1024 * 1024).expect("tenant settings")
    }

    /// About 1 KiB of JSON carrying event id `id` where the scheme reads it
    /// (SendGrid posts an array of events).
    fn body(&self, id: &str) -> String {
        let pad = "x".repeat(960);
        match self.scheme {
            Scheme::Sendgrid => format!(r#"[{{"sg_event_id":"{id}","pad":"{pad}"}}]"#),
            _ => format!(r#"{{"id":"{id}","pad":"{pad}"}}"#),
        }
    }

    /// The headers and body of new delivery `n`.
    fn signed(&self, n: u64) -> (HeaderMap, Bytes) {
        let id = format!("evt_{n}_{}", ulid::Ulid::new());
        let body = self.body(&id);
        let key = Secret::from_provider(self.scheme, "k1", self.signing).expect("signing key");
        let message = Message {
            event_id: &id,
            timestamp: NOW_SECS,
            body: body.as_bytes(),
            method: "POST",
            url: None,
        };
        let signing = sign_message(self.scheme, &key, &message);
        (Ingest::headers(signing.headers), Bytes::from(signing.body))
    }
}

/// The key-pair verification schemes per delivery against HMAC: one new
/// signed delivery of about 1 KiB through a tenant's ingest gate, as the
/// HTTP worker runs it (verify, replay cache, body checks, the commit with
/// syncs off), for a Standard Webhooks tenant with a shared secret (HMAC),
/// with an Ed25519 key (`v1a`), a Discord tenant (Ed25519) and a SendGrid
/// tenant (ECDSA P-256). Run `cargo bench -p hookd-server --bench
/// verify_schemes`; each figure's ratio to `hmac-standard` is what the
/// scheme adds to a delivery.
fn schemes(c: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let clock: SharedClock = Arc::new(ManualClock::at_secs(NOW_SECS));
    let spans = Spans::new(&opentelemetry_sdk::trace::SdkTracerProvider::builder().build());
    let mut group = c.benchmark_group("verify_schemes");
    group.throughput(Throughput::Elements(1));
    for case in &CASES {
        let dir = tempfile::tempdir().expect("temp dir");
        let (store, _committer) = SledStore::open(dir.path(), 1024, false).expect("store");
        let data =
            Storage::tenant(&store, &TenantId::try_from("bench").expect("id")).expect("tenant");
        let gate = Gate::new(
            Arc::new(case.settings()),
            data,
            clock.clone(),
            Arc::default(),
            DeliveryFeed::default(),
            spans.clone(),
        );
        group.bench_function(case.name, |b| {
            b.iter_custom(|iters| {
                let requests: Vec<(HeaderMap, Bytes)> =
                    (0..iters).map(|n| case.signed(n)).collect();
                runtime.block_on(async {
                    let start = Instant::now();
                    for (headers, body) in &requests {
                        let outcome = gate.answer(Ingest::post(headers, body), || ()).await;
                        // A rejection would measure the wrong path.
                        assert!(!outcome.expect(case.name).duplicate, "{}", case.name);
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
}

criterion_group!(benches, schemes);
criterion_main!(benches);
