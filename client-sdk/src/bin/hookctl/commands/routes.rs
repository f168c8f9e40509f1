//! `hookctl routes list|get|create|update|delete|test|pause|resume|metrics`, `replay`,
//! `replays` and `replay-status|replay-pause|replay-resume|replay-cancel`, and how a route,
//! its metrics, a test's result and a replay are printed.

use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use hookd_sdk::client::{
    proto::{
        test_route_request::{Event, Route as RouteChoice},
        CreateRouteRequest, InlineRoute, PastedEvent, Replay, ReplayState, ReplayToRouteRequest,
        Route, RouteHeader, RouteMetrics, RouteMetricsPoint, RouteRate, TestRouteRequest,
        TestRouteResponse, UpdateRouteRequest,
    },
    HookdClient,
};
use serde_json::{json, Value};

use crate::{
    cli::{CreateRouteArgs, ReplayArgs, RouteCode, RoutesCommand, TestRouteArgs, UpdateRouteArgs},
    output::Output,
    view::{or_dash, short_name, when, View},
};

/// Runs one `routes` subcommand.
pub async fn run(client: &HookdClient, out: Output, command: RoutesCommand) -> anyhow::Result<()> {
    match command {
        RoutesCommand::List { tenant } => {
            let routes = client.list_routes(tenant).await?;
            Ok(out.list("routes", &routes, None)?)
        }
        RoutesCommand::Get(key) => Ok(out.record(&client.get_route(key.tenant, key.name).await?)?),
        RoutesCommand::Create(args) => {
            let route = client.create_route(create_request(args)?).await?;
            Ok(out.record(&route)?)
        }
        RoutesCommand::Update(args) => {
            let route = client.update_route(update_request(args)?).await?;
            Ok(out.record(&route)?)
        }
        RoutesCommand::Delete {
            tenant,
            name,
            force,
            yes: _,
        } => {
            client
                .delete_route(tenant.as_str(), name.as_str(), force)
                .await?;
            let text = format!("deleted route {name} of tenant {tenant} and its data");
            Ok(out.result(
                &text,
                &json!({"deleted": {"tenant": tenant, "route": name}}),
            )?)
        }
        RoutesCommand::Test(args) => {
            Ok(out.record(&client.test_route(test_request(args)?).await?)?)
        }
        RoutesCommand::Metrics {
            key,
            step_secs,
            span_secs,
        } => {
            let metrics = client
                .route_metrics(key.tenant, key.name, (step_secs, span_secs))
                .await?;
            if out.is_document() {
                return Ok(out.record(&metrics)?);
            }
            Ok(out.table(&metrics.points)?)
        }
        RoutesCommand::Pause(key) => {
            Ok(out.record(&client.pause_route(key.tenant, key.name).await?)?)
        }
        RoutesCommand::Resume { key, ramp_secs } => {
            let route = client.resume_route(key.tenant, key.name, ramp_secs).await?;
            Ok(out.record(&route)?)
        }
        RoutesCommand::Replay(args) => replay(client, out, args).await,
        RoutesCommand::Replays { tenant, route } => {
            let replays = client
                .list_replays(tenant, route.unwrap_or_default())
                .await?;
            Ok(out.list("replays", &replays, None)?)
        }
        RoutesCommand::ReplayStatus(key) => {
            Ok(out.record(&client.get_replay(key.tenant, key.replay_id).await?)?)
        }
        RoutesCommand::ReplayPause(key) => {
            Ok(out.record(&client.pause_replay(key.tenant, key.replay_id).await?)?)
        }
        RoutesCommand::ReplayResume(key) => {
            Ok(out.record(&client.resume_replay(key.tenant, key.replay_id).await?)?)
        }
        RoutesCommand::ReplayCancel(key) => {
            Ok(out.record(&client.cancel_replay(key.tenant, key.replay_id).await?)?)
        }
    }
}

/// Starts a replay and prints it, or in a dry run prints how many deliveries
/// it would make now.
async fn replay(client: &HookdClient, out: Output, args: ReplayArgs) -> anyhow::Result<()> {
    let (body_pointer, body_value_json) = args.body.unwrap_or_default();
    let request = ReplayToRouteRequest {
        tenant_id: args.tenant,
        route: args.route.clone(),
        since_unix_ms: args.since,
        until_unix_ms: args.until.unwrap_or_default(),
        event_type: args.event_type.unwrap_or_default(),
        body_pointer,
        body_value_json,
        rate_per_second: args.rate.unwrap_or_default(),
        dry_run: args.dry_run,
    };
    let answer = client.replay_to_route(request).await?;
    match answer.replay {
        Some(replay) => Ok(out.record(&replay)?),
        None => {
            let text = format!(
                "{} events would be replayed into {}",
                answer.count, args.route
            );
            Ok(out.result(
                &text,
                &json!({"dry_run": true, "route": args.route, "count": answer.count}),
            )?)
        }
    }
}

fn create_request(args: CreateRouteArgs) -> anyhow::Result<CreateRouteRequest> {
    Ok(CreateRouteRequest {
        tenant_id: args.tenant,
        name: args.name,
        destination_url: args.destination_url.unwrap_or_default(),
        max_in_flight: args.max_in_flight.unwrap_or_default(),
        delivery_rate: args.delivery_rate_per_sec.map(|per_sec| RouteRate {
            per_sec,
            burst: args.delivery_rate_burst.unwrap_or_default(),
        }),
        retry: None,
        breaker: None,
        filter_json: text(args.code.filter, args.code.filter_file)?.unwrap_or_default(),
        transform: text(args.code.transform, args.code.transform_file)?.unwrap_or_default(),
        transform_cpu_ms: args.transform_cpu_ms.unwrap_or_default(),
        transform_memory_mib: args.transform_memory_mib.unwrap_or_default(),
        adaptive_concurrency: args.adaptive_concurrency,
        min_in_flight: args.min_in_flight.unwrap_or_default(),
        latency_target_ms: args.latency_target_ms.unwrap_or_default(),
        delay_ms: args.delay_ms.unwrap_or_default(),
    })
}

fn update_request(args: UpdateRouteArgs) -> anyhow::Result<UpdateRouteRequest> {
    let cleared = |clear: bool, given: Option<String>| match clear {
        true => Some(String::new()),
        false => given,
    };
    Ok(UpdateRouteRequest {
        tenant_id: args.tenant,
        name: args.name,
        destination_url: cleared(args.pull, args.destination_url),
        max_in_flight: args.max_in_flight,
        delivery_rate: args.delivery_rate_per_sec.map(|per_sec| RouteRate {
            per_sec,
            burst: args.delivery_rate_burst.unwrap_or_default(),
        }),
        retry: None,
        breaker: None,
        filter_json: cleared(args.no_filter, text(args.filter, args.filter_file)?),
        transform: cleared(
            args.no_transform,
            text(args.transform, args.transform_file)?,
        ),
        transform_cpu_ms: args.transform_cpu_ms,
        transform_memory_mib: args.transform_memory_mib,
        adaptive_concurrency: (args.adaptive_concurrency || args.no_adaptive_concurrency)
            .then_some(args.adaptive_concurrency),
        min_in_flight: args.min_in_flight,
        latency_target_ms: args.latency_target_ms,
        delay_ms: args.delay_ms,
    })
}

fn test_request(args: TestRouteArgs) -> anyhow::Result<TestRouteRequest> {
    let RouteCode {
        filter,
        filter_file,
        transform,
        transform_file,
    } = args.code;
    let route = match args.name {
        Some(name) => {
            if filter.is_some()
                || filter_file.is_some()
                || transform.is_some()
                || transform_file.is_some()
            {
                bail!("give either a saved route's NAME or --filter/--transform, not both");
            }
            RouteChoice::Name(name)
        }
        None => RouteChoice::Inline(InlineRoute {
            filter_json: text(filter, filter_file)?.unwrap_or_default(),
            transform: text(transform, transform_file)?.unwrap_or_default(),
            destination_url: args.destination_url.unwrap_or_default(),
        }),
    };
    let event = match (args.delivery, args.body, args.body_file) {
        (Some(id), _, _) => Event::DeliveryId(id),
        (None, body, file) => {
            let body = match (body, file) {
                (Some(inline), _) => inline.into_bytes(),
                (None, Some(path)) => {
                    std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?
                }
                (None, None) => unreachable!("clap requires one of them"),
            };
            Event::Pasted(PastedEvent {
                body,
                headers: args
                    .headers
                    .iter()
                    .map(|h| header(h))
                    .collect::<anyhow::Result<_>>()?,
                path: args.path.unwrap_or_default(),
                query: args.query.unwrap_or_default(),
            })
        }
    };
    Ok(TestRouteRequest {
        tenant_id: args.tenant,
        route: Some(route),
        event: Some(event),
    })
}

/// `name: value`.
fn header(given: &str) -> anyhow::Result<RouteHeader> {
    let Some((name, value)) = given.split_once(':') else {
        bail!("--header {given:?} is not `name: value`");
    };
    Ok(RouteHeader {
        name: name.trim().to_owned(),
        value: value.trim().to_owned(),
    })
}

/// Text given inline or in a file.
fn text(inline: Option<String>, file: Option<PathBuf>) -> anyhow::Result<Option<String>> {
    match (inline, file) {
        (Some(text), _) => Ok(Some(text)),
        (None, Some(path)) => read(&path).map(Some),
        (None, None) => Ok(None),
    }
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}

impl View for Route {
    const COLUMNS: &'static [&'static str] = &[
        "NAME",
        "DESTINATION",
        "IN FLIGHT",
        "FILTER",
        "TRANSFORM",
        "SOURCE",
        "STATE",
    ];

    fn cells(&self) -> Vec<String> {
        let state = match (self.paused, self.ramp_ends_at_ms) {
            (true, _) => "paused",
            (false, 0) => "sending",
            (false, _) => "ramping up",
        };
        vec![
            self.name.clone(),
            match self.destination_url.is_empty() {
                true => "(pull)".to_owned(),
                false => self.destination_url.clone(),
            },
            self.max_in_flight.to_string(),
            or_dash(&self.filter_json),
            or_dash(&self.transform_version),
            if self.from_config { "config" } else { "api" }.to_owned(),
            state.to_owned(),
        ]
    }

    fn json(&self) -> Value {
        let retry = self.retry.clone().unwrap_or_default();
        let breaker = self.breaker.unwrap_or_default();
        json!({
            "tenant_id": self.tenant_id,
            "name": self.name,
            "destination_url": self.destination_url,
            "max_in_flight": self.max_in_flight,
            "delivery_rate": self.delivery_rate.map(|r| json!({"per_sec": r.per_sec, "burst": r.burst})),
            "retry": {
                "schedule_secs": retry.schedule_secs,
                "window_secs": retry.window_secs,
                "jitter": retry.jitter,
            },
            "breaker": {
                "failure_threshold": breaker.failure_threshold,
                "cooldown_secs": breaker.cooldown_secs,
            },
            "filter_json": self.filter_json,
            "transform": self.transform,
            "transform_version": self.transform_version,
            "transform_cpu_ms": self.transform_cpu_ms,
            "transform_memory_mib": self.transform_memory_mib,
            "from_config": self.from_config,
            "delay_ms": self.delay_ms,
            "paused": self.paused,
            "hold_changed_at_ms": self.hold_changed_at_ms,
            "ramp_ends_at_ms": self.ramp_ends_at_ms,
        })
    }
}

impl View for RouteMetricsPoint {
    const COLUMNS: &'static [&'static str] = &[
        "FROM",
        "ACCEPTED",
        "DUPLICATES",
        "REJECTED",
        "DELIVERED",
        "FAILED",
        "DEAD",
        "P50 MS",
        "P99 MS",
    ];

    fn cells(&self) -> Vec<String> {
        let ms = |v: u64| {
            if v == 0 {
                "-".to_owned()
            } else {
                v.to_string()
            }
        };
        vec![
            crate::view::when(self.start_unix_ms),
            self.accepted.to_string(),
            self.duplicates.to_string(),
            self.rejected.to_string(),
            self.delivered.to_string(),
            self.failed.to_string(),
            self.dead_lettered.to_string(),
            ms(self.latency_p50_ms),
            ms(self.latency_p99_ms),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "start_unix_ms": self.start_unix_ms,
            "accepted": self.accepted,
            "duplicates": self.duplicates,
            "rejected": self.rejected,
            "delivered": self.delivered,
            "failed": self.failed,
            "dead_lettered": self.dead_lettered,
            "latency_p50_ms": self.latency_p50_ms,
            "latency_p99_ms": self.latency_p99_ms,
        })
    }
}

impl View for RouteMetrics {
    const COLUMNS: &'static [&'static str] = &["ROUTE", "QUEUE", "HELD", "DEAD", "OLDEST MS"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.name.clone(),
            self.queue_depth.to_string(),
            self.held.to_string(),
            self.dead_letters.to_string(),
            self.oldest_pending_age_ms.to_string(),
        ]
    }

    fn json(&self) -> Value {
        let points: Vec<Value> = self.points.iter().map(View::json).collect();
        json!({
            "tenant_id": self.tenant_id,
            "name": self.name,
            "points": points,
            "queue_depth": self.queue_depth,
            "held": self.held,
            "dead_letters": self.dead_letters,
            "oldest_pending_age_ms": self.oldest_pending_age_ms,
        })
    }
}

/// `REPLAY_STATE_RUNNING` -> `running`.
fn replay_state_label(raw: i32) -> String {
    ReplayState::try_from(raw)
        .map(|state| short_name(state.as_str_name(), "REPLAY_STATE_"))
        .unwrap_or_else(|_| raw.to_string())
}

impl View for Replay {
    const COLUMNS: &'static [&'static str] =
        &["ID", "ROUTE", "STATE", "REPLAYED/SCANNED", "POSITION"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.id.clone(),
            self.route.clone(),
            replay_state_label(self.state),
            format!("{}/{}", self.replayed, self.scanned),
            when(self.position_unix_ms),
        ]
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let body = match self.body_pointer.as_str() {
            "" => "-".to_owned(),
            pointer => format!("{pointer}={}", self.body_value_json),
        };
        vec![
            ("replay", self.id.clone()),
            ("tenant", self.tenant_id.clone()),
            ("route", self.route.clone()),
            ("state", replay_state_label(self.state)),
            ("since", when(self.since_unix_ms)),
            ("until", when(self.until_unix_ms)),
            ("event type", or_dash(&self.event_type)),
            ("body", body),
            ("rate", format!("{}/s", self.rate_per_second)),
            ("created", when(self.created_at_ms)),
            ("finished", when(self.finished_at_ms)),
            ("position", when(self.position_unix_ms)),
            ("scanned", self.scanned.to_string()),
            ("replayed", self.replayed.to_string()),
            ("not matched", self.not_matched.to_string()),
            ("filtered", self.filtered.to_string()),
            ("already on route", self.already_on_route.to_string()),
            ("gone", self.gone.to_string()),
            ("last error", or_dash(&self.last_error)),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "id": self.id,
            "tenant_id": self.tenant_id,
            "route": self.route,
            "since_unix_ms": self.since_unix_ms,
            "until_unix_ms": self.until_unix_ms,
            "event_type": self.event_type,
            "body_pointer": self.body_pointer,
            "body_value_json": self.body_value_json,
            "rate_per_second": self.rate_per_second,
            "state": replay_state_label(self.state),
            "created_at_ms": self.created_at_ms,
            "finished_at_ms": self.finished_at_ms,
            "scanned": self.scanned,
            "replayed": self.replayed,
            "not_matched": self.not_matched,
            "filtered": self.filtered,
            "already_on_route": self.already_on_route,
            "gone": self.gone,
            "position_unix_ms": self.position_unix_ms,
            "last_error": self.last_error,
        })
    }
}

impl View for TestRouteResponse {
    const COLUMNS: &'static [&'static str] = &["FILTER", "TRANSFORM", "REQUEST"];

    fn cells(&self) -> Vec<String> {
        let transform = match (&self.transform_error, self.dropped) {
            (error, _) if !error.is_empty() => format!("failed: {error}"),
            (_, true) => "dropped the event".to_owned(),
            _ => or_dash(&self.transform_version),
        };
        let request = self.request.as_ref().map_or("-".to_owned(), |r| {
            let query = if r.query.is_empty() {
                String::new()
            } else {
                format!("?{}", r.query)
            };
            format!("{} {}{} ({} bytes)", r.method, r.path, query, r.body.len())
        });
        vec![self.filter_result.clone(), transform, request]
    }

    fn json(&self) -> Value {
        let request = self.request.as_ref().map(|r| {
            let headers: Vec<Value> = r
                .headers
                .iter()
                .map(|h| json!({"name": h.name, "value": h.value}))
                .collect();
            json!({
                "method": r.method,
                "path": r.path,
                "query": r.query,
                "headers": headers,
                "body": String::from_utf8_lossy(&r.body),
            })
        });
        json!({
            "matched": self.matched,
            "filter_result": self.filter_result,
            "dropped": self.dropped,
            "transform_error": self.transform_error,
            "transform_version": self.transform_version,
            "request": request,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_replay_reads_as_its_state_progress_and_position() {
        let replay = Replay {
            id: "rpl_1".into(),
            route: "crm".into(),
            state: ReplayState::Paused.into(),
            scanned: 60,
            replayed: 12,
            position_unix_ms: 1_714_564_800_999,
            body_pointer: "/data/amount".into(),
            body_value_json: "7".into(),
            ..Default::default()
        };
        assert_eq!(
            replay.cells(),
            ["rpl_1", "crm", "paused", "12/60", "2024-05-01T12:00:00Z"]
        );
        let field = |name: &str| {
            replay
                .fields()
                .into_iter()
                .find(|(n, _)| *n == name)
                .map(|(_, value)| value)
        };
        assert_eq!(field("body").as_deref(), Some("/data/amount=7"));
        assert_eq!(field("finished").as_deref(), Some("-"));
        assert_eq!(replay.json()["state"], "paused");
        assert_eq!(replay_state_label(99), "99");
    }
}
