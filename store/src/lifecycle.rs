//! A delivery's lifecycle, the same on every engine and free of storage: what
//! an attempt leads to, redelivery, pulled deliveries' ends and retention.

use hookd_domain::DeliveryEventKind;

use super::records::{
    queue_key, time_key, AttemptRecord, DeadLetter, DeliveryState, DeliveryStatus, EventMeta,
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, RequestId},
};

/// What an attempt leads to: the one outcome of a forward attempt, which
/// storage applies, the `outcome` label of `hookd_forward_attempts_total`
/// and the forward span's `hookd.outcome` name ([`Next::label`]), and the
/// live feed's event ([`DeliveryEventKind::from`]). How the destination
/// answered, before the retry policy decides, is the forwarder's
/// `Verdict`.
///
/// A delivery's lifecycle, the same on every engine and free of storage:
/// what an attempt leads to ([`Next`]) and its consequence for the stored
/// state (`settled`), when a delivery may be redelivered, how a pulled
/// delivery nobody acknowledged ends, and what retention removes together.
/// Each engine applies these in its own transactions; the conformance
/// suite tests the engines, the tests here the rules.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Next {
    /// The destination took it.
    Delivered,
    /// Try again at `due_ms`.
    Retry {
        /// When.
        due_ms: i64,
    },
    /// Give up, for this reason.
    Dead {
        /// In plain words.
        reason: String,
    },
    /// The route's transform dropped the event: nothing was sent, the
    /// delivery is final.
    Dropped,
    /// The route's transform failed: nothing was sent, the delivery is a
    /// dead letter of its own status.
    TransformFailed {
        /// `transform_failed: <why>`.
        reason: String,
    },
}

impl Next {
    /// Every label, in [`Next::index`] order.
    pub const LABELS: [&'static str; 5] =
        ["delivered", "retry", "dead", "dropped", "transform_failed"];

    /// Its position in [`Next::LABELS`].
    pub fn index(&self) -> usize {
        match self {
            Next::Delivered => 0,
            Next::Retry { .. } => 1,
            Next::Dead { .. } => 2,
            Next::Dropped => 3,
            Next::TransformFailed { .. } => 4,
        }
    }

    /// Why the delivery ended, for a dead letter of either kind.
    pub fn dead_reason(&self) -> Option<&str> {
        match self {
            Next::Dead { reason } | Next::TransformFailed { reason } => Some(reason),
            Next::Delivered | Next::Retry { .. } | Next::Dropped => None,
        }
    }

    /// Its name in metrics and spans.
    pub fn label(&self) -> &'static str {
        Self::LABELS[self.index()]
    }
}

impl From<&Next> for DeliveryEventKind {
    fn from(next: &Next) -> Self {
        match next {
            Next::Delivered | Next::Dropped => DeliveryEventKind::Delivered,
            Next::Retry { .. } => DeliveryEventKind::RetryScheduled,
            Next::Dead { .. } | Next::TransformFailed { .. } => DeliveryEventKind::DeadLettered,
        }
    }
}

/// What recording an attempt writes besides the attempt itself, the same
/// on every engine: the delivery's new state and, by outcome, its new
/// queue key (a retry), its dead letter (key and record) or its key in the
/// delivered index.
pub(crate) struct Settled {
    /// The delivery's state after the attempt.
    pub(crate) state: DeliveryState,
    /// A retry's queue entry.
    pub(crate) requeue: Option<[u8; 16]>,
    /// A dead letter's index key and record.
    pub(crate) dead: Option<(Vec<u8>, DeadLetter)>,
    /// A delivered event's key in the retention index.
    pub(crate) done: Option<Vec<u8>>,
}

/// Whether queue entry `entry` is the live one of a delivery in `state`, the
/// compare half of every queue compare-and-set on every engine: the delivery
/// is pending and points at this entry (or at none, as records older than
/// the live-entry field do). An entry that is not live is an orphan, which
/// the engine removes.
pub(crate) fn holds_entry(state: &DeliveryState, entry: &[u8]) -> bool {
    state.status == DeliveryStatus::Pending
        && state
            .queue_key
            .as_deref()
            .is_none_or(|k| k == hex::encode(entry))
}

/// How often a settled delivery that is no dead letter (delivered,
/// dropped, filtered, unrouted) may be redelivered. A dead letter is
/// redelivered once whatever is asked: it becomes `redelivered`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Resend {
    /// However often it is asked for (a redelivery by id).
    Any,
    /// Only if it was never redelivered, so that of concurrent calls one
    /// makes a new delivery (a redelivery by filter).
    Once,
}

/// Whether a delivery in `state` may be redelivered, the same rule on every
/// engine: a dead letter (dead or transform_failed) may (true) and so may a
/// final one that is no dead letter (delivered, dropped, filtered,
/// unrouted: false), under `resend` once it was redelivered; one already
/// redelivered as a dead letter, or still pending, may not.
pub(crate) fn redeliverable(
    state: &DeliveryState,
    delivery_id: &DeliveryId,
    resend: Resend,
) -> Result<bool> {
    match (state.status, &state.redelivered_as) {
        (DeliveryStatus::Dead | DeliveryStatus::TransformFailed, _) => Ok(true),
        (
            DeliveryStatus::Delivered
            | DeliveryStatus::Dropped
            | DeliveryStatus::Filtered
            | DeliveryStatus::Unrouted,
            Some(as_id),
        ) if resend == Resend::Once => Err(Error::Precondition(format!(
            "delivery {delivery_id} was already redelivered as {as_id}"
        ))),
        (
            DeliveryStatus::Delivered
            | DeliveryStatus::Dropped
            | DeliveryStatus::Filtered
            | DeliveryStatus::Unrouted,
            _,
        ) => Ok(false),
        (DeliveryStatus::Redelivered, Some(as_id)) => Err(Error::Precondition(format!(
            "delivery {delivery_id} was already redelivered as {as_id}"
        ))),
        (other, _) => Err(Error::Precondition(format!(
            "delivery {delivery_id} is {}; only dead or delivered ones can be redelivered",
            other.as_str()
        ))),
    }
}

/// One attempt and what it leads to, as each engine's `settle` applies it
/// (through [`settled`]).
pub(crate) struct Outcome<'a> {
    /// The attempt as recorded.
    pub(crate) attempt: &'a AttemptRecord,
    /// What it leads to.
    pub(crate) next: &'a Next,
    /// The sequence number of a retry's queue key.
    pub(crate) retry_seq: u64,
    /// When it ended (Unix ms).
    pub(crate) now_ms: i64,
}

/// The consequence of `attempt` leading to `next` for a delivery in `state`.
pub(crate) fn settled(
    mut state: DeliveryState,
    delivery_id: &DeliveryId,
    attempt: &AttemptRecord,
    next: &Next,
    retry_seq: u64,
    now_ms: i64,
) -> Settled {
    state.attempts = state.attempts.max(attempt.attempt);
    state.last_status = attempt.status_code;
    state.last_error = attempt.error.clone();
    state.next_attempt_at_ms = None;
    state.queue_key = None;
    let (mut requeue, mut dead, mut done) = (None, None, None);
    match next {
        Next::Delivered => {
            state.status = DeliveryStatus::Delivered;
            state.finished_at_ms = Some(now_ms);
            done = Some(time_key(now_ms, delivery_id));
        }
        Next::Retry { due_ms } => {
            let key = queue_key(*due_ms, retry_seq);
            state.status = DeliveryStatus::Pending;
            state.next_attempt_at_ms = Some(*due_ms);
            state.queue_key = Some(hex::encode(key));
            requeue = Some(key);
        }
        Next::Dropped => {
            state.status = DeliveryStatus::Dropped;
            state.finished_at_ms = Some(now_ms);
            done = Some(time_key(now_ms, delivery_id));
        }
        Next::Dead { reason } | Next::TransformFailed { reason } => {
            state.status = match next {
                Next::TransformFailed { .. } => DeliveryStatus::TransformFailed,
                _ => DeliveryStatus::Dead,
            };
            state.finished_at_ms = Some(now_ms);
            state.last_error = Some(reason.clone());
            let letter = DeadLetter {
                delivery_id: delivery_id.clone(),
                event_id: state.event_id.clone(),
                reason: reason.clone(),
                dead_at_ms: now_ms,
                attempts: state.attempts,
                last_status: attempt.status_code,
            };
            dead = Some((time_key(now_ms, delivery_id), letter));
        }
    }
    Settled {
        state,
        requeue,
        dead,
        done,
    }
}

/// The attempt and outcome that dead-letter a pulled delivery never
/// acknowledged within the retry window (the same on every engine).
pub(crate) fn unacknowledged(state: &DeliveryState, now_ms: i64) -> (AttemptRecord, Next) {
    let attempt = AttemptRecord {
        attempt: state.attempts,
        started_at_ms: now_ms,
        duration_ms: 0,
        status_code: None,
        error: Some("not acknowledged by a consumer".into()),
        response_body: Vec::new(),
        next_retry_at_ms: None,
        request_id: RequestId::generate(),
        transform_version: None,
    };
    let next = Next::Dead {
        reason: format!(
            "not acknowledged within the retry window after {} pulls",
            state.attempts
        ),
    };
    (attempt, next)
}

/// What one sweep step (or a whole pass) removed.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Swept {
    /// Delivered events deleted.
    pub delivered: usize,
    /// Dead letters deleted.
    pub dead: usize,
    /// Originals of redeliveries deleted with their redelivery.
    pub originals: usize,
    /// Idempotency records forgotten.
    pub idempotency: usize,
    /// The step stopped at its batch limit or in the middle of the
    /// idempotency scan: another step may find more that is due.
    pub more: bool,
}

/// Steps add up: what they removed together, and whether any may have
/// left more.
impl std::ops::AddAssign for Swept {
    fn add_assign(&mut self, step: Swept) {
        self.delivered += step.delivered;
        self.dead += step.dead;
        self.originals += step.originals;
        self.idempotency += step.idempotency;
        self.more |= step.more;
    }
}

impl Swept {
    /// Records removed, of every kind.
    pub fn total(&self) -> usize {
        self.delivered + self.dead + self.originals + self.idempotency
    }
}

/// Whether `original`, which `redelivery` was redelivered from, goes with
/// it, the same rule on every engine: a dead letter sent again has no
/// index of its own (it left the dead letters), so it goes when its
/// redelivery does; a delivered original is in the delivered index and
/// goes by its own time.
pub(crate) fn goes_with_redelivery(original: &DeliveryState, redelivery: &DeliveryId) -> bool {
    original.status == DeliveryStatus::Redelivered
        && original.redelivered_as.as_ref() == Some(redelivery)
}

/// What redelivering a delivery writes, the same on every engine: the new
/// delivery's event metadata and state, the original's state after it, and
/// the key of the original's dead letter to remove (if it had one).
pub(crate) struct Redelivery {
    /// The new delivery's stored metadata: the original's, with the new
    /// delivery id, request id and receipt time.
    pub(crate) meta: EventMeta,
    /// The new delivery's state: pending, due at once, queued at `new_key`.
    pub(crate) state: DeliveryState,
    /// The original's state: redelivered (if it was dead) as the new one.
    pub(crate) original: DeliveryState,
    /// The original's key in the dead letters.
    pub(crate) dead_key: Vec<u8>,
}

/// Redelivers `delivery_id` (in state `original`, stored with `meta`, found
/// [`redeliverable`] with `was_dead`) as `new_id`, queued at `new_key`.
pub(crate) fn redelivery(
    mut original: DeliveryState,
    delivery_id: &DeliveryId,
    was_dead: bool,
    meta: EventMeta,
    (new_id, new_key): (&DeliveryId, &[u8; 16]),
    now_ms: i64,
) -> Redelivery {
    let meta = EventMeta {
        delivery_id: new_id.clone(),
        received_at_ms: now_ms,
        request_id: RequestId::generate(),
        ..meta
    };
    let dead_key = time_key(original.finished_at_ms.unwrap_or_default(), delivery_id);
    if was_dead {
        original.status = DeliveryStatus::Redelivered;
    }
    original.redelivered_as = Some(new_id.clone());
    let mut state = DeliveryState::pending(meta.event_id.clone(), now_ms);
    state.event_type = original.event_type.clone();
    state.redelivery_of = Some(delivery_id.clone());
    state.queue_key = Some(hex::encode(new_key));
    Redelivery {
        meta,
        state,
        original,
        dead_key,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::EventId;

    fn attempt(status: Option<u16>) -> AttemptRecord {
        AttemptRecord {
            attempt: 1,
            started_at_ms: 10,
            duration_ms: 5,
            status_code: status,
            error: None,
            response_body: Vec::new(),
            next_retry_at_ms: None,
            request_id: RequestId::generate(),
            transform_version: None,
        }
    }

    fn pending() -> DeliveryState {
        DeliveryState::pending(EventId::new("evt_1"), 1)
    }

    /// The one claim rule both engines apply: a pending delivery holds the
    /// entry it points at (or any, for a record from before the field), a
    /// settled one or one moved to another entry holds none.
    #[test]
    fn a_queue_entry_is_live_only_for_its_pending_delivery() {
        let (entry, other) = (queue_key(10, 1), queue_key(20, 2));
        let mut state = pending();
        assert!(holds_entry(&state, &entry), "no live entry recorded");
        state.queue_key = Some(hex::encode(entry));
        assert!(holds_entry(&state, &entry));
        assert!(!holds_entry(&state, &other), "moved to another entry");
        state.status = DeliveryStatus::Delivered;
        assert!(!holds_entry(&state, &entry), "settled");
    }

    #[test]
    fn only_dead_or_delivered_deliveries_may_be_redelivered() {
        let id = DeliveryId::new("dlv_1");
        let mut state = pending();
        assert!(matches!(
            redeliverable(&state, &id, Resend::Any),
            Err(Error::Precondition(_))
        ));
        state.status = DeliveryStatus::Dead;
        assert!(redeliverable(&state, &id, Resend::Any).unwrap());
        state.status = DeliveryStatus::Delivered;
        assert!(!redeliverable(&state, &id, Resend::Any).unwrap());
        state.status = DeliveryStatus::Redelivered;
        state.redelivered_as = Some(DeliveryId::new("dlv_2"));
        assert!(matches!(
            redeliverable(&state, &id, Resend::Any),
            Err(Error::Precondition(_))
        ));
    }

    #[test]
    fn each_outcome_has_its_one_consequence() {
        let id = DeliveryId::new("dlv_1");
        let delivered = settled(pending(), &id, &attempt(Some(200)), &Next::Delivered, 7, 50);
        assert_eq!(delivered.state.status, DeliveryStatus::Delivered);
        assert_eq!(delivered.done, Some(time_key(50, &id)));
        assert!(delivered.requeue.is_none() && delivered.dead.is_none());

        let retry = settled(
            pending(),
            &id,
            &attempt(Some(503)),
            &Next::Retry { due_ms: 90 },
            7,
            50,
        );
        assert_eq!(retry.state.status, DeliveryStatus::Pending);
        assert_eq!(retry.state.next_attempt_at_ms, Some(90));
        assert_eq!(retry.requeue, Some(queue_key(90, 7)));
        assert!(retry.dead.is_none() && retry.done.is_none());

        let reason = "retry window ended".to_owned();
        let dead = settled(
            pending(),
            &id,
            &attempt(Some(500)),
            &Next::Dead {
                reason: reason.clone(),
            },
            7,
            50,
        );
        assert_eq!(dead.state.status, DeliveryStatus::Dead);
        let (_, letter) = dead.dead.expect("a dead letter");
        assert_eq!((letter.reason, letter.dead_at_ms), (reason, 50));
        assert_eq!(letter.last_status, Some(500));
        assert!(dead.requeue.is_none() && dead.done.is_none());

        let failed = settled(
            pending(),
            &id,
            &attempt(None),
            &Next::TransformFailed {
                reason: "transform_failed: transform threw".into(),
            },
            7,
            50,
        );
        assert_eq!(failed.state.status, DeliveryStatus::TransformFailed);
        assert!(failed.state.status.is_dead_letter());
        assert!(failed.dead.is_some() && failed.done.is_none());

        let dropped = settled(pending(), &id, &attempt(None), &Next::Dropped, 7, 50);
        assert_eq!(dropped.state.status, DeliveryStatus::Dropped);
        assert_eq!(dropped.done, Some(time_key(50, &id)));
        assert!(dropped.dead.is_none() && dropped.requeue.is_none());
    }

    #[test]
    fn a_transform_failure_is_redelivered_like_a_dead_letter_and_the_rest_like_delivered() {
        let id = DeliveryId::new("dlv_1");
        let mut state = pending();
        state.status = DeliveryStatus::TransformFailed;
        assert!(redeliverable(&state, &id, Resend::Any).unwrap());
        for status in [
            DeliveryStatus::Dropped,
            DeliveryStatus::Filtered,
            DeliveryStatus::Unrouted,
        ] {
            state.status = status;
            assert!(
                !redeliverable(&state, &id, Resend::Any).unwrap(),
                "{status:?}"
            );
        }
    }

    #[test]
    fn a_redelivery_queues_a_new_delivery_and_marks_the_original() {
        let (id, new_id, key) = (
            DeliveryId::new("dlv_1"),
            DeliveryId::new("dlv_2"),
            [7u8; 16],
        );
        let mut dead = pending();
        dead.status = DeliveryStatus::Dead;
        dead.finished_at_ms = Some(40);
        let meta = EventMeta {
            event_id: EventId::new("evt_1"),
            delivery_id: id.clone(),
            request_id: RequestId::generate(),
            received_at_ms: 1,
            headers: vec![],
            trace_id: String::new(),
            span_id: String::new(),
            sampled: true,
        };
        let r = redelivery(dead, &id, true, meta, (&new_id, &key), 90);
        assert_eq!(r.original.status, DeliveryStatus::Redelivered);
        assert_eq!(r.original.redelivered_as, Some(new_id.clone()));
        assert_eq!((r.meta.delivery_id, r.meta.received_at_ms), (new_id, 90));
        assert_eq!(r.meta.event_id.as_str(), "evt_1");
        assert_eq!(r.state.status, DeliveryStatus::Pending);
        assert_eq!(r.state.redelivery_of, Some(id.clone()));
        assert_eq!(r.state.queue_key, Some(hex::encode(key)));
        assert_eq!(r.dead_key, time_key(40, &id));
    }
}
