//! `hookctl tokens create|list|revoke`.

use hookd_sdk::client::HookdClient;
use serde_json::json;

use crate::{cli::TokensCommand, output::Output};

/// Runs one `tokens` subcommand.
pub async fn run(client: &HookdClient, out: Output, command: TokensCommand) -> anyhow::Result<()> {
    match command {
        TokensCommand::Create {
            tenant,
            description,
        } => {
            let issued = client.create_token(tenant.as_str(), description).await?;
            let fields = vec![
                ("tenant", tenant.clone()),
                ("token id", issued.token_id.clone()),
                ("token", issued.token.clone()),
            ];
            let document = json!({
                "tenant_id": tenant,
                "token_id": issued.token_id,
                "token": issued.token,
            });
            Ok(out.once(fields, &document)?)
        }
        TokensCommand::List { tenant } => {
            let tokens = client.list_tokens(tenant.unwrap_or_default()).await?;
            Ok(out.list("tokens", &tokens, None)?)
        }
        TokensCommand::Revoke { token_id } => {
            client.revoke_token(token_id.as_str()).await?;
            let text = format!("revoked token {token_id}");
            Ok(out.result(&text, &json!({ "revoked": token_id }))?)
        }
    }
}
