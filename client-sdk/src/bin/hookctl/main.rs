//! `hookctl`: administer a hookd webhook receiver from the shell over the gRPC
//! control plane, plus `send` (a signed test webhook) and `tail` (live events).
#![forbid(unsafe_code)]

mod apply;
mod cli;
mod commands;
mod exit;
mod output;
mod table;
mod view;

use std::process::ExitCode;

use clap::Parser;

#[tokio::main]
async fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli).await {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) if exit::is_broken_pipe(&err) => ExitCode::SUCCESS,
        Err(err) if exit::is_changes(&err) => ExitCode::from(exit::CHANGES),
        Err(err) => {
            eprintln!("hookctl: {err:#}");
            ExitCode::from(exit::for_error(&err))
        }
    }
}
