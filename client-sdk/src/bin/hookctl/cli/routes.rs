//! Flags of `hookctl routes`: a tenant's routes, their filters and transforms (each
//! inline or from a file), testing one on a stored or pasted event, and replaying
//! stored events into one.

use std::path::PathBuf;

use clap::{ArgGroup, Args, Subcommand};

use super::deliveries::{parse_body_field, parse_time};

/// `hookctl routes ...`
#[derive(Debug, Subcommand)]
pub enum RoutesCommand {
    /// List a tenant's routes, `default` (its own destination) first.
    List {
        /// The tenant id.
        tenant: String,
    },
    /// Show one route with its filter and transform.
    Get(RouteKey),
    /// Add a route; deliveries accepted from then on get a copy on it.
    Create(CreateRouteArgs),
    /// Change some settings of a route; unset flags keep their value.
    Update(UpdateRouteArgs),
    /// Delete a route with its deliveries and dead letters. Cannot be undone.
    Delete {
        /// The tenant id.
        tenant: String,
        /// The route's name.
        name: String,
        /// Delete even while deliveries are queued on it (they are dropped unsent).
        #[arg(long)]
        force: bool,
        /// Confirm the deletion.
        #[arg(long, required = true)]
        yes: bool,
    },
    /// Run a route's filter and transform on a stored delivery or a given body and
    /// show the request it would send; sends and stores nothing.
    Test(TestRouteArgs),
    /// Hold a route: events are still accepted and stored on it, nothing is
    /// sent until it is resumed (every replica within a second).
    Pause(RouteKey),
    /// A route's numbers by minute or hour (accepted, delivered, failed,
    /// latency) and its queue now.
    Metrics {
        #[command(flatten)]
        key: RouteKey,
        /// Width of each row in seconds: 60 or 3600.
        #[arg(long, default_value_t = 60)]
        step_secs: u32,
        /// How far back in seconds, at most 86400.
        #[arg(long, default_value_t = 3600)]
        span_secs: u32,
    },
    /// Let a paused route send again, ramping up rather than all at once.
    Resume {
        #[command(flatten)]
        key: RouteKey,
        /// Seconds over which its forwards in flight rise from one to its
        /// limit, 0-3600 (default 60; 0: at once).
        #[arg(long)]
        ramp_secs: Option<u32>,
    },
    /// Replay the events a tenant accepted in a window into a route, at a rate.
    ///
    /// Oldest first, each event gets one new delivery on the route (not `default`)
    /// if the route's filter passes it now and the route has none of it yet;
    /// --dry-run counts them.
    Replay(ReplayArgs),
    /// List a tenant's replays, newest first, with how far each got.
    Replays {
        /// The tenant id.
        tenant: String,
        /// Only the replays into this route.
        #[arg(long)]
        route: Option<String>,
    },
    /// Show one replay: its window, filters and rate, and what became of the
    /// events it looked at.
    ReplayStatus(ReplayKey),
    /// Stop a running replay where it is.
    ReplayPause(ReplayKey),
    /// Run a paused (or failed) replay on from where it stopped.
    ReplayResume(ReplayKey),
    /// End a replay for good; the deliveries it made stay.
    ReplayCancel(ReplayKey),
}

/// One route of a tenant.
#[derive(Debug, Args)]
pub struct RouteKey {
    /// The tenant id.
    pub tenant: String,
    /// The route's name; `default` is the tenant's own destination.
    pub name: String,
}

/// `hookctl routes replay ...`
#[derive(Debug, Args)]
pub struct ReplayArgs {
    /// The tenant id.
    pub tenant: String,
    /// The route to replay into; not `default`.
    pub route: String,
    /// The events accepted at or after this time (Unix ms or RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub since: i64,
    /// And before this time (Unix ms or RFC 3339; default and latest: now).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<i64>,
    /// Only events of this type.
    #[arg(long = "type", alias = "event-type", value_name = "TYPE")]
    pub event_type: Option<String>,
    /// Only events whose JSON body has a value at a JSON pointer:
    /// `/data/object/customer="cus_123"` (the value as JSON).
    #[arg(long, value_parser = parse_body_field)]
    pub body: Option<(String, String)>,
    /// At most this many deliveries made a second, 1-5000 (default 100).
    #[arg(long, value_name = "PER_SEC", value_parser = clap::value_parser!(u32).range(1..=5000))]
    pub rate: Option<u32>,
    /// Count the deliveries it would make now; make nothing.
    #[arg(long)]
    pub dry_run: bool,
}

/// One replay of a tenant.
#[derive(Debug, Args)]
pub struct ReplayKey {
    /// The tenant id.
    pub tenant: String,
    /// The replay id (`rpl_...`).
    pub replay_id: String,
}

/// A filter and a transform, each inline or read from a file.
#[derive(Debug, Args)]
pub struct RouteCode {
    /// The filter as JSON, inline (docs/routes.md, "Filters").
    #[arg(long, conflicts_with = "filter_file")]
    pub filter: Option<String>,
    /// Read the filter from this JSON file.
    #[arg(long)]
    pub filter_file: Option<PathBuf>,
    /// The JavaScript transform, inline (docs/routes.md, "Transforms").
    #[arg(long, conflicts_with = "transform_file")]
    pub transform: Option<String>,
    /// Read the transform from this file.
    #[arg(long)]
    pub transform_file: Option<PathBuf>,
}

/// Settings of a new route; unset flags take hookd's defaults.
#[derive(Debug, Args)]
pub struct CreateRouteArgs {
    /// The tenant id.
    pub tenant: String,
    /// The route's name, `[a-z0-9_-]{1,64}`.
    pub name: String,
    /// Where it forwards; omit for a pulled route.
    #[arg(long)]
    pub destination_url: Option<String>,
    /// Most forwards at once (default 8).
    #[arg(long)]
    pub max_in_flight: Option<u32>,
    /// Forwards per second (default: no limit).
    #[arg(long)]
    pub delivery_rate_per_sec: Option<f64>,
    /// Burst above the forwarding rate.
    #[arg(long, requires = "delivery_rate_per_sec")]
    pub delivery_rate_burst: Option<u32>,
    /// Its filter and transform.
    #[command(flatten)]
    pub code: RouteCode,
    /// The transform's CPU budget per run in ms, 1-1000 (default 50).
    #[arg(long)]
    pub transform_cpu_ms: Option<u32>,
    /// The transform's memory cap per run in MiB, 1-256 (default 16).
    #[arg(long)]
    pub transform_memory_mib: Option<u32>,
    /// The limit adapts to the destination between --min-in-flight and
    /// --max-in-flight (default: it stays at --max-in-flight).
    #[arg(long)]
    pub adaptive_concurrency: bool,
    /// The floor of an adaptive limit, 1 to --max-in-flight (default 1).
    #[arg(long)]
    pub min_in_flight: Option<u32>,
    /// Answers slower than this many ms cut an adaptive limit, 1-600000
    /// (default: latency is no signal).
    #[arg(long)]
    pub latency_target_ms: Option<u32>,
    /// Hold each delivery this many ms after acceptance before its first
    /// attempt, up to 86400000 (24 h; default: none).
    #[arg(long)]
    pub delay_ms: Option<u64>,
}

/// Changes to a route; at least one is required.
#[derive(Debug, Args)]
#[command(
    group(ArgGroup::new("change").required(true).multiple(true)),
    override_usage = "hookctl routes update <TENANT> <NAME> --<SETTING> <VALUE>... [OPTIONS]"
)]
pub struct UpdateRouteArgs {
    /// The tenant id.
    pub tenant: String,
    /// The route's name.
    pub name: String,
    /// New destination URL.
    #[arg(long, group = "change")]
    pub destination_url: Option<String>,
    /// Switch to pull mode (no destination).
    #[arg(long, group = "change", conflicts_with = "destination_url")]
    pub pull: bool,
    /// New forwarding concurrency; 0: the default.
    #[arg(long, group = "change")]
    pub max_in_flight: Option<u32>,
    /// New forwarding rate per second; 0 removes it.
    #[arg(long, group = "change")]
    pub delivery_rate_per_sec: Option<f64>,
    /// New burst above the forwarding rate.
    #[arg(long, requires = "delivery_rate_per_sec")]
    pub delivery_rate_burst: Option<u32>,
    /// New filter, inline.
    #[arg(long, group = "change", conflicts_with_all = ["filter_file", "no_filter"])]
    pub filter: Option<String>,
    /// New filter, from this JSON file.
    #[arg(long, group = "change", conflicts_with = "no_filter")]
    pub filter_file: Option<PathBuf>,
    /// Remove the filter: the route gets every event.
    #[arg(long, group = "change")]
    pub no_filter: bool,
    /// New transform, inline.
    #[arg(long, group = "change", conflicts_with_all = ["transform_file", "no_transform"])]
    pub transform: Option<String>,
    /// New transform, from this file.
    #[arg(long, group = "change", conflicts_with = "no_transform")]
    pub transform_file: Option<PathBuf>,
    /// Remove the transform: requests go as stored.
    #[arg(long, group = "change")]
    pub no_transform: bool,
    /// New transform CPU budget per run in ms; 0: the default, 50.
    #[arg(long, group = "change")]
    pub transform_cpu_ms: Option<u32>,
    /// New transform memory cap per run in MiB; 0: the default, 16.
    #[arg(long, group = "change")]
    pub transform_memory_mib: Option<u32>,
    /// Turn adaptive concurrency on.
    #[arg(long, group = "change", conflicts_with = "no_adaptive_concurrency")]
    pub adaptive_concurrency: bool,
    /// Turn adaptive concurrency off: the limit stays at max_in_flight.
    #[arg(long, group = "change")]
    pub no_adaptive_concurrency: bool,
    /// New floor of an adaptive limit; 0: the default, 1.
    #[arg(long, group = "change")]
    pub min_in_flight: Option<u32>,
    /// New latency target in ms; 0 removes it.
    #[arg(long, group = "change")]
    pub latency_target_ms: Option<u32>,
    /// New delay before each delivery's first attempt in ms; 0 removes it.
    #[arg(long, group = "change")]
    pub delay_ms: Option<u64>,
}

/// `hookctl routes test ...`
#[derive(Debug, Args)]
#[command(group(ArgGroup::new("event").required(true).args(["delivery", "body", "body_file"])))]
pub struct TestRouteArgs {
    /// The tenant id.
    pub tenant: String,
    /// A saved route; omit to test --filter/--transform as given (not saved).
    pub name: Option<String>,
    /// Test on this stored delivery of the tenant (dlv_...).
    #[arg(long)]
    pub delivery: Option<String>,
    /// Test on this body, inline.
    #[arg(long)]
    pub body: Option<String>,
    /// Test on the body in this file, byte for byte.
    #[arg(long)]
    pub body_file: Option<PathBuf>,
    /// A header of the given body, `name: value`; repeat for several.
    #[arg(long = "header", value_name = "NAME: VALUE")]
    pub headers: Vec<String>,
    /// The ingest path the filter sees (default `/hooks/<tenant>`).
    #[arg(long)]
    pub path: Option<String>,
    /// The ingest query string the filter sees, without `?`.
    #[arg(long)]
    pub query: Option<String>,
    /// The destination whose path the unsaved transform sees.
    #[arg(long, conflicts_with = "name")]
    pub destination_url: Option<String>,
    /// The unsaved filter and transform (without NAME).
    #[command(flatten)]
    pub code: RouteCode,
}
