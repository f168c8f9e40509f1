//! `hookctl secrets rotate|list|revoke`.

use hookd_sdk::client::HookdClient;
use serde_json::json;

use super::secret_file::{read_secret, shown};
use crate::{cli::SecretsCommand, output::Output, view::when};

/// Runs one `secrets` subcommand.
pub async fn run(client: &HookdClient, out: Output, command: SecretsCommand) -> anyhow::Result<()> {
    match command {
        SecretsCommand::Rotate {
            tenant,
            overlap_secs,
            secret_file,
        } => {
            let rotated = match secret_file {
                Some(path) => {
                    let secret = read_secret(&path)?;
                    client
                        .rotate_secret_to(tenant.as_str(), overlap_secs, secret)
                        .await?
                }
                None => client.rotate_secret(tenant.as_str(), overlap_secs).await?,
            };
            let fields = vec![
                ("tenant", tenant.clone()),
                ("kid", rotated.kid.clone()),
                ("secret", shown(&rotated.secret)),
                ("previous kid", rotated.previous_kid.clone()),
                (
                    "previous expires",
                    when(rotated.previous_expires_at_unix_ms),
                ),
            ];
            let document = json!({
                "tenant_id": tenant,
                "kid": rotated.kid,
                "secret": rotated.secret,
                "previous_kid": rotated.previous_kid,
                "previous_expires_at_unix_ms": rotated.previous_expires_at_unix_ms,
            });
            Ok(out.once(fields, &document)?)
        }
        SecretsCommand::List { tenant } => {
            let secrets = client.list_secrets(tenant).await?;
            Ok(out.list("secrets", &secrets, None)?)
        }
        SecretsCommand::Revoke { tenant, kid } => {
            client.revoke_secret(tenant.as_str(), kid.as_str()).await?;
            let text = format!("revoked secret {kid} of tenant {tenant}");
            Ok(out.result(&text, &json!({ "tenant_id": tenant, "revoked": kid }))?)
        }
    }
}
