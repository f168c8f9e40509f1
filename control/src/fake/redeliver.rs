//! The fake's routes of deliveries: which routes a tenant has, and the
//! deliveries a redelivery by filter takes.

use super::FakeBackend;
use crate::{
    error::{Error, Result},
    model::{DeliveryStatus, Matching, DEFAULT_ROUTE, MAX_REDELIVER_PER_CALL},
};

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
}
