//! How each hookd record looks to a person (table columns, field lists) and
//! to a script (JSON).

use hookd_sdk::client::proto::{
    Attempt, ContractInfo, DeadLetter, Delivery, DeliveryEventKind, DeliveryStatus, Redirect,
    Rejection, RejectionKind, SecretInfo, Tenant, TokenInfo, ValidateResponse,
};
use serde_json::{json, Value};
use time::{format_description::well_known::Rfc3339, OffsetDateTime};

/// A record type hookctl prints.
///
/// How each hookd record looks to a person (table columns, field lists) and to a script
/// (JSON with the proto's field names and raw Unix-ms times). Nothing here ever shows a
/// secret: the records listed carry none.
pub trait View {
    /// Column names of the list table.
    const COLUMNS: &'static [&'static str];
    /// One cell per column.
    fn cells(&self) -> Vec<String>;
    /// Every field, for scripts.
    fn json(&self) -> Value;
    /// The fields shown for a single record; by default the list columns.
    fn fields(&self) -> Vec<(&'static str, String)> {
        Self::COLUMNS.iter().copied().zip(self.cells()).collect()
    }
}

/// A Unix-ms time as RFC 3339 UTC to the second; `-` for 0, which hookd uses for "none".
pub fn when(unix_ms: i64) -> String {
    if unix_ms == 0 {
        return "-".to_owned();
    }
    OffsetDateTime::from_unix_timestamp(unix_ms.div_euclid(1000))
        .ok()
        .and_then(|at| at.format(&Rfc3339).ok())
        .unwrap_or_else(|| unix_ms.to_string())
}

/// `DELIVERY_STATUS_IN_FLIGHT` -> `in-flight`: the spelling `--status` accepts.
pub fn status_label(raw: i32) -> String {
    DeliveryStatus::try_from(raw)
        .map(|status| short_name(status.as_str_name(), "DELIVERY_STATUS_"))
        .unwrap_or_else(|_| raw.to_string())
}

/// `DELIVERY_EVENT_KIND_DEAD_LETTERED` -> `dead-lettered`.
pub fn event_kind_label(raw: i32) -> String {
    DeliveryEventKind::try_from(raw)
        .map(|kind| short_name(kind.as_str_name(), "DELIVERY_EVENT_KIND_"))
        .unwrap_or_else(|_| raw.to_string())
}

/// A proto enum's name without its prefix, lower case, `_` as `-`:
/// `DELIVERY_STATUS_IN_FLIGHT` -> `in-flight`.
pub fn short_name(full: &str, prefix: &str) -> String {
    full.strip_prefix(prefix)
        .unwrap_or(full)
        .to_ascii_lowercase()
        .replace('_', "-")
}

/// Text, or `-` where hookd leaves a field empty, so no cell or word is missing.
pub fn or_dash(text: &str) -> String {
    if text.is_empty() { "-" } else { text }.to_owned()
}

fn number_or_dash(value: impl Into<u64>) -> String {
    match value.into() {
        0 => "-".to_owned(),
        value => value.to_string(),
    }
}

impl View for Tenant {
    const COLUMNS: &'static [&'static str] = &[
        "TENANT_ID",
        "SCHEME",
        "ENABLED",
        "DESTINATION",
        "ORIGIN",
        "CREATED",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.tenant_id.clone(),
            self.scheme.clone(),
            self.enabled.to_string(),
            destination(self),
            if self.from_config { "config" } else { "api" }.to_owned(),
            when(self.created_at_unix_ms),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "tenant_id": self.tenant_id,
            "scheme": self.scheme,
            "tolerance_secs": self.tolerance_secs,
            "destination_url": self.destination_url,
            "enabled": self.enabled,
            "max_body_bytes": self.max_body_bytes,
            "required_fields": self.required_fields,
            "from_config": self.from_config,
            "ingest_path": self.ingest_path,
            "max_in_flight": self.max_in_flight,
            "rate_limit_per_sec": self.rate_limit_per_sec,
            "rate_limit_burst": self.rate_limit_burst,
            "event_id_field": self.event_id_field,
            "public_url": self.public_url,
            "created_at_unix_ms": self.created_at_unix_ms,
        })
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let rate_limit = if self.rate_limit_per_sec == 0.0 {
            "none".to_owned()
        } else {
            format!(
                "{}/s, burst {}",
                self.rate_limit_per_sec, self.rate_limit_burst
            )
        };
        vec![
            ("tenant", self.tenant_id.clone()),
            ("ingest path", self.ingest_path.clone()),
            ("scheme", self.scheme.clone()),
            ("enabled", self.enabled.to_string()),
            ("destination", destination(self)),
            ("tolerance", format!("{} s", self.tolerance_secs)),
            ("max body", format!("{} bytes", self.max_body_bytes)),
            ("required fields", or_dash(&self.required_fields.join(", "))),
            ("event id field", or_dash(&self.event_id_field)),
            ("public url", or_dash(&self.public_url)),
            ("max in flight", self.max_in_flight.to_string()),
            ("rate limit", rate_limit),
            (
                "origin",
                if self.from_config {
                    "config file"
                } else {
                    "api"
                }
                .to_owned(),
            ),
            ("created", when(self.created_at_unix_ms)),
        ]
    }
}

fn destination(tenant: &Tenant) -> String {
    if tenant.destination_url.is_empty() {
        "(pull mode)".to_owned()
    } else {
        tenant.destination_url.clone()
    }
}

impl View for SecretInfo {
    const COLUMNS: &'static [&'static str] = &["KID", "STATE", "CREATED", "EXPIRES"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.kid.clone(),
            self.state.clone(),
            when(self.created_at_unix_ms),
            when(self.expires_at_unix_ms),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "kid": self.kid,
            "state": self.state,
            "created_at_unix_ms": self.created_at_unix_ms,
            "expires_at_unix_ms": self.expires_at_unix_ms,
        })
    }
}

impl View for ContractInfo {
    const COLUMNS: &'static [&'static str] = &[
        "TYPE", "VERSION", "REVISION", "SOURCE", "UPDATED", "REQUIRED",
    ];

    fn cells(&self) -> Vec<String> {
        let contract = self.contract.clone().unwrap_or_default();
        vec![
            contract.r#type,
            or_dash(&contract.version),
            self.revision.to_string(),
            if self.from_config { "config" } else { "api" }.to_owned(),
            when(self.updated_at_unix_ms),
            or_dash(&self.required_fields.join(",")),
        ]
    }

    fn json(&self) -> Value {
        let contract = self.contract.clone().unwrap_or_default();
        json!({
            "type": contract.r#type,
            "version": contract.version,
            "schema": contract.schema,
            "example": contract.example,
            "revision": self.revision,
            "from_config": self.from_config,
            "updated_at_unix_ms": self.updated_at_unix_ms,
            "required_fields": self.required_fields,
        })
    }
}

impl View for ValidateResponse {
    const COLUMNS: &'static [&'static str] = &["VALID", "CODE", "TYPE", "VERSION", "VIOLATIONS"];

    fn cells(&self) -> Vec<String> {
        let violations = self
            .violations
            .iter()
            .map(|v| format!("{} {}: {}", or_dash(&v.pointer), v.keyword, v.expected))
            .collect::<Vec<_>>()
            .join("; ");
        vec![
            self.valid.to_string(),
            or_dash(&self.code),
            or_dash(&self.r#type),
            or_dash(&self.version),
            or_dash(&violations),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "valid": self.valid,
            "code": self.code,
            "message": self.message,
            "type": self.r#type,
            "version": self.version,
            "violations": self.violations.iter().map(|v| json!({
                "pointer": v.pointer, "keyword": v.keyword, "expected": v.expected,
            })).collect::<Vec<_>>(),
            "violations_total": self.violations_total,
        })
    }
}

impl View for TokenInfo {
    const COLUMNS: &'static [&'static str] = &["TOKEN_ID", "TENANT_ID", "CREATED", "DESCRIPTION"];

    fn cells(&self) -> Vec<String> {
        vec![
            self.token_id.clone(),
            self.tenant_id.clone(),
            when(self.created_at_unix_ms),
            or_dash(&self.description),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "token_id": self.token_id,
            "tenant_id": self.tenant_id,
            "description": self.description,
            "created_at_unix_ms": self.created_at_unix_ms,
        })
    }
}

impl View for Delivery {
    const COLUMNS: &'static [&'static str] = &[
        "DELIVERY_ID",
        "EVENT_ID",
        "STATUS",
        "RECEIVED",
        "ATTEMPTS",
        "NEXT_ATTEMPT",
        "LAST_ERROR",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.delivery_id.clone(),
            self.event_id.clone(),
            status_label(self.status),
            when(self.received_at_unix_ms),
            self.attempt_count.to_string(),
            when(self.next_attempt_at_unix_ms),
            or_dash(&self.last_error),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "tenant_id": self.tenant_id,
            "delivery_id": self.delivery_id,
            "event_id": self.event_id,
            "status": status_label(self.status),
            "received_at_unix_ms": self.received_at_unix_ms,
            "attempt_count": self.attempt_count,
            "next_attempt_at_unix_ms": self.next_attempt_at_unix_ms,
            "last_error": self.last_error,
            "redelivery_of": self.redelivery_of,
            "redelivered_as": self.redelivered_as,
            "attempts": self.attempts.iter().map(View::json).collect::<Vec<_>>(),
            "redirects": self.redirects.iter().map(redirect_json).collect::<Vec<_>>(),
            "route": self.route,
            "routes": self.routes.iter().map(|r| json!({
                "route": r.route,
                "delivery_id": r.delivery_id,
                "filtered": r.filtered,
            })).collect::<Vec<_>>(),
        })
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("delivery", self.delivery_id.clone()),
            ("tenant", self.tenant_id.clone()),
            ("route", self.route.clone()),
            ("event", self.event_id.clone()),
            ("status", status_label(self.status)),
            ("received", when(self.received_at_unix_ms)),
            ("attempts", self.attempt_count.to_string()),
            ("next attempt", when(self.next_attempt_at_unix_ms)),
            ("last error", or_dash(&self.last_error)),
            ("redelivery of", or_dash(&self.redelivery_of)),
            ("redelivered as", or_dash(&self.redelivered_as)),
            ("routes", route_outcomes(self)),
        ]
    }
}

/// What each route made of a delivery's event (`default dlv_…, audit
/// filtered`), `-` for a tenant without other routes.
fn route_outcomes(d: &Delivery) -> String {
    let outcomes: Vec<String> = d
        .routes
        .iter()
        .map(|r| match r.filtered {
            true => format!("{} filtered", r.route),
            false => format!("{} {}", r.route, r.delivery_id),
        })
        .collect();
    or_dash(&outcomes.join(", "))
}

/// A delivery's recorded Redirect, as `--json` shows it.
fn redirect_json(r: &Redirect) -> Value {
    json!({
        "by": r.by,
        "url": r.url,
        "started_at_unix_ms": r.started_at_unix_ms,
        "duration_ms": r.duration_ms,
        "status_code": r.status_code,
        "error": r.error,
        "request_id": r.request_id,
    })
}

impl View for Attempt {
    const COLUMNS: &'static [&'static str] = &[
        "ATTEMPT",
        "STARTED",
        "DURATION_MS",
        "HTTP",
        "NEXT_RETRY",
        "REQUEST_ID",
        "ERROR",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.attempt.to_string(),
            when(self.started_at_unix_ms),
            self.duration_ms.to_string(),
            number_or_dash(self.status_code),
            when(self.next_retry_at_unix_ms),
            or_dash(&self.request_id),
            or_dash(&self.error),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "attempt": self.attempt,
            "started_at_unix_ms": self.started_at_unix_ms,
            "duration_ms": self.duration_ms,
            "status_code": self.status_code,
            "error": self.error,
            "response_body": String::from_utf8_lossy(&self.response_body),
            "next_retry_at_unix_ms": self.next_retry_at_unix_ms,
            "request_id": self.request_id,
        })
    }
}

impl View for DeadLetter {
    const COLUMNS: &'static [&'static str] = &[
        "DELIVERY_ID",
        "EVENT_ID",
        "DEAD_AT",
        "ATTEMPTS",
        "LAST_HTTP",
        "REASON",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.delivery_id.clone(),
            self.event_id.clone(),
            when(self.dead_at_unix_ms),
            self.attempt_count.to_string(),
            number_or_dash(self.last_status_code),
            self.reason.clone(),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "tenant_id": self.tenant_id,
            "delivery_id": self.delivery_id,
            "event_id": self.event_id,
            "reason": self.reason,
            "dead_at_unix_ms": self.dead_at_unix_ms,
            "attempt_count": self.attempt_count,
            "last_status_code": self.last_status_code,
            "route": self.route,
        })
    }
}

/// `content` or `signature`.
fn rejection_kind(raw: i32) -> String {
    RejectionKind::try_from(raw)
        .map(|kind| short_name(kind.as_str_name(), "REJECTION_KIND_"))
        .unwrap_or_else(|_| raw.to_string())
}

impl View for Rejection {
    const COLUMNS: &'static [&'static str] = &[
        "REQUEST_ID",
        "REJECTED_AT",
        "KIND",
        "CODE",
        "BODY_BYTES",
        "REASON",
    ];

    fn cells(&self) -> Vec<String> {
        vec![
            self.request_id.clone(),
            when(self.rejected_at_unix_ms),
            rejection_kind(self.kind),
            self.code.clone(),
            self.body_bytes.to_string(),
            self.reason.clone(),
        ]
    }

    fn json(&self) -> Value {
        json!({
            "tenant_id": self.tenant_id,
            "request_id": self.request_id,
            "rejected_at_unix_ms": self.rejected_at_unix_ms,
            "kind": rejection_kind(self.kind),
            "code": self.code,
            "reason": self.reason,
            "body_bytes": self.body_bytes,
            "body": String::from_utf8_lossy(&self.body),
        })
    }

    fn fields(&self) -> Vec<(&'static str, String)> {
        let mut fields: Vec<_> = Self::COLUMNS.iter().copied().zip(self.cells()).collect();
        fields.push(("BODY", or_dash(&String::from_utf8_lossy(&self.body))));
        fields
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_read_as_utc_and_zero_as_none() {
        assert_eq!(when(0), "-");
        assert_eq!(when(1_714_564_800_999), "2024-05-01T12:00:00Z");
    }

    #[test]
    fn enum_labels_match_the_status_flag() {
        assert_eq!(status_label(DeliveryStatus::InFlight.into()), "in-flight");
        assert_eq!(status_label(DeliveryStatus::Dead.into()), "dead");
        assert_eq!(status_label(99), "99");
        assert_eq!(
            event_kind_label(DeliveryEventKind::RetryScheduled.into()),
            "retry-scheduled"
        );
    }

    #[test]
    fn a_delivery_shows_what_each_route_made_of_its_event() {
        use hookd_sdk::client::proto::RouteOutcome;
        let mut delivery = Delivery {
            delivery_id: "dlv_1".into(),
            ..Default::default()
        };
        let routes = |d: &Delivery| {
            d.fields()
                .into_iter()
                .find(|(name, _)| *name == "routes")
                .map(|(_, value)| value)
        };
        assert_eq!(routes(&delivery).as_deref(), Some("-"));
        delivery.routes = vec![
            RouteOutcome {
                route: "default".into(),
                delivery_id: "dlv_1".into(),
                filtered: false,
            },
            RouteOutcome {
                route: "audit".into(),
                delivery_id: String::new(),
                filtered: true,
            },
        ];
        assert_eq!(
            routes(&delivery).as_deref(),
            Some("default dlv_1, audit filtered")
        );
        assert_eq!(delivery.json()["routes"][1]["filtered"], true);
    }

    #[test]
    fn a_pull_mode_tenant_says_so() {
        let tenant = Tenant {
            tenant_id: "acme".into(),
            scheme: "standard".into(),
            enabled: true,
            ..Default::default()
        };
        let cells = tenant.cells();
        assert_eq!(cells[..4], ["acme", "standard", "true", "(pull mode)"]);
        assert_eq!(tenant.json()["destination_url"], "");
    }
}
