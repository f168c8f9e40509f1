//! The page frame every dashboard page shares (skip link, navigation,
//! sign-out form, one `<h1>`), and small formatting helpers.

use actix_web::{http::StatusCode, HttpResponse};
use maud::{html, Markup, DOCTYPE};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

use super::csrf::CSRF_FIELD;

/// A whole page titled `title` around `body`; for a signed-in session
/// (`csrf`: the token its forms carry), the navigation (for `tenant`'s
/// pages, when given) and a sign-out button.
pub(super) fn page(csrf: Option<&str>, tenant: Option<&str>, title: &str, body: Markup) -> Markup {
    html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { (title) " · hookd" }
                link rel="stylesheet" href="/assets/style.css";
            }
            body {
                a.skip href="#main" { "Skip to content" }
                header {
                    span.brand { "hookd" }
                    @if let Some(csrf) = csrf {
                        nav aria-label="Main" {
                            ul {
                                li { a href="/tenants" { "Tenants" } }
                                @if tenant.is_none() {
                                    li { a href="/tail" { "Live tail" } }
                                }
                                @if let Some(t) = tenant {
                                    li { a href={ "/t/" (t) "/deliveries" } { "Deliveries" } }
                                    li { a href={ "/t/" (t) "/dead-letters" } { "Dead letters" } }
                                    li { a href={ "/t/" (t) "/routes" } { "Routes" } }
                                    li { a href={ "/t/" (t) "/rejections" } { "Rejected" } }
                                    li { a href={ "/t/" (t) "/alerts" } { "Alerts" } }
                                    li { a href={ "/t/" (t) "/tail" } { "Live tail" } }
                                    li { a href={ "/t/" (t) "/secrets" } { "Secrets" } }
                                }
                            }
                        }
                        form.sign-out method="post" action="/sign-out" {
                            input type="hidden" name=(CSRF_FIELD) value=(csrf);
                            button type="submit" { "Sign out" }
                        }
                    }
                }
                main id="main" tabindex="-1" {
                    @if let Some(t) = tenant {
                        p.crumb { "Tenant " strong { (t) } }
                    }
                    h1 { (title) }
                    (body)
                }
            }
        }
    }
}

/// A 200 HTML answer that no cache keeps.
pub(super) fn html(markup: Markup) -> HttpResponse {
    html_with(StatusCode::OK, markup)
}

/// An HTML answer with `status` that no cache keeps.
pub(super) fn html_with(status: StatusCode, markup: Markup) -> HttpResponse {
    HttpResponse::build(status)
        .content_type("text/html; charset=utf-8")
        .insert_header(("cache-control", "no-store"))
        .body(markup.into_string())
}

/// The hidden CSRF field of a form of the session whose token is `csrf`.
pub(super) fn csrf(csrf: &str) -> Markup {
    html! { input type="hidden" name=(CSRF_FIELD) value=(csrf); }
}

/// A query string (`?a=1&b=2`) with every value percent-encoded.
pub(super) fn query(pairs: &[(&str, &str)]) -> String {
    let mut out = form_urlencoded::Serializer::for_suffix(String::from("?"), 1);
    out.extend_pairs(pairs);
    out.finish()
}

/// Unix ms as RFC 3339 UTC, to the second.
pub(super) fn at(ms: i64) -> String {
    OffsetDateTime::from_unix_timestamp(ms.div_euclid(1000))
        .ok()
        .and_then(|t| t.format(&Rfc3339).ok())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// A filter's time that is not RFC 3339, naming the filter's field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{field}: {value:?} is not a time like 2026-11-30T15:00:00Z")]
pub(super) struct NotATime {
    field: String,
    value: String,
}

/// An RFC 3339 time typed into a filter, as Unix ms; `field` names it in
/// the error.
pub(super) fn parse_at(field: &str, value: &str) -> Result<i64, NotATime> {
    OffsetDateTime::parse(value.trim(), &Rfc3339)
        .map(|t| (t.unix_timestamp_nanos() / 1_000_000) as i64)
        .map_err(|_| NotATime {
            field: field.to_owned(),
            value: value.to_owned(),
        })
}

/// A body for reading: JSON pretty-printed, anything else as (lossy) text.
pub(super) fn pretty(body: &[u8]) -> String {
    serde_json::from_slice::<serde_json::Value>(body)
        .ok()
        .and_then(|v| serde_json::to_string_pretty(&v).ok())
        .unwrap_or_else(|| String::from_utf8_lossy(body).into_owned())
}

/// `n` bytes, for people.
pub(super) fn size(n: usize) -> String {
    match n {
        0..1024 => format!("{n} bytes"),
        1024..1_048_576 => format!("{:.1} KiB ({n} bytes)", n as f64 / 1024.0),
        _ => format!("{:.1} MiB ({n} bytes)", n as f64 / 1_048_576.0),
    }
}

/// A span of `ms` milliseconds, for people: in the largest whole unit.
pub(super) fn span_ms(ms: u64) -> String {
    match ms {
        ms if ms % 3_600_000 == 0 => format!("{} h", ms / 3_600_000),
        ms if ms % 60_000 == 0 => format!("{} min", ms / 60_000),
        ms if ms % 1_000 == 0 => format!("{} s", ms / 1_000),
        ms => format!("{ms} ms"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_read_in_their_largest_whole_unit() {
        assert_eq!(span_ms(7_200_000), "2 h");
        assert_eq!(span_ms(90_000), "90 s");
        assert_eq!(span_ms(300_000), "5 min");
        assert_eq!(span_ms(1_500), "1500 ms");
    }

    #[test]
    fn times_round_trip_and_bodies_read_well() {
        assert_eq!(at(1_764_480_000_123), "2025-11-30T05:20:00Z");
        assert_eq!(
            parse_at("since", "2025-11-30T05:20:00Z"),
            Ok(1_764_480_000_000)
        );
        assert!(parse_at("since", "yesterday")
            .unwrap_err()
            .to_string()
            .contains("since"));
        assert_eq!(pretty(br#"{"a":1}"#), "{\n  \"a\": 1\n}");
        assert_eq!(pretty(b"not json"), "not json");
        assert_eq!(size(10), "10 bytes");
        assert_eq!(size(2048), "2.0 KiB (2048 bytes)");
        assert_eq!(
            query(&[("event_id", "a&b=c"), ("page", "")]),
            "?event_id=a%26b%3Dc&page="
        );
    }
}
