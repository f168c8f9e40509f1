//! The live delivery feed: what happens to deliveries, as it happens, for
//! `WatchDeliveries`, the dashboard's live tail and tests.

use std::{
    collections::HashMap,
    sync::{Arc, RwLock},
};

use tokio::sync::broadcast;

use crate::ids::{DeliveryId, EventId, TenantId};

/// What happened: the one kind the feed, the control plane and the wire share.
pub use hookd_proto::domain::DeliveryEventKind;

/// One event of the feed.
#[derive(Debug, Clone)]
pub struct DeliveryEvent {
    /// What happened.
    pub kind: DeliveryEventKind,
    /// Whose.
    pub tenant: TenantId,
    /// Which delivery.
    pub delivery_id: DeliveryId,
    /// Its event.
    pub event_id: EventId,
    /// When (Unix ms).
    pub at_ms: i64,
    /// Attempt number, for attempt outcomes.
    pub attempt: u32,
    /// HTTP status of the attempt, if any.
    pub status_code: Option<u16>,
    /// Why, in plain words, for failures.
    pub reason: Option<String>,
}

/// Fan-out of [`DeliveryEvent`]s; slow watchers miss events rather than
/// slowing deliveries down. Cheap to clone; clones share the channels.
///
/// The live delivery feed: what happens to deliveries, as it happens, for
/// `WatchDeliveries`, the dashboard's live tail and tests. (Not the webhook
/// events themselves: those are stored in `store/`.) One channel carries
/// every tenant's events, for the admin's watch of all; each watched tenant
/// has a channel of its own, so a watcher of one tenant is woken only by
/// that tenant's events and never falls behind because another is busy.
#[derive(Clone)]
pub struct DeliveryFeed {
    all: broadcast::Sender<DeliveryEvent>,
    /// The channels of tenants someone watches (or watched since their
    /// last event).
    tenants: Arc<RwLock<HashMap<TenantId, broadcast::Sender<DeliveryEvent>>>>,
    capacity: usize,
}

impl DeliveryFeed {
    /// A feed buffering `capacity` events per watcher.
    pub fn new(capacity: usize) -> Self {
        DeliveryFeed {
            all: broadcast::channel(capacity).0,
            tenants: Arc::default(),
            capacity,
        }
    }

    /// Publishes, whether or not anyone watches; a tenant channel nobody
    /// watches any more is dropped here.
    pub fn publish(&self, event: DeliveryEvent) {
        // Every accepted delivery passes here: a read lock, so HTTP workers
        // publishing at once never wait on each other; the write lock only
        // to forget a channel whose last watcher left.
        let unwatched = {
            let tenants = self.tenants.read().expect("feed lock");
            tenants
                .get(&event.tenant)
                .is_some_and(|channel| channel.send(event.clone()).is_err())
        };
        if unwatched {
            let mut tenants = self.tenants.write().expect("feed lock");
            if tenants
                .get(&event.tenant)
                .is_some_and(|channel| channel.receiver_count() == 0)
            {
                tenants.remove(&event.tenant);
            }
        }
        let _ = self.all.send(event);
    }

    /// A new watcher of every tenant, seeing events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DeliveryEvent> {
        self.all.subscribe()
    }

    /// A new watcher of `tenant` alone, seeing its events from now on; it
    /// sees the channel close when the tenant is deleted ([`Self::close`]).
    pub fn subscribe_tenant(&self, tenant: &TenantId) -> broadcast::Receiver<DeliveryEvent> {
        let mut tenants = self.tenants.write().expect("feed lock");
        tenants
            .entry(tenant.clone())
            .or_insert_with(|| broadcast::channel(self.capacity).0)
            .subscribe()
    }

    /// Closes `tenant`'s channel: its watchers end, and a tenant made anew
    /// under the same id gets a channel of its own.
    pub fn close(&self, tenant: &TenantId) {
        self.tenants.write().expect("feed lock").remove(tenant);
    }
}

impl Default for DeliveryFeed {
    fn default() -> Self {
        DeliveryFeed::new(4096)
    }
}

#[cfg(test)]
mod tests {
    use tokio::sync::broadcast::error::{RecvError, TryRecvError};

    use super::*;

    fn id(tenant: &str) -> TenantId {
        TenantId::try_from(tenant).unwrap()
    }

    fn event(tenant: &TenantId, n: u32) -> DeliveryEvent {
        DeliveryEvent {
            kind: DeliveryEventKind::Accepted,
            tenant: tenant.clone(),
            delivery_id: DeliveryId::new(format!("dlv_{n}")),
            event_id: EventId::new(format!("evt_{n}")),
            at_ms: 0,
            attempt: 0,
            status_code: None,
            reason: None,
        }
    }

    #[tokio::test]
    async fn a_tenant_watcher_sees_only_its_tenant_and_is_not_lagged_by_others() {
        let feed = DeliveryFeed::new(2);
        let (quiet, busy) = (id("quiet"), id("busy"));
        let mut own = feed.subscribe_tenant(&quiet);
        let mut all = feed.subscribe();
        for n in 0..10 {
            feed.publish(event(&busy, n));
        }
        assert_eq!(own.try_recv().unwrap_err(), TryRecvError::Empty);
        feed.publish(event(&quiet, 10));
        assert_eq!(own.recv().await.unwrap().event_id.as_str(), "evt_10");
        assert!(matches!(all.recv().await, Err(RecvError::Lagged(_))));
    }

    #[tokio::test]
    async fn closing_a_tenant_ends_its_watchers_and_a_new_one_starts_afresh() {
        let feed = DeliveryFeed::new(4);
        let tenant = id("gone");
        let mut before = feed.subscribe_tenant(&tenant);
        feed.close(&tenant);
        let mut after = feed.subscribe_tenant(&tenant);
        feed.publish(event(&tenant, 1));
        assert_eq!(before.recv().await.unwrap_err(), RecvError::Closed);
        assert_eq!(after.recv().await.unwrap().event_id.as_str(), "evt_1");
    }
}
