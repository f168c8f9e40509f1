//! The replay cache every tenant's gate shares, each gate in a scope of its
//! own, and the replay keys of one verified delivery.

use std::{
    sync::atomic::{AtomicU64, Ordering},
    time::{Duration, Instant},
};

use hookd_sdk::signature::{Scheme, Verified};
use moka::{sync::Cache, Equivalent, Expiry};
use sha2::{Digest, Sha256};

use crate::ids::{DeliveryId, EventId};

/// Recently accepted deliveries of every running tenant: scoped replay key
/// -> (event id, first delivery id). Keys are hashed with foldhash, seeded
/// per process: every key was signed with its tenant's secret before it is
/// looked up or stored, so SipHash's protection against chosen keys buys
/// nothing here and costs a hash per look-up and per insert.
///
/// One cache for the process, not one per tenant: a moka cache allocates
/// and writes its read and write logs (two channels of 384 slots) when it
/// is built, about 40 KiB, so 10,000 tenants started held about 410 MB more and
/// each tenant's first deliveries paid for mapping that memory; and a cache
/// that sees less than a delivery every 300 ms runs its maintenance on
/// nearly every one (docs/benchmarks.md).
pub type ReplayCache = Cache<ScopedKey, (EventId, DeliveryId), foldhash::fast::RandomState>;

/// The replay cache of a process: at most `keys` keys, each kept for its
/// scope's time ([`Scope::keep`]). Full, it drops the least recently used
/// key for every new one: moka's default policy (TinyLFU) admits a new key
/// only if it looks more often used than the one it would evict, and a new
/// delivery's key never does, so a full cache kept old deliveries and turned
/// the newest away.
pub fn replay_cache(keys: u64) -> ReplayCache {
    Cache::builder()
        .max_capacity(keys)
        .expire_after(KeptForItsScope)
        .eviction_policy(moka::policy::EvictionPolicy::lru())
        .build_with_hasher(foldhash::fast::RandomState::default())
}

/// Where one gate's keys live in the shared cache, and for how long each
/// is kept: twice the tenant's timestamp tolerance (at least a minute),
/// past which a resend is rejected as stale anyway. Every scope is new: a
/// gate started, restarted or given another tolerance finds none of the
/// keys stored before (the durable idempotency log still catches their
/// resends), and no tenant ever reads another's.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Scope {
    number: u64,
    keep_secs: u64,
}

impl Scope {
    /// A scope no key was stored in yet, for a tenant with `tolerance_secs`.
    pub fn new(tolerance_secs: u64) -> Scope {
        static NEXT: AtomicU64 = AtomicU64::new(0);
        Scope {
            number: NEXT.fetch_add(1, Ordering::Relaxed),
            keep_secs: (tolerance_secs * 2).max(60),
        }
    }

    /// How long a key stored in this scope is kept.
    pub fn keep(self) -> Duration {
        Duration::from_secs(self.keep_secs)
    }

    /// `key` in this scope, as the cache stores it.
    pub fn key(self, key: Vec<u8>) -> ScopedKey {
        ScopedKey { scope: self, key }
    }

    /// `key` in this scope, to look up without copying it.
    pub fn lookup(self, key: &[u8]) -> Lookup<'_> {
        Lookup { scope: self, key }
    }
}

/// A replay key in the scope of the gate that stored it.
#[derive(Debug, PartialEq, Eq, Hash)]
pub struct ScopedKey {
    scope: Scope,
    key: Vec<u8>,
}

/// A replay key borrowed for a look-up: it hashes as the [`ScopedKey`] it
/// stands for (the same fields in the same order; a `Vec<u8>` hashes as its
/// slice).
#[derive(Hash)]
pub struct Lookup<'a> {
    scope: Scope,
    key: &'a [u8],
}

impl Equivalent<ScopedKey> for Lookup<'_> {
    fn equivalent(&self, stored: &ScopedKey) -> bool {
        self.scope == stored.scope && self.key == stored.key.as_slice()
    }
}

/// Each key is kept its scope's time from when it was stored.
struct KeptForItsScope;

impl Expiry<ScopedKey, (EventId, DeliveryId)> for KeptForItsScope {
    fn expire_after_create(
        &self,
        key: &ScopedKey,
        _value: &(EventId, DeliveryId),
        _created_at: Instant,
    ) -> Option<Duration> {
        Some(key.scope.keep())
    }
}

/// A gate's view of the shared cache: the cache and the gate's scope in it.
///
/// The replay cache every tenant's gate shares, each gate in a scope of its
/// own, and the replay keys of one verified delivery: its signed event id,
/// and a digest of what the signature covers for schemes that sign no
/// timestamp.
#[derive(Clone)]
pub struct Replay {
    cache: ReplayCache,
    scope: Scope,
}

impl Replay {
    /// `scope` in `cache`.
    pub fn new(cache: ReplayCache, scope: Scope) -> Replay {
        Replay { cache, scope }
    }

    /// The first delivery of the event one of `keys` names, if this scope
    /// holds it.
    pub(super) fn first(&self, keys: &ReplayKeys) -> Option<(EventId, DeliveryId)> {
        keys.all()
            .find_map(|key| self.cache.get(&self.scope.lookup(key)))
    }

    /// Remembers that `keys` name event `event_id`, first delivered as
    /// `delivery_id`.
    pub(super) fn remember(&self, keys: ReplayKeys, event_id: &EventId, delivery_id: &DeliveryId) {
        for key in keys.into_all() {
            let first = (event_id.clone(), delivery_id.clone());
            self.cache.insert(self.scope.key(key), first);
        }
    }
}

/// The replay-cache keys of one verified delivery: its signed event-id
/// header, and a digest of what the signature covers. Schemes with a signed
/// timestamp need only one (their tolerance bounds replays); schemes without
/// one (GitHub, Shopify) sign neither the timestamp nor the id header, so a
/// captured delivery resent under a fresh id header must still be caught by
/// the content digest, in the cache and in the durable idempotency log.
pub(super) struct ReplayKeys {
    id: Option<Vec<u8>>,
    pub(super) content: Option<Vec<u8>>,
}

impl ReplayKeys {
    pub(super) fn of(scheme: Scheme, verified: &Verified, body: &[u8]) -> ReplayKeys {
        let content = || [b"sig:".as_slice(), &content_digest(scheme, verified, body)].concat();
        let id = verified
            .header_event_id
            .as_ref()
            .map(|id| [b"id:".as_slice(), id.as_bytes()].concat());
        let content = match (&id, bounded_by_id(scheme)) {
            (Some(_), true) => None,
            _ => Some(content()),
        };
        ReplayKeys { id, content }
    }

    pub(super) fn all(&self) -> impl Iterator<Item = &Vec<u8>> {
        self.id.iter().chain(&self.content)
    }

    pub(super) fn into_all(self) -> impl Iterator<Item = Vec<u8>> {
        self.id.into_iter().chain(self.content)
    }
}

/// Whether `scheme`'s event id alone tells a resend from a new event: it is
/// signed, and a signed timestamp bounds how long a captured delivery
/// verifies. Otherwise the signed content keys the event too.
pub(super) fn bounded_by_id(scheme: Scheme) -> bool {
    scheme.has_timestamp() && scheme.signs_event_id()
}

/// SHA-256 over the scheme, the key that matched and the digest of the
/// signed bytes: the same for every resend of one signed delivery, whatever
/// unsigned headers come with it.
pub(super) fn content_digest(scheme: Scheme, verified: &Verified, body: &[u8]) -> [u8; 32] {
    let mut digest = Sha256::new();
    for part in [scheme.as_str().as_bytes(), verified.kid.as_bytes()] {
        digest.update(part);
        digest.update([0]);
    }
    digest.update(verified.signature_digest(body));
    digest.finalize().into()
}

/// The idempotency-log key of a content digest: it starts with a NUL byte,
/// which no valid event id contains, so the two key spaces never meet.
pub(super) fn content_idem_key(replay_key: &[u8]) -> Vec<u8> {
    [b"\0".as_slice(), replay_key].concat()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn first(n: u32) -> (EventId, DeliveryId) {
        (EventId::new(format!("evt_{n}")), DeliveryId::generate())
    }

    #[test]
    fn a_key_is_found_only_in_the_scope_that_stored_it() {
        let cache = replay_cache(100);
        let (acme, other) = (Scope::new(300), Scope::new(300));
        let stored = first(1);
        cache.insert(acme.key(b"id:evt_1".to_vec()), stored.clone());
        assert_eq!(cache.get(&acme.lookup(b"id:evt_1")), Some(stored));
        assert_eq!(cache.get(&other.lookup(b"id:evt_1")), None);
        assert_eq!(cache.get(&acme.lookup(b"id:evt_2")), None);
    }

    #[test]
    fn a_gate_finds_what_it_remembered_under_any_of_the_keys() {
        let cache = replay_cache(100);
        let replay = Replay::new(cache.clone(), Scope::new(300));
        let keys = || ReplayKeys {
            id: Some(b"id:evt_1".to_vec()),
            content: Some(b"sig:digest".to_vec()),
        };
        assert_eq!(replay.first(&keys()), None);
        let (event_id, delivery_id) = first(1);
        replay.remember(keys(), &event_id, &delivery_id);
        let by_content = ReplayKeys {
            id: Some(b"id:evt_resent_under_a_new_id".to_vec()),
            content: Some(b"sig:digest".to_vec()),
        };
        let found = Some((event_id, delivery_id));
        assert_eq!(replay.first(&keys()), found);
        assert_eq!(replay.first(&by_content), found);
        let restarted = Replay::new(cache, Scope::new(300));
        assert_eq!(restarted.first(&keys()), None, "a new scope starts empty");
    }

    #[test]
    fn a_key_is_kept_twice_its_tenants_tolerance_and_at_least_a_minute() {
        let kept = |tolerance_secs| {
            let key = Scope::new(tolerance_secs).key(b"id:evt".to_vec());
            KeptForItsScope.expire_after_create(&key, &first(0), Instant::now())
        };
        assert_eq!(kept(300), Some(Duration::from_secs(600)));
        assert_eq!(kept(10), Some(Duration::from_secs(60)));
    }
}
