//! `hookctl tenants create|list|get|update|delete`.

use std::path::Path;

use hookd_sdk::client::{
    proto::{CreateTenantRequest, HmacSpec, RequiredFields, UpdateTenantRequest},
    HookdClient,
};
use serde_json::json;

use super::{
    hmac_file::read_hmac_fields,
    secret_file::{read_secret, shown},
};
use crate::{
    cli::{CreateTenantArgs, TenantsCommand, UpdateTenantArgs},
    output::Output,
    view::View,
};

/// Runs one `tenants` subcommand.
pub async fn run(client: &HookdClient, out: Output, command: TenantsCommand) -> anyhow::Result<()> {
    match command {
        TenantsCommand::Create(args) => create(client, out, args).await,
        TenantsCommand::List => {
            let tenants = client.list_all_tenants().await?;
            Ok(out.list("tenants", &tenants, None)?)
        }
        TenantsCommand::Get { tenant } => Ok(out.record(&client.get_tenant(tenant).await?)?),
        TenantsCommand::Update(args) => {
            let tenant = client.update_tenant(update_request(args)?).await?;
            Ok(out.record(&tenant)?)
        }
        TenantsCommand::Delete { tenant, yes: _ } => {
            client.delete_tenant(tenant.as_str()).await?;
            let text = format!("deleted tenant {tenant} and all its data");
            Ok(out.result(&text, &json!({ "deleted": tenant }))?)
        }
    }
}

async fn create(client: &HookdClient, out: Output, args: CreateTenantArgs) -> anyhow::Result<()> {
    let request = CreateTenantRequest {
        tenant_id: args.tenant,
        scheme: args
            .scheme
            .map(|scheme| scheme.as_str().to_owned())
            .unwrap_or_default(),
        tolerance_secs: args.tolerance_secs.unwrap_or_default(),
        destination_url: args.destination_url.unwrap_or_default(),
        max_body_bytes: args.max_body_bytes.unwrap_or_default(),
        required_fields: args.required_fields,
        event_id_field: args.event_id_field.unwrap_or_default(),
        max_in_flight: args.max_in_flight.unwrap_or_default(),
        rate_limit_per_sec: args.rate_limit_per_sec.unwrap_or_default(),
        rate_limit_burst: args.rate_limit_burst.unwrap_or_default(),
        public_url: args.public_url.unwrap_or_default(),
        secret: args
            .secret_file
            .as_deref()
            .map(read_secret)
            .transpose()?
            .unwrap_or_default(),
        verify_token: args
            .verify_token_file
            .as_deref()
            .map(read_secret)
            .transpose()?
            .unwrap_or_default(),
        hmac: hmac_spec(args.hmac_file.as_deref())?,
    };
    let created = client.create_tenant(request).await?;
    let tenant = created.tenant.unwrap_or_default();
    let mut fields = tenant.fields();
    fields.extend([
        ("kid", created.kid.clone()),
        ("secret", shown(&created.secret)),
        ("destination secret", created.destination_secret.clone()),
    ]);
    let document = json!({
        "tenant": tenant.json(),
        "kid": created.kid,
        "secret": created.secret,
        "destination_secret": created.destination_secret,
    });
    Ok(out.once(fields, &document)?)
}

/// The `[hmac]` table of `--hmac-file`, as the API's message.
fn hmac_spec(path: Option<&Path>) -> anyhow::Result<Option<HmacSpec>> {
    path.map(|path| read_hmac_fields(path).map(HmacSpec::from))
        .transpose()
}

/// Only the flags given become `Some`, so hookd leaves every other setting alone.
fn update_request(args: UpdateTenantArgs) -> anyhow::Result<UpdateTenantRequest> {
    let destination_url = if args.pull_mode {
        Some(String::new())
    } else {
        args.destination_url
    };
    let enabled = match (args.enable, args.disable) {
        (true, _) => Some(true),
        (_, true) => Some(false),
        _ => None,
    };
    let required_fields = if args.clear_required_fields || !args.required_fields.is_empty() {
        Some(RequiredFields {
            fields: args.required_fields,
        })
    } else {
        None
    };
    let verify_token = args
        .verify_token_file
        .as_deref()
        .map(read_secret)
        .transpose()?;
    Ok(UpdateTenantRequest {
        tenant_id: args.tenant,
        scheme: args.scheme.map(|scheme| scheme.as_str().to_owned()),
        tolerance_secs: args.tolerance_secs,
        destination_url,
        enabled,
        max_body_bytes: args.max_body_bytes,
        required_fields,
        rate_limit_per_sec: args.rate_limit_per_sec,
        rate_limit_burst: args.rate_limit_burst,
        max_in_flight: args.max_in_flight,
        public_url: args.public_url,
        verify_token,
        hmac: hmac_spec(args.hmac_file.as_deref())?,
    })
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;
    use crate::cli::{Cli, Command};

    fn parse_update(args: &[&str]) -> UpdateTenantRequest {
        let argv = ["hookctl", "tenants", "update", "acme"].iter().chain(args);
        match Cli::try_parse_from(argv).expect("valid flags").command {
            Command::Tenants(TenantsCommand::Update(args)) => update_request(args).unwrap(),
            other => panic!("parsed as {other:?}"),
        }
    }

    #[test]
    fn update_sends_only_the_flags_given() {
        let request = parse_update(&["--disable", "--tolerance-secs", "600"]);
        assert_eq!(request.tenant_id, "acme");
        assert_eq!(request.enabled, Some(false));
        assert_eq!(request.tolerance_secs, Some(600));
        assert_eq!(request.destination_url, None);
        assert_eq!(request.required_fields, None);
        assert_eq!(request.scheme, None);
    }

    #[test]
    fn pull_mode_and_clearing_fields_are_explicit_empties() {
        let request = parse_update(&["--pull-mode", "--clear-required-fields"]);
        assert_eq!(request.destination_url.as_deref(), Some(""));
        assert_eq!(
            request.required_fields,
            Some(RequiredFields { fields: vec![] })
        );
    }
}
