//! One module per command group: each turns parsed arguments into client calls and
//! prints the result through [`Output`].

mod alerts;
mod contracts;
mod dead_letters;
mod deliveries;
mod docs;
mod hmac_file;
mod rejections;
mod routes;
mod secret_file;
mod secrets;
mod send;
mod sheet;
mod tail;
mod tenants;
mod tokens;

use anyhow::Context;
use hookd_sdk::client::{ClientTls, HookdClient};

use crate::{
    apply,
    cli::{Cli, Command},
    exit::CliError,
    output::{Output, OutputMode},
};

/// Runs the parsed command line; connects to the control plane only for commands that
/// use it (`send` talks HTTP to the ingest).
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    let Cli {
        endpoint,
        token,
        json,
        output,
        tls_ca,
        tls_cert,
        tls_key,
        command,
    } = cli;
    let out = Output::new(if json { OutputMode::Json } else { output });
    let connect = || async {
        let tls =
            ClientTls::from_files(tls_ca.as_deref(), tls_cert.as_deref(), tls_key.as_deref())?;
        connect(&endpoint, token.clone(), tls).await
    };
    match command {
        Command::Send(args) => send::run(out, args, tls_ca.as_deref()).await,
        Command::Completions { shell } => docs::completions(shell),
        Command::Man => docs::man(),
        Command::Tenants(command) => tenants::run(&connect().await?, out, command).await,
        Command::Secrets(command) => secrets::run(&connect().await?, out, command).await,
        Command::Tokens(command) => tokens::run(&connect().await?, out, command).await,
        Command::Deliveries(command) => deliveries::run(&connect().await?, out, command).await,
        Command::DeadLetters(command) => dead_letters::run(&connect().await?, out, command).await,
        Command::Contracts(command) => contracts::run(&connect().await?, out, command).await,
        Command::Rejections(command) => rejections::run(&connect().await?, out, command).await,
        Command::Routes(command) => routes::run(&connect().await?, out, command).await,
        Command::Apply(args) => apply::apply(connect(), out, args).await,
        Command::Diff(args) => apply::diff(connect(), out, args).await,
        Command::Export(args) => apply::export(connect(), out, args).await,
        Command::Alerts(command) => alerts::run(&connect().await?, out, command).await,
        Command::Tail { tenant } => tail::run(&connect().await?, out, tenant).await,
    }
}

/// `--token`/`$HOOKCTL_TOKEN` wins over `$HOOKD_ADMIN_TOKEN`, so a tenant-scoped token
/// can be used in a shell that also runs hookd with its admin token.
async fn connect(
    endpoint: &str,
    token: Option<String>,
    tls: ClientTls,
) -> anyhow::Result<HookdClient> {
    let token = token
        .or_else(|| std::env::var("HOOKD_ADMIN_TOKEN").ok())
        .filter(|token| !token.is_empty())
        .ok_or(CliError::MissingToken)?;
    HookdClient::connect_with_tls(endpoint, token, tls)
        .await
        .context("connecting to hookd's control plane")
}
