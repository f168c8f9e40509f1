//! An operator's hold on a route: paused, the route keeps accepting and
//! storing and sends nothing; resumed, it drains at a ramp rather than all
//! at once.
//!
//! The hold is a catalog row (`Table::Holds`, keyed `tenant/route`), so it
//! outlives a restart and every replica sharing the store follows it; the
//! running route keeps it in a [`Hold`] its dispatcher reads before each
//! pass.

use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    store::api::{CatalogRows, RowChange, Table},
};

/// A route paused or resumed, as stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HoldRecord {
    /// Paused: nothing is sent.
    pub paused: bool,
    /// When it was paused or resumed (Unix ms); of two records of one
    /// route, the later one holds.
    pub changed_at_ms: i64,
    /// After a resume, how long the drain takes to reach the route's full
    /// concurrency (ms; 0: at once).
    pub ramp_ms: i64,
}

impl HoldRecord {
    /// The row key of `route` of `tenant`.
    pub fn key(tenant: &str, route: &str) -> String {
        format!("{tenant}/{route}")
    }

    /// The write that stores this record for `route` of `tenant`.
    pub fn put(&self, tenant: &str, route: &str) -> RowChange {
        let value = serde_json::to_vec(self).expect("a hold serializes");
        RowChange::Put(Table::Holds, HoldRecord::key(tenant, route), value)
    }

    /// The stored hold of `route` of `tenant`, if it was ever paused.
    pub fn load(rows: &dyn CatalogRows, tenant: &str, route: &str) -> Result<Option<HoldRecord>> {
        rows.get(Table::Holds, &HoldRecord::key(tenant, route))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Every stored hold, as `(tenant, route, record)`.
    pub fn all(rows: &dyn CatalogRows) -> Result<Vec<(String, String, HoldRecord)>> {
        let mut holds = Vec::new();
        for (key, bytes) in rows.scan(Table::Holds, "")? {
            let Some((tenant, route)) = key.split_once('/') else {
                return Err(Error::Corrupt(format!("route hold key {key:?}")));
            };
            holds.push((tenant.to_owned(), route.to_owned(), decode(&bytes)?));
        }
        Ok(holds)
    }

    /// The writes that forget every hold of `tenant` (deleted).
    pub fn drop_tenant(rows: &dyn CatalogRows, tenant: &str) -> Result<Vec<RowChange>> {
        Ok(rows
            .scan(Table::Holds, &format!("{tenant}/"))?
            .into_iter()
            .map(|(key, _)| RowChange::Remove(Table::Holds, key))
            .collect())
    }

    /// When the ramp after a resume ends (Unix ms); `None` while paused.
    pub fn ramp_ends_ms(&self) -> Option<i64> {
        (!self.paused).then_some(self.changed_at_ms.saturating_add(self.ramp_ms))
    }
}

fn decode(bytes: &[u8]) -> Result<HoldRecord> {
    serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("route hold: {e}")))
}

/// What a hold lets a route's dispatcher start now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Allowed {
    /// Nothing: the route is paused, or its hold is not read yet.
    Nothing,
    /// At most this many attempts in flight.
    UpTo(usize),
}

/// A running route's hold, as its dispatcher reads it.
#[derive(Debug, Default)]
pub struct Hold {
    state: Mutex<HoldState>,
}

#[derive(Debug, Default)]
struct HoldState {
    /// Whether the stored hold was read since the route started here.
    known: bool,
    record: Option<HoldRecord>,
}

impl Hold {
    /// Whether the stored hold was read: until then nothing is sent.
    pub fn is_known(&self) -> bool {
        self.lock().known
    }

    /// Takes `record`, as stored when it was read, unless a later one is
    /// in force already.
    pub fn apply(&self, record: Option<HoldRecord>) {
        let mut state = self.lock();
        state.known = true;
        let later = match (&state.record, &record) {
            (Some(now), Some(new)) => new.changed_at_ms >= now.changed_at_ms,
            (_, new) => new.is_some(),
        };
        if later {
            state.record = record;
        }
    }

    /// The hold in force, if the route was ever paused.
    pub fn record(&self) -> Option<HoldRecord> {
        self.lock().record
    }

    /// Whether the route is paused now.
    pub fn is_paused(&self) -> bool {
        self.lock().record.is_some_and(|r| r.paused)
    }

    /// How many attempts may be in flight at `now_ms` when the route's own
    /// limit is `limit`: none while paused (or not yet known); during the
    /// ramp after a resume, the share of `limit` the ramp has reached (at
    /// least one); after it, `limit`.
    pub fn allowed(&self, now_ms: i64, limit: usize) -> Allowed {
        let state = self.lock();
        if !state.known {
            return Allowed::Nothing;
        }
        match state.record {
            None => Allowed::UpTo(limit),
            Some(record) if record.paused => Allowed::Nothing,
            Some(record) => Allowed::UpTo(ramped(&record, now_ms, limit)),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HoldState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The share of `limit` a resumed route's ramp has reached at `now_ms`:
/// rising in a straight line from one to `limit` over the ramp.
fn ramped(record: &HoldRecord, now_ms: i64, limit: usize) -> usize {
    let elapsed = now_ms.saturating_sub(record.changed_at_ms).max(0);
    if record.ramp_ms <= 0 || elapsed >= record.ramp_ms {
        return limit;
    }
    let share = (limit as u128 * elapsed as u128).div_ceil(record.ramp_ms as u128);
    (share as usize).clamp(1, limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(paused: bool, at: i64, ramp: i64) -> Option<HoldRecord> {
        Some(HoldRecord {
            paused,
            changed_at_ms: at,
            ramp_ms: ramp,
        })
    }

    #[test]
    fn nothing_is_sent_before_the_stored_hold_is_read() {
        let hold = Hold::default();
        assert_eq!(hold.allowed(0, 8), Allowed::Nothing);
        hold.apply(None);
        assert_eq!(hold.allowed(0, 8), Allowed::UpTo(8));
    }

    #[test]
    fn a_paused_route_sends_nothing_and_a_resumed_one_ramps_up() {
        let hold = Hold::default();
        hold.apply(record(true, 1_000, 0));
        assert_eq!(hold.allowed(50_000, 8), Allowed::Nothing);
        hold.apply(record(false, 10_000, 8_000));
        assert_eq!(hold.allowed(10_000, 8), Allowed::UpTo(1));
        assert_eq!(hold.allowed(11_000, 8), Allowed::UpTo(1));
        assert_eq!(hold.allowed(12_000, 8), Allowed::UpTo(2));
        assert_eq!(hold.allowed(14_000, 8), Allowed::UpTo(4));
        assert_eq!(hold.allowed(17_999, 8), Allowed::UpTo(8));
        assert_eq!(hold.allowed(18_000, 8), Allowed::UpTo(8));
        // No ramp: all at once.
        hold.apply(record(false, 20_000, 0));
        assert_eq!(hold.allowed(20_000, 8), Allowed::UpTo(8));
    }

    #[test]
    fn an_older_record_read_late_does_not_undo_a_later_one() {
        let hold = Hold::default();
        hold.apply(record(false, 5_000, 0));
        hold.apply(record(true, 4_000, 0));
        assert!(!hold.is_paused());
        hold.apply(record(true, 6_000, 0));
        assert!(hold.is_paused());
    }

    #[test]
    fn stored_holds_are_read_back_by_tenant_and_route() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = crate::store::SledStore::open(dir.path(), 16, false).unwrap();
        let rows = crate::store::api::Storage::catalog_rows(&store).unwrap();
        let paused = HoldRecord {
            paused: true,
            changed_at_ms: 7,
            ramp_ms: 0,
        };
        rows.apply(&[paused.put("acme", "crm"), paused.put("beta", "default")])
            .unwrap();
        assert_eq!(
            HoldRecord::load(&*rows, "acme", "crm").unwrap(),
            Some(paused)
        );
        assert_eq!(HoldRecord::load(&*rows, "acme", "default").unwrap(), None);
        assert_eq!(HoldRecord::all(&*rows).unwrap().len(), 2);
        rows.apply(&HoldRecord::drop_tenant(&*rows, "acme").unwrap())
            .unwrap();
        let left = HoldRecord::all(&*rows).unwrap();
        assert_eq!(left, vec![("beta".into(), "default".into(), paused)]);
    }
}
