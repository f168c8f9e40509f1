//! The replay cache of a tenant and the replay keys of one verified
//! delivery: its signed event id, and a digest of what the signature covers
//! for schemes that sign no timestamp.

use std::time::Duration;

use hookd_sdk::signature::{Scheme, Verified};
use moka::sync::Cache;
use sha2::{Digest, Sha256};

use crate::ids::{DeliveryId, EventId};

/// Recently accepted deliveries: replay key -> (event id, first delivery id).
/// Keys are hashed with foldhash, seeded per process: every key was signed
/// with the tenant's secret before it is looked up or stored, so SipHash's
/// protection against chosen keys buys nothing here and costs a hash per
/// look-up and per insert.
pub type ReplayCache = Cache<Vec<u8>, (EventId, DeliveryId), foldhash::fast::RandomState>;

/// A tenant's replay cache: at most `capacity` keys, each kept twice the
/// tenant's timestamp tolerance (at least a minute), past which a resend is
/// rejected as stale anyway. Full, it drops the least recently used key for
/// every new one: moka's default policy (TinyLFU) admits a new key only if
/// it looks more often used than the one it would evict, and a new
/// delivery's key never does, so a full cache kept old deliveries and turned
/// the newest away.
pub fn replay_cache(capacity: u64, tolerance_secs: u64) -> ReplayCache {
    Cache::builder()
        .max_capacity(capacity)
        .time_to_live(Duration::from_secs((tolerance_secs * 2).max(60)))
        .eviction_policy(moka::policy::EvictionPolicy::lru())
        .build_with_hasher(foldhash::fast::RandomState::default())
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
