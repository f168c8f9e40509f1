//! Flags of the commands that inspect and act on deliveries: `deliveries` and
//! `dead-letters`, with their shared filter and paging flags and time parsing.

use clap::{Args, Subcommand, ValueEnum};
use hookd_sdk::client::proto::DeliveryStatus;
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

/// `hookctl deliveries ...`
#[derive(Debug, Subcommand)]
pub enum DeliveriesCommand {
    /// List a tenant's deliveries, newest first, optionally filtered.
    List {
        /// The tenant id.
        tenant: String,
        /// Only deliveries in this status.
        #[arg(long, value_enum)]
        status: Option<StatusArg>,
        /// The route whose deliveries (default: `default`).
        #[arg(long)]
        route: Option<String>,
        /// Only the deliveries of this event (the sender's event id).
        #[arg(long)]
        event_id: Option<String>,
        /// Only those of events of this type.
        #[arg(long)]
        event_type: Option<String>,
        /// Only those received at or after this time (Unix ms or RFC 3339).
        #[arg(long, value_parser = parse_time)]
        since: Option<i64>,
        /// Only those received before this time (Unix ms or RFC 3339).
        #[arg(long, value_parser = parse_time)]
        until: Option<i64>,
        /// Only those whose JSON body has a value at a JSON pointer:
        /// `/data/object/customer="cus_123"` (the value as JSON). Reads
        /// bodies: needs --since and --until at most 24 h apart.
        #[arg(long, value_parser = parse_body_field, requires_all = ["since", "until"])]
        body: Option<(String, String)>,
        /// Paging flags.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Cancel pending deliveries (new, held or waiting for a retry), by id or
    /// by filter: each becomes a dead letter with reason `cancelled`, nothing
    /// is sent; `dead-letters redeliver` brings one back.
    Cancel {
        /// The tenant id.
        tenant: String,
        /// Delivery ids (`dlv_...`); or `--all-pending`.
        delivery_ids: Vec<String>,
        /// Every pending delivery of the route the filters pass (at most
        /// 1,000 per call, the soonest due first).
        #[arg(long, conflicts_with = "delivery_ids")]
        all_pending: bool,
        /// The route (default: any route for ids, `default` for
        /// `--all-pending`).
        #[arg(long)]
        route: Option<String>,
        /// With `--all-pending`: count them and change nothing.
        #[arg(long, requires = "all_pending")]
        dry_run: bool,
        /// With `--all-pending`: only those of events of this type.
        #[arg(long, requires = "all_pending")]
        event_type: Option<String>,
        /// With `--all-pending`: only those received at or after this time
        /// (Unix ms or RFC 3339).
        #[arg(long, requires = "all_pending", value_parser = parse_time)]
        since: Option<i64>,
        /// With `--all-pending`: only those received before this time.
        #[arg(long, requires = "all_pending", value_parser = parse_time)]
        until: Option<i64>,
        /// Confirm (not needed with --dry-run).
        #[arg(long, required_unless_present = "dry_run")]
        yes: bool,
    },
    /// Find a delivery id or an event id across every tenant the token may
    /// read (the admin token: all of them).
    Search {
        /// A delivery id (`dlv_...`) or a sender's event id.
        id: String,
    },
    /// Show one delivery with all its attempts.
    Get {
        /// The tenant id.
        tenant: String,
        /// The delivery id (`dlv_...`).
        delivery_id: String,
    },
    /// Show the event a delivery carries: its stored headers and its body
    /// exactly as received.
    Event {
        /// The tenant id.
        tenant: String,
        /// The delivery id (`dlv_...`).
        delivery_id: String,
    },
    /// Attempt deliveries waiting for their next retry now (after the
    /// destination came back), by id or the route's whole backlog; their
    /// attempt counts do not change.
    RetryNow {
        /// The tenant id.
        tenant: String,
        /// Delivery ids (`dlv_...`); or `--all-waiting`.
        delivery_ids: Vec<String>,
        /// Every delivery of the route waiting for its retry (at most 1,000
        /// per call, the soonest due first).
        #[arg(long, conflicts_with = "delivery_ids")]
        all_waiting: bool,
        /// The route (default: any route for ids, `default` for
        /// `--all-waiting`).
        #[arg(long)]
        route: Option<String>,
        /// With `--all-waiting`: count them and change nothing.
        #[arg(long, requires = "all_waiting")]
        dry_run: bool,
        /// With `--all-waiting`: only those of events of this type.
        #[arg(long, requires = "all_waiting")]
        event_type: Option<String>,
        /// With `--all-waiting`: only those received at or after this time
        /// (Unix ms or RFC 3339).
        #[arg(long, requires = "all_waiting", value_parser = parse_time)]
        since: Option<i64>,
        /// With `--all-waiting`: only those received before this time.
        #[arg(long, requires = "all_waiting", value_parser = parse_time)]
        until: Option<i64>,
    },
}

/// `hookctl dead-letters ...`
#[derive(Debug, Subcommand)]
pub enum DeadLettersCommand {
    /// List a tenant's dead letters, most recently dead first.
    List {
        /// The tenant id.
        tenant: String,
        /// Which dead letters.
        #[command(flatten)]
        filter: FilterArgs,
        /// Paging flags.
        #[command(flatten)]
        page: PageArgs,
    },
    /// Queue dead (or delivered) deliveries again, by id or by filter.
    Redeliver {
        /// The tenant id.
        tenant: String,
        /// Deliveries to redeliver.
        #[arg(
            required_unless_present = "all_matching",
            conflicts_with = "all_matching"
        )]
        delivery_ids: Vec<String>,
        /// Redeliver every dead letter matching the filter flags.
        #[arg(long)]
        all_matching: bool,
        /// Which dead letters, with --all-matching; --route also holds for ids.
        #[command(flatten)]
        filter: FilterArgs,
        /// With --all-matching: redeliver deliveries in this final status
        /// (default: dead).
        #[arg(long, value_enum, requires = "all_matching")]
        status: Option<FinalStatusArg>,
        /// With --all-matching: only events of exactly this type.
        #[arg(long, requires = "all_matching")]
        event_type: Option<String>,
        /// With --all-matching: change nothing, print how many would be redelivered.
        #[arg(long, requires = "all_matching")]
        dry_run: bool,
    },
    /// Delete dead letters and their bodies for good, by id or all.
    Purge {
        /// The tenant id.
        tenant: String,
        /// Dead letters to purge.
        #[arg(required_unless_present = "all", conflicts_with = "all")]
        delivery_ids: Vec<String>,
        /// Purge every dead letter of the tenant.
        #[arg(long)]
        all: bool,
        /// With --all: only those dead before this time (Unix ms or RFC 3339).
        #[arg(long, requires = "all", value_parser = parse_time)]
        until: Option<i64>,
        /// The route whose dead letters (with --all default: `default`; with ids:
        /// any route).
        #[arg(long)]
        route: Option<String>,
        /// Confirm the purge.
        #[arg(long, required = true)]
        yes: bool,
    },
}

/// Dead-letter filter flags, shared by list and redeliver.
#[derive(Debug, Args)]
pub struct FilterArgs {
    /// The route whose dead letters (default: `default`).
    #[arg(long)]
    pub route: Option<String>,
    /// Only those dead at or after this time (Unix ms or RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub since: Option<i64>,
    /// Only those dead before this time (Unix ms or RFC 3339).
    #[arg(long, value_parser = parse_time)]
    pub until: Option<i64>,
    /// Only those whose reason contains this text, ignoring case.
    #[arg(long)]
    pub reason_contains: Option<String>,
}

/// Paging flags: one page by default, or `--all` pages.
#[derive(Debug, Args)]
pub struct PageArgs {
    /// Items per page (at most 1000; default 100).
    #[arg(long, default_value_t = 0, hide_default_value = true)]
    pub page_size: u32,
    /// Continue from the token printed with the previous page.
    #[arg(long, default_value = "", hide_default_value = true)]
    pub page_token: String,
    /// Follow every page to the last.
    #[arg(long, conflicts_with = "page_token")]
    pub all: bool,
}

/// Delivery statuses as typed on the command line and printed in tables.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum StatusArg {
    /// Waiting for a forward attempt or to be pulled.
    Pending,
    /// Delivered (2xx or acked).
    Delivered,
    /// Given up on: a dead letter.
    Dead,
    /// Superseded by a redelivery.
    Redelivered,
    /// The default route's filter did not pass it (another route's did).
    Filtered,
    /// No route's filter passed it.
    Unrouted,
    /// The route's transform failed: a dead letter.
    TransformFailed,
    /// The route's transform dropped it.
    Dropped,
    /// Waiting on a paused route.
    Held,
}

impl From<StatusArg> for DeliveryStatus {
    fn from(status: StatusArg) -> DeliveryStatus {
        match status {
            StatusArg::Pending => DeliveryStatus::Pending,
            StatusArg::Delivered => DeliveryStatus::Delivered,
            StatusArg::Dead => DeliveryStatus::Dead,
            StatusArg::Redelivered => DeliveryStatus::Redelivered,
            StatusArg::Filtered => DeliveryStatus::Filtered,
            StatusArg::Unrouted => DeliveryStatus::Unrouted,
            StatusArg::TransformFailed => DeliveryStatus::TransformFailed,
            StatusArg::Dropped => DeliveryStatus::Dropped,
            StatusArg::Held => DeliveryStatus::Held,
        }
    }
}

/// The final statuses a redelivery by filter takes.
#[derive(Debug, Clone, Copy, ValueEnum)]
pub enum FinalStatusArg {
    /// Dead letters.
    Dead,
    /// Delivered ones not redelivered yet.
    Delivered,
}

impl From<FinalStatusArg> for DeliveryStatus {
    fn from(status: FinalStatusArg) -> DeliveryStatus {
        match status {
            FinalStatusArg::Dead => DeliveryStatus::Dead,
            FinalStatusArg::Delivered => DeliveryStatus::Delivered,
        }
    }
}

/// `POINTER=JSON`, split at the first `=`.
pub fn parse_body_field(text: &str) -> Result<(String, String), String> {
    match text.split_once('=') {
        Some((pointer, value)) if pointer.starts_with('/') => {
            Ok((pointer.to_owned(), value.to_owned()))
        }
        _ => Err(format!(
            "{text:?} is not POINTER=JSON: /data/object/customer=\"cus_123\""
        )),
    }
}

/// Accepts Unix milliseconds or an RFC 3339 time such as 2024-05-01T12:00:00Z.
pub fn parse_time(text: &str) -> Result<i64, String> {
    if let Ok(unix_ms) = text.parse::<i64>() {
        return Ok(unix_ms);
    }
    let when = OffsetDateTime::parse(text, &Rfc3339)
        .map_err(|_| format!("{text:?} is neither Unix milliseconds nor an RFC 3339 time"))?;
    i64::try_from(when.unix_timestamp_nanos() / 1_000_000)
        .map_err(|_| format!("{text:?} is out of range"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_unix_ms_or_rfc3339() {
        assert_eq!(parse_time("1714564800000"), Ok(1_714_564_800_000));
        assert_eq!(parse_time("2024-05-01T12:00:00Z"), Ok(1_714_564_800_000));
        assert_eq!(
            parse_time("2024-05-01T14:00:00.5+02:00"),
            Ok(1_714_564_800_500)
        );
        assert!(parse_time("yesterday").is_err());
    }
}
