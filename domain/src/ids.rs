//! Typed, prefixed identifiers so a tenant id is never mistaken for an event id.

use std::{
    collections::VecDeque,
    fmt,
    sync::{Mutex, PoisonError},
};

macro_rules! string_id {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        #[cfg_attr(
            feature = "serde",
            derive(serde::Serialize, serde::Deserialize),
            serde(transparent)
        )]
        pub struct $name(String);

        impl $name {
            /// Wraps an already validated string.
            pub fn new(value: impl Into<String>) -> Self {
                $name(value.into())
            }

            /// The id as text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

/// A tenant: `[a-z0-9_-]{1,64}`, chosen by the operator; built only through
/// its validating `TryFrom`.
pub use crate::TenantId;

string_id!(
    /// The sender's event id, from a signed header or the body; the idempotency key.
    EventId
);
string_id!(
    /// One accepted delivery of an event: `dlv_<ulid>`, time-sortable.
    DeliveryId
);
string_id!(
    /// One HTTP request: `req_<ulid>`, echoed in `X-Request-Id` and every error body.
    RequestId
);

impl DeliveryId {
    /// A fresh, time-ordered delivery id.
    pub fn generate() -> Self {
        DeliveryId(format!("dlv_{}", ulid::Ulid::new()))
    }

    /// A fresh delivery id made at `at_ms` (the caller's clock), naming no
    /// place in a queue.
    pub fn made_at(at_ms: i64) -> Self {
        let random = ulid::Ulid::new().random() & !SLOT_BIT;
        DeliveryId(format!(
            "dlv_{}",
            ulid::Ulid::from_parts(at_ms.max(0) as u64, random)
        ))
    }

    /// A fresh delivery id that names its own place in a queue: its time is
    /// `due_ms`, and the top 64 bits of its random part are a sequence
    /// number with the high bit set, so the place [`DeliveryId::queue_slot`]
    /// derives from it is never one an engine numbers from a counter. Ids
    /// made for the same millisecond take consecutive numbers, so they sort
    /// (and their places queue) in the order they were made.
    pub fn due_at(due_ms: i64) -> Self {
        let ms = due_ms.max(0) as u64;
        let fresh = ulid::Ulid::new().random();
        let seq = next_seq(ms, fresh);
        DeliveryId::in_slot(ms, seq, (fresh & 0xffff) as u16)
    }

    /// A fresh delivery id that names the same place in a queue as the ids
    /// made just before it: up to [`SHARED_SLOT_IDS`] ids made within
    /// [`SHARED_SLOT_MS`] of the first share its time and sequence number
    /// ([`DeliveryId::due_at`]) and differ in their last 16 bits. Their
    /// place is due no later than `due_ms`. An engine may file the
    /// deliveries that share a place as one queue entry, one insert for
    /// them all when they are written together.
    pub fn sharing(due_ms: i64) -> Self {
        SHARED_SLOT.next(due_ms)
    }

    fn in_slot(ms: u64, seq: u64, low: u16) -> Self {
        let random = (u128::from(seq) << 16) | u128::from(low);
        DeliveryId(format!("dlv_{}", ulid::Ulid::from_parts(ms, random)))
    }

    /// The due time and sequence number an id made by
    /// [`DeliveryId::due_at`] names: its time, then the top 64 bits of its
    /// random part. `None` for an id that is not `dlv_` and a ULID with
    /// that bit set.
    pub fn queue_slot(&self) -> Option<(i64, u64)> {
        let ulid = self.ulid()?;
        let random = ulid.random();
        (random & SLOT_BIT != 0).then(|| (ulid.timestamp_ms() as i64, (random >> 16) as u64))
    }

    /// The lowest id of time `ms` (Unix ms): every id made at `ms` or
    /// later sorts at or above it, every id of an earlier time below, so
    /// a time window is a range of ids. Names no delivery.
    pub fn lowest_at(ms: i64) -> Self {
        DeliveryId(format!(
            "dlv_{}",
            ulid::Ulid::from_parts(ms.max(0) as u64, 0)
        ))
    }

    /// The time of a `dlv_` and ULID id (Unix ms).
    pub fn time_ms(&self) -> Option<i64> {
        Some(self.ulid()?.timestamp_ms() as i64)
    }

    /// The ULID of a `dlv_` id.
    fn ulid(&self) -> Option<ulid::Ulid> {
        DeliveryId::ulid_of(&self.0)
    }

    fn ulid_of(id: &str) -> Option<ulid::Ulid> {
        ulid::Ulid::from_string(id.strip_prefix("dlv_")?).ok()
    }

    /// When delivery `id` came to be (Unix ms): its acceptance, or its
    /// redelivery; `None` for an id that is not `dlv_` and a ULID.
    pub fn made_at_ms(id: &str) -> Option<i64> {
        DeliveryId::ulid_of(id).map(|u| u.timestamp_ms() as i64)
    }
}

/// The high bit of a ULID's 80 random bits.
const SLOT_BIT: u128 = 1 << 79;

/// The last sequence number [`DeliveryId::due_at`] gave in each of the
/// milliseconds it made ids for most recently, the latest last (a thread
/// late for one, or a test's clock of its own, goes on with that
/// millisecond's numbers).
static RECENT_SLOTS: Mutex<VecDeque<(u64, u64)>> = Mutex::new(VecDeque::new());

/// How many milliseconds [`RECENT_SLOTS`] keeps.
const RECENT_MILLISECONDS: usize = 64;

/// The next sequence number of millisecond `ms` (the first one random,
/// from `fresh`).
fn next_seq(ms: u64, fresh: u128) -> u64 {
    let mut recent = RECENT_SLOTS.lock().unwrap_or_else(PoisonError::into_inner);
    let seq = match recent.iter().position(|(at, _)| *at == ms) {
        Some(i) => recent
            .remove(i)
            .map_or(first_seq(fresh), |(_, last)| last + 1),
        None => first_seq(fresh),
    };
    recent.push_back((ms, seq));
    if recent.len() > RECENT_MILLISECONDS {
        recent.pop_front();
    }
    seq
}

/// The place [`DeliveryId::sharing`] gives its ids now: its time, its
/// sequence number and how many ids it gave. Tests keep one of their own
/// to make ids that surely share a place.
#[doc(hidden)]
#[derive(Debug)]
pub struct SharedSlot(Mutex<Option<(u64, u64, u16)>>);

impl SharedSlot {
    /// A place that has given no id yet.
    pub const fn new() -> Self {
        SharedSlot(Mutex::new(None))
    }

    /// The next id [`DeliveryId::sharing`] would give from this place.
    pub fn next(&self, due_ms: i64) -> DeliveryId {
        let ms = due_ms.max(0) as u64;
        let (at, seq, index) = {
            let mut open = self.0.lock().unwrap_or_else(PoisonError::into_inner);
            let (at, seq, index) = match *open {
                Some((at, seq, next))
                    if at <= ms && ms - at < SHARED_SLOT_MS && next < SHARED_SLOT_IDS =>
                {
                    (at, seq, next)
                }
                _ => (ms, next_seq(ms, ulid::Ulid::new().random()), 0),
            };
            *open = Some((at, seq, index + 1));
            (at, seq, index)
        };
        DeliveryId::in_slot(at, seq, index)
    }
}

impl Default for SharedSlot {
    fn default() -> Self {
        SharedSlot::new()
    }
}

static SHARED_SLOT: SharedSlot = SharedSlot::new();

/// Most ids that share one place.
pub const SHARED_SLOT_IDS: u16 = 64;

/// How long after its first id a place is given to more (ms).
pub const SHARED_SLOT_MS: u64 = 8;

/// The first sequence number of a millisecond: random, with the high bit
/// set and room below it for 2^62 more.
fn first_seq(random: u128) -> u64 {
    (1 << 63) | ((random >> 16) as u64 & ((1 << 62) - 1))
}

impl RequestId {
    /// A fresh request id.
    pub fn generate() -> Self {
        RequestId(format!("req_{}", ulid::Ulid::new()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn generated_ids_carry_their_prefix_and_differ() {
        let a = DeliveryId::generate();
        let b = DeliveryId::generate();
        assert!(a.as_str().starts_with("dlv_"));
        assert_ne!(a, b);
        assert!(RequestId::generate().as_str().starts_with("req_"));
    }

    #[test]
    fn ids_due_at_a_time_name_their_slots_in_the_order_they_were_made() {
        // Far past any clock another test reads, so none comes between.
        let (ms, next) = (4_000_000_000_000, 4_000_000_000_001);
        let a = DeliveryId::due_at(ms);
        let b = DeliveryId::due_at(ms);
        let c = DeliveryId::due_at(next);
        let late = DeliveryId::due_at(ms);
        let d = DeliveryId::due_at(next);
        assert!(a.as_str().starts_with("dlv_") && a.as_str().len() == 30);
        assert!(
            a < b && b < late && c < d,
            "{a:?} {b:?} {late:?} {c:?} {d:?}"
        );
        let slots = [&a, &b, &c, &late, &d].map(|id| id.queue_slot().unwrap());
        let dues = slots.map(|(due, _)| due);
        assert_eq!(dues, [ms, ms, next, ms, next]);
        assert_eq!(slots[1].1, slots[0].1 + 1, "consecutive in one millisecond");
        assert_eq!(slots[3].1, slots[1].1 + 1, "and one made late for it");
        assert_eq!(slots[4].1, slots[2].1 + 1, "whatever came between");
        assert!(slots.iter().all(|(_, seq)| *seq >= 1 << 63), "{slots:?}");
        assert_eq!(DeliveryId::new("dlv_1").queue_slot(), None);
        let not_a_delivery = DeliveryId::new("evt_01ARZ3NDEKTSV4RRFFQ69G5FAV");
        assert_eq!(not_a_delivery.queue_slot(), None);
        // An id whose random part has the bit clear names no slot.
        let clear = format!("dlv_{}", ulid::Ulid::from_parts(5, 1));
        assert_eq!(DeliveryId::new(clear).queue_slot(), None);
    }

    #[test]
    fn ids_made_together_share_a_place_until_it_is_full_or_old() {
        // Far past any clock another test reads, so none shares with them.
        let (slot, ms) = (SharedSlot::new(), 4_100_000_000_000);
        let sharing = |ms| slot.next(ms);
        let first = sharing(ms);
        let place = first.queue_slot().unwrap();
        assert_eq!(place.0, ms);
        let mut ids = vec![first];
        ids.extend((1..SHARED_SLOT_IDS).map(|_| sharing(ms + 1)));
        assert!(ids.iter().all(|id| id.queue_slot() == Some(place)));
        assert!(ids.windows(2).all(|w| w[0] < w[1]), "in the order made");
        let full = sharing(ms + 1);
        assert_ne!(
            full.queue_slot(),
            Some(place),
            "a place holds at most {SHARED_SLOT_IDS}"
        );
        assert_eq!(full.queue_slot().unwrap().0, ms + 1);
        let (next, late) = (full.queue_slot(), sharing(ms + 1 + SHARED_SLOT_MS as i64));
        assert_ne!(
            late.queue_slot(),
            next,
            "a place is given out for a few ms only"
        );
        let earlier = sharing(ms);
        assert_eq!(
            earlier.queue_slot().unwrap().0,
            ms,
            "never due later than asked"
        );
    }
}
