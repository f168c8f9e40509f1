//! Telemetry: log output (text or JSON lines, filtered by `RUST_LOG` or the
//! config), OpenTelemetry spans of the ingest and forward paths with their
//! OTLP export, and the handle every component records spans and metrics to.

pub mod attrs;
mod otlp;
pub mod spans;

use std::{io::IsTerminal, sync::Arc};

use opentelemetry_sdk::trace::SdkTracerProvider;
pub use otlp::{OtlpError, OtlpExport, OtlpProtocol};
pub use spans::Spans;
use tracing_subscriber::{fmt, EnvFilter};

use crate::{
    config::{LogConfig, LogFormat, MetricsConfig},
    metrics::Metrics,
};

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

/// What one server records to: its tracer and its metrics. Per server, not
/// process-global, so servers in one test process keep apart.
#[derive(Clone)]
pub struct Telemetry {
    spans: Spans,
    metrics: Arc<Metrics>,
}

impl Telemetry {
    /// Spans go to `provider` (none: ids only, nothing exported).
    pub fn new(provider: Option<&SdkTracerProvider>, metrics: &MetricsConfig) -> Self {
        let provider = provider
            .cloned()
            .unwrap_or_else(|| SdkTracerProvider::builder().build());
        Telemetry {
            spans: Spans::new(&provider),
            metrics: Arc::new(Metrics::new(metrics)),
        }
    }

    /// Starts and ends hookd's spans.
    pub fn spans(&self) -> &Spans {
        &self.spans
    }

    /// The metrics.
    pub fn metrics(&self) -> &Arc<Metrics> {
        &self.metrics
    }
}
