//! Proto <-> domain conversion and the request checks that go with it, each
//! failure an [`Error::InvalidArgument`] naming the field.

mod alert;
mod consumer;
mod contract;
mod delivery;
mod replay;
mod route;
mod selection;
mod tenant;

pub(crate) use consumer::pull_limits;
pub(crate) use contract::{contract_def, contract_key};
pub(crate) use replay::{new_replay, replay_id};
pub(crate) use route::{metrics_query, ramp_secs, route_name, route_test};
pub(crate) use selection::listed_route;
pub(crate) use tenant::{overlap_secs, token_description};

use hookd_proto::domain::TenantId;

use crate::{error::Error, model::PageRequest, Result};

/// Page size used when a request leaves it at 0.
const DEFAULT_PAGE_SIZE: u32 = 100;
/// Larger page sizes are served as this many.
const MAX_PAGE_SIZE: u32 = 1000;

/// A well-formed tenant id (the rule of [`TenantId`]), owned.
pub(crate) fn tenant_id(value: &str) -> Result<String> {
    TenantId::try_from(value)
        .map(String::from)
        .map_err(|e| Error::InvalidArgument(e.to_string()))
}

/// `value`, which must not be empty.
///
/// Proto <-> domain conversion and the request checks that go with it: a
/// request that converts is one the backend can act on. Every failure is
/// [`Error::InvalidArgument`] with a message naming the field.
pub(crate) fn required(field: &str, value: &str) -> Result<String> {
    if value.is_empty() {
        return Err(Error::InvalidArgument(format!("{field} is required")));
    }
    Ok(value.to_owned())
}

/// A list of ids, none of which may be empty.
pub(crate) fn ids(field: &str, values: Vec<String>) -> Result<Vec<String>> {
    if let Some(index) = values.iter().position(String::is_empty) {
        return Err(Error::InvalidArgument(format!("{field}[{index}] is empty")));
    }
    Ok(values)
}

/// Paging as the API defines it: size 0 means 100, above 1000 means 1000;
/// an empty token is the first page.
pub(crate) fn page(size: u32, token: String) -> PageRequest {
    let size = match size {
        0 => DEFAULT_PAGE_SIZE,
        n => n.min(MAX_PAGE_SIZE),
    };
    PageRequest {
        size,
        token: non_empty(token),
    }
}

/// Whether `url` is an absolute http(s) URL with a host and no blanks or
/// control characters: the shape every destination must have before the
/// backend applies its address policy.
fn is_absolute_http_url(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    let authority = lower
        .strip_prefix("https://")
        .or_else(|| lower.strip_prefix("http://"))
        .and_then(|rest| rest.split(['/', '?', '#']).next());
    let has_host = authority.is_some_and(|a| !a.is_empty() && !a.starts_with(':'));
    has_host && !url.chars().any(|c| c.is_whitespace() || c.is_control())
}

/// The protobuf empty string read as "none".
fn non_empty(value: String) -> Option<String> {
    (!value.is_empty()).then_some(value)
}

/// A time bound where 0 leaves that end open; a negative time is refused.
pub(crate) fn time_bound(field: &str, unix_ms: i64) -> Result<Option<i64>> {
    match unix_ms {
        0 => Ok(None),
        t if t < 0 => Err(Error::InvalidArgument(format!(
            "{field} must be a Unix time in milliseconds, not negative"
        ))),
        t => Ok(Some(t)),
    }
}

/// A protobuf `uint32` HTTP status where 0 means "no HTTP answer".
fn status_code(field: &str, code: u32) -> Result<Option<u16>> {
    match code {
        0 => Ok(None),
        c => u16::try_from(c)
            .map(Some)
            .map_err(|_| Error::InvalidArgument(format!("{field} {c} is not an HTTP status"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_size_zero_means_100_and_is_capped_at_1000() {
        assert_eq!(page(0, String::new()).size, 100);
        assert_eq!(page(7, String::new()).size, 7);
        assert_eq!(page(5000, String::new()).size, 1000);
        assert_eq!(page(10, "abc".into()).token.as_deref(), Some("abc"));
        assert_eq!(page(10, String::new()).token, None);
    }

    #[test]
    fn tenant_ids_follow_the_documented_alphabet() {
        assert!(tenant_id("acme-eu_1").is_ok());
        for bad in ["", "Acme", "a/b", "a b", &"a".repeat(65)] {
            assert!(
                matches!(tenant_id(bad), Err(Error::InvalidArgument(m)) if m.contains("tenant_id")),
                "{bad:?} accepted"
            );
        }
    }

    #[test]
    fn time_bounds_treat_zero_as_open() {
        assert_eq!(time_bound("since_unix_ms", 0).unwrap(), None);
        assert_eq!(time_bound("since_unix_ms", 5).unwrap(), Some(5));
        assert!(time_bound("since_unix_ms", -1).is_err());
    }
}
