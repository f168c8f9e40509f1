//! The replay cache: a hit, a miss and the insert that follows an accepted
//! delivery, on a cache full at the default capacity.

use criterion::{criterion_group, criterion_main, Criterion};
use hookd_server::{
    config::LimitsConfig,
    ids::{DeliveryId, EventId},
    testing::{replay_cache, ReplayCache, ReplayScope},
};

/// The default `[limits] replay_cache_keys`.
const CAPACITY: u64 = LimitsConfig::DEFAULT_REPLAY_CACHE_KEYS;
/// The default `tolerance_secs`; entries are kept twice as long.
const TOLERANCE_SECS: u64 = 300;

fn key(n: u64) -> Vec<u8> {
    format!("id:msg_bench_{n:012}").into_bytes()
}

fn value(n: u64) -> (EventId, DeliveryId) {
    (
        EventId::new(format!("msg_bench_{n:012}")),
        DeliveryId::generate(),
    )
}

fn full_cache(scope: ReplayScope) -> ReplayCache {
    let cache = replay_cache(CAPACITY);
    for n in 0..CAPACITY {
        cache.insert(scope.key(key(n)), value(n));
    }
    cache.run_pending_tasks();
    cache
}

/// A hit (a duplicate answered without touching storage), a miss (every
/// new delivery looks first) and the insert that follows an accepted
/// delivery.
///
/// The cache is the one every tenant's gate shares (`tenant::replay_cache`):
/// keys `id:<event id>` in one tenant's scope, values (event id, delivery
/// id), `max_capacity` = the default `[limits] replay_cache_keys` (500,000)
/// and each key kept twice the default tolerance (600 s).
fn replay(c: &mut Criterion) {
    let scope = ReplayScope::new(TOLERANCE_SECS);
    let cache = full_cache(scope);
    let present: Vec<Vec<u8>> = (0..CAPACITY).step_by(97).map(key).collect();
    assert!(
        present.iter().all(|k| cache.contains_key(&scope.lookup(k))),
        "hits must hit"
    );
    let absent: Vec<Vec<u8>> = (0..1024).map(|n| key(CAPACITY * 10 + n)).collect();
    assert!(
        absent.iter().all(|k| !cache.contains_key(&scope.lookup(k))),
        "misses must miss"
    );

    let mut group = c.benchmark_group("replay_cache");
    let mut i = 0;
    group.bench_function("hit", |b| {
        b.iter(|| {
            i = (i + 1) % present.len();
            cache.get(&scope.lookup(&present[i])).expect("a hit")
        });
    });
    let mut i = 0;
    group.bench_function("miss", |b| {
        b.iter(|| {
            i = (i + 1) % absent.len();
            assert!(cache.get(&scope.lookup(&absent[i])).is_none());
        });
    });
    let mut n = CAPACITY * 100;
    group.bench_function("insert_new", |b| {
        b.iter(|| {
            n += 1;
            cache.insert(scope.key(key(n)), value(n));
        });
    });
    group.finish();
}

criterion_group!(benches, replay);
criterion_main!(benches);
