//! Telemetry: log output, OpenTelemetry spans with their OTLP export, and the
//! handle every component records spans and metrics to.

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
///
/// Telemetry: log output (text or JSON lines, filtered by `RUST_LOG` or the
/// config), OpenTelemetry spans of the ingest and forward paths with their
/// OTLP export, and the handle every component records spans and metrics to.
#[derive(Clone)]
pub struct Telemetry {
    spans: Spans,
    metrics: Arc<Metrics>,
}

impl Telemetry {
    /// Spans go to `provider` (none: ids only, nothing exported).
    pub fn new(provider: Option<&SdkTracerProvider>, metrics: &MetricsConfig) -> Self {
        let spans = match provider {
            Some(provider) => Spans::new(provider),
            None => Spans::ids_only(&SdkTracerProvider::builder().build()),
        };
        Telemetry {
            spans,
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

#[cfg(test)]
mod tests {
    use actix_web::test::TestRequest;
    use opentelemetry::trace::{TraceContextExt, TraceFlags};

    use super::{spans::trace_headers, *};
    use crate::ids::TenantId;

    const PARENT_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

    /// The trace id, span id, flags and trace state that leave hookd for a
    /// request with these headers: its ingest span's and its actor span's.
    fn ids(spans: &Spans, headers: &[(&str, &str)]) -> [(String, String, TraceFlags, String); 2] {
        let mut req = TestRequest::post().uri("/hooks/acme");
        for header in headers {
            req = req.insert_header(*header);
        }
        let ingest = spans.start_ingest(&req.to_http_request());
        let tenant = TenantId::try_from("acme").unwrap();
        let actor = spans.start_child(&ingest, spans::ACTOR_SPAN, &tenant);
        [ingest, actor].map(|cx| {
            let span = cx.span();
            let sc = span.span_context();
            (
                sc.trace_id().to_string(),
                sc.span_id().to_string(),
                sc.trace_flags(),
                sc.trace_state().header(),
            )
        })
    }

    #[test]
    fn without_an_exporter_spans_record_nothing_and_carry_the_same_ids() {
        let quiet = Telemetry::new(None, &crate::metrics::tests::config(1));
        let sdk = Spans::new(&SdkTracerProvider::builder().build());
        let sampled = format!("00-{PARENT_TRACE}-b7ad6b7169203331-01");
        let unsampled = format!("00-{PARENT_TRACE}-b7ad6b7169203331-00");
        let cases: [&[(&str, &str)]; 3] = [
            &[("traceparent", &sampled), ("tracestate", "vendor=1")],
            &[("traceparent", &unsampled)],
            &[],
        ];
        for headers in cases {
            let req = TestRequest::post().insert_header(("x", "y"));
            let cx = quiet.spans().start_ingest(&req.to_http_request());
            assert!(!cx.span().is_recording(), "a span recorded for no one");
            let [ingest, actor] = ids(quiet.spans(), headers);
            let [sdk_ingest, sdk_actor] = ids(&sdk, headers);
            for (mine, theirs) in [(&ingest, &sdk_ingest), (&actor, &sdk_actor)] {
                assert_eq!((&mine.2, &mine.3), (&theirs.2, &theirs.3), "{headers:?}");
                assert!(mine.1 != "0000000000000000", "{headers:?}");
            }
            assert_eq!(ingest.0, actor.0, "{headers:?}");
            assert_ne!(ingest.1, actor.1, "{headers:?}");
            if headers.is_empty() {
                assert_ne!(ingest.0, "00000000000000000000000000000000");
            } else {
                assert_eq!(
                    (ingest.0.as_str(), sdk_ingest.0.as_str()),
                    (PARENT_TRACE, PARENT_TRACE)
                );
                assert_ne!(ingest.1, "b7ad6b7169203331");
            }
        }
        let req = TestRequest::post().insert_header(("traceparent", unsampled.as_str()));
        let cx = quiet.spans().start_ingest(&req.to_http_request());
        let headers = trace_headers(&cx);
        assert!(
            headers[0].1.starts_with(&format!("00-{PARENT_TRACE}-")),
            "{headers:?}"
        );
        assert!(headers[0].1.ends_with("-00"), "{headers:?}");
    }
}
