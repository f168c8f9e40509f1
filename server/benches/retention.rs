//! How fast retention removes what is due, over many tenants: one sweeper
//! pass per engine, and a second that finds nothing due.

use std::{sync::Arc, time::Instant};

use bytes::Bytes;
use futures_util::future::try_join_all;
use hookd_server::{
    config::RetentionConfig,
    ids::{DeliveryId, EventId, RequestId, TenantId},
    testing::{
        pass, test_database, AttemptRecord, Due, EventMeta, NewDelivery, Next, PgOptions, PgStore,
        Receipt, Rejection, Removed, SledStore, Store, TenantStore,
    },
};

/// When the old records were written and settled (Unix ms).
const OLD_MS: i64 = 1_000_000;
/// When the fresh ones were, and when the pass runs: an hour later.
const NOW_MS: i64 = OLD_MS + 3_600_000;

fn setting(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

fn delivery(tenant: usize, n: usize, at_ms: i64) -> NewDelivery {
    let event_id = EventId::new(format!("evt_{tenant}_{n}_{at_ms}"));
    NewDelivery {
        event_id: event_id.clone(),
        meta: EventMeta {
            event_id,
            delivery_id: DeliveryId::generate(),
            request_id: RequestId::generate(),
            received_at_ms: at_ms,
            headers: vec![("content-type".into(), "application/json".into())],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        },
        body: Bytes::from(vec![b'x'; 512]),
        due_ms: at_ms,
        content_key: None,
        copies: Vec::new(),
        receipt: Receipt::Queued,
        routes: Vec::new(),
        event_type: None,
    }
}

fn attempt(at_ms: i64) -> AttemptRecord {
    AttemptRecord {
        attempt: 1,
        started_at_ms: at_ms,
        duration_ms: 3,
        status_code: Some(200),
        error: None,
        response_body: b"ok".to_vec(),
        next_retry_at_ms: None,
        request_id: RequestId::generate(),
        transform_version: None,
    }
}

/// Commits `count` deliveries of tenant `t` at `at_ms` and settles each:
/// one in `dead_every` dies, the others are delivered.
async fn settled(
    data: &TenantStore,
    t: usize,
    first: usize,
    count: usize,
    at_ms: i64,
    dead_every: usize,
) {
    let items = (first..first + count).map(|n| data.commit(delivery(t, n, at_ms)));
    try_join_all(items).await.expect("commit");
    let queue = data.queue(None, count + 1).expect("queue");
    for (i, (entry, id)) in queue.iter().enumerate() {
        let next = match (i + 1) % dead_every {
            0 => Next::Dead {
                reason: "HTTP 410".into(),
            },
            _ => Next::Delivered,
        };
        data.record_attempt(entry, id, &attempt(at_ms), &next, at_ms)
            .expect("attempt");
    }
}

struct Shape {
    tenants: usize,
    due: usize,
    fresh: usize,
    batch: usize,
}

async fn fill(store: &Store, shape: &Shape) -> Vec<TenantStore> {
    let log = store.rejections().expect("rejections");
    let mut tenants = Vec::with_capacity(shape.tenants);
    for t in 0..shape.tenants {
        let id = TenantId::try_from(format!("t{t:05}").as_str()).expect("tenant id");
        let data = store.tenant(&id).expect("tenant");
        let dead = shape.due / 5;
        settled(&data, t, 0, shape.due + dead, OLD_MS, 6).await;
        settled(&data, t, shape.due + dead, shape.fresh, NOW_MS, usize::MAX).await;
        log.record(Rejection {
            tenant_id: id.to_string(),
            at_ms: OLD_MS,
            request_id: format!("req_{t}"),
            code: "INVALID_JSON".into(),
            reason: "refused".into(),
            signature_valid: true,
            body_bytes: 2,
            body: b"{}".to_vec(),
        })
        .expect("rejection");
        tenants.push(data);
    }
    tenants
}

fn due(batch: usize) -> Due {
    let retention = RetentionConfig {
        idempotency_secs: 60,
        delivered_secs: 60,
        dead_secs: 60,
        sweep_interval_secs: 60.0,
        sweep_batch: batch,
    };
    Due::at(&retention, NOW_MS)
}

/// How fast retention removes what is due, over many tenants: fills
/// `HOOKD_BENCH_TENANTS` tenants (default 10 000) of one engine, each with
/// `HOOKD_BENCH_DUE` delivered events (default 10) and a fifth as many dead
/// letters past their retention, one recorded rejection past it and
/// `HOOKD_BENCH_FRESH` delivered events (default 5) that are not due, then
/// times one sweeper pass ([`hookd_server::sweeper::pass`], batch
/// `HOOKD_BENCH_BATCH`, default 1000) and a second pass that finds nothing
/// due. One line per engine: the embedded engine (syncs off while filling)
/// always, PostgreSQL when `HOOKD_TEST_POSTGRES_URL` names a server. Run
/// `cargo bench -p hookd-server --bench retention` (a release build).
async fn timed(store: &Store, tenants: &[TenantStore], batch: usize) -> (Removed, f64) {
    let log = store.rejections().expect("rejections");
    let started = Instant::now();
    let removed = pass(store.clone(), tenants.to_vec(), Some(log), &due(batch)).await;
    (removed, started.elapsed().as_secs_f64())
}

async fn run(engine: &str, store: Store, shape: &Shape) {
    let started = Instant::now();
    let tenants = fill(&store, shape).await;
    let filled = started.elapsed().as_secs_f64();
    let (removed, secs) = timed(&store, &tenants, shape.batch).await;
    let (idle, idle_secs) = timed(&store, &tenants, shape.batch).await;
    assert_eq!(idle.total(), 0, "the first pass left nothing due");
    let deliveries = removed.data.delivered + removed.data.dead;
    println!(
        "{engine}: {} tenants filled in {filled:.1} s; one pass removed {} records \
         ({} delivered, {} dead letters, {} idempotency, {} rejections) in {} steps, \
         {secs:.2} s: {:.0} records/s, {:.0} deliveries/s; a pass with nothing due \
         ({} fresh deliveries kept): {idle_secs:.2} s",
        shape.tenants,
        removed.total(),
        removed.data.delivered,
        removed.data.dead,
        removed.data.idempotency,
        removed.rejections,
        removed.steps,
        removed.total() as f64 / secs,
        deliveries as f64 / secs,
        shape.tenants * shape.fresh,
    );
}

fn main() {
    let shape = Shape {
        tenants: setting("HOOKD_BENCH_TENANTS", 10_000),
        due: setting("HOOKD_BENCH_DUE", 10),
        fresh: setting("HOOKD_BENCH_FRESH", 5),
        batch: setting("HOOKD_BENCH_BATCH", 1000),
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let dir = tempfile::tempdir().expect("temp dir");
    let (store, _committer) = SledStore::open(dir.path(), 512, false).expect("store");
    runtime.block_on(run("sled", Arc::new(store), &shape));
    if let Some(database) = test_database("hookd_bench_retention") {
        let store = PgStore::open(PgOptions {
            url: database.url.clone().into(),
            max_connections: 8,
            statement_timeout_ms: 0,
            batch_max: 512,
        })
        .expect("postgres");
        runtime.block_on(run("postgres", Arc::new(store), &shape));
    }
}
