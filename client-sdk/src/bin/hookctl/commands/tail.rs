//! `hookctl tail`: one line per delivery event as it happens, until Ctrl-C.

use futures_util::StreamExt;
use hookd_sdk::client::{proto::DeliveryEvent, HookdClient};
use serde_json::{json, Value};

use crate::{
    output::Output,
    view::{event_kind_label, or_dash, when},
};

/// Streams events until Ctrl-C (exit 0) or until hookd ends the stream; an UNAVAILABLE
/// end means this watcher fell behind and should be restarted.
pub async fn run(client: &HookdClient, out: Output, tenant: Option<String>) -> anyhow::Result<()> {
    let mut events = client.watch_deliveries(tenant.unwrap_or_default()).await?;
    if !out.is_document() {
        eprintln!("watching delivery events; Ctrl-C to stop");
    }
    let ctrl_c = tokio::signal::ctrl_c();
    tokio::pin!(ctrl_c);
    loop {
        tokio::select! {
            stopped = &mut ctrl_c => return Ok(stopped?),
            next = events.next() => match next {
                Some(event) => {
                    let event = event?;
                    if out.is_document() {
                        out.stream_item(&event_json(&event))?;
                    } else {
                        out.line(&event_line(&event))?;
                    }
                }
                None => return Ok(()),
            },
        }
    }
}

/// `TIME  KIND  TENANT  DELIVERY  EVENT` then only the details this kind of event has.
fn event_line(event: &DeliveryEvent) -> String {
    let mut line = format!(
        "{}  {:<15}  {}  {}  {}",
        when(event.at_unix_ms),
        event_kind_label(event.kind),
        or_dash(&event.tenant_id),
        or_dash(&event.delivery_id),
        or_dash(&event.event_id),
    );
    if event.attempt != 0 {
        line.push_str(&format!("  attempt={}", event.attempt));
    }
    if event.status_code != 0 {
        line.push_str(&format!("  http={}", event.status_code));
    }
    if event.next_attempt_at_unix_ms != 0 {
        line.push_str(&format!("  next={}", when(event.next_attempt_at_unix_ms)));
    }
    if !event.redelivered_as.is_empty() {
        line.push_str(&format!("  redelivered_as={}", event.redelivered_as));
    }
    if !event.reason.is_empty() {
        line.push_str(&format!("  reason={:?}", event.reason));
    }
    line
}

fn event_json(event: &DeliveryEvent) -> Value {
    json!({
        "kind": event_kind_label(event.kind),
        "tenant_id": event.tenant_id,
        "delivery_id": event.delivery_id,
        "event_id": event.event_id,
        "at_unix_ms": event.at_unix_ms,
        "attempt": event.attempt,
        "status_code": event.status_code,
        "reason": event.reason,
        "redelivered_as": event.redelivered_as,
        "next_attempt_at_unix_ms": event.next_attempt_at_unix_ms,
    })
}

#[cfg(test)]
mod tests {
    use hookd_sdk::client::proto::DeliveryEventKind;

    use super::*;

    #[test]
    fn a_line_shows_only_the_details_the_event_has() {
        let event = DeliveryEvent {
            kind: DeliveryEventKind::RetryScheduled.into(),
            tenant_id: "acme".into(),
            delivery_id: "dlv_1".into(),
            event_id: "evt_1".into(),
            at_unix_ms: 1_714_564_800_000,
            attempt: 2,
            status_code: 503,
            reason: "503 Service Unavailable".into(),
            ..Default::default()
        };
        assert_eq!(
            event_line(&event),
            "2024-05-01T12:00:00Z  retry-scheduled  acme  dlv_1  evt_1  attempt=2  http=503  \
             reason=\"503 Service Unavailable\""
        );
    }
}
