//! Where a delivery stands and what happens to it: one [`DeliveryStatus`] and
//! one [`DeliveryEventKind`] for every layer, with the `hookd.v1` conversions.

use crate::v1 as pb;

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
        }
    }

    /// Whether a delivery in this status is a dead letter: in the dead
    /// letters, redeliverable and purgeable.
    pub fn is_dead_letter(self) -> bool {
        matches!(self, DeliveryStatus::Dead | DeliveryStatus::TransformFailed)
    }

    /// Whether a delivery in this status may be redelivered: any final one
    /// (a dead letter, or delivered, dropped, filtered or unrouted), not
    /// one still pending or already redelivered.
    pub fn may_be_redelivered(self) -> bool {
        !matches!(self, DeliveryStatus::Pending | DeliveryStatus::Redelivered)
    }
}

/// A wire status that is not the status of any delivery: unspecified, or
/// `DELIVERY_STATUS_IN_FLIGHT`, which hookd never reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("{} is not a status hookd gives a delivery", .0.as_str_name())]
pub struct InvalidDeliveryStatus(pub pb::DeliveryStatus);

impl From<DeliveryStatus> for pb::DeliveryStatus {
    fn from(s: DeliveryStatus) -> Self {
        match s {
            DeliveryStatus::Pending => pb::DeliveryStatus::Pending,
            DeliveryStatus::Delivered => pb::DeliveryStatus::Delivered,
            DeliveryStatus::Dead => pb::DeliveryStatus::Dead,
            DeliveryStatus::Redelivered => pb::DeliveryStatus::Redelivered,
            DeliveryStatus::Filtered => pb::DeliveryStatus::Filtered,
            DeliveryStatus::Unrouted => pb::DeliveryStatus::Unrouted,
            DeliveryStatus::TransformFailed => pb::DeliveryStatus::TransformFailed,
            DeliveryStatus::Dropped => pb::DeliveryStatus::Dropped,
        }
    }
}

impl TryFrom<pb::DeliveryStatus> for DeliveryStatus {
    type Error = InvalidDeliveryStatus;

    fn try_from(s: pb::DeliveryStatus) -> Result<Self, Self::Error> {
        match s {
            pb::DeliveryStatus::Pending => Ok(DeliveryStatus::Pending),
            pb::DeliveryStatus::Delivered => Ok(DeliveryStatus::Delivered),
            pb::DeliveryStatus::Dead => Ok(DeliveryStatus::Dead),
            pb::DeliveryStatus::Redelivered => Ok(DeliveryStatus::Redelivered),
            pb::DeliveryStatus::Filtered => Ok(DeliveryStatus::Filtered),
            pb::DeliveryStatus::Unrouted => Ok(DeliveryStatus::Unrouted),
            pb::DeliveryStatus::TransformFailed => Ok(DeliveryStatus::TransformFailed),
            pb::DeliveryStatus::Dropped => Ok(DeliveryStatus::Dropped),
            pb::DeliveryStatus::Unspecified | pb::DeliveryStatus::InFlight => {
                Err(InvalidDeliveryStatus(s))
            }
        }
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

impl From<DeliveryEventKind> for pb::DeliveryEventKind {
    fn from(k: DeliveryEventKind) -> Self {
        match k {
            DeliveryEventKind::Accepted => pb::DeliveryEventKind::Accepted,
            DeliveryEventKind::Delivered => pb::DeliveryEventKind::Delivered,
            DeliveryEventKind::RetryScheduled => pb::DeliveryEventKind::RetryScheduled,
            DeliveryEventKind::DeadLettered => pb::DeliveryEventKind::DeadLettered,
            DeliveryEventKind::Redelivered => pb::DeliveryEventKind::Redelivered,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_round_trip_through_the_wire() {
        for status in [
            DeliveryStatus::Pending,
            DeliveryStatus::Delivered,
            DeliveryStatus::Dead,
            DeliveryStatus::Redelivered,
            DeliveryStatus::Filtered,
            DeliveryStatus::Unrouted,
            DeliveryStatus::TransformFailed,
            DeliveryStatus::Dropped,
        ] {
            assert_eq!(
                DeliveryStatus::try_from(pb::DeliveryStatus::from(status)),
                Ok(status)
            );
        }
        let err = DeliveryStatus::try_from(pb::DeliveryStatus::InFlight).unwrap_err();
        assert_eq!(
            err.to_string(),
            "DELIVERY_STATUS_IN_FLIGHT is not a status hookd gives a delivery"
        );
    }
}
