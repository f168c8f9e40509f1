//! The durable half of ingest, piece by piece: the group committer
//! (`committer/N`) and a tenant's ingest gate (`gate/new`, `gate/duplicate`).

use std::{sync::Arc, time::Instant};

use actix_web::http::header::HeaderMap;
use bytes::Bytes;
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use hookd_sdk::signature::{sign, Scheme, Secret};
use hookd_server::{
    clock::{ManualClock, SharedClock},
    config::TenantConfig,
    ids::{DeliveryId, EventId, RequestId, TenantId},
    testing::{
        DeliveryFeed, EventMeta, Gate, Ingest, NewDelivery, Receipt, SledStore, Spans, Storage,
        TenantData, TenantSettings,
    },
};

const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
const NOW_SECS: i64 = 1_700_000_000;

fn delivery(n: u64) -> NewDelivery {
    let event_id = EventId::new(format!("evt_{n}_{}", ulid::Ulid::new()));
    NewDelivery {
        event_id: event_id.clone(),
        meta: EventMeta {
            event_id,
            delivery_id: DeliveryId::generate(),
            request_id: RequestId::generate(),
            received_at_ms: 0,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: false,
        },
        body: Bytes::from(vec![b'x'; 1024]),
        due_ms: 0,
        content_key: None,
        copies: Vec::new(),
        receipt: Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

/// `committer/N`: N concurrent writers each committing one new delivery
/// through the embedded store's group committer, every answer after the
/// fdatasync that covers it (the real path: a temporary dir on the
/// machine's disk). Throughput is per delivery, so the figure shows how
/// many writes one fsync is shared by as N grows.
fn committer(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _committer) = SledStore::open(dir.path(), 1024, true).expect("store");
    let tenant: Arc<dyn TenantData> = Arc::new(
        store
            .tenant_trees(&TenantId::try_from("bench").expect("tenant id"))
            .expect("tenant"),
    );
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let mut group = c.benchmark_group("committer");
    for writers in [1u64, 16, 64, 256] {
        group.throughput(Throughput::Elements(writers));
        group.bench_with_input(BenchmarkId::from_parameter(writers), &writers, |b, &n| {
            b.iter_custom(|iters| {
                runtime.block_on(async {
                    let start = Instant::now();
                    for _ in 0..iters {
                        let commits = (0..n).map(|i| tenant.commit(delivery(i)));
                        for outcome in futures_util::future::join_all(commits).await {
                            outcome.expect("committed");
                        }
                    }
                    start.elapsed()
                })
            });
        });
    }
    group.finish();
    drop(store);
}

fn settings() -> TenantSettings {
    let config: TenantConfig = serde_json::from_value(serde_json::json!({
        "id": "bench",
        "scheme": "standard",
        "tolerance_secs": 600,
        "secrets": [{ "kid": "k1", "secret": SECRET }],
    }))
    .expect("tenant config");
    TenantSettings::resolve_under(&config, 1024 * 1024).expect("tenant settings")
}

/// The headers and body of one signed delivery.
fn signed(n: u64) -> (HeaderMap, Bytes) {
    let body = format!(
        "{{\"type\":\"bench\",\"n\":{n},\"pad\":\"{}\"}}",
        "x".repeat(990)
    );
    let id = format!("msg_{n}_{}", ulid::Ulid::new());
    let key = Secret::from_provider(Scheme::Standard, "k1", SECRET).expect("secret");
    let signed = sign(Scheme::Standard, &key, &id, NOW_SECS, body.as_bytes());
    (Ingest::headers(signed), Bytes::from(body))
}

/// `gate/new` and `gate/duplicate`: one signed Standard Webhooks
/// delivery of 1 KiB run through a tenant's ingest gate as the HTTP worker
/// runs it, and answered (verify, replay cache, body checks, commit with
/// syncs off, so the hand-offs show rather than the disk), and a resend of
/// an accepted one, answered from the replay cache.
fn gate(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _committer) = SledStore::open(dir.path(), 1024, false).expect("store");
    let data = Storage::tenant(&store, &TenantId::try_from("bench").expect("id")).expect("tenant");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let clock: SharedClock = Arc::new(ManualClock::at_secs(NOW_SECS));
    let spans = Spans::new(&opentelemetry_sdk::trace::SdkTracerProvider::builder().build());
    let gate = Gate::new(
        Arc::new(settings()),
        data,
        clock,
        Arc::default(),
        DeliveryFeed::default(),
        spans,
    );
    let mut group = c.benchmark_group("gate");
    group.throughput(Throughput::Elements(1));
    group.bench_function("new", |b| {
        b.iter_custom(|iters| {
            let requests: Vec<(HeaderMap, Bytes)> = (0..iters).map(signed).collect();
            runtime.block_on(async {
                let start = Instant::now();
                for (headers, body) in &requests {
                    let outcome = gate.answer(Ingest::post(headers, body), || ()).await;
                    assert!(!outcome.expect("accepted").duplicate);
                }
                start.elapsed()
            })
        });
    });
    let (headers, body) = signed(0);
    runtime.block_on(async {
        gate.answer(Ingest::post(&headers, &body), || ())
            .await
            .expect("accepted")
    });
    group.bench_function("duplicate", |b| {
        b.iter_custom(|iters| {
            runtime.block_on(async {
                let start = Instant::now();
                for _ in 0..iters {
                    let outcome = gate.answer(Ingest::post(&headers, &body), || ()).await;
                    assert!(outcome.expect("answered").duplicate);
                }
                start.elapsed()
            })
        });
    });
    group.finish();
}

criterion_group!(benches, committer, gate);
criterion_main!(benches);
