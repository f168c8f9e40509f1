//! OTLP export of spans over gRPC or HTTP, switched on by the standard
//! OpenTelemetry variables.

use std::time::Duration;

use opentelemetry::{Key, KeyValue};
use opentelemetry_http::{Bytes, HttpClient, HttpError, Request, Response};
use opentelemetry_otlp::{SpanExporter, WithExportConfig, WithHttpConfig, WithTonicConfig};
use opentelemetry_sdk::{trace::SdkTracerProvider, Resource};
use tonic::transport::ClientTlsConfig;

/// The wire protocol spans are exported with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OtlpProtocol {
    /// OTLP/gRPC (`grpc`), to port 4317 by convention.
    Grpc,
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`), to port 4318 by
    /// convention, `POST {endpoint}/v1/traces`.
    HttpProtobuf,
}

/// A protocol variable names a protocol hookd does not export with.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{variable}={value:?} is not supported; use \"grpc\" or \"http/protobuf\"")]
pub struct UnsupportedProtocol {
    /// The variable that names it.
    pub variable: &'static str,
    /// What it says.
    pub value: String,
}

/// Why OTLP export could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// The protocol variables ask for something else.
    #[error(transparent)]
    Protocol(#[from] UnsupportedProtocol),
    /// The exporter's own runtime could not be built.
    #[error("OTLP runtime")]
    Runtime(#[source] std::io::Error),
    /// The exporter refused its settings.
    #[error("OTLP exporter")]
    Exporter(#[source] opentelemetry_otlp::ExporterBuildError),
}

impl OtlpProtocol {
    /// The protocol the environment asks for: the traces variable over the
    /// general one, `grpc` when neither is set; an error naming the
    /// variable and the value otherwise.
    pub fn from_vars(
        var: impl Fn(&str) -> Option<String>,
    ) -> Result<OtlpProtocol, UnsupportedProtocol> {
        for name in [
            "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
        ] {
            let Some(value) = var(name).filter(|v| !v.trim().is_empty()) else {
                continue;
            };
            return match value.trim() {
                "grpc" => Ok(OtlpProtocol::Grpc),
                "http/protobuf" => Ok(OtlpProtocol::HttpProtobuf),
                other => Err(UnsupportedProtocol {
                    variable: name,
                    value: other.to_owned(),
                }),
            };
        }
        Ok(OtlpProtocol::Grpc)
    }

    /// The protocol's name in `OTEL_EXPORTER_OTLP_PROTOCOL`.
    pub fn as_str(self) -> &'static str {
        match self {
            OtlpProtocol::Grpc => "grpc",
            OtlpProtocol::HttpProtobuf => "http/protobuf",
        }
    }
}

/// A running OTLP pipeline: the tracer provider and the runtime its
/// exporter runs on.
///
/// OTLP export of spans, switched on by the standard OpenTelemetry
/// variables, over gRPC or HTTP with protobuf bodies as
/// `OTEL_EXPORTER_OTLP_PROTOCOL` (or `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL`)
/// says: `grpc` (the default) or `http/protobuf`. Both check an `https://`
/// collector's certificate against the system's roots. The exporter lives
/// on a small runtime of its own, never on an actix thread: flushing it
/// from actix's current-thread runtime stalls and loses the spans. Spans
/// leave through a batch processor (its own thread, bounded queue), so the
/// request path never waits on the collector; [`OtlpExport::shutdown`]
/// flushes what is left.
pub struct OtlpExport {
    provider: SdkTracerProvider,
    runtime: tokio::runtime::Runtime,
    protocol: OtlpProtocol,
}

impl OtlpExport {
    /// Starts exporting when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
    /// `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set, unless
    /// `OTEL_SDK_DISABLED=true` or `OTEL_TRACES_EXPORTER=none`; `None`
    /// otherwise. Protocol, headers, timeout, batching (`OTEL_BSP_*`),
    /// sampler and resource come from their usual `OTEL_*` variables.
    pub fn from_env() -> Result<Option<OtlpExport>, OtlpError> {
        let var = |name: &str| std::env::var(name).ok();
        if !export_wanted(var) {
            return Ok(None);
        }
        OtlpExport::start(OtlpProtocol::from_vars(var)?, None).map(Some)
    }

    /// Starts exporting over `protocol` to `endpoint` (for HTTP the whole
    /// URL, `.../v1/traces`), or to the endpoint the `OTEL_*` variables
    /// name when `None`.
    pub fn start(protocol: OtlpProtocol, endpoint: Option<&str>) -> Result<OtlpExport, OtlpError> {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("hookd-otlp")
            .enable_all()
            .build()
            .map_err(OtlpError::Runtime)?;
        let exporter = {
            let _entered = runtime.enter();
            exporter(protocol, endpoint, runtime.handle()).map_err(OtlpError::Exporter)?
        };
        let provider = SdkTracerProvider::builder()
            .with_batch_exporter(exporter)
            .with_resource(resource())
            .build();
        Ok(OtlpExport {
            provider,
            runtime,
            protocol,
        })
    }

    /// The provider hookd's spans go to.
    pub fn provider(&self) -> &SdkTracerProvider {
        &self.provider
    }

    /// The protocol spans are exported with.
    pub fn protocol(&self) -> OtlpProtocol {
        self.protocol
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

/// The span exporter for `protocol`. For `https://` endpoints,
/// certificates are checked against the system's roots (the OS store, or
/// `SSL_CERT_FILE` / `SSL_CERT_DIR`) and the public web roots built in.
fn exporter(
    protocol: OtlpProtocol,
    endpoint: Option<&str>,
    runtime: &tokio::runtime::Handle,
) -> Result<SpanExporter, opentelemetry_otlp::ExporterBuildError> {
    match protocol {
        OtlpProtocol::Grpc => {
            let mut builder = SpanExporter::builder()
                .with_tonic()
                .with_tls_config(ClientTlsConfig::new().with_enabled_roots());
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            builder.build()
        }
        OtlpProtocol::HttpProtobuf => {
            let client = reqwest::Client::builder()
                .timeout(Duration::from_secs(10))
                .build()
                .map_err(|e| {
                    opentelemetry_otlp::ExporterBuildError::InternalFailure(e.to_string())
                })?;
            let mut builder = SpanExporter::builder()
                .with_http()
                .with_protocol(opentelemetry_otlp::Protocol::HttpBinary)
                .with_http_client(OtlpHttpClient {
                    client,
                    runtime: runtime.clone(),
                });
            if let Some(endpoint) = endpoint {
                builder = builder.with_endpoint(endpoint);
            }
            builder.build()
        }
    }
}

/// hookd's own reqwest client (rustls with the system's roots, the one TLS
/// stack hookd builds) as the OTLP/HTTP exporter's client; the exporter's
/// built-in one would pull in a second reqwest major version. Requests run
/// on the OTLP runtime: the batch processor calls from a thread of its own,
/// where reqwest finds no tokio runtime.
#[derive(Debug)]
struct OtlpHttpClient {
    client: reqwest::Client,
    runtime: tokio::runtime::Handle,
}

/// Largest collector answer read, in bytes.
const MAX_ANSWER_BYTES: usize = 4 * 1024 * 1024;

#[tonic::async_trait]
impl HttpClient for OtlpHttpClient {
    async fn send_bytes(&self, request: Request<Bytes>) -> Result<Response<Bytes>, HttpError> {
        let client = self.client.clone();
        self.runtime.spawn(send(client, request)).await?
    }
}

/// Sends one export request and reads the collector's answer.
async fn send(
    client: reqwest::Client,
    request: Request<Bytes>,
) -> Result<Response<Bytes>, HttpError> {
    let (parts, body) = request.into_parts();
    let mut response = client
        .request(parts.method, parts.uri.to_string())
        .headers(parts.headers)
        .body(body)
        .send()
        .await?;
    let mut answer = Response::builder().status(response.status());
    if let Some(headers) = answer.headers_mut() {
        *headers = std::mem::take(response.headers_mut());
    }
    let mut bytes = Vec::new();
    while let Some(chunk) = response.chunk().await? {
        if bytes.len() + chunk.len() > MAX_ANSWER_BYTES {
            return Err("the collector's answer is larger than 4 MiB".into());
        }
        bytes.extend_from_slice(&chunk);
    }
    Ok(answer.body(Bytes::from(bytes))?)
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

    fn vars<'a>(vars: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    fn wanted(v: &[(&str, &str)]) -> bool {
        export_wanted(vars(v))
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

    #[test]
    fn the_protocol_follows_the_standard_variables() {
        let protocol = |v: &[(&str, &str)]| OtlpProtocol::from_vars(vars(v));
        assert_eq!(protocol(&[]), Ok(OtlpProtocol::Grpc));
        assert_eq!(
            protocol(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf")]),
            Ok(OtlpProtocol::HttpProtobuf)
        );
        assert_eq!(
            protocol(&[
                ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
                ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "grpc"),
            ]),
            Ok(OtlpProtocol::Grpc)
        );
        let refused = protocol(&[("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json")])
            .unwrap_err()
            .to_string();
        assert!(
            refused.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && refused.contains("http/json"),
            "{refused}"
        );
    }
}
