//! What the costliest contracts the save-time bounds accept cost at ingest,
//! to compile, and in resident memory.

use std::{hint::black_box, sync::Arc};

use criterion::{criterion_group, criterion_main, Criterion};
use hookd_server::testing::{Contract, ContractSource, ContractSpec, Policy, TenantContracts};
use serde_json::{json, Map, Value};

const MIB: usize = 1024 * 1024;

fn chain(n: usize) -> Value {
    let mut defs = Map::new();
    for i in 0..n {
        let next = json!({"$ref": format!("#/$defs/a{}", i + 1)});
        defs.insert(format!("a{i}"), json!({"anyOf": [next.clone(), next]}));
    }
    defs.insert(format!("a{n}"), json!({"type": "integer"}));
    json!({"$defs": defs, "properties": {"data": {"$ref": "#/$defs/a0"}}})
}

fn wide() -> Value {
    let branches: Vec<Value> = (0..64)
        .map(|i| json!({"type": "string", "minLength": i}))
        .collect();
    json!({"properties": {"data": {"anyOf": [{"type": "integer"}, {"type": "array", "items": {"anyOf": branches}}]}}})
}

/// 32 string properties, each with a pattern near the regex heap limit.
fn patterns() -> Value {
    let properties: Map<String, Value> = (0..32)
        .map(|i| {
            (
                format!("p{i}"),
                json!({"pattern": format!("^([a-z]{{1,{}}}x)+$", 40 + i)}),
            )
        })
        .collect();
    json!({"properties": {"data": {"properties": properties}}})
}

fn contract(event_type: &str, schema: &Value) -> Contract {
    let spec = ContractSpec {
        event_type: event_type.into(),
        version: None,
        schema: schema.to_string(),
        example: json!({"type": event_type, "data": 1}).to_string(),
    };
    Contract::compile(spec, &Policy::default(), ContractSource::Config).expect("within the bounds")
}

fn body(event_type: &str, data: Value) -> Vec<u8> {
    let body = json!({"type": event_type, "data": data})
        .to_string()
        .into_bytes();
    assert!(body.len() >= MIB - 64 * 1024, "{} bytes", body.len());
    body
}

fn rss_kib() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or(0)
}

/// What the costliest contracts the save-time bounds accept cost at
/// ingest, on bodies of about 1 MiB: a chain of 11 `anyOf` links each naming
/// the next twice (the longest accepted) against a failing string, 64
/// `anyOf` branches under an array (stopped by the check budget), and 32
/// patterns near the regex heap limit over 1 MiB of strings; what compiling
/// the costliest accepted contract costs (what a save, and a start, pays per
/// contract); and the resident memory of 100 such contracts. Run with
/// `cargo bench -p hookd-server --bench contract_cost`.
fn bench(c: &mut Criterion) {
    let set = TenantContracts::new(
        Policy::default(),
        [
            Arc::new(contract("chain", &chain(11))),
            Arc::new(contract("wide", &wide())),
            Arc::new(contract("patterns", &patterns())),
        ],
    );
    let failing_string = body("chain", json!("x".repeat(MIB)));
    let long_array = body("wide", json!(vec![0; MIB / 2]));
    let strings: Map<String, Value> = (0..32)
        .map(|i| (format!("p{i}"), json!("abcdefghx".repeat(MIB / 32 / 9))))
        .collect();
    let long_strings = body("patterns", Value::Object(strings));
    for (name, body) in [
        ("chain11_failing_1mib_string", &failing_string),
        ("wide64_1mib_array", &long_array),
        ("patterns32_1mib_of_strings", &long_strings),
    ] {
        eprintln!(
            "{name}: {:?}",
            set.check(body).result.map_err(|e| e.to_string())
        );
    }
    let mut group = c.benchmark_group("contract_cost_1mib");
    group.sample_size(10);
    group.bench_function("chain11_failing_1mib_string", |b| {
        b.iter(|| set.check(black_box(&failing_string)))
    });
    group.bench_function("wide64_1mib_array", |b| {
        b.iter(|| set.check(black_box(&long_array)))
    });
    group.bench_function("patterns32_1mib_of_strings", |b| {
        b.iter(|| set.check(black_box(&long_strings)))
    });
    group.bench_function("compile_patterns32", |b| {
        b.iter(|| contract("patterns", black_box(&patterns())))
    });
    group.bench_function("compile_chain11", |b| {
        b.iter(|| contract("chain", black_box(&chain(11))))
    });
    group.finish();

    let before = rss_kib();
    let kept: Vec<Contract> = (0..100)
        .map(|_| contract("patterns", &patterns()))
        .collect();
    let sets: Vec<_> = kept
        .into_iter()
        .map(|c| TenantContracts::new(Policy::default(), [Arc::new(c)]))
        .collect();
    for set in &sets {
        black_box(set.check(&long_strings));
    }
    eprintln!(
        "RSS: {before} KiB before, {} KiB after compiling and exercising 100 contracts of 32 patterns",
        rss_kib()
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
