//! `hookctl contracts put|get|list|delete|validate|doc`.

use std::path::Path;

use anyhow::Context;
use hookd_sdk::client::{proto::Contract, HookdClient};
use serde_json::json;

use super::sheet;
use crate::{
    cli::{ContractsCommand, PutContractArgs},
    exit::CliError,
    output::Output,
};

/// Runs one `contracts` subcommand.
pub async fn run(
    client: &HookdClient,
    out: Output,
    command: ContractsCommand,
) -> anyhow::Result<()> {
    match command {
        ContractsCommand::Put(args) => {
            let tenant = args.tenant.clone();
            let saved = client.put_contract(tenant, contract(args)?).await?;
            Ok(out.record(&saved)?)
        }
        ContractsCommand::Get(key) => {
            let version = key.version.unwrap_or_default();
            let got = client
                .get_contract(key.tenant, key.event_type, version)
                .await?;
            Ok(out.record(&got)?)
        }
        ContractsCommand::List { tenant } => {
            let list = client.list_contracts(tenant).await?;
            Ok(out.list("contracts", &list.contracts, None)?)
        }
        ContractsCommand::Delete(key) => {
            let version = key.version.clone().unwrap_or_default();
            client
                .delete_contract(
                    key.tenant.as_str(),
                    key.event_type.as_str(),
                    version.as_str(),
                )
                .await?;
            let text = format!("deleted the contract for {}", key.event_type);
            let document = json!({"deleted": {"type": key.event_type, "version": version}});
            Ok(out.result(&text, &document)?)
        }
        ContractsCommand::Validate {
            tenant,
            payload,
            payload_file,
        } => {
            let payload = match (payload, payload_file) {
                (Some(inline), _) => inline.into_bytes(),
                (None, Some(path)) => read(&path)?.into_bytes(),
                (None, None) => unreachable!("clap requires one of them"),
            };
            let check = client.validate_payload(tenant, payload).await?;
            out.record(&check)?;
            match check.valid {
                true => Ok(()),
                false => Err(CliError::ContractBroken(check.code).into()),
            }
        }
        ContractsCommand::Doc { tenant } => {
            let info = client.get_tenant(tenant.as_str()).await?;
            let list = client.list_contracts(tenant).await?;
            let markdown = sheet::markdown(&info, &list);
            Ok(out.result(&markdown, &json!({ "markdown": markdown }))?)
        }
    }
}

fn contract(args: PutContractArgs) -> anyhow::Result<Contract> {
    let text = |inline: Option<String>, file: Option<std::path::PathBuf>| match (inline, file) {
        (Some(text), _) => Ok(text),
        (None, Some(path)) => read(&path),
        (None, None) => unreachable!("clap requires one of them"),
    };
    Ok(Contract {
        r#type: args.event_type,
        version: args.version.unwrap_or_default(),
        schema: text(args.schema, args.schema_file)?,
        example: text(args.example, args.example_file)?,
    })
}

fn read(path: &Path) -> anyhow::Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))
}
