//! `hookctl rejections list`.

use hookd_sdk::client::{
    proto::{ListRejectionsRequest, RejectionKind},
    HookdClient,
};

use crate::{cli::RejectionsCommand, output::Output};

/// Runs one `rejections` subcommand.
pub async fn run(
    client: &HookdClient,
    out: Output,
    command: RejectionsCommand,
) -> anyhow::Result<()> {
    let RejectionsCommand::List {
        tenant,
        request_id,
        kind,
        page_size,
        page_token,
    } = command;
    let one = request_id.is_some();
    let listed = client
        .list_rejections(ListRejectionsRequest {
            tenant_id: tenant,
            page_size,
            page_token,
            request_id: request_id.unwrap_or_default(),
            kind: kind.map_or(RejectionKind::Unspecified, Into::into).into(),
        })
        .await?;
    match (one, listed.rejections.first()) {
        (true, Some(rejection)) => Ok(out.record(rejection)?),
        _ => Ok(out.list(
            "rejections",
            &listed.rejections,
            Some(&listed.next_page_token),
        )?),
    }
}
