//! The operational event a notification carries, and its Slack-compatible
//! form.

use hookd_proto::domain::AlertType;
use serde_json::{json, Value};

use super::records::{AlertRecord, StoredState};
use crate::config::SinkFormat;

/// What was counted when a condition was evaluated.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Measure {
    /// Occurrences in the window (or the depth, or seconds).
    pub count: u64,
    /// The rule's threshold.
    pub threshold: u64,
    /// The rule's window, seconds.
    pub window_secs: u64,
    /// `route.failing` in `consecutive` mode: how long the route's oldest
    /// queued delivery has waited, seconds (`count` is then the failed
    /// attempts in a row).
    pub waited_secs: Option<u64>,
}

/// The summary of a condition in plain words.
pub fn summary(kind: AlertType, subject: &str, m: Measure) -> String {
    let Measure {
        count,
        threshold,
        window_secs,
        waited_secs,
    } = m;
    match kind {
        AlertType::RouteFailing if waited_secs.is_some() && count >= threshold => format!(
            "route {subject}: the last {count} attempts failed (threshold {threshold} in a row); the destination is failing"
        ),
        AlertType::RouteFailing if waited_secs.is_some() => format!(
            "route {subject}: its oldest delivery has waited {waited} s (over {window_secs} s) and the last {count} attempts failed; the destination is failing",
            waited = waited_secs.unwrap_or_default()
        ),
        AlertType::RouteFailing => format!(
            "route {subject}: {count} failed forwards in {window_secs} s (threshold {threshold}); the destination is failing"
        ),
        AlertType::RouteCircuitOpened => format!(
            "route {subject}: the circuit breaker opened; forwards are paused while the destination fails"
        ),
        AlertType::DeadLettersDepthExceeded => format!(
            "route {subject}: {count} dead letters wait for redelivery (threshold {threshold})"
        ),
        AlertType::VerificationFailureSpike => format!(
            "{count} deliveries refused for their signature in {window_secs} s (threshold {threshold}); the provider may have rotated its secret"
        ),
        AlertType::IngestRateLimited => format!(
            "{count} deliveries refused by the tenant's rate limit in {window_secs} s (threshold {threshold})"
        ),
        AlertType::ContractRejectionSpike => format!(
            "{count} deliveries refused by the tenant's contracts in {window_secs} s (threshold {threshold})"
        ),
        AlertType::SecretPreviousExpiring => format!(
            "the previous secret {subject} stops being accepted in {count} s; senders still using it will be refused"
        ),
        AlertType::BacklogLagExceeded => format!(
            "route {subject}: the oldest pending delivery is {count} s late (threshold {threshold} s)"
        ),
        AlertType::TransformFailing => format!(
            "route {subject}: the transform failed {count} times in {window_secs} s (threshold {threshold})"
        ),
        AlertType::HandshakeFailed => format!(
            "{count} provider handshakes refused in {window_secs} s (threshold {threshold})"
        ),
    }
}

/// The summary of a `route.failing` alert on route `subject` resolved
/// because an attempt delivered, after `failed` failed in a row.
pub fn recovered(subject: &str, failed: u64) -> String {
    format!(
        "route {subject}: delivering again: an attempt delivered after {failed} failed in a row"
    )
}

/// The event of one notification about `alert`, of the transition its
/// state records (resolved: the resolution, else the opening).
///
/// The operational event a notification carries: a stable `type` (the
/// alert type, or its resolved counterpart) and `version: 1`, the tenant,
/// the subject, a summary in plain words, the counts and the times; and
/// its Slack-compatible form (`{"text": ...}`).
pub fn event(notification_id: &str, alert: &AlertRecord, kind: AlertType, m: Measure) -> Value {
    let resolved = alert.state == StoredState::Resolved;
    let event_type = match resolved {
        true => kind.resolved_event_type(),
        false => kind.as_str(),
    };
    let mut event = json!({
        "type": event_type,
        "version": 1,
        "id": notification_id,
        "alert_id": alert.id,
        "tenant": alert.tenant_id,
        "subject": alert.subject,
        "state": if resolved { "resolved" } else { "open" },
        "summary": alert.summary,
        "count": m.count,
        "threshold": m.threshold,
        "window_secs": m.window_secs,
        "occurrences": alert.occurrences,
        "opened_at_unix_ms": alert.opened_at_ms,
        "last_seen_at_unix_ms": alert.last_seen_at_ms,
        "resolved_at_unix_ms": alert.resolved_at_ms,
    });
    if !alert.delivery_ids.is_empty() {
        event["delivery_ids"] = json!(alert.delivery_ids);
    }
    event
}

/// The body a sink of `format` gets for `event`.
pub fn body(format: SinkFormat, event: &Value) -> Vec<u8> {
    let value = match format {
        SinkFormat::Standard => event.clone(),
        SinkFormat::Slack => {
            let subject = event["subject"].as_str().unwrap_or_default();
            let tenant = event["tenant"].as_str().unwrap_or_default();
            let on = match (tenant.is_empty(), subject.is_empty()) {
                (true, _) => String::new(),
                (false, true) => format!(" for tenant {tenant}"),
                (false, false) => format!(" for tenant {tenant} ({subject})"),
            };
            json!({
                "text": format!(
                    "hookd: {}{on}: {}",
                    event["type"].as_str().unwrap_or_default(),
                    event["summary"].as_str().unwrap_or_default(),
                )
            })
        }
    };
    serde_json::to_vec(&value).expect("JSON values serialize")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slack_gets_one_line_of_text_naming_the_type_tenant_and_summary() {
        let event = json!({"type": "route.circuit_closed", "tenant": "acme", "subject": "orders", "summary": "closed"});
        let body: Value = serde_json::from_slice(&body(SinkFormat::Slack, &event)).unwrap();
        assert_eq!(
            body,
            json!({"text": "hookd: route.circuit_closed for tenant acme (orders): closed"})
        );
        let digest = json!({"type": "alerts.digest", "tenant": "", "summary": "3 held back"});
        let text: Value = serde_json::from_slice(&super::body(SinkFormat::Slack, &digest)).unwrap();
        assert_eq!(text, json!({"text": "hookd: alerts.digest: 3 held back"}));
    }
}
