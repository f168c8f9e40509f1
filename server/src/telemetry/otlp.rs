//! OTLP/gRPC export of spans, switched on by the standard OpenTelemetry
//! variables. The exporter's gRPC channel lives on a small runtime of its
//! own, never on an actix thread: flushing it from actix's current-thread
//! runtime stalls and loses the spans. Spans leave through a batch processor
//! (its own thread, bounded queue), so the request path never waits on the
//! collector; [`OtlpExport::shutdown`] flushes what is left.

use std::time::Duration;

use opentelemetry::{Key, KeyValue};
use opentelemetry_otlp::{SpanExporter, WithTonicConfig};
use opentelemetry_sdk::{trace::SdkTracerProvider, Resource};
use tonic::transport::ClientTlsConfig;

/// A running OTLP pipeline: the tracer provider and the runtime its
/// exporter's channel runs on.
pub struct OtlpExport {
    provider: SdkTracerProvider,
    runtime: tokio::runtime::Runtime,
}

impl OtlpExport {
    /// Starts exporting when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, unless
    /// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`; `None`
    /// otherwise. Headers, timeout, batching (`OTEL_BSP_*`), sampler and
    /// resource come from their usual `OTEL_*` variables.
    pub fn from_env() -> Result<Option<OtlpExport>, String> {
        if !export_wanted(|name| std::env::var(name).ok()) {
            return Ok(None);
        }
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hookd-otlp")
            .enable_all()
            .build()
            .map_err(|e| format!("OTLP runtime: {e}"))?;
        let exporter = {
            let _entered = runtime.enter();
            // Applies to `https://` endpoints only: certificates are checked
            // against the system's roots (the OS store, or `SSL_CERT_FILE` /
            // `SSL_CERT_DIR`) and the public web roots built in.
            SpanExporter::builder()
                .with_tonic()
                .with_tls_config(ClientTlsConfig::new().with_enabled_roots())
                .build()
                .map_err(|e| format!("OTLP exporter: {e}"))?
        };
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build();
        Ok(Some(OtlpExport { provider, runtime }))
    }

    /// The provider hookd's spans go to.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// Exports every span still queued, then stops. Call it after the
    /// server has stopped, so the last requests' spans are in the batch.
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!(error = %e, "OpenTelemetry spans could not all be exported at shutdown");
        }
        self.runtime.shutdown_timeout(Duration::from_secs(1));
    }
}

/// Whether the environment asks for OTLP export.
fn export_wanted(var: impl Fn(&str) -> Option<String>) -> bool {
    let set = |name: &str| var(name).is_some_and(|v| !v.trim().is_empty());
    let disabled = var("OTEL_SDK_DISABLED").is_some_and(|v| v.trim().eq_ignore_ascii_case("true"));
    let no_exporter =
        var("OTEL_TRACES_EXPORTER").is_some_and(|v| v.trim().eq_ignore_ascii_case("none"));
    (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
        && !disabled
        && !no_exporter
}

/// The detected resource (`OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`),
/// with `service.name = hookd` unless those name the service.
fn resource() -> Resource {
    let detected = Resource::builder().build();
    let named = detected
        .get(&Key::from_static_str("service.name"))
        .is_some_and(|name| !name.as_str().starts_with("unknown_service"));
    let builder = if named {
        Resource::builder()
    } else {
        Resource::builder().with_service_name("hookd")
    };
    builder
        .with_attribute(KeyValue::new("service.version", env!("CARGO_PKG_VERSION")))
        .build()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wanted(vars: &[(&str, &str)]) -> bool {
        export_wanted(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        })
    }

    #[test]
    fn export_follows_the_standard_variables() {
        assert!(!wanted(&[]));
        assert!(!wanted(&[("OTEL_EXPORTER_OTLP_ENDPOINT", " ")]));
        assert!(wanted(&[("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317")]));
        assert!(wanted(&[(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
            "http://c:4317"
        )]));
        assert!(!wanted(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_SDK_DISABLED", "true"),
        ]));
        assert!(!wanted(&[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://c:4317"),
            ("OTEL_TRACES_EXPORTER", "none"),
        ]));
    }
}
