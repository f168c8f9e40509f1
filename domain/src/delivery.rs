//! Where a delivery stands and what happens to it: one [`DeliveryStatus`]
//! and one [`DeliveryEventKind`] for the store, the live feed and the wire.

/// Where a delivery is in its life.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[cfg_attr(
    feature = "serde",
    derive(serde::Serialize, serde::Deserialize),
    serde(rename_all = "snake_case")
)]
pub enum DeliveryStatus {
    /// Waiting for its next forward attempt, or to be pulled.
    Pending,
    /// Forwarded with a 2xx answer, or acked. Final.
    Delivered,
    /// Given up on: a dead letter. Final unless redelivered.
    Dead,
    /// Made into a new delivery by redelivery. Final.
    Redelivered,
    /// The default route's filter did not pass the event (another route's
    /// did): stored, never forwarded, finished at receipt. Final.
    Filtered,
    /// No route's filter passed the event: stored, never forwarded,
    /// finished at receipt. Final.
    Unrouted,
    /// The route's transform failed: nothing was sent. A dead letter, like
    /// [`DeliveryStatus::Dead`]. Final unless redelivered.
    TransformFailed,
    /// The route's transform dropped the event: nothing was sent. Final.
    Dropped,
    /// Pending on a route an operator paused: not sent until it is
    /// resumed. How a pending delivery is shown and filtered while its
    /// route is paused; never stored.
    Held,
}

impl DeliveryStatus {
    /// Lower-case name, for messages.
    pub fn as_str(self) -> &'static str {
        match self {
            DeliveryStatus::Pending => "pending",
            DeliveryStatus::Delivered => "delivered",
            DeliveryStatus::Dead => "dead",
            DeliveryStatus::Redelivered => "redelivered",
            DeliveryStatus::Filtered => "filtered",
            DeliveryStatus::Unrouted => "unrouted",
            DeliveryStatus::TransformFailed => "transform_failed",
            DeliveryStatus::Dropped => "dropped",
            DeliveryStatus::Held => "held",
        }
    }

    /// Whether a delivery in this status is a dead letter: in the dead
    /// letters, redeliverable and purgeable.
    pub fn is_dead_letter(self) -> bool {
        matches!(self, DeliveryStatus::Dead | DeliveryStatus::TransformFailed)
    }

    /// Whether a delivery in this status may be redelivered: any final one
    /// (a dead letter, or delivered, dropped, filtered or unrouted), not
    /// one still pending (or held) or already redelivered.
    pub fn may_be_redelivered(self) -> bool {
        !matches!(
            self,
            DeliveryStatus::Pending | DeliveryStatus::Held | DeliveryStatus::Redelivered
        )
    }
}

/// What happened to a delivery, for the live feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DeliveryEventKind {
    /// Accepted from a sender, or created by redelivery.
    Accepted,
    /// Forwarded with a 2xx answer, or acked.
    Delivered,
    /// An attempt failed and another is scheduled (pull: it came back after
    /// a nack or its visibility timeout).
    RetryScheduled,
    /// Given up on.
    DeadLettered,
    /// Redelivered as a new delivery.
    Redelivered,
}
