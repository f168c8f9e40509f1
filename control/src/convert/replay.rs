//! ReplayToRoute and the replay calls: requests checked, replays shown.

use hookd_proto::{domain::DEFAULT_ROUTE, v1 as pb};

use super::{delivery::body_field, non_empty, route::route_name, time_bound};
use crate::{
    error::Error,
    model::{
        NewReplay, ReplayCounts, ReplayStarted, ReplayState, ReplayView, DEFAULT_REPLAY_RATE,
        MAX_REPLAY_RATE,
    },
    Result,
};

/// A replay asked for: a named route other than `default`, a window with a
/// start and not upside down, a body field with a JSON value, a rate of at
/// most [`MAX_REPLAY_RATE`].
pub(crate) fn new_replay(r: &pb::ReplayToRouteRequest) -> Result<NewReplay> {
    let route = route_name(&r.route)?;
    if route == DEFAULT_ROUTE {
        return Err(Error::InvalidArgument(
            "route: every accepted event has its delivery on default already; replay into another route, or redeliver default's dead letters".into(),
        ));
    }
    let Some(since_ms) = time_bound("since_unix_ms", r.since_unix_ms)? else {
        return Err(Error::InvalidArgument(
            "since_unix_ms is required: the start of the window to replay".into(),
        ));
    };
    let until_ms = time_bound("until_unix_ms", r.until_unix_ms)?;
    if until_ms.is_some_and(|until| until <= since_ms) {
        return Err(Error::InvalidArgument(
            "until_unix_ms is not after since_unix_ms".into(),
        ));
    }
    let rate_per_sec = match r.rate_per_second {
        0 => DEFAULT_REPLAY_RATE,
        rate if rate <= MAX_REPLAY_RATE => rate,
        rate => {
            return Err(Error::InvalidArgument(format!(
                "rate_per_second: {rate} is more than {MAX_REPLAY_RATE}"
            )))
        }
    };
    Ok(NewReplay {
        route,
        since_ms,
        until_ms,
        event_type: non_empty(r.event_type.clone()),
        body: body_field(&r.body_pointer, &r.body_value_json)?,
        rate_per_sec,
        dry_run: r.dry_run,
    })
}

/// A replay id as asked for: `rpl_` and more.
pub(crate) fn replay_id(value: &str) -> Result<String> {
    match value.strip_prefix("rpl_") {
        Some(rest) if !rest.is_empty() && rest.chars().all(|c| c.is_ascii_alphanumeric()) => {
            Ok(value.to_owned())
        }
        _ => Err(Error::InvalidArgument(format!(
            "replay_id {value:?} is not a replay id (rpl_...)"
        ))),
    }
}

impl From<ReplayState> for pb::ReplayState {
    fn from(state: ReplayState) -> Self {
        match state {
            ReplayState::Running => pb::ReplayState::Running,
            ReplayState::Paused => pb::ReplayState::Paused,
            ReplayState::Cancelled => pb::ReplayState::Cancelled,
            ReplayState::Done => pb::ReplayState::Done,
            ReplayState::Failed => pb::ReplayState::Failed,
        }
    }
}

impl From<ReplayView> for pb::Replay {
    fn from(r: ReplayView) -> Self {
        let ReplayCounts {
            scanned,
            replayed,
            not_matched,
            filtered,
            already_on_route,
            gone,
        } = r.counts;
        let (body_pointer, body_value_json) = match r.body {
            Some(field) => (field.pointer, field.value.to_string()),
            None => Default::default(),
        };
        pb::Replay {
            id: r.id,
            tenant_id: r.tenant_id,
            route: r.route,
            since_unix_ms: r.since_ms,
            until_unix_ms: r.until_ms,
            event_type: r.event_type.unwrap_or_default(),
            body_pointer,
            body_value_json,
            rate_per_second: r.rate_per_sec,
            state: pb::ReplayState::from(r.state).into(),
            created_at_ms: r.created_at_ms,
            finished_at_ms: r.finished_at_ms.unwrap_or_default(),
            scanned,
            replayed,
            not_matched,
            filtered,
            already_on_route,
            gone,
            position_unix_ms: r.position_ms.unwrap_or_default(),
            last_error: r.last_error.unwrap_or_default(),
        }
    }
}

impl From<ReplayStarted> for pb::ReplayToRouteResponse {
    fn from(r: ReplayStarted) -> Self {
        pb::ReplayToRouteResponse {
            count: r.count,
            replay: r.replay.map(Into::into),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> pb::ReplayToRouteRequest {
        pb::ReplayToRouteRequest {
            tenant_id: "acme".into(),
            route: "crm".into(),
            since_unix_ms: 1_000,
            ..Default::default()
        }
    }

    #[test]
    fn a_replay_needs_a_named_route_a_start_and_a_rate_in_bounds() {
        let plain = new_replay(&asked()).unwrap();
        assert_eq!(plain.rate_per_sec, DEFAULT_REPLAY_RATE);
        assert_eq!((plain.since_ms, plain.until_ms), (1_000, None));
        let refused = |r: pb::ReplayToRouteRequest| match new_replay(&r) {
            Err(Error::InvalidArgument(message)) => message,
            other => panic!("{other:?}"),
        };
        let default = refused(pb::ReplayToRouteRequest {
            route: DEFAULT_ROUTE.into(),
            ..asked()
        });
        assert!(default.contains("default"), "{default}");
        let start = refused(pb::ReplayToRouteRequest {
            since_unix_ms: 0,
            ..asked()
        });
        assert!(start.contains("since_unix_ms is required"), "{start}");
        let upside_down = refused(pb::ReplayToRouteRequest {
            until_unix_ms: 1_000,
            ..asked()
        });
        assert!(upside_down.contains("not after"), "{upside_down}");
        let fast = refused(pb::ReplayToRouteRequest {
            rate_per_second: MAX_REPLAY_RATE + 1,
            ..asked()
        });
        assert!(fast.contains("rate_per_second"), "{fast}");
        let body = refused(pb::ReplayToRouteRequest {
            body_pointer: "/a".into(),
            body_value_json: "cus_1".into(),
            ..asked()
        });
        assert!(body.contains("not JSON"), "{body}");
    }

    #[test]
    fn replay_ids_are_checked() {
        assert!(replay_id("rpl_01J0000000000000000000000").is_ok());
        assert!(replay_id("rpl_").is_err());
        assert!(replay_id("dlv_1").is_err());
        assert!(replay_id("rpl_../x").is_err());
    }
}
