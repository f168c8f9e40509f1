//! `hookctl deliveries list|get`.

use std::io::{self, Write};

use hookd_sdk::client::{
    proto::{DeliveryStatus, ListDeliveriesRequest},
    HookdClient,
};

use crate::{cli::DeliveriesCommand, output::Output};

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
            page,
        } => {
            let status = status.map_or(DeliveryStatus::Unspecified, DeliveryStatus::from);
            if page.all {
                let route = route.unwrap_or_default();
                let deliveries = client
                    .list_all_route_deliveries(tenant, route, status)
                    .await?;
                return Ok(out.list("deliveries", &deliveries, Some(""))?);
            }
            let listed = client
                .list_deliveries(ListDeliveriesRequest {
                    tenant_id: tenant,
                    status: status.into(),
                    page_size: page.page_size,
                    page_token: page.page_token,
                    route: route.unwrap_or_default(),
                })
                .await?;
            Ok(out.list(
                "deliveries",
                &listed.deliveries,
                Some(&listed.next_page_token),
            )?)
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
    }
}
