//! `hookctl deliveries list|search|get|event|retry-now|cancel`.

use std::io::{self, Write};

use hookd_sdk::client::{
    proto::{CancelDeliveriesRequest, DeliveryStatus, ListDeliveriesRequest, RetryNowRequest},
    HookdClient,
};
use serde_json::json;

use crate::{
    cli::DeliveriesCommand,
    output::{print, Output},
    table::Table,
};

/// Runs one `deliveries` subcommand.
pub async fn run(
    client: &HookdClient,
    out: Output,
    command: DeliveriesCommand,
) -> anyhow::Result<()> {
    match command {
        DeliveriesCommand::List {
            tenant,
            status,
            route,
            event_id,
            event_type,
            since,
            until,
            body,
            page,
        } => {
            let status = status.map_or(DeliveryStatus::Unspecified, DeliveryStatus::from);
            let (body_pointer, body_value_json) = body.unwrap_or_default();
            let filters = ListDeliveriesRequest {
                tenant_id: tenant,
                status: status.into(),
                route: route.unwrap_or_default(),
                event_id: event_id.unwrap_or_default(),
                event_type: event_type.unwrap_or_default(),
                since_unix_ms: since.unwrap_or_default(),
                until_unix_ms: until.unwrap_or_default(),
                body_pointer,
                body_value_json,
                ..Default::default()
            };
            if page.all {
                let deliveries = client.list_all_matching(filters).await?;
                return Ok(out.list("deliveries", &deliveries, Some(""))?);
            }
            let listed = client
                .list_deliveries(ListDeliveriesRequest {
                    page_size: page.page_size,
                    page_token: page.page_token,
                    ..filters
                })
                .await?;
            Ok(out.list(
                "deliveries",
                &listed.deliveries,
                Some(&listed.next_page_token),
            )?)
        }
        DeliveriesCommand::Cancel {
            tenant,
            delivery_ids,
            all_pending,
            route,
            dry_run,
            event_type,
            since,
            until,
            yes: _,
        } => {
            let request = CancelDeliveriesRequest {
                tenant_id: tenant.clone(),
                delivery_ids,
                all_pending,
                route: route.unwrap_or_default(),
                dry_run,
                event_type: event_type.unwrap_or_default(),
                since_unix_ms: since.unwrap_or_default(),
                until_unix_ms: until.unwrap_or_default(),
            };
            let answer = client.cancel_deliveries(request).await?;
            let verb = if dry_run { "would cancel" } else { "cancelled" };
            let text = format!(
                "{verb} {} deliveries of tenant {tenant}{}",
                answer.matched,
                if answer.more {
                    " (more are pending: run again for the rest)"
                } else {
                    ""
                }
            );
            Ok(out.result(
                &text,
                &json!({
                    "dry_run": dry_run,
                    "matched": answer.matched,
                    "delivery_ids": answer.delivery_ids,
                    "more": answer.more,
                }),
            )?)
        }
        DeliveriesCommand::Search { id } => {
            let found = client.search_deliveries(id).await?;
            Ok(out.list("deliveries", &found, None)?)
        }
        DeliveriesCommand::Get {
            tenant,
            delivery_id,
        } => {
            let delivery = client.get_delivery(tenant, delivery_id).await?;
            if out.is_document() {
                return Ok(out.record(&delivery)?);
            }
            out.fields(&delivery)?;
            writeln!(io::stdout().lock())?;
            Ok(out.table(&delivery.attempts)?)
        }
        DeliveriesCommand::Event {
            tenant,
            delivery_id,
        } => {
            let event = client.get_event(tenant, delivery_id).await?;
            if out.is_document() {
                let headers: serde_json::Map<_, _> = event
                    .headers
                    .iter()
                    .map(|h| (h.name.clone(), json!(h.value)))
                    .collect();
                let body = match event.json.is_empty() {
                    true => json!({ "base64": base64_of(&event.body) }),
                    false => serde_json::from_str(&event.json)?,
                };
                return Ok(out.document(&json!({
                    "delivery_id": event.delivery_id,
                    "event_id": event.event_id,
                    "event_type": event.event_type,
                    "request_id": event.request_id,
                    "headers": headers,
                    "body": body,
                }))?);
            }
            let mut stdout = io::stdout().lock();
            writeln!(stdout, "event {} ({})", event.event_id, event.request_id)?;
            for h in &event.headers {
                writeln!(stdout, "{}: {}", h.name, h.value)?;
            }
            writeln!(stdout)?;
            stdout.write_all(&event.body)?;
            Ok(writeln!(stdout)?)
        }
        DeliveriesCommand::RetryNow {
            tenant,
            delivery_ids,
            all_waiting,
            route,
            dry_run,
            event_type,
            since,
            until,
        } => {
            let request = RetryNowRequest {
                tenant_id: tenant.clone(),
                delivery_ids,
                all_waiting,
                route: route.unwrap_or_default(),
                dry_run,
                event_type: event_type.unwrap_or_default(),
                since_unix_ms: since.unwrap_or_default(),
                until_unix_ms: until.unwrap_or_default(),
            };
            retry_now(client, out, request).await
        }
    }
}

/// `bytes` in standard base64, for a body that is not JSON.
fn base64_of(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// Makes the deliveries `request` names due now and prints how many (in
/// a dry run: would be), with their ids.
async fn retry_now(
    client: &HookdClient,
    out: Output,
    request: RetryNowRequest,
) -> anyhow::Result<()> {
    let answer = client.retry_now(request.clone()).await?;
    if out.is_document() {
        return Ok(out.document(&json!({
            "dry_run": request.dry_run,
            "matched": answer.matched,
            "delivery_ids": answer.delivery_ids,
            "more": answer.more,
        }))?);
    }
    let verb = match request.dry_run {
        true => "would attempt",
        false => "attempting",
    };
    let more = match answer.more {
        true => " (and more wait: one call takes at most 1,000)",
        false => "",
    };
    out.line(&format!(
        "{verb} {} deliveries of tenant {} now{more}",
        answer.matched, request.tenant_id
    ))?;
    let mut table = Table::with_header(&["DELIVERY_ID"]);
    for id in &answer.delivery_ids {
        table.row(vec![id.clone()]);
    }
    Ok(print(&table)?)
}
