//! Deliveries, their attempts, dead letters, pulled messages and the live
//! event feed.

pub use hookd_proto::domain::{DeliveryEventKind, DeliveryStatus, DEFAULT_ROUTE};

/// At most this many deliveries one `Redeliver` by filter redelivers (or,
/// in a dry run, counts), oldest first; [`Redelivered::more`] says when
/// others matched.
pub const MAX_REDELIVER_PER_CALL: usize = 1000;

/// At most this many of the originals' ids a `Redeliver` answer lists in
/// [`Redelivered::matched_ids`].
pub const MAX_MATCHED_IDS: usize = 100;

/// One forward attempt (or, in pull mode, one pull that handed it out).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AttemptView {
    /// 1-based.
    pub attempt: u32,
    /// Start, Unix ms.
    pub started_at_ms: i64,
    /// Until the end of the response or the failure (pull: until ack, nack
    /// or the visibility timeout).
    pub duration_ms: u64,
    /// The destination's HTTP status; `None` without an HTTP answer and for
    /// pulls.
    pub status_code: Option<u16>,
    /// Why it failed, in plain words; `None` if it succeeded.
    pub error: Option<String>,
    /// First 4 KiB of the response body.
    pub response_body: Vec<u8>,
    /// When the next attempt was scheduled after this one failed.
    pub next_retry_at_ms: Option<i64>,
    /// `req_<ulid>` sent as `X-Request-Id`, to find the log lines.
    pub request_id: String,
}

/// Longest time window a listing by a body field may read: 24 h.
pub const MAX_BODY_WINDOW_MS: i64 = 86_400_000;

/// Most bodies one page of a listing by a body field reads.
pub const MAX_BODIES_READ: usize = 10_000;

/// Most body bytes one page of a listing by a body field reads: 64 MiB.
pub const MAX_BODY_BYTES_READ: usize = 64 << 20;

/// Most deliveries a search by id answers.
pub const MAX_SEARCH_RESULTS: usize = 100;

/// Which of a tenant's deliveries a listing shows. Validated: times are
/// not negative, `since_ms` is not after `until_ms`, a body field comes
/// with a window of at most [`MAX_BODY_WINDOW_MS`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeliveryQuery {
    /// The route (a well-formed name).
    pub route: String,
    /// Only those in this status.
    pub status: Option<DeliveryStatus>,
    /// Only the deliveries of this event (the sender's event id).
    pub event_id: Option<String>,
    /// Only those of events of this type.
    pub event_type: Option<String>,
    /// Only those received at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Only those received before this time (Unix ms).
    pub until_ms: Option<i64>,
    /// Only those whose JSON body has this value at this pointer.
    pub body: Option<BodyField>,
}

/// A value wanted at a JSON pointer of a delivery's body.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyField {
    /// An RFC 6901 pointer (`/data/object/customer`).
    pub pointer: String,
    /// The value wanted there.
    pub value: serde_json::Value,
}

impl DeliveryQuery {
    /// Whether a delivery received at `received_at_ms` is in the window.
    pub fn in_window(&self, received_at_ms: i64) -> bool {
        self.since_ms.is_none_or(|since| received_at_ms >= since)
            && self.until_ms.is_none_or(|until| received_at_ms < until)
    }
}

impl BodyField {
    /// Whether `body` is JSON with `value` at `pointer`.
    pub fn matches(&self, body: &[u8]) -> bool {
        serde_json::from_slice::<serde_json::Value>(body)
            .ok()
            .is_some_and(|json| json.pointer(&self.pointer) == Some(&self.value))
    }
}

/// One accepted webhook and what became of it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryView {
    /// The receiving tenant.
    pub tenant_id: String,
    /// `dlv_<ulid>`.
    pub delivery_id: String,
    /// The sender's event id.
    pub event_id: String,
    /// Where it is now.
    pub status: DeliveryStatus,
    /// Acceptance (for a redelivery: its creation), Unix ms.
    pub received_at_ms: i64,
    /// Attempts made so far.
    pub attempt_count: u32,
    /// When the next forward attempt is due, if one is scheduled.
    pub next_attempt_at_ms: Option<i64>,
    /// The latest failed attempt's error.
    pub last_error: Option<String>,
    /// The delivery this one redelivers.
    pub redelivery_of: Option<String>,
    /// The delivery that redelivered this one.
    pub redelivered_as: Option<String>,
    /// Every attempt, oldest first; empty in listings.
    pub attempts: Vec<AttemptView>,
    /// Every Redirect of it, oldest first; empty in listings.
    pub redirects: Vec<RedirectView>,
    /// The route it belongs to ([`DEFAULT_ROUTE`] or another's name).
    pub route: String,
    /// What each route made of the event, the default route first: only
    /// for the default route's delivery of a tenant with other routes, and
    /// only in `GetDelivery`.
    pub routes: Vec<RouteOutcomeView>,
}

/// What one route made of an accepted event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RouteOutcomeView {
    /// The route (`default` for the tenant's own destination).
    pub route: String,
    /// Its delivery of the event; `None` when its filter did not pass it
    /// and it got none.
    pub delivery_id: Option<String>,
    /// Its filter did not pass the event.
    pub filtered: bool,
}

/// One Redirect of a delivery: sent once, from the dashboard, to a typed
/// URL instead of the tenant's destination. Not an attempt: it changes
/// neither the delivery's status nor its attempts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RedirectView {
    /// Who asked for it: `admin` or `tenant` (the tenant's own token).
    pub by: String,
    /// Where it was sent, without user, password or query values.
    pub url: String,
    /// When it was sent, Unix ms.
    pub started_at_ms: i64,
    /// Until the answer ended or the send failed.
    pub duration_ms: u64,
    /// The HTTP status that came back, if any.
    pub status_code: Option<u16>,
    /// Why it failed, in plain words; `None` if it succeeded.
    pub error: Option<String>,
    /// `req_<ulid>` sent as `X-Request-Id`.
    pub request_id: String,
}

/// What one delivery carries: the accepted request as hookd forwards it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryContent {
    /// `req_<ulid>` of the request that brought it.
    pub request_id: String,
    /// The headers passed on (content type, event type), names lowercase.
    pub headers: Vec<(String, String)>,
    /// The body exactly as received.
    pub body: Vec<u8>,
    /// The event type the body names in the tenant's type field (`type`
    /// unless its contracts say otherwise), if it names one.
    pub event_type: Option<String>,
}

/// A delivery hookd gave up on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeadLetterView {
    /// The receiving tenant.
    pub tenant_id: String,
    /// The dead delivery.
    pub delivery_id: String,
    /// The sender's event id.
    pub event_id: String,
    /// Why hookd gave up, in plain words.
    pub reason: String,
    /// When it died, Unix ms.
    pub dead_at_ms: i64,
    /// Attempts made before giving up.
    pub attempt_count: u32,
    /// HTTP status of the last attempt, if it got one.
    pub last_status_code: Option<u16>,
    /// The route it belongs to ([`DEFAULT_ROUTE`] or another's name).
    pub route: String,
}

/// Which dead letters a listing, redelivery or purge covers. Validated:
/// times are not negative and `since_ms` is not after `until_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DeadLetterFilter {
    /// Only those dead at or after this time.
    pub since_ms: Option<i64>,
    /// Only those dead before this time.
    pub until_ms: Option<i64>,
    /// Only those whose reason contains this text, ignoring case.
    pub reason_contains: Option<String>,
}

impl DeadLetterFilter {
    /// Whether a dead letter passes the filter; the one definition of the
    /// API's range and case rules, for the backend to apply.
    pub fn matches(&self, dead_at_ms: i64, reason: &str) -> bool {
        self.since_ms.is_none_or(|since| dead_at_ms >= since)
            && self.until_ms.is_none_or(|until| dead_at_ms < until)
            && self
                .reason_contains
                .as_ref()
                .is_none_or(|needle| reason.to_lowercase().contains(&needle.to_lowercase()))
    }
}

/// The deliveries a redelivery or purge acts on, and their route.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Selection {
    /// The route the request named (a well-formed name); `None` when it
    /// left it empty: a filter then covers the default route, and ids are
    /// looked for on every route of the tenant.
    pub route: Option<String>,
    /// Which of its deliveries.
    pub pick: Pick,
}

impl Selection {
    /// The route a filter covers: the one named, else the default one.
    pub fn route_or_default(&self) -> &str {
        self.route.as_deref().unwrap_or(DEFAULT_ROUTE)
    }
}

/// Which deliveries of a [`Selection`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pick {
    /// These deliveries, in this order; none empty, no duplicates.
    Ids(Vec<String>),
    /// Every delivery the filter matches (a purge sets only `until_ms` and
    /// takes dead letters).
    Matching(Matching),
}

/// A redelivery (or purge) by filter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Matching {
    /// The time range and reason (for delivered ones the range bounds when
    /// they were delivered, and there is no reason).
    pub filter: DeadLetterFilter,
    /// Which final status: [`DeliveryStatus::Dead`] or
    /// [`DeliveryStatus::Delivered`] (then never one already redelivered).
    pub status: DeliveryStatus,
    /// Only deliveries whose stored event names exactly this type in the
    /// tenant's type field.
    pub event_type: Option<String>,
    /// Change nothing; answer what the call would redeliver.
    pub dry_run: bool,
}

impl Matching {
    /// Every dead letter `filter` matches, no dry run: a purge's filter.
    pub fn dead(filter: DeadLetterFilter) -> Self {
        Matching {
            filter,
            status: DeliveryStatus::Dead,
            event_type: None,
            dry_run: false,
        }
    }
}

/// Deliveries waiting for their next retry, to attempt now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RetryNow {
    /// The route the request named; `None`: ids are looked for on every
    /// route, `All` takes the default route's.
    pub route: Option<String>,
    /// Which of its deliveries.
    pub pick: Waiting,
}

/// Pending deliveries to cancel: each dead-lettered with reason
/// `cancelled`, nothing sent; redeliverable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Cancel {
    /// The route the request named; `None`: ids are looked for on every
    /// route, `All` takes the default route's.
    pub route: Option<String>,
    /// Which of its pending deliveries (`All`: every pending one, new,
    /// held or waiting for a retry, that the filter passes).
    pub pick: Waiting,
}

/// Which waiting deliveries a [`RetryNow`] takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Waiting {
    /// These deliveries; none empty, no duplicates.
    Ids(Vec<String>),
    /// Every one of the route waiting for its retry that `filter` passes,
    /// at most [`MAX_REDELIVER_PER_CALL`] (soonest due first); `dry_run`:
    /// count them and change nothing.
    All {
        /// Change nothing.
        dry_run: bool,
        /// Which of them.
        filter: WaitingFilter,
    },
}

/// Which of a route's waiting deliveries a retry now by filter takes.
/// Validated: `since_ms` is not after `until_ms`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WaitingFilter {
    /// Only those of events of this type.
    pub event_type: Option<String>,
    /// Only those received at or after this time (Unix ms).
    pub since_ms: Option<i64>,
    /// Only those received before this time (Unix ms).
    pub until_ms: Option<i64>,
}

impl WaitingFilter {
    /// Whether a delivery of an event of `event_type`, received at
    /// `received_at_ms`, passes.
    pub fn passes(&self, event_type: Option<&str>, received_at_ms: i64) -> bool {
        self.event_type
            .as_deref()
            .is_none_or(|wanted| event_type == Some(wanted))
            && self.since_ms.is_none_or(|since| received_at_ms >= since)
            && self.until_ms.is_none_or(|until| received_at_ms < until)
    }
}

/// What a retry now or a cancel did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Matched {
    /// How many were (would be) made due now, or cancelled.
    pub matched: u64,
    /// Their ids, at most [`MAX_MATCHED_IDS`].
    pub delivery_ids: Vec<String>,
    /// More were waiting than one call takes.
    pub more: bool,
}

impl Matched {
    /// The answer for acting on `ids`, `more` when others waited beyond.
    pub fn of(ids: &[String], more: bool) -> Self {
        Matched {
            matched: ids.len() as u64,
            delivery_ids: ids.iter().take(MAX_MATCHED_IDS).cloned().collect(),
            more,
        }
    }
}

/// What a redelivery did (or, in a dry run, would do).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Redelivered {
    /// The new deliveries' ids, in the order of the selection's ids or
    /// oldest original first; empty in a dry run.
    pub delivery_ids: Vec<String>,
    /// How many were (in a dry run: would be) redelivered.
    pub matched: u64,
    /// The originals' ids in the same order, at most [`MAX_MATCHED_IDS`].
    pub matched_ids: Vec<String>,
    /// More matched than [`MAX_REDELIVER_PER_CALL`]: the rest are left for
    /// the next call.
    pub more: bool,
}

impl Redelivered {
    /// The answer for redelivering `originals` as `new_ids` (empty in a
    /// dry run), `more` when others matched beyond them.
    pub fn of(originals: &[String], new_ids: Vec<String>, more: bool) -> Self {
        Redelivered {
            delivery_ids: new_ids,
            matched: originals.len() as u64,
            matched_ids: originals.iter().take(MAX_MATCHED_IDS).cloned().collect(),
            more,
        }
    }
}

/// A delivery handed out by a pull.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PulledDelivery {
    /// For ack and nack.
    pub delivery_id: String,
    /// The key to process idempotently by.
    pub event_id: String,
    /// The request body exactly as received.
    pub body: Vec<u8>,
    /// The original headers in order, names lowercase; repeated headers
    /// once per value.
    pub headers: Vec<(String, String)>,
    /// Acceptance, Unix ms.
    pub received_at_ms: i64,
    /// Times pulled, this one included.
    pub attempt: u32,
}

/// One change to one delivery, as it happens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryEventView {
    /// What happened.
    pub kind: DeliveryEventKind,
    /// The owning tenant.
    pub tenant_id: String,
    /// The delivery it happened to.
    pub delivery_id: String,
    /// The sender's event id.
    pub event_id: String,
    /// When, Unix ms.
    pub at_ms: i64,
    /// The attempt it is about (delivered, retry scheduled, dead-lettered).
    pub attempt: Option<u32>,
    /// HTTP status of that attempt, if it got one.
    pub status_code: Option<u16>,
    /// The attempt's error, or why it died.
    pub reason: Option<String>,
    /// Redelivered: the new delivery's id.
    pub redelivered_as: Option<String>,
    /// Retry scheduled: when the next attempt is due.
    pub next_attempt_at_ms: Option<i64>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn filter_includes_since_excludes_until_and_ignores_case() {
        let filter = DeadLetterFilter {
            since_ms: Some(100),
            until_ms: Some(200),
            reason_contains: Some("service UNAVAILABLE".into()),
        };
        assert!(filter.matches(100, "503 Service Unavailable"));
        assert!(!filter.matches(200, "503 Service Unavailable"));
        assert!(!filter.matches(99, "503 Service Unavailable"));
        assert!(!filter.matches(150, "connection refused"));
        assert!(DeadLetterFilter::default().matches(0, ""));
    }
}
