//! `hookctl`: administer a hookd webhook receiver from the shell: tenants, secrets,
//! tokens, routes, deliveries, dead letters and alerts over the gRPC control plane,
//! plus `send` (a signed test webhook over HTTP) and `tail` (live delivery events).
//!
//! Output is an aligned table by default and one JSON document with `--json`.
//!
//! Exit codes, for scripts:
//!
//! | code | meaning |
//! |---|---|
//! | 0 | success |
//! | 1 | any other failure |
//! | 2 | usage error (unknown command, bad or missing flags) |
//! | 3 | not found: `NOT_FOUND` (send: HTTP 404) |
//! | 4 | not allowed: `UNAUTHENTICATED`, `PERMISSION_DENIED`, no token given (send: HTTP 401, 403) |
//! | 5 | request refused: `INVALID_ARGUMENT`, `FAILED_PRECONDITION`, `ALREADY_EXISTS` (send: HTTP 400, 409, 413, 415, 422) |
//! | 6 | hookd unreachable: `UNAVAILABLE` or a connection failure (send: HTTP 502, 503, 504) |
//! | 7 | retry later: rate limited (send: HTTP 429; wait for its `Retry-After`) |
//!
//! `diff` exits 2 when `apply` would change something (0: nothing), as
//! `terraform plan -detailed-exitcode` does.
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
