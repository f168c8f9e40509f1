//! The fake's routes of deliveries: which routes a tenant has, the
//! deliveries a redelivery or a retry now takes, and what they leave.

use super::FakeBackend;
use crate::{
    error::{Error, Result},
    model::{
        DeliveryStatus, DeliveryView, Matching, WaitingFilter, DEFAULT_ROUTE,
        MAX_REDELIVER_PER_CALL,
    },
};

/// The fake's now, for what it makes due.
const NOW_MS: i64 = 1_700_000_000_000;

impl FakeBackend {
    /// `route` of `tenant_id`, which must be the default one or added.
    pub(super) fn known_route(&self, tenant_id: &str, route: &str) -> Result<()> {
        self.tenant(tenant_id)?;
        let added = self
            .route_names
            .lock()
            .unwrap()
            .iter()
            .any(|(t, r)| t == tenant_id && r == route);
        match route == DEFAULT_ROUTE || added {
            true => Ok(()),
            false => Err(Error::NotFound(format!(
                "tenant {tenant_id} has no route \"{route}\""
            ))),
        }
    }

    /// The ids a redelivery by filter takes, oldest first, at most
    /// [`MAX_REDELIVER_PER_CALL`], and whether more matched. The fake keeps
    /// no event bodies: `event_type` matches every delivery.
    pub(super) fn matching(
        &self,
        tenant_id: &str,
        route: &str,
        m: &Matching,
    ) -> (Vec<String>, bool) {
        let mut found: Vec<(i64, String)> = match m.status {
            DeliveryStatus::Delivered => self
                .deliveries
                .lock()
                .unwrap()
                .iter()
                .filter(|d| d.tenant_id == tenant_id && d.route == route)
                .filter(|d| d.status == m.status && d.redelivered_as.is_none())
                .filter(|d| m.filter.matches(d.received_at_ms, ""))
                .map(|d| (d.received_at_ms, d.delivery_id.clone()))
                .collect(),
            _ => self
                .dead_letters
                .lock()
                .unwrap()
                .iter()
                .filter(|d| d.tenant_id == tenant_id && d.route == route)
                .filter(|d| m.filter.matches(d.dead_at_ms, &d.reason))
                .map(|d| (d.dead_at_ms, d.delivery_id.clone()))
                .collect(),
        };
        found.sort();
        let more = found.len() > MAX_REDELIVER_PER_CALL;
        found.truncate(MAX_REDELIVER_PER_CALL);
        (found.into_iter().map(|(_, id)| id).collect(), more)
    }

    /// `ids`, if every one may be redelivered, as hookd allows: a seeded
    /// delivery of the tenant that is settled and not yet redelivered, or
    /// a seeded dead letter. All or nothing: an unknown id is `NotFound`,
    /// one redelivered or pending `FailedPrecondition`.
    pub(super) fn redeliverable(&self, tenant_id: &str, ids: &[String]) -> Result<Vec<String>> {
        let deliveries = self.deliveries.lock().unwrap();
        let dead = self.dead_letters.lock().unwrap();
        for id in ids {
            let delivery = deliveries
                .iter()
                .find(|d| d.tenant_id == tenant_id && &d.delivery_id == id);
            match delivery {
                Some(d) if d.status.may_be_redelivered() => {}
                Some(d) => {
                    return Err(Error::FailedPrecondition(match &d.redelivered_as {
                        Some(as_id) => format!("delivery {id} was already redelivered as {as_id}"),
                        None => format!("delivery {id} is {}", d.status.as_str()),
                    }))
                }
                None if dead
                    .iter()
                    .any(|d| d.tenant_id == tenant_id && &d.delivery_id == id) => {}
                None => return Err(Error::NotFound(format!("delivery {id}"))),
            }
        }
        Ok(ids.to_vec())
    }

    /// Redelivers `originals`: their dead letters go, their deliveries are
    /// marked redelivered as the new ids (`{id}-again`), which it returns.
    pub(super) fn redelivered(&self, tenant_id: &str, originals: &[String]) -> Vec<String> {
        let again = |id: &str| format!("{id}-again");
        self.dead_letters
            .lock()
            .unwrap()
            .retain(|d| d.tenant_id != tenant_id || !originals.contains(&d.delivery_id));
        for d in self.deliveries.lock().unwrap().iter_mut() {
            if d.tenant_id == tenant_id && originals.contains(&d.delivery_id) {
                d.status = DeliveryStatus::Redelivered;
                d.redelivered_as = Some(again(&d.delivery_id));
            }
        }
        originals.iter().map(|id| again(id)).collect()
    }

    /// Of `ids` (each a seeded delivery of the tenant, on `route` when
    /// given, else `NotFound`), those waiting for a retry as hookd tells
    /// them: pending after at least one attempt, with a next attempt set.
    pub(super) fn waiting_ids(
        &self,
        tenant_id: &str,
        route: Option<&str>,
        (ids, taken): (&[String], fn(&DeliveryView) -> bool),
    ) -> Result<Vec<String>> {
        let deliveries = self.deliveries.lock().unwrap();
        let mut waiting = Vec::new();
        for id in ids {
            let found = deliveries.iter().find(|d| {
                d.tenant_id == tenant_id
                    && &d.delivery_id == id
                    && route.is_none_or(|r| d.route == r)
            });
            match found {
                Some(d) if taken(d) => waiting.push(id.clone()),
                Some(_) => {}
                None => return Err(Error::NotFound(format!("delivery {id}"))),
            }
        }
        Ok(waiting)
    }

    /// The seeded deliveries of the tenant's `route` waiting for a retry,
    /// soonest due first.
    pub(super) fn waiting_on(
        &self,
        tenant_id: &str,
        route: &str,
        (filter, taken): (&WaitingFilter, fn(&DeliveryView) -> bool),
    ) -> Vec<String> {
        // The fake keeps no event types: it filters by the window alone.
        let window = WaitingFilter {
            event_type: None,
            ..filter.clone()
        };
        let deliveries = self.deliveries.lock().unwrap();
        let mut waiting: Vec<_> = deliveries
            .iter()
            .filter(|d| d.tenant_id == tenant_id && d.route == route && taken(d))
            .filter(|d| window.passes(None, d.received_at_ms))
            .collect();
        waiting.sort_by_key(|d| d.next_attempt_at_ms);
        waiting
            .into_iter()
            .take(MAX_REDELIVER_PER_CALL)
            .map(|d| d.delivery_id.clone())
            .collect()
    }

    /// Makes the deliveries `ids` due at once: their next attempt is the
    /// fake's now.
    pub(super) fn made_due(&self, tenant_id: &str, ids: &[String]) {
        for d in self.deliveries.lock().unwrap().iter_mut() {
            if d.tenant_id == tenant_id && ids.contains(&d.delivery_id) {
                d.next_attempt_at_ms = Some(NOW_MS);
            }
        }
    }
}

/// Whether seeded delivery `d` waits for a retry.
/// Dead-letters the deliveries `ids` as cancelled.
impl FakeBackend {
    pub(super) fn cancelled(&self, tenant_id: &str, ids: &[String]) {
        for d in self.deliveries.lock().unwrap().iter_mut() {
            if d.tenant_id == tenant_id && ids.contains(&d.delivery_id) {
                d.status = DeliveryStatus::Dead;
                d.next_attempt_at_ms = None;
                d.last_error = Some("cancelled".into());
            }
        }
    }
}

/// Whether `d` is pending: new, held or waiting for a retry.
pub(super) fn is_pending(d: &DeliveryView) -> bool {
    matches!(d.status, DeliveryStatus::Pending | DeliveryStatus::Held)
}

/// Whether `d` waits for a retry.
pub(super) fn is_waiting(d: &DeliveryView) -> bool {
    d.status == DeliveryStatus::Pending && d.attempt_count > 0 && d.next_attempt_at_ms.is_some()
}
