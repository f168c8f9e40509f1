//! Log output: text or JSON lines, filtered by `RUST_LOG` or the config.

use std::io::IsTerminal;

use tracing_subscriber::{fmt, EnvFilter};

use crate::config::{LogConfig, LogFormat};

/// Installs the global log subscriber; a second call is a no-op, so tests
/// that start several servers in one process are fine.
pub fn init_logging(config: &LogConfig) {
    let filter =
        EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new(&config.filter));
    let builder = fmt()
        .with_env_filter(filter)
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    let _ = match config.format {
        LogFormat::Json => builder.json().flatten_event(true).try_init(),
        LogFormat::Text => builder.try_init(),
    };
}
