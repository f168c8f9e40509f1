//! The deliveries a Redeliver or PurgeDeadLetters request selects, the route
//! it names and the dead-letter filter, checked so the backend can act on them.

use std::collections::HashSet;

use hookd_proto::{
    domain::{TenantId, DEFAULT_ROUTE},
    v1 as pb,
};

use super::{non_empty, time_bound};
use crate::{
    error::Error,
    model::{
        Cancel, DeadLetterFilter, DeliveryStatus, Matching, Pick, RetryNow, Selection, Waiting,
        WaitingFilter,
    },
    Result,
};

/// A request's `route`: `None` when empty, else a well-formed route name.
pub(crate) fn route(value: &str) -> Result<Option<String>> {
    match value {
        "" => Ok(None),
        name if TenantId::is_valid(name) => Ok(Some(name.to_owned())),
        _ => Err(Error::InvalidArgument(
            "route must be 1-64 characters of a-z, 0-9, '-' or '_'".into(),
        )),
    }
}

/// A listing's route: the one named, else the default route.
pub(crate) fn listed_route(value: &str) -> Result<String> {
    Ok(route(value)?.unwrap_or_else(|| DEFAULT_ROUTE.to_owned()))
}

impl TryFrom<&pb::ListDeadLettersRequest> for DeadLetterFilter {
    type Error = Error;

    fn try_from(r: &pb::ListDeadLettersRequest) -> Result<Self> {
        filter(r.since_unix_ms, r.until_unix_ms, &r.reason_contains)
    }
}

impl TryFrom<pb::RedeliverRequest> for Selection {
    type Error = Error;

    fn try_from(r: pb::RedeliverRequest) -> Result<Self> {
        let route = route(&r.route)?;
        let has_filter = r.since_unix_ms != 0
            || r.until_unix_ms != 0
            || !r.reason_contains.is_empty()
            || r.status != 0
            || !r.event_type.is_empty();
        let pick = match (r.delivery_ids.is_empty(), r.all_matching) {
            (false, true) => Err(Error::InvalidArgument(
                "set delivery_ids or all_matching, not both".into(),
            )),
            (true, false) => Err(Error::InvalidArgument(
                "set delivery_ids, or all_matching to redeliver every matching dead letter".into(),
            )),
            (false, false) if has_filter => Err(Error::InvalidArgument(
                "status, since_unix_ms, until_unix_ms, reason_contains and event_type apply \
                 only with all_matching"
                    .into(),
            )),
            (false, false) if r.dry_run => Err(Error::InvalidArgument(
                "dry_run applies only with all_matching".into(),
            )),
            (false, false) => distinct_ids(r.delivery_ids).map(Pick::Ids),
            (true, true) => matching(&r).map(Pick::Matching),
        }?;
        Ok(Selection { route, pick })
    }
}

impl TryFrom<pb::RetryNowRequest> for RetryNow {
    type Error = Error;

    fn try_from(r: pb::RetryNowRequest) -> Result<Self> {
        let filter = waiting_filter(r.event_type, r.since_unix_ms, r.until_unix_ms)?;
        let asked = (r.delivery_ids, r.all_waiting, r.dry_run);
        Ok(RetryNow {
            route: route(&r.route)?,
            pick: waiting(asked, filter, "all_waiting")?,
        })
    }
}

impl TryFrom<pb::CancelDeliveriesRequest> for Cancel {
    type Error = Error;

    fn try_from(r: pb::CancelDeliveriesRequest) -> Result<Self> {
        let filter = waiting_filter(r.event_type, r.since_unix_ms, r.until_unix_ms)?;
        let asked = (r.delivery_ids, r.all_pending, r.dry_run);
        Ok(Cancel {
            route: route(&r.route)?,
            pick: waiting(asked, filter, "all_pending")?,
        })
    }
}

/// Deliveries by id, or every one of the route (`all`, the flag's name)
/// that `filter` passes; a dry run and a filter only with `all`.
fn waiting(
    (ids, all, dry_run): (Vec<String>, bool, bool),
    filter: WaitingFilter,
    flag: &str,
) -> Result<Waiting> {
    match (ids.is_empty(), all) {
        (false, true) => Err(Error::InvalidArgument(format!(
            "set delivery_ids or {flag}, not both"
        ))),
        (true, false) => Err(Error::InvalidArgument(format!(
            "set delivery_ids, or {flag} to take every one of the route"
        ))),
        (false, false) if dry_run => Err(Error::InvalidArgument(format!(
            "dry_run applies only with {flag}"
        ))),
        (false, false) if filter != WaitingFilter::default() => Err(Error::InvalidArgument(
            format!("event_type, since_unix_ms and until_unix_ms apply only with {flag}"),
        )),
        (false, false) => distinct_ids(ids).map(Waiting::Ids),
        (true, true) => Ok(Waiting::All { dry_run, filter }),
    }
}

/// A filter of a route's pending deliveries: a type and a window that is
/// not upside down.
fn waiting_filter(
    event_type: String,
    since_unix_ms: i64,
    until_unix_ms: i64,
) -> Result<WaitingFilter> {
    let window = filter(since_unix_ms, until_unix_ms, "")?;
    Ok(WaitingFilter {
        event_type: non_empty(event_type),
        since_ms: window.since_ms,
        until_ms: window.until_ms,
    })
}

/// A redelivery by filter: a final status, and no reason for delivered ones.
fn matching(r: &pb::RedeliverRequest) -> Result<Matching> {
    let status = match pb::DeliveryStatus::try_from(r.status) {
        Ok(pb::DeliveryStatus::Unspecified | pb::DeliveryStatus::Dead) => DeliveryStatus::Dead,
        Ok(pb::DeliveryStatus::Delivered) => DeliveryStatus::Delivered,
        _ => {
            return Err(Error::InvalidArgument(
                "status must be DELIVERY_STATUS_DEAD or DELIVERY_STATUS_DELIVERED".into(),
            ))
        }
    };
    if status == DeliveryStatus::Delivered && !r.reason_contains.is_empty() {
        return Err(Error::InvalidArgument(
            "reason_contains applies only to dead letters; a delivered delivery has no reason"
                .into(),
        ));
    }
    Ok(Matching {
        filter: filter(r.since_unix_ms, r.until_unix_ms, &r.reason_contains)?,
        status,
        event_type: non_empty(r.event_type.clone()),
        dry_run: r.dry_run,
    })
}

impl TryFrom<pb::PurgeDeadLettersRequest> for Selection {
    type Error = Error;

    fn try_from(r: pb::PurgeDeadLettersRequest) -> Result<Self> {
        let route = route(&r.route)?;
        let pick = match (r.delivery_ids.is_empty(), r.all) {
            (false, true) => Err(Error::InvalidArgument(
                "set delivery_ids or all, not both".into(),
            )),
            (true, false) => Err(Error::InvalidArgument(
                "set delivery_ids, or all to purge every dead letter".into(),
            )),
            (false, false) if r.until_unix_ms != 0 => Err(Error::InvalidArgument(
                "until_unix_ms applies only with all".into(),
            )),
            (false, false) => super::ids("delivery_ids", r.delivery_ids).map(Pick::Ids),
            (true, true) => {
                filter(0, r.until_unix_ms, "").map(|f| Pick::Matching(Matching::dead(f)))
            }
        }?;
        Ok(Selection { route, pick })
    }
}

fn filter(
    since_unix_ms: i64,
    until_unix_ms: i64,
    reason_contains: &str,
) -> Result<DeadLetterFilter> {
    let since_ms = time_bound("since_unix_ms", since_unix_ms)?;
    let until_ms = time_bound("until_unix_ms", until_unix_ms)?;
    if let (Some(since), Some(until)) = (since_ms, until_ms) {
        if since > until {
            return Err(Error::InvalidArgument(
                "since_unix_ms is after until_unix_ms".into(),
            ));
        }
    }
    Ok(DeadLetterFilter {
        since_ms,
        until_ms,
        reason_contains: non_empty(reason_contains.to_owned()),
    })
}

/// Redelivering one delivery twice in a call cannot succeed; say so up front.
fn distinct_ids(ids: Vec<String>) -> Result<Vec<String>> {
    let ids = super::ids("delivery_ids", ids)?;
    let mut seen = HashSet::with_capacity(ids.len());
    if let Some(twice) = ids.iter().find(|id| !seen.insert(id.as_str())) {
        return Err(Error::InvalidArgument(format!(
            "delivery_ids lists {twice:?} more than once"
        )));
    }
    Ok(ids)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redeliver_needs_exactly_one_selection() {
        let ids = |ids: &[&str]| ids.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        let invalid = [
            pb::RedeliverRequest::default(),
            pb::RedeliverRequest {
                delivery_ids: ids(&["a"]),
                all_matching: true,
                ..Default::default()
            },
            pb::RedeliverRequest {
                delivery_ids: ids(&["a"]),
                since_unix_ms: 5,
                ..Default::default()
            },
            pb::RedeliverRequest {
                delivery_ids: ids(&["a", "a"]),
                ..Default::default()
            },
            pb::RedeliverRequest {
                all_matching: true,
                since_unix_ms: 9,
                until_unix_ms: 5,
                ..Default::default()
            },
        ];
        for request in invalid {
            assert!(
                matches!(
                    Selection::try_from(request.clone()),
                    Err(Error::InvalidArgument(_))
                ),
                "{request:?}"
            );
        }
        let matching = Selection::try_from(pb::RedeliverRequest {
            all_matching: true,
            reason_contains: "503".into(),
            ..Default::default()
        });
        assert_eq!(
            matching.unwrap(),
            Selection {
                route: None,
                pick: Pick::Matching(Matching::dead(DeadLetterFilter {
                    reason_contains: Some("503".into()),
                    ..Default::default()
                })),
            }
        );
    }

    #[test]
    fn purge_until_needs_all() {
        let until_only = pb::PurgeDeadLettersRequest {
            delivery_ids: vec!["dlv_1".into()],
            until_unix_ms: 10,
            ..Default::default()
        };
        assert!(Selection::try_from(until_only).is_err());
        let all = pb::PurgeDeadLettersRequest {
            all: true,
            until_unix_ms: 10,
            route: "audit".into(),
            ..Default::default()
        };
        assert_eq!(
            Selection::try_from(all).unwrap(),
            Selection {
                route: Some("audit".into()),
                pick: Pick::Matching(Matching::dead(DeadLetterFilter {
                    until_ms: Some(10),
                    ..Default::default()
                })),
            }
        );
    }
}
