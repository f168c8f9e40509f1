//! `hookctl dead-letters list|redeliver|purge`.

use anyhow::Context;
use futures_util::{StreamExt, TryStreamExt};
use hookd_sdk::client::{
    proto::{
        DeliveryStatus, ListDeadLettersRequest, PurgeDeadLettersRequest, RedeliverRequest,
        RedeliverResponse,
    },
    DeadLetterFilter, HookdClient,
};
use serde_json::json;

use crate::{
    cli::{DeadLettersCommand, FilterArgs},
    output::{print, Output},
    table::Table,
};

/// Runs one `dead-letters` subcommand.
pub async fn run(
    client: &HookdClient,
    out: Output,
    command: DeadLettersCommand,
) -> anyhow::Result<()> {
    match command {
        DeadLettersCommand::List {
            tenant,
            filter,
            page,
        } => {
            let filter = dead_letter_filter(filter);
            if page.all {
                let dead = client.list_all_dead_letters(tenant, &filter).await?;
                return Ok(out.list("dead_letters", &dead, Some(""))?);
            }
            let listed = client
                .list_dead_letters(ListDeadLettersRequest {
                    tenant_id: tenant,
                    page_size: page.page_size,
                    page_token: page.page_token,
                    since_unix_ms: filter.since_unix_ms,
                    until_unix_ms: filter.until_unix_ms,
                    reason_contains: filter.reason_contains,
                    route: filter.route,
                })
                .await?;
            Ok(out.list(
                "dead_letters",
                &listed.dead_letters,
                Some(&listed.next_page_token),
            )?)
        }
        DeadLettersCommand::Redeliver {
            tenant,
            delivery_ids,
            all_matching,
            filter,
            status,
            event_type,
            dry_run,
        } => {
            let request = RedeliverRequest {
                tenant_id: tenant,
                delivery_ids,
                all_matching,
                status: status.map_or(DeliveryStatus::Unspecified, DeliveryStatus::from) as i32,
                event_type: event_type.unwrap_or_default(),
                dry_run,
                ..RedeliverRequest::default()
            };
            redeliver(client, out, request, dead_letter_filter(filter)).await
        }
        DeadLettersCommand::Purge {
            tenant,
            delivery_ids,
            all,
            until,
            route,
            yes: _,
        } => {
            let purged = client
                .purge_dead_letters(PurgeDeadLettersRequest {
                    tenant_id: tenant.clone(),
                    delivery_ids,
                    all,
                    until_unix_ms: until.unwrap_or_default(),
                    route: route.unwrap_or_default(),
                })
                .await?;
            let text = format!("purged {purged} dead letters of tenant {tenant}");
            Ok(out.result(&text, &json!({ "purged": purged }))?)
        }
    }
}

/// Redelivers the dead letters `request` names (with `filter` when it asks
/// for all matching ones) and prints each old id beside its new one.
async fn redeliver(
    client: &HookdClient,
    out: Output,
    request: RedeliverRequest,
    filter: DeadLetterFilter,
) -> anyhow::Result<()> {
    let (tenant, delivery_ids, all_matching) = (
        request.tenant_id.clone(),
        request.delivery_ids.clone(),
        request.all_matching,
    );
    let answer = client
        .redeliver_answer(RedeliverRequest {
            since_unix_ms: filter.since_unix_ms,
            until_unix_ms: filter.until_unix_ms,
            reason_contains: filter.reason_contains,
            route: filter.route.clone(),
            ..request.clone()
        })
        .await?;
    if request.dry_run {
        return dry_run(out, &tenant, &filter.route, &answer);
    }
    let new_ids = answer.delivery_ids;
    let old_ids = if answer.matched_ids.len() == new_ids.len() {
        answer.matched_ids
    } else if all_matching {
        // hookd answers only the new ids; each new delivery names the dead
        // letter it redelivers.
        redelivery_sources(client, &tenant, &new_ids).await?
    } else {
        delivery_ids
    };
    if out.is_document() {
        let pairs: Vec<_> = old_ids
            .iter()
            .zip(&new_ids)
            .map(|(old, new)| json!({ "delivery_id": old, "redelivered_as": new }))
            .collect();
        return Ok(out.document(&json!({
            "delivery_ids": new_ids,
            "redelivered": pairs,
            "more": answer.more,
        }))?);
    }
    if answer.more {
        eprintln!("more matched than one call redelivers; run it again for the rest");
    }
    Ok(print(&redelivered(&old_ids, &new_ids))?)
}

/// Prints what a redelivery would take: the count, and the first ids.
fn dry_run(
    out: Output,
    tenant: &str,
    route: &str,
    answer: &RedeliverResponse,
) -> anyhow::Result<()> {
    if out.is_document() {
        return Ok(out.document(&json!({
            "dry_run": true,
            "matched": answer.matched,
            "matched_ids": answer.matched_ids,
            "more": answer.more,
        }))?);
    }
    let route = if route.is_empty() { "default" } else { route };
    let more = if answer.more {
        " (and more: one call takes at most that many)"
    } else {
        ""
    };
    let mut table = Table::with_header(&["DELIVERY_ID"]);
    for id in &answer.matched_ids {
        table.row(vec![id.clone()]);
    }
    out.line(&format!(
        "would redeliver {} deliveries of route {route} of tenant {tenant}{more}",
        answer.matched
    ))?;
    Ok(print(&table)?)
}

fn dead_letter_filter(args: FilterArgs) -> DeadLetterFilter {
    DeadLetterFilter {
        route: args.route.unwrap_or_default(),
        since_unix_ms: args.since.unwrap_or_default(),
        until_unix_ms: args.until.unwrap_or_default(),
        reason_contains: args.reason_contains.unwrap_or_default(),
    }
}

/// The dead letter each of `new_ids` redelivers, in the same order.
async fn redelivery_sources(
    client: &HookdClient,
    tenant: &str,
    new_ids: &[String],
) -> anyhow::Result<Vec<String>> {
    let lookups = new_ids.iter().map(|id| async move {
        client
            .get_delivery(tenant, id.as_str())
            .await
            .map(|d| d.redelivery_of)
            .with_context(|| format!("looking up redelivery {id}"))
    });
    futures_util::stream::iter(lookups)
        .buffered(8)
        .try_collect()
        .await
}

/// Old id next to new id (hookd keeps the order of the ids asked for); `-`
/// where the old id is unknown.
fn redelivered(old_ids: &[String], new_ids: &[String]) -> Table {
    let mut table = Table::with_header(&["DELIVERY_ID", "REDELIVERED_AS"]);
    for (index, new_id) in new_ids.iter().enumerate() {
        let old_id = old_ids.get(index).map_or("-", String::as_str);
        table.row(vec![old_id.to_owned(), new_id.clone()]);
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redelivery_by_id_pairs_old_and_new() {
        let old = vec!["dlv_a".to_owned(), "dlv_b".to_owned()];
        let new = vec!["dlv_c".to_owned(), "dlv_d".to_owned()];
        assert_eq!(
            redelivered(&old, &new).to_string(),
            "DELIVERY_ID  REDELIVERED_AS\ndlv_a        dlv_c\ndlv_b        dlv_d\n"
        );
        assert_eq!(
            redelivered(&[], &new[..1]).to_string(),
            "DELIVERY_ID  REDELIVERED_AS\n-            dlv_c\n"
        );
    }
}
