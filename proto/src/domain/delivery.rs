//! A delivery's status and event kind (`hookd-domain`'s) converted to and
//! from `hookd.v1`.

pub use hookd_domain::{DeliveryEventKind, DeliveryStatus};

use crate::v1 as pb;

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
            DeliveryStatus::Held => pb::DeliveryStatus::Held,
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
            pb::DeliveryStatus::Held => Ok(DeliveryStatus::Held),
            pb::DeliveryStatus::Unspecified | pb::DeliveryStatus::InFlight => {
                Err(InvalidDeliveryStatus(s))
            }
        }
    }
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
            DeliveryStatus::Held,
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
