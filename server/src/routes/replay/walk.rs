//! A replay's walk over the tenant's stored events, oldest first, and what
//! it makes of each: a new delivery on the route, or a reason to skip it.
//!
//! Every accepted event has its delivery on the `default` route, in the
//! tenant's own scope, whose id names its acceptance time: the walk reads
//! those deliveries in id order, a time slice at a time (a slice grows
//! while it holds few, shrinks while it holds too many), with the type
//! filter from the engine's index. A delivery that re-sends a dead letter
//! is the same event again and is passed over.

use std::collections::VecDeque;

use bytes::Bytes;

use crate::{
    error::Result,
    ids::DeliveryId,
    routes::filter::{FilterInput, RouteFilter, Steps, MAX_FILTER_STEPS},
    store::{
        api::{Listing, NewDelivery, Receipt, TenantStore},
        records::{DeliveryState, EventMeta, StoredEvent},
    },
};

/// Most deliveries one read of a slice returns; a slice with more is read
/// again narrower.
const SLICE_LIMIT: usize = 2_000;

/// The first slice's width, and the widest a slice grows to.
const FIRST_SPAN_MS: i64 = 60_000;
const MAX_SPAN_MS: i64 = 86_400_000;

/// Filter steps one step of a replay spends at most on all its events
/// together (each gets [`MAX_FILTER_STEPS`]): the events left over wait
/// for the next step.
pub const STEP_FILTER_STEPS: u64 = 16 * MAX_FILTER_STEPS;

/// The tenant's deliveries on `default` in a replay's window, oldest
/// first, from a position on.
pub struct Walk {
    source: TenantStore,
    listing: Listing,
    until_ms: i64,
    /// The next slice starts here (inclusive).
    from: DeliveryId,
    /// Nothing at or before this id is handed out (the stored cursor).
    after: Option<DeliveryId>,
    span_ms: i64,
    read: VecDeque<(DeliveryId, DeliveryState)>,
    /// The last slice reached the end of the window.
    ended: bool,
}

impl std::fmt::Debug for Walk {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Walk")
            .field("from", &self.from)
            .field("buffered", &self.read.len())
            .field("ended", &self.ended)
            .finish()
    }
}

impl Walk {
    /// The walk over `source`'s deliveries accepted in `window` of
    /// `event_type` (any: `None`), going on after `cursor`.
    pub fn new(
        source: TenantStore,
        (since_ms, until_ms): (i64, i64),
        event_type: Option<String>,
        cursor: Option<DeliveryId>,
    ) -> Walk {
        let from = match &cursor {
            Some(id) => id.clone(),
            None => DeliveryId::lowest_at(since_ms),
        };
        Walk {
            source,
            listing: Listing {
                status: None,
                event_type,
            },
            until_ms,
            from,
            after: cursor,
            span_ms: FIRST_SPAN_MS,
            read: VecDeque::new(),
            ended: false,
        }
    }

    /// Up to `n` more deliveries, oldest first; none once the window is
    /// walked. Reads storage.
    pub fn next(&mut self, n: usize) -> Result<Vec<(DeliveryId, DeliveryState)>> {
        while self.read.len() < n && !self.ended {
            self.read_slice()?;
        }
        let take = n.min(self.read.len());
        Ok(self.read.drain(..take).collect())
    }

    /// Whether every delivery of the window was handed out.
    pub fn is_done(&self) -> bool {
        self.ended && self.read.is_empty()
    }

    /// Puts deliveries handed out and not looked at back in front.
    pub fn unread(&mut self, rest: Vec<(DeliveryId, DeliveryState)>) {
        for entry in rest.into_iter().rev() {
            self.read.push_front(entry);
        }
    }

    /// Reads the next slice into `read`, or narrows the slice when it
    /// holds more than [`SLICE_LIMIT`].
    fn read_slice(&mut self) -> Result<()> {
        let from_ms = self.from.time_ms().unwrap_or(self.until_ms);
        let to_ms = from_ms.saturating_add(self.span_ms).min(self.until_ms);
        if from_ms >= self.until_ms {
            self.ended = true;
            return Ok(());
        }
        let before = DeliveryId::lowest_at(to_ms);
        // A slice one millisecond wide is read whole, however full.
        let limit = match self.span_ms {
            1 => usize::MAX,
            _ => SLICE_LIMIT + 1,
        };
        let mut rows =
            self.source
                .deliveries_in(&self.listing, (Some(&before), Some(&self.from)), limit)?;
        if rows.len() > SLICE_LIMIT && self.span_ms > 1 {
            self.span_ms = (self.span_ms / 2).max(1);
            return Ok(());
        }
        if rows.len() < SLICE_LIMIT / 4 {
            self.span_ms = (self.span_ms * 2).min(MAX_SPAN_MS);
        }
        rows.reverse();
        let after = self.after.clone();
        self.read.extend(rows.into_iter().filter(|(id, state)| {
            after.as_ref().is_none_or(|a| id > a) && state.redelivery_of.is_none()
        }));
        self.from = before;
        self.ended = to_ms >= self.until_ms;
        Ok(())
    }
}

/// Why a replay passed an event over.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Skip {
    /// The body field did not match.
    NotMatched,
    /// The route's filter did not pass it (or ran out of its steps).
    Filtered,
    /// The route has a delivery of it already.
    AlreadyOnRoute,
    /// Its body is no longer stored.
    Gone,
}

/// What a replay makes of one event.
pub enum Verdict {
    /// A new delivery on the route.
    Make(Box<NewDelivery>),
    /// Nothing.
    Skip(Skip),
}

/// The events a replay judged, in order, and those it left for later.
#[derive(Default)]
pub struct Judged {
    /// Each event judged, with what becomes of it.
    pub verdicts: Vec<(DeliveryId, DeliveryState, Verdict)>,
    /// The events not judged (handed back to the walk).
    pub rest: Vec<(DeliveryId, DeliveryState)>,
}

/// What a replay checks each event against: the route (its name, filter
/// and the tenant's hook path its filter sees) and the body field asked
/// for.
pub struct Judge {
    /// The route replayed into.
    pub route: String,
    /// Its filter now, if it has one.
    pub filter: Option<RouteFilter>,
    /// `/hooks/{tenant}`.
    pub path: String,
    /// The body field asked for: a JSON pointer and the value wanted.
    pub body: Option<(String, serde_json::Value)>,
}

impl Judge {
    /// What becomes of the events of `rows` (from `source`), in order, a
    /// new delivery due at `now_ms` for each that passes, until `most`
    /// deliveries are made or `steps_left` filter steps are spent: the
    /// events not judged then are handed back. Reads storage; call it off
    /// the async workers.
    pub fn judge(
        &self,
        source: &TenantStore,
        rows: Vec<(DeliveryId, DeliveryState)>,
        (now_ms, most, mut steps_left): (i64, usize, u64),
    ) -> Result<Judged> {
        let mut judged = Judged::default();
        let mut made = 0;
        let mut rows = rows.into_iter();
        while let Some((id, state)) = rows.next() {
            let out_of_steps = self.filter.is_some() && steps_left < MAX_FILTER_STEPS;
            if made >= most || out_of_steps {
                judged.rest.push((id, state));
                judged.rest.extend(rows);
                break;
            }
            let verdict = self.verdict(source, &id, &state, now_ms, &mut steps_left)?;
            made += usize::from(matches!(verdict, Verdict::Make(_)));
            judged.verdicts.push((id, state, verdict));
        }
        Ok(judged)
    }

    fn verdict(
        &self,
        source: &TenantStore,
        id: &DeliveryId,
        state: &DeliveryState,
        now_ms: i64,
        steps_left: &mut u64,
    ) -> Result<Verdict> {
        let on_route = state
            .routes
            .iter()
            .any(|r| r.route == self.route && r.delivery_id.is_some());
        if on_route {
            return Ok(Verdict::Skip(Skip::AlreadyOnRoute));
        }
        let Some(event) = source.event(id)? else {
            return Ok(Verdict::Skip(Skip::Gone));
        };
        let needs_json = self.body.is_some() || self.filter.is_some();
        let json: serde_json::Value = match needs_json {
            true => serde_json::from_slice(&event.body).unwrap_or_default(),
            false => serde_json::Value::Null,
        };
        if let Some((pointer, value)) = &self.body {
            if json.pointer(pointer) != Some(value) {
                return Ok(Verdict::Skip(Skip::NotMatched));
            }
        }
        if let Some(filter) = &self.filter {
            let headers: Vec<(&str, &str)> = event
                .meta
                .headers
                .iter()
                .map(|(name, value)| (name.as_str(), value.as_str()))
                .collect();
            let input = FilterInput {
                body: &json,
                headers: &headers,
                path: &self.path,
                query: &[],
            };
            let steps = Steps::new(MAX_FILTER_STEPS.min(*steps_left));
            let passes = filter.matches(&input, &steps);
            *steps_left -= MAX_FILTER_STEPS.min(*steps_left) - steps.left();
            if passes != Ok(true) {
                return Ok(Verdict::Skip(Skip::Filtered));
            }
        }
        Ok(Verdict::Make(Box::new(copy(event, state, now_ms))))
    }
}

/// The new delivery a replay makes of `event` (whose delivery on
/// `default` is in `state`): the same event id, headers, body and trace,
/// accepted now and due now. Its id names its place in the queue, so the
/// deliveries of one step queue in the order they were made.
fn copy(event: StoredEvent, state: &DeliveryState, now_ms: i64) -> NewDelivery {
    let meta = EventMeta {
        delivery_id: DeliveryId::due_at(now_ms),
        received_at_ms: now_ms,
        ..event.meta
    };
    NewDelivery {
        event_id: meta.event_id.clone(),
        meta,
        body: Bytes::from(event.body),
        due_ms: now_ms,
        content_key: None,
        copies: Vec::new(),
        receipt: Receipt::Queued,
        routes: Vec::new(),
        event_type: state.event_type.clone(),
    }
}
