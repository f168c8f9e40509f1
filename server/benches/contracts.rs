//! The contract check at ingest on a typical 1 KiB `order.paid` payload.

use std::{hint::black_box, sync::Arc};

use criterion::{criterion_group, criterion_main, Criterion};
use hookd_server::testing::{Contract, ContractSource, ContractSpec, Policy, TenantContracts};
use serde_json::{json, Value};

fn schema() -> Value {
    json!({
        "type": "object",
        "required": ["event_id", "type", "version", "created_at", "data"],
        "properties": {
            "event_id": {"type": "string", "minLength": 1},
            "type": {"const": "order.paid"},
            "version": {"type": "string"},
            "created_at": {"type": "string", "format": "date-time"},
            "data": {
                "type": "object",
                "required": ["order_id", "status", "amount", "currency", "customer", "items"],
                "properties": {
                    "order_id": {"type": "string", "pattern": "^ord_[0-9a-z]+$"},
                    "status": {"enum": ["paid", "refunded", "cancelled"]},
                    "amount": {"type": "integer", "minimum": 0},
                    "currency": {"type": "string", "minLength": 3, "maxLength": 3},
                    "customer": {
                        "type": "object",
                        "required": ["id", "email"],
                        "properties": {
                            "id": {"type": "string"},
                            "email": {"type": "string", "format": "email"}
                        }
                    },
                    "items": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "required": ["sku", "quantity", "unit_price"],
                            "properties": {
                                "sku": {"type": "string"},
                                "quantity": {"type": "integer", "minimum": 1},
                                "unit_price": {"type": "integer", "minimum": 0}
                            }
                        }
                    }
                }
            }
        }
    })
}

/// About 1 KiB of JSON: an order with a customer, two addresses and seven items.
fn payload() -> Value {
    let items: Vec<Value> = (1..=7)
        .map(|i| json!({"sku": format!("SKU-{i:05}"), "quantity": i, "unit_price": 1250 * i, "name": format!("Item number {i}")}))
        .collect();
    json!({
        "event_id": "evt_01JDQ8Z3K4M5N6P7Q8R9S0T1U2",
        "type": "order.paid",
        "version": "2",
        "created_at": "2026-11-30T10:00:00Z",
        "data": {
            "order_id": "ord_8f3k2m9x",
            "status": "paid",
            "amount": 18750,
            "currency": "EUR",
            "customer": {"id": "cus_42", "email": "jane.doe@example.com", "name": "Jane Doe"},
            "shipping": {"line1": "1 Example Street", "city": "Berlin", "postal_code": "10115", "country": "DE"},
            "billing": {"line1": "1 Example Street", "city": "Berlin", "postal_code": "10115", "country": "DE"},
            "items": items,
            "metadata": {"channel": "web", "campaign": "winter-sale"}
        }
    })
}

fn contracts() -> TenantContracts {
    let policy = Policy::default();
    let spec = ContractSpec {
        event_type: "order.paid".into(),
        version: None,
        schema: schema().to_string(),
        example: payload().to_string(),
    };
    let contract = Contract::compile(spec, &policy, ContractSource::Config).expect("compiles");
    TenantContracts::new(policy, [Arc::new(contract)])
}

/// The contract check at ingest on a typical 1 KiB `order.paid` payload: the
/// whole of `TenantContracts::check` as the tenant actor calls it (parse the
/// body, read type and version, find the compiled schema, validate with
/// formats asserted), for a payload that passes and one with three
/// violations; and what a tenant without contracts pays (the type is read
/// for the metrics). Target: at most 20 µs per passing payload.
fn bench(c: &mut Criterion) {
    let set = contracts();
    let good = payload().to_string().into_bytes();
    assert!((900..=1300).contains(&good.len()), "{} bytes", good.len());
    assert!(set.check(&good).result.is_ok());
    let mut broken = payload();
    broken["data"]["status"] = json!("lost");
    broken["data"]["customer"]["email"] = json!("nobody");
    broken["data"]["items"][2]["quantity"] = json!(0);
    let broken = broken.to_string().into_bytes();
    assert!(set.check(&broken).result.is_err());

    let mut group = c.benchmark_group("contract_check_1kib");
    group.bench_function("passes", |b| b.iter(|| set.check(black_box(&good))));
    group.bench_function("three_violations", |b| {
        b.iter(|| set.check(black_box(&broken)))
    });
    let none = TenantContracts::default();
    group.bench_function("no_contracts_type_only", |b| {
        b.iter(|| none.check(black_box(&good)))
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
