//! A fake OpenTelemetry collector: the OTLP/gRPC trace service from
//! `opentelemetry-proto` on 127.0.0.1:0, plain or over TLS, keeping every
//! span it is sent.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        trace_service_server::{TraceService, TraceServiceServer},
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    },
    common::v1::{any_value::Value as AnyValue, KeyValue},
    trace::v1::Span,
};
use tonic::{
    transport::{Identity, ServerTlsConfig},
    Request, Response, Status,
};

use crate::pki::Pki;

/// One span as received, with its resource's attributes.
#[derive(Debug, Clone)]
pub struct Received {
    pub span: Span,
    pub resource: Vec<KeyValue>,
}

impl Received {
    /// A span attribute as text.
    pub fn attr(&self, key: &str) -> Option<String> {
        text(&self.span.attributes, key)
    }

    /// A resource attribute as text.
    pub fn resource_attr(&self, key: &str) -> Option<String> {
        text(&self.resource, key)
    }
}

fn text(attributes: &[KeyValue], key: &str) -> Option<String> {
    let value = attributes.iter().find(|kv| kv.key == key)?.value.as_ref()?;
    Some(match value.value.as_ref()? {
        AnyValue::StringValue(s) => s.clone(),
        AnyValue::BoolValue(b) => b.to_string(),
        AnyValue::IntValue(i) => i.to_string(),
        other => format!("{other:?}"),
    })
}

/// A running fake collector.
#[derive(Clone, Default)]
pub struct Collector {
    requests: Arc<Mutex<Vec<ExportTraceServiceRequest>>>,
}

impl Collector {
    /// Starts serving on a free port; returns it and its address.
    pub async fn start() -> (Collector, SocketAddr) {
        Collector::serve(None).await
    }

    /// Starts serving over TLS with `pki`'s server certificate (for
    /// `localhost`, signed by the test CA).
    pub async fn start_tls(pki: &Pki) -> (Collector, SocketAddr) {
        let (cert, key) = pki.server();
        let identity =
            Identity::from_pem(std::fs::read(cert).unwrap(), std::fs::read(key).unwrap());
        Collector::serve(Some(ServerTlsConfig::new().identity(identity))).await
    }

    async fn serve(tls: Option<ServerTlsConfig>) -> (Collector, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let collector = Collector::default();
        let service = TraceServiceServer::new(collector.clone());
        let mut builder = tonic::transport::Server::builder();
        if let Some(tls) = tls {
            builder = builder.tls_config(tls).unwrap();
        }
        tokio::spawn(async move {
            builder
                .add_service(service)
                .serve_with_incoming(tonic::transport::server::TcpIncoming::from(listener))
                .await
                .unwrap();
        });
        (collector, addr)
    }

    /// Every span received so far.
    pub fn spans(&self) -> Vec<Received> {
        let requests = self.requests.lock().unwrap();
        let mut out = Vec::new();
        for resource_spans in requests.iter().flat_map(|r| &r.resource_spans) {
            let resource = resource_spans
                .resource
                .as_ref()
                .map(|r| r.attributes.clone())
                .unwrap_or_default();
            for span in resource_spans.scope_spans.iter().flat_map(|s| &s.spans) {
                out.push(Received {
                    span: span.clone(),
                    resource: resource.clone(),
                });
            }
        }
        out
    }

    /// Everything received, as text, for searching.
    pub fn dump(&self) -> String {
        format!("{:?}", self.requests.lock().unwrap())
    }
}

#[tonic::async_trait]
impl TraceService for Collector {
    async fn export(
        &self,
        request: Request<ExportTraceServiceRequest>,
    ) -> Result<Response<ExportTraceServiceResponse>, Status> {
        self.requests.lock().unwrap().push(request.into_inner());
        Ok(Response::new(ExportTraceServiceResponse::default()))
    }
}
