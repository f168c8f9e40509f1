//! `hookctl apply`, `diff` and `export`: hookd's tenants, routes, contracts
//! and alert settings kept in a YAML file (docs/apply.md).

mod alerts;
mod current;
mod desired;
mod execute;
mod export;
mod field;
mod file;
mod plan;
mod render;
mod secret;
mod state;

use std::{
    future::Future,
    path::{Path, PathBuf},
};

use anyhow::Context;
use hookd_sdk::client::HookdClient;
use serde_json::json;

use crate::{
    cli::{ApplyArgs, ExportArgs, PlanArgs},
    exit::CliError,
    output::Output,
};

/// The plan for the file `args` names, and the directory its relative secret
/// paths start from. The file is read and checked before hookd is reached,
/// so a typo fails the same with hookd down.
///
/// `hookctl apply`, `diff` and `export`: hookd's tenants, routes, contracts and
/// alert settings
/// kept in a YAML file (docs/apply.md). The file is read ([`file`](mod@file)), its
/// defaults filled in ([`desired`]), compared with what hookd answers
/// ([`current`]) into a [`plan::Plan`], which diff prints ([`render`]) and
/// apply makes ([`execute`]); [`export`](mod@export) writes hookd's state as a file.
async fn planned(
    client: impl Future<Output = anyhow::Result<HookdClient>>,
    args: &PlanArgs,
) -> anyhow::Result<(HookdClient, plan::Plan, PathBuf)> {
    let file = file::load(&args.file)?;
    let desired = desired::desired(file, args.allow_inline_secrets)
        .with_context(|| format!("in {}", args.file.display()))?;
    let client = client.await?;
    let current = current::current(&client).await?;
    let options = plan::Options {
        prune: args.prune,
        rotate_secrets: args.rotate_secrets,
    };
    let plan = plan::plan(&desired, &current, options)?;
    let base = match args.file.parent() {
        Some(dir) if args.file != Path::new("-") => dir.to_path_buf(),
        _ => PathBuf::from("."),
    };
    Ok((client, plan, base))
}

fn show(out: Output, plan: &plan::Plan) -> anyhow::Result<()> {
    Ok(out.result(
        render::plan_text(plan).trim_end(),
        &serde_json::to_value(plan)?,
    )?)
}

/// The warning beside secrets hookd shows only once.
const ONCE: &str =
    "Note: secret values are shown only this once. Store them now; hookd cannot show them again.";

/// `hookctl diff`: prints the plan; fails with [`CliError::Changes`] (exit 2)
/// when there is anything to change.
pub async fn diff(
    client: impl Future<Output = anyhow::Result<HookdClient>>,
    out: Output,
    args: PlanArgs,
) -> anyhow::Result<()> {
    let (_, plan, _) = planned(client, &args).await?;
    show(out, &plan)?;
    match plan.is_empty() {
        true => Ok(()),
        false => Err(CliError::Changes(plan.changes.len()).into()),
    }
}

/// `hookctl apply`: makes the plan's changes, printing each as it is made
/// (with a new tenant's generated secrets, shown this once).
pub async fn apply(
    client: impl Future<Output = anyhow::Result<HookdClient>>,
    out: Output,
    args: ApplyArgs,
) -> anyhow::Result<()> {
    let (client, plan, base) = planned(client, &args.plan).await?;
    if args.dry_run || plan.is_empty() {
        return show(out, &plan);
    }
    let mut made = Vec::new();
    let mut shown = false;
    execute::execute(&client, &plan, &base, |done| {
        let mut record = serde_json::to_value(done.step)?;
        if let Some(created) = &done.created {
            record["secret"] = json!(created.secret);
            record["destination_secret"] = json!(created.destination_secret);
        }
        if let Some(secret) = &done.sink_secret {
            record["sink_secret"] = json!(secret);
        }
        if !out.is_document() {
            out.line(render::step_text(done.step).trim_end())?;
            if let Some(created) = &done.created {
                if !created.secret.is_empty() {
                    out.line(&format!("    generated secret: {}", created.secret))?;
                }
                out.line(&format!(
                    "    destination secret: {}",
                    created.destination_secret
                ))?;
            }
            if let Some(secret) = &done.sink_secret {
                out.line(&format!("    generated sink secret: {secret}"))?;
            }
        }
        shown |= done.created.is_some() || done.sink_secret.is_some();
        made.push(record);
        Ok(())
    })
    .await?;
    let document = json!({ "applied": made, "notes": plan.notes });
    let mut summary = format!("Applied: {} changed.", render::count(plan.changes.len()));
    for note in &plan.notes {
        summary.push_str(&format!("\nnote: {note}"));
    }
    if shown {
        // In JSON mode on stderr, so stdout stays one document.
        match out.is_document() {
            true => eprintln!("{ONCE}"),
            false => summary.push_str(&format!("\n{ONCE}")),
        }
    }
    Ok(out.result(&summary, &document)?)
}

/// `hookctl export`: the tenants as a file, on stdout.
pub async fn export(
    client: impl Future<Output = anyhow::Result<HookdClient>>,
    out: Output,
    args: ExportArgs,
) -> anyhow::Result<()> {
    let client = client.await?;
    let tenants = match args.tenants.is_empty() {
        true => current::current(&client).await?,
        false => current::named(&client, &args.tenants).await?,
    };
    for tenant in tenants.iter().filter(|t| t.from_config) {
        eprintln!(
            "note: tenant {} is declared in hookd's config file: not exported",
            tenant.id
        );
    }
    let file = export::export(&tenants);
    if out.is_document() {
        return Ok(out.result("", &serde_json::to_value(&file)?)?);
    }
    print!("{}", file::to_yaml(&file)?);
    Ok(())
}
