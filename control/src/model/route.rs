//! A tenant's routes: what RouteService shows, creates, changes and tests.

use hookd_proto::domain::RateLimit;

/// When a route's failed forwards are retried, as the config file has it.
/// In a request an empty schedule, a 0 window and a negative jitter mean
/// the default; in a view every value is the one in force.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteRetry {
    /// Delays between attempts in seconds; the last repeats.
    pub schedule_secs: Vec<f64>,
    /// Seconds from acceptance after which a failing delivery is dead.
    pub window_secs: f64,
    /// Random spread of each delay, as a fraction.
    pub jitter: f64,
}

/// A route's circuit breaker. In a request 0 means the default.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RouteBreaker {
    /// Consecutive failures that open it.
    pub failure_threshold: u32,
    /// Seconds it stays open before a probe.
    pub cooldown_secs: f64,
}

/// A route as it runs, every default filled in.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteView {
    /// The tenant it belongs to.
    pub tenant_id: String,
    /// Its name; `default` is the tenant's own destination.
    pub name: String,
    /// Where it forwards; `None`: pulled.
    pub destination_url: Option<String>,
    /// Most forwards in flight at once; never 0.
    pub max_in_flight: u32,
    /// Its forwarding rate limit.
    pub delivery_rate: Option<RateLimit>,
    /// Its retries.
    pub retry: RouteRetry,
    /// Its breaker.
    pub breaker: RouteBreaker,
    /// Its filter as compact JSON; `None`: every event.
    pub filter_json: Option<String>,
    /// Its transform's source; `None`: none.
    pub transform: Option<String>,
    /// The version each attempt records of the transform that ran.
    pub transform_version: Option<u32>,
    /// Declared in the config file, hence read-only over the API.
    pub from_config: bool,
    /// The transform's CPU budget per run, in ms.
    pub transform_cpu_ms: u32,
    /// The transform's memory cap per run, in MiB.
    pub transform_memory_mib: u32,
    /// The forwards it may have in flight now (its adaptive limit, or
    /// `max_in_flight`); `None` while no forwarding runs for it.
    pub concurrency_limit: Option<u32>,
    /// Whether and how its limit adapts.
    pub concurrency: RouteConcurrency,
    /// An operator's hold on it.
    pub hold: RouteHold,
    /// How long after acceptance each delivery waits before its first
    /// attempt, in ms; 0: none.
    pub delay_ms: u64,
}

/// What a metrics query asks for. Validated: `step_ms` is a minute or an
/// hour, `span_ms` at most a day.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MetricsQuery {
    /// Width of each point (ms).
    pub step_ms: i64,
    /// How far back (ms).
    pub span_ms: i64,
}

/// One point of a route's metrics.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct MetricsPoint {
    /// When it starts (Unix ms).
    pub start_ms: i64,
    /// The tenant's new deliveries.
    pub accepted: u64,
    /// The tenant's duplicates.
    pub duplicates: u64,
    /// The tenant's refused requests.
    pub rejected: u64,
    /// The route's attempts the destination took.
    pub delivered: u64,
    /// The route's failed attempts.
    pub failed: u64,
    /// The route's dead-lettered deliveries.
    pub dead_lettered: u64,
    /// Half the attempts finished within this many ms (a bin's bound).
    pub latency_p50_ms: Option<u64>,
    /// 99 % of them did.
    pub latency_p99_ms: Option<u64>,
    /// The most of the route's deliveries held by a pause at once.
    pub held: u64,
}

/// A route's metrics: points oldest first, and its queue now.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RouteMetricsView {
    /// The tenant.
    pub tenant_id: String,
    /// The route.
    pub name: String,
    /// Oldest first.
    pub points: Vec<MetricsPoint>,
    /// Deliveries queued now.
    pub queue_depth: u64,
    /// Of those, held by a pause.
    pub held: u64,
    /// Dead letters now.
    pub dead_letters: u64,
    /// How long the oldest queued one has waited (ms).
    pub oldest_pending_age_ms: Option<i64>,
}

/// Longest ramp a resumed route may take to reach its full concurrency.
pub const MAX_RAMP_SECS: u32 = 3_600;

/// The ramp a resumed route takes unless the caller says.
pub const DEFAULT_RAMP_SECS: u32 = 60;

/// An operator's hold on a route (PauseRoute, ResumeRoute).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RouteHold {
    /// Paused: accepting and storing, sending nothing.
    pub paused: bool,
    /// When it was last paused or resumed (Unix ms); `None`: never.
    pub changed_at_ms: Option<i64>,
    /// While a resumed route ramps up, when the ramp ends (Unix ms).
    pub ramp_ends_at_ms: Option<i64>,
}

/// How a route's concurrency limit adapts (docs/routes.md, "Adaptive
/// concurrency"). In a request 0 means the default; in a view every value
/// is the one in force.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RouteConcurrency {
    /// The limit adapts between `min_in_flight` and `max_in_flight`.
    pub adaptive: bool,
    /// The floor of an adaptive limit; `None`: the default.
    pub min_in_flight: Option<u32>,
    /// Slower answers (ms) cut an adaptive limit; `None`: no target.
    pub latency_target_ms: Option<u32>,
}

/// A route to add. Numbers left at 0 in the request arrive as `None`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewRoute {
    /// A well-formed name (`[a-z0-9_-]{1,64}`); may be taken.
    pub name: String,
    /// An absolute URL, or `None` for a pulled route.
    pub destination_url: Option<String>,
    /// `None`: the default.
    pub max_in_flight: Option<u32>,
    /// `None`: no forwarding rate limit.
    pub delivery_rate: Option<RateLimit>,
    /// `None`: the default retries.
    pub retry: Option<RouteRetry>,
    /// `None`: the default breaker.
    pub breaker: Option<RouteBreaker>,
    /// The filter as JSON text, not yet checked; `None`: every event.
    pub filter_json: Option<String>,
    /// JavaScript source, not yet checked; `None`: none.
    pub transform: Option<String>,
    /// The transform's CPU budget in ms, not yet checked; `None`: the default.
    pub transform_cpu_ms: Option<u32>,
    /// The transform's memory cap in MiB, not yet checked; `None`: the default.
    pub transform_memory_mib: Option<u32>,
    /// Whether and how its limit adapts, not yet checked.
    pub concurrency: RouteConcurrency,
    /// Each delivery's wait before its first attempt, in ms; `None`: none.
    pub delay_ms: Option<u64>,
}

/// Changes to a route: `None` keeps a setting, `Some` replaces it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RoutePatch {
    /// `Some(None)` switches to pull mode.
    pub destination_url: Option<Option<String>>,
    /// `Some(None)`: back to the default.
    pub max_in_flight: Option<Option<u32>>,
    /// `Some(None)` removes the rate limit.
    pub delivery_rate: Option<Option<RateLimit>>,
    /// Replaces the retries whole.
    pub retry: Option<RouteRetry>,
    /// Replaces the breaker whole.
    pub breaker: Option<RouteBreaker>,
    /// `Some(None)` removes the filter.
    pub filter_json: Option<Option<String>>,
    /// `Some(None)` removes the transform.
    pub transform: Option<Option<String>>,
    /// `Some(None)`: back to the default budget.
    pub transform_cpu_ms: Option<Option<u32>>,
    /// `Some(None)`: back to the default memory cap.
    pub transform_memory_mib: Option<Option<u32>>,
    /// Turns adaptive concurrency on or off.
    pub adaptive_concurrency: Option<bool>,
    /// `Some(None)`: back to the default floor.
    pub min_in_flight: Option<Option<u32>>,
    /// `Some(None)` removes the latency target.
    pub latency_target_ms: Option<Option<u32>>,
    /// A new delay in ms; `Some(None)` removes it.
    pub delay_ms: Option<Option<u64>>,
}

impl RoutePatch {
    /// True when it sets something only an extra route has: the `default`
    /// route's settings are the tenant's, and it takes only a destination,
    /// a concurrency and a filter.
    pub fn touches_more_than_the_default_takes(&self) -> bool {
        self.delivery_rate.is_some()
            || self.retry.is_some()
            || self.breaker.is_some()
            || self.transform.is_some()
            || self.transform_cpu_ms.is_some()
            || self.transform_memory_mib.is_some()
            || self.adaptive_concurrency.is_some()
            || self.min_in_flight.is_some()
            || self.latency_target_ms.is_some()
    }
}

/// Which route a test runs.
#[derive(Debug, Clone, PartialEq)]
pub enum RouteUnderTest {
    /// A saved route, by name.
    Saved(String),
    /// One given in the request, not saved.
    Inline {
        /// The filter as JSON text; `None`: every event.
        filter_json: Option<String>,
        /// JavaScript source; `None`: none.
        transform: Option<String>,
        /// The destination whose path and query the transform sees.
        destination_url: Option<String>,
    },
}

/// An event given in full.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PastedEvent {
    /// The body as the sender sends it.
    pub body: Vec<u8>,
    /// Its headers, in order.
    pub headers: Vec<(String, String)>,
    /// The ingest path the filter sees; `None`: `/hooks/{tenant}`.
    pub path: Option<String>,
    /// The ingest query string, without `?`.
    pub query: String,
}

/// Which event a test runs on.
#[derive(Debug, Clone, PartialEq)]
pub enum TestEvent {
    /// A stored delivery of the tenant, of any route.
    Delivery(String),
    /// One pasted in the request.
    Pasted(PastedEvent),
}

/// A route test: which route, on which event.
#[derive(Debug, Clone, PartialEq)]
pub struct RouteTest {
    /// The route.
    pub route: RouteUnderTest,
    /// The event.
    pub event: TestEvent,
}

/// The request a route would send.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TestedRequest {
    /// The HTTP method.
    pub method: String,
    /// The path on the destination's origin.
    pub path: String,
    /// The query string without `?`.
    pub query: String,
    /// The headers, before hookd's signature headers.
    pub headers: Vec<(String, String)>,
    /// The body.
    pub body: Vec<u8>,
}

/// What a route test found. Nothing was sent or stored.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RouteTestResult {
    /// The filter passes the event (or there is none).
    pub matched: bool,
    /// The filter's verdict in words.
    pub filter_result: String,
    /// The transform dropped the event.
    pub dropped: bool,
    /// Why the transform failed, as a `transform_failed` reason says it.
    pub transform_error: Option<String>,
    /// The request that would be sent.
    pub request: Option<TestedRequest>,
    /// The version of the transform that ran.
    pub transform_version: Option<u32>,
}
