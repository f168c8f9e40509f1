//! Replays of stored events into a route (ReplayToRoute and the calls that
//! watch and steer one).

use super::delivery::BodyField;

/// A replay's rate when none is asked for (deliveries made a second).
pub const DEFAULT_REPLAY_RATE: u32 = 100;

/// The highest rate a replay may ask for (deliveries made a second).
pub const MAX_REPLAY_RATE: u32 = 5_000;

/// A replay asked for.
#[derive(Debug, Clone, PartialEq)]
pub struct NewReplay {
    /// The route the events are replayed into (never `default`).
    pub route: String,
    /// The events accepted at or after this time (Unix ms).
    pub since_ms: i64,
    /// And before this time; `None`: when the replay is made.
    pub until_ms: Option<i64>,
    /// Only events of this type.
    pub event_type: Option<String>,
    /// Only events whose JSON body has this value at this pointer.
    pub body: Option<BodyField>,
    /// At most this many deliveries made a second.
    pub rate_per_sec: u32,
    /// Count, make nothing.
    pub dry_run: bool,
}

/// Where a replay stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayState {
    /// Making deliveries at its rate, or waiting for its turn.
    Running,
    /// Paused by an operator.
    Paused,
    /// Cancelled by an operator.
    Cancelled,
    /// Every event of its window was looked at.
    Done,
    /// Stopped on an error it cannot get past.
    Failed,
}

/// What became of the events a replay looked at.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReplayCounts {
    /// Events of the window looked at.
    pub scanned: u64,
    /// Deliveries made on the route.
    pub replayed: u64,
    /// Skipped: the type or body field did not match.
    pub not_matched: u64,
    /// Skipped: the route's filter did not pass it.
    pub filtered: u64,
    /// Skipped: the route had a delivery of it already.
    pub already_on_route: u64,
    /// Skipped: its body is no longer stored.
    pub gone: u64,
}

/// A replay and how far it got.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayView {
    /// `rpl_` and a ULID.
    pub id: String,
    /// Its tenant.
    pub tenant_id: String,
    /// The route it replays into.
    pub route: String,
    /// Its window (Unix ms): from, inclusive.
    pub since_ms: i64,
    /// To, exclusive.
    pub until_ms: i64,
    /// Only events of this type.
    pub event_type: Option<String>,
    /// Only events with this body field.
    pub body: Option<BodyField>,
    /// Deliveries made a second, at most.
    pub rate_per_sec: u32,
    /// Where it stands.
    pub state: ReplayState,
    /// When it was made (Unix ms).
    pub created_at_ms: i64,
    /// When it ended (done or cancelled).
    pub finished_at_ms: Option<i64>,
    /// What became of the events looked at.
    pub counts: ReplayCounts,
    /// The acceptance time of the last event looked at.
    pub position_ms: Option<i64>,
    /// Why its last step failed, if it did.
    pub last_error: Option<String>,
}

/// What ReplayToRoute answers.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayStarted {
    /// A dry run: the deliveries the replay would make now; a run: 0.
    pub count: u64,
    /// The replay made; `None` on a dry run.
    pub replay: Option<ReplayView>,
}

/// What an operator does to a replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayAction {
    /// Stop it where it is.
    Pause,
    /// Run it on from where it stopped.
    Resume,
    /// End it for good.
    Cancel,
}
