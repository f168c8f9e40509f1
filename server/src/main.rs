//! The `hookd` binary: flags, config, logging and span export, then
//! [`Server::start`] until a signal.

use std::path::PathBuf;

use anyhow::Context;
use clap::{Parser, Subcommand};
use hookd_server::{
    clock::SystemClock,
    config::{Config, LogFormat, Overrides},
    init_logging, transform_worker, KeySources, OtlpExport, Runtime, Server, TRANSFORM_WORKER_ARG,
};

/// Every request allocates its body, headers and records on one thread and
/// frees some of them on another (HTTP worker, tenant actor, committer);
/// under load glibc malloc spent a tenth of hookd's samples in its bin
/// scans and consolidation, and mimalloc took 15-35 % more deliveries per
/// second (docs/benchmarks.md). Built without transparent huge pages, so
/// an idle hookd stays as small as with glibc.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// hookd: receives webhooks for many tenants, verifies them, stores them
/// durably and forwards them.
#[derive(Parser)]
#[command(name = "hookd", version)]
struct Cli {
    #[command(subcommand)]
    command: Option<Command>,
    /// TOML config file.
    #[arg(long, env = "HOOKD_CONFIG", global = true)]
    config: Option<PathBuf>,
    /// Data directory (embedded store, master key, admin token).
    #[arg(long, env = "HOOKD_DATA_DIR", global = true)]
    data_dir: Option<PathBuf>,
    /// HTTP ingress address; port 0 picks a free port.
    #[arg(long, env = "HOOKD_HTTP_ADDR", global = true)]
    http_addr: Option<String>,
    /// gRPC control-plane address; port 0 picks a free port.
    #[arg(long, env = "HOOKD_GRPC_ADDR", global = true)]
    grpc_addr: Option<String>,
    /// Admin token of the control plane (generated into the data dir if unset).
    #[arg(long, env = "HOOKD_ADMIN_TOKEN", hide_env_values = true, global = true)]
    admin_token: Option<String>,
    /// Master key for secrets at rest: base64 of 32 bytes.
    #[arg(long, env = "HOOKD_MASTER_KEY", hide_env_values = true, global = true)]
    master_key: Option<String>,
    /// File holding the master key.
    #[arg(long, env = "HOOKD_MASTER_KEY_FILE", global = true)]
    master_key_file: Option<PathBuf>,
    /// Log format, `text` or `json` (wins over `[log] format`).
    #[arg(long, env = "HOOKD_LOG_FORMAT", global = true)]
    log_format: Option<LogFormat>,
}

#[derive(Subcommand)]
enum Command {
    /// Run the server (the default).
    Serve,
    /// Apply the PostgreSQL schema migrations (`[storage.postgres]`) and
    /// exit; every start applies them too.
    Migrate,
}

/// The `hookd` binary: flags, config, logging and span export, then the
/// server library's [`Server::start`] (a thin wrapper over `hookd_server::run`)
/// until a signal.
fn main() -> anyhow::Result<()> {
    // hookd runs tenants' transforms in copies of itself started this way,
    // with an empty environment; nothing else is read or started.
    if std::env::args_os().nth(1).as_deref() == Some(TRANSFORM_WORKER_ARG.as_ref()) {
        std::process::exit(transform_worker());
    }
    let cli = Cli::parse();
    let overrides = Overrides {
        data_dir: cli.data_dir,
        http_addr: cli.http_addr,
        grpc_addr: cli.grpc_addr,
    };
    let mut config =
        Config::load(cli.config.as_deref(), &overrides).context("invalid configuration")?;
    config.keys = KeySources {
        master_key: cli.master_key.map(Into::into),
        master_key_file: cli.master_key_file,
        admin_token: cli.admin_token.map(Into::into),
    };
    if let Some(format) = cli.log_format {
        config.log.format = format;
    }
    // Held to the end: dropping it writes out the lines still queued.
    let _logs = init_logging(&config.log);
    if let Some(Command::Migrate) = cli.command {
        let pg = &config.storage.postgres;
        let url = pg.connection_url().context("storage.postgres")?;
        let version =
            hookd_server::migrate_postgres(url, pg.max_connections).context("migration failed")?;
        println!("database schema at version {version}");
        return Ok(());
    }
    let otlp = OtlpExport::from_env().context("OpenTelemetry export")?;
    let mut runtime = Runtime::new(std::sync::Arc::new(SystemClock));
    if let Some(otlp) = &otlp {
        runtime = runtime.with_tracer_provider(otlp.provider().clone());
        tracing::info!(
            protocol = otlp.protocol().as_str(),
            "exporting spans over OTLP"
        );
    }
    let server = Server::start(config, runtime).context("hookd could not start")?;
    wait_for_signal(&server)?;
    let stopped = server.shutdown().context("shutdown failed");
    // Only now: the last requests' spans are queued, and no actix thread
    // is left to stall the flush.
    if let Some(otlp) = otlp {
        otlp.shutdown();
    }
    stopped
}

/// Blocks until SIGTERM or SIGINT; reloads the TLS certificates on each SIGHUP.
fn wait_for_signal(server: &Server) -> anyhow::Result<()> {
    use tokio::signal::unix::{signal, SignalKind};
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    runtime.block_on(async {
        let mut term = signal(SignalKind::terminate())?;
        let mut hangup = signal(SignalKind::hangup())?;
        loop {
            tokio::select! {
                _ = term.recv() => return Ok(()),
                _ = tokio::signal::ctrl_c() => return Ok(()),
                _ = hangup.recv() => {
                    tracing::info!("SIGHUP: reloading TLS certificates");
                    // Errors are logged per listener; hookd keeps serving.
                    let _ = server.reload_tls();
                }
            }
        }
    })
}
