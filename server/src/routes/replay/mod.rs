//! A replay of stored events into a route (backfill): what an operator
//! ordered ([`ReplayOrder`]) and how far it got ([`ReplayProgress`]), both
//! catalog rows keyed `tenant/replay id`, and the walk over the tenant's
//! stored events in accept order ([`walk`]).
//!
//! The order is followed by every replica (`Table::Replays`); the
//! progress is written by the replica that runs the replay after each
//! step (`Table::ReplayProgress`, followed by none). A replay makes each
//! delivery through the route's own idempotency log, keyed by the event
//! id, in the same write as the delivery: a step done again after a crash
//! or a takeover, before its progress was stored, finds the deliveries it
//! made and makes none twice.

pub mod walk;

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    ids::DeliveryId,
    store::api::{CatalogRows, RowChange, Table},
};

/// What an operator asked of a replay last.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Control {
    /// Run it.
    Run,
    /// Stop it where it is.
    Pause,
    /// End it for good.
    Cancel,
}

/// A replay as ordered: its route, window, filter and rate.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReplayOrder {
    /// `rpl_` and a ULID.
    pub id: String,
    /// The route it replays into (never `default`).
    pub route: String,
    /// The events accepted at or after this time (Unix ms).
    pub since_ms: i64,
    /// And before this time.
    pub until_ms: i64,
    /// Only events of this type.
    pub event_type: Option<String>,
    /// Only events whose JSON body has `body_value` at this pointer.
    pub body_pointer: Option<String>,
    /// The value wanted at `body_pointer`.
    pub body_value: Option<serde_json::Value>,
    /// Deliveries made a second, at most.
    pub rate_per_sec: u32,
    /// When it was made (Unix ms).
    pub created_at_ms: i64,
    /// An id made when it was made: every delivery it makes has a higher
    /// one, every delivery an earlier replay of the route made a lower
    /// one (a replay is made only once the one before it finished).
    pub made_after: DeliveryId,
    /// What an operator asked last.
    pub control: Control,
    /// When that was (Unix ms).
    pub changed_at_ms: i64,
}

/// What became of the events a replay looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Counts {
    /// Events of the window looked at.
    pub scanned: u64,
    /// Deliveries made on the route.
    pub replayed: u64,
    /// The body field did not match.
    pub not_matched: u64,
    /// The route's filter did not pass it.
    pub filtered: u64,
    /// The route had a delivery of it already.
    pub already_on_route: u64,
    /// Its body is no longer stored.
    pub gone: u64,
}

/// How far a replay got.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct ReplayProgress {
    /// The last of the tenant's deliveries (on `default`) looked at; the
    /// walk goes on after it.
    pub cursor: Option<DeliveryId>,
    /// What became of the events looked at.
    pub counts: Counts,
    /// The acceptance time of the last event looked at.
    pub position_ms: Option<i64>,
    /// When the walk reached the end of the window (Unix ms).
    pub finished_at_ms: Option<i64>,
    /// Why the last step failed, if it did.
    pub last_error: Option<String>,
    /// It stopped on an error it cannot get past (the route is gone);
    /// a resume tries again.
    pub failed: bool,
    /// The deliveries the step under way makes, as (the event's delivery
    /// on `default`, the new delivery's id), stored durably before any of
    /// them is written: a step done again after a crash makes those
    /// missing under the same ids, so they queue in accept order among
    /// those that were written.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub planned: Vec<(DeliveryId, DeliveryId)>,
}

impl ReplayOrder {
    /// A fresh replay id.
    pub fn new_id() -> String {
        format!("rpl_{}", ulid::Ulid::new())
    }

    /// Whether it still runs or may run again: neither cancelled nor
    /// done (`progress`).
    pub fn is_open(&self, progress: &ReplayProgress) -> bool {
        self.control != Control::Cancel && progress.finished_at_ms.is_none()
    }

    /// The write that stores this order for `tenant`.
    pub fn put(&self, tenant: &str) -> RowChange {
        let value = serde_json::to_vec(self).expect("a replay order serializes");
        RowChange::Put(Table::Replays, key(tenant, &self.id), value)
    }

    /// The stored order `id` of `tenant`.
    pub fn load(rows: &dyn CatalogRows, tenant: &str, id: &str) -> Result<Option<ReplayOrder>> {
        rows.get(Table::Replays, &key(tenant, id))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Every stored order of `tenant` (every tenant's: `None`), as
    /// `(tenant, order)`, oldest first.
    pub fn all(rows: &dyn CatalogRows, tenant: Option<&str>) -> Result<Vec<(String, ReplayOrder)>> {
        let prefix = tenant.map(|t| format!("{t}/")).unwrap_or_default();
        let mut orders = Vec::new();
        for (key, bytes) in rows.scan(Table::Replays, &prefix)? {
            let Some((tenant, _)) = key.split_once('/') else {
                return Err(Error::Corrupt(format!("replay key {key:?}")));
            };
            orders.push((tenant.to_owned(), decode(&bytes)?));
        }
        Ok(orders)
    }

    /// The writes that forget every replay of `tenant` (deleted), or of
    /// its route `route` only.
    pub fn forget(
        rows: &dyn CatalogRows,
        tenant: &str,
        route: Option<&str>,
    ) -> Result<Vec<RowChange>> {
        let mut changes = Vec::new();
        for (_, order) in ReplayOrder::all(rows, Some(tenant))? {
            if route.is_none_or(|r| r == order.route) {
                let key = key(tenant, &order.id);
                changes.push(RowChange::Remove(Table::ReplayProgress, key.clone()));
                changes.push(RowChange::Remove(Table::Replays, key));
            }
        }
        Ok(changes)
    }
}

impl ReplayProgress {
    /// The write that stores this progress of replay `id` of `tenant`.
    pub fn put(&self, tenant: &str, id: &str) -> RowChange {
        let value = serde_json::to_vec(self).expect("a replay's progress serializes");
        RowChange::Put(Table::ReplayProgress, key(tenant, id), value)
    }

    /// The stored progress of replay `id` of `tenant` (none yet: nothing
    /// looked at).
    pub fn load(rows: &dyn CatalogRows, tenant: &str, id: &str) -> Result<ReplayProgress> {
        rows.get(Table::ReplayProgress, &key(tenant, id))?
            .map(|bytes| decode(&bytes))
            .transpose()
            .map(Option::unwrap_or_default)
    }
}

fn key(tenant: &str, id: &str) -> String {
    format!("{tenant}/{id}")
}

fn decode<T: serde::de::DeserializeOwned>(bytes: &[u8]) -> Result<T> {
    serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("route replay: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn order(id: &str, route: &str) -> ReplayOrder {
        ReplayOrder {
            id: id.into(),
            route: route.into(),
            since_ms: 1,
            until_ms: 2,
            event_type: None,
            body_pointer: None,
            body_value: None,
            rate_per_sec: 100,
            created_at_ms: 3,
            made_after: DeliveryId::due_at(3),
            control: Control::Run,
            changed_at_ms: 3,
        }
    }

    #[test]
    fn orders_and_progress_are_stored_by_tenant_and_forgotten_by_route() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _committer) = crate::store::SledStore::open(dir.path(), 16, false).unwrap();
        let rows = crate::store::api::Storage::catalog_rows(&store).unwrap();
        let (crm, erp) = (order("rpl_1", "crm"), order("rpl_2", "erp"));
        let progress = ReplayProgress {
            cursor: Some(DeliveryId::new("dlv_1")),
            ..Default::default()
        };
        rows.apply(&[
            crm.put("acme"),
            erp.put("acme"),
            order("rpl_3", "crm").put("beta"),
            progress.put("acme", "rpl_1"),
        ])
        .unwrap();
        assert_eq!(
            ReplayOrder::load(&*rows, "acme", "rpl_1").unwrap(),
            Some(crm.clone())
        );
        assert_eq!(
            ReplayProgress::load(&*rows, "acme", "rpl_1").unwrap(),
            progress
        );
        assert_eq!(
            ReplayProgress::load(&*rows, "acme", "rpl_2").unwrap(),
            ReplayProgress::default()
        );
        assert_eq!(ReplayOrder::all(&*rows, Some("acme")).unwrap().len(), 2);
        assert_eq!(ReplayOrder::all(&*rows, None).unwrap().len(), 3);
        rows.apply(&ReplayOrder::forget(&*rows, "acme", Some("crm")).unwrap())
            .unwrap();
        let left = ReplayOrder::all(&*rows, Some("acme")).unwrap();
        assert_eq!(left, vec![("acme".to_owned(), erp)]);
        assert_eq!(
            ReplayProgress::load(&*rows, "acme", "rpl_1").unwrap(),
            ReplayProgress::default()
        );
    }
}
