//! Telemetry: log output (text or JSON lines, filtered by `RUST_LOG` or the
//! config), OpenTelemetry spans of the ingest and forward paths with their
//! OTLP export, and the handle every component records spans and metrics to.

pub mod attrs;
mod logs;
mod otlp;
pub mod spans;

use std::sync::Arc;

pub use logs::{init_logging, LogGuard};
use opentelemetry_sdk::trace::SdkTracerProvider;
pub use otlp::{OtlpError, OtlpExport, OtlpProtocol};
pub use spans::Spans;

use crate::{config::MetricsConfig, metrics::Metrics};

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
