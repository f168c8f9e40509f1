//! The live delivery feed: what happens to deliveries, as it happens, for
//! `WatchDeliveries` and tests. (Not the webhook events themselves: those
//! are stored in `store/`.)

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
/// slowing deliveries down.
#[derive(Clone)]
pub struct DeliveryFeed(broadcast::Sender<DeliveryEvent>);

impl DeliveryFeed {
    /// A feed buffering `capacity` events per watcher.
    pub fn new(capacity: usize) -> Self {
        DeliveryFeed(broadcast::channel(capacity).0)
    }

    /// Publishes, whether or not anyone watches.
    pub fn publish(&self, event: DeliveryEvent) {
        let _ = self.0.send(event);
    }

    /// A new watcher, seeing events from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<DeliveryEvent> {
        self.0.subscribe()
    }
}

impl Default for DeliveryFeed {
    fn default() -> Self {
        DeliveryFeed::new(4096)
    }
}
