//! A route transform at forward time on a ~1 KiB JSON `order.paid` body: the
//! whole of `Transform::run`, its mean and its p50 and p99.

use std::{
    hint::black_box,
    time::{Duration, Instant},
};

use criterion::{criterion_group, criterion_main, Criterion};
use hookd_server::{
    ids::{DeliveryId, EventId, TenantId},
    testing::{
        RouteShare, Transform, TransformBody, TransformContext, TransformLimits, TransformPool,
        TransformRequest,
    },
    use_transform_worker,
};
use serde_json::{json, Value};

/// Single runs `percentiles` times per transform.
const RUNS: usize = 2000;

const IDENTITY: &str = r#"addHandler("transform", (request, context) => request);"#;

const REWRITE: &str = r#"addHandler("transform", (request, context) => {
  request.path = "/billing/" + request.body.type;
  request.headers["x-order-id"] = request.body.data.order_id;
  request.body = {
    kind: request.body.type,
    order: request.body.data.order_id,
    cents: request.body.data.amount,
    skus: request.body.data.items.map((item) => item.sku),
  };
  return request;
});"#;

/// About 1 KiB of JSON: an order with a customer and ten items.
fn payload() -> Value {
    let items: Vec<Value> = (1..=10)
        .map(|i| {
            json!({"sku": format!("SKU-{i:05}"), "quantity": i, "unit_price": 1250 * i,
                   "name": format!("Item number {i}")})
        })
        .collect();
    json!({
        "event_id": "evt_01J9Z6", "type": "order.paid", "version": "2024-06-01",
        "created_at": "2024-06-01T12:00:00Z",
        "data": {
            "order_id": "ord_8f3k2", "status": "paid", "amount": 43750, "currency": "EUR",
            "customer": {"id": "cus_42", "email": "ada@example.com", "name": "Ada Lovelace"},
            "items": items
        }
    })
}

fn request() -> TransformRequest {
    TransformRequest {
        method: "POST".into(),
        path: "/hooks/acme".into(),
        query: String::new(),
        headers: vec![
            ("content-type".into(), "application/json".into()),
            ("user-agent".into(), "shop/1.0".into()),
            (
                "webhook-id".into(),
                "msg_2KWPBgLlAfxdpx2AI54pPJ85f4W".into(),
            ),
        ],
        body: TransformBody::Json(payload()),
    }
}

fn context() -> TransformContext {
    TransformContext {
        tenant: TenantId::try_from("acme".to_owned()).expect("tenant id"),
        route: "rt_billing".into(),
        event_id: EventId::new("evt_01J9Z6"),
        delivery_id: DeliveryId::new("dlv_01J9Z6"),
        attempt: 1,
    }
}

/// A runtime to await runs on, a route's share, with the workers started
/// from this package's `hookd`.
fn setup() -> (tokio::runtime::Runtime, std::sync::Arc<RouteShare>) {
    use_transform_worker(env!("CARGO_BIN_EXE_hookd").into());
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    (runtime, TransformPool::shared().route_share())
}

/// The whole of `Transform::run` as the dispatcher will call it — the job
/// sent to a worker process (this package's `hookd` binary) and its answer
/// read back, and in the worker a fresh QuickJS runtime and context, the
/// code's top level, the request parsed in, the handler, the result
/// serialized — then validated — for the identity transform and for a
/// small rewrite (path, a header, a reshaped body).
/// Criterion gives the mean; `percentiles` then times [`RUNS`] single runs
/// of each and prints their p50 and p99 in microseconds: the latency a
/// transform adds to one forward (a route without one runs none of it).
/// Run `cargo bench -p hookd-server --bench route_transform`.
fn bench(c: &mut Criterion) {
    let (runtime, share) = setup();
    let request = request();
    let context = context();
    let limits = TransformLimits::default();
    println!(
        "body: {} bytes",
        serde_json::to_vec(&payload()).expect("json").len()
    );
    for (name, code) in [("identity", IDENTITY), ("rewrite", REWRITE)] {
        let transform = Transform::new(code, 1).expect("takes the code");
        c.bench_function(&format!("route_transform/{name}"), |b| {
            b.iter(|| {
                runtime
                    .block_on(transform.run(&share, black_box(&request), &context, &limits))
                    .expect("runs")
            })
        });
    }
}

/// The `q` quantile of `sorted` (ascending), nearest rank.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((sorted.len() as f64 * q).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Times [`RUNS`] single runs of each transform and prints p50 and p99.
fn percentiles(_: &mut Criterion) {
    let (runtime, share) = setup();
    let request = request();
    let context = context();
    let limits = TransformLimits::default();
    for (name, code) in [("identity", IDENTITY), ("rewrite", REWRITE)] {
        let transform = Transform::new(code, 1).expect("takes the code");
        let mut times: Vec<Duration> = (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                runtime
                    .block_on(transform.run(&share, black_box(&request), &context, &limits))
                    .expect("runs");
                start.elapsed()
            })
            .collect();
        times.sort_unstable();
        let us = |d: Duration| d.as_secs_f64() * 1e6;
        println!(
            "route_transform/{name} over {RUNS} runs: p50 {:.1} µs, p99 {:.1} µs, max {:.1} µs",
            us(quantile(&times, 0.50)),
            us(quantile(&times, 0.99)),
            us(quantile(&times, 1.0)),
        );
    }
}

criterion_group!(benches, bench, percentiles);
criterion_main!(benches);
