//! A route filter on a Stripe-like event of about 1 KiB, checked to allocate
//! nothing, and the costliest evaluation hookd lets a filter make.

use std::{alloc::System, hint::black_box};

use criterion::Criterion;
use hookd_server::testing::{
    FilterInput, OverBudget, RouteFilter, Steps, INLINE_STEPS, MAX_FILTER_STEPS,
};
use serde_json::{json, Value};
use stats_alloc::{Region, StatsAlloc, INSTRUMENTED_SYSTEM};

#[global_allocator]
static GLOBAL: &StatsAlloc<System> = &INSTRUMENTED_SYSTEM;

const HEADERS: &[(&str, &str)] = &[
    ("Host", "hooks.example.com"),
    (
        "User-Agent",
        "Stripe/1.0 (+https://stripe.com/docs/webhooks)",
    ),
    ("Content-Type", "application/json; charset=utf-8"),
    ("Content-Length", "1024"),
    ("Accept", "*/*; q=0.5, application/xml"),
    ("Cache-Control", "no-cache"),
    ("X-Request-Id", "req_8f14e45fceea167a5a36dedd4bea2543"),
    (
        "Stripe-Signature",
        "t=1714557600,v1=5257a869e7ecebeda32affa62cdca3fa51cad7e77a0e56ff536d0ce8e108d8bd",
    ),
];

fn filter() -> RouteFilter {
    let spec = json!({
        "body": {
            "type": {"$in": ["charge.succeeded", "payment_intent.succeeded", "invoice.paid"]},
            "data": {"object": {
                "amount": {"$gte": 1000},
                "metadata": {"order_id": {"$exist": true}}
            }}
        },
        "headers": {"stripe-signature": {"$startsWith": "t="}}
    });
    RouteFilter::compile(&spec).expect("the bench filter compiles")
}

fn event(kind: &str) -> Value {
    json!({
        "id": "evt_3PBnK2LkdIwHu7ix0XpQmT9c",
        "object": "event",
        "api_version": "2024-04-10",
        "created": 1714557600,
        "type": kind,
        "livemode": false,
        "pending_webhooks": 2,
        "request": {"id": "req_Qd8zR1x2yT3w4v", "idempotency_key": "5f9c1b2e-8a7d-4c3b-9e6f-1a2b3c4d5e6f"},
        "data": {"object": {
            "id": "ch_3PBnK2LkdIwHu7ix0yZ1a2b3",
            "object": "charge",
            "amount": 2500,
            "amount_captured": 2500,
            "amount_refunded": 0,
            "currency": "eur",
            "customer": "cus_Q1w2e3r4t5y6u7",
            "description": "Order 10482 for 3 items",
            "paid": true,
            "captured": true,
            "status": "succeeded",
            "receipt_email": "buyer@example.com",
            "payment_method": "pm_1PBnK1LkdIwHu7ixAbCdEfGh",
            "payment_method_details": {"type": "card", "card": {
                "brand": "visa", "last4": "4242", "exp_month": 12, "exp_year": 2027,
                "country": "DE", "funding": "credit", "network": "visa"
            }},
            "billing_details": {"name": "Ada Lovelace", "email": "buyer@example.com", "address": {
                "line1": "12 Example Street", "city": "Berlin", "postal_code": "10115", "country": "DE"
            }},
            "metadata": {"order_id": "10482", "channel": "web", "campaign": "spring-sale"},
            "outcome": {"network_status": "approved_by_network", "risk_level": "normal", "risk_score": 21, "type": "authorized"}
        }}
    })
}

/// A filter of four `$in` lists of 1,000 numbers (the most items a list
/// may hold) none of which is in a body of 200,000 numbers: 800 million
/// comparisons unbounded.
fn costliest() -> (RouteFilter, Value) {
    let lists: Vec<Value> = (0..4)
        .map(|n| {
            let list: Vec<u64> = (1 + n * 1_000..=(n + 1) * 1_000).collect();
            json!({ "$in": list })
        })
        .collect();
    let spec = json!({ "body": { "n": { "$or": lists } } });
    let filter = RouteFilter::compile(&spec).expect("compiles");
    let body = json!({ "n": vec![0; 200_000] });
    (filter, body)
}

fn input(body: &Value) -> FilterInput<'_> {
    FilterInput {
        body,
        headers: HEADERS,
        path: "/hooks/acme",
        query: &[],
    }
}

/// Panics if evaluating `filter` against `body` allocates at all.
fn assert_allocation_free(filter: &RouteFilter, body: &Value, expected: bool) {
    let input = input(body);
    let region = Region::new(GLOBAL);
    for _ in 0..1_000 {
        let steps = Steps::new(MAX_FILTER_STEPS);
        assert_eq!(
            black_box(filter).matches(black_box(&input), &steps),
            Ok(expected)
        );
    }
    let stats = region.change();
    assert_eq!(
        (
            stats.allocations,
            stats.reallocations,
            stats.bytes_allocated
        ),
        (0, 0, 0),
        "route filter evaluation allocated"
    );
}

/// A route filter on a Stripe-like event of about 1 KiB: the type among a
/// list, an amount at least a bound, a nested metadata key present and a
/// header prefix; for an event that passes and one that fails on its type.
/// Before measuring, it checks with a counting allocator that evaluation
/// allocates nothing (`cargo test` runs that check as well). Then the
/// costliest evaluation hookd lets a filter make: four `$in` lists of
/// 1,000 numbers against a body of 200,000 numbers, stopped by its step budget,
/// once with the steps a filter gets on the HTTP worker and once with
/// those it gets on a filter thread: what one request's filter can cost.
fn main() {
    let filter = filter();
    let passing = event("charge.succeeded");
    let failing = event("customer.updated");
    let size = serde_json::to_vec(&passing).expect("serializes").len();
    assert!(
        (900..1_300).contains(&size),
        "the event is about 1 KiB, not {size} bytes"
    );
    assert_allocation_free(&filter, &passing, true);
    assert_allocation_free(&filter, &failing, false);

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("route_filter");
    for (name, body) in [("passes", &passing), ("fails_on_type", &failing)] {
        let input = input(body);
        group.bench_function(name, |b| {
            b.iter(|| {
                let steps = Steps::new(MAX_FILTER_STEPS);
                black_box(&filter).matches(black_box(&input), &steps)
            })
        });
    }
    let (costly, body) = costliest();
    let input = self::input(&body);
    for (name, budget) in [
        ("out_of_inline_steps", INLINE_STEPS),
        ("out_of_steps", MAX_FILTER_STEPS),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| {
                let steps = Steps::new(budget);
                let verdict = black_box(&costly).matches(black_box(&input), &steps);
                assert_eq!(verdict, Err(OverBudget));
            })
        });
    }
    group.finish();
    criterion.final_summary();
}
