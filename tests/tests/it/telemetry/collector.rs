//! A fake OpenTelemetry collector: the OTLP/gRPC trace service from
//! `opentelemetry-proto` on 127.0.0.1:0, plain or over TLS, or OTLP/HTTP
//! with protobuf bodies (`POST /v1/traces`), keeping every span it is sent.

use std::{
    net::SocketAddr,
    sync::{Arc, Mutex},
};

use http_body_util::{BodyExt, Full};
use hyper::{body::Bytes, server::conn::http1, service::service_fn};
use hyper_util::rt::TokioIo;
use opentelemetry_proto::tonic::{
    collector::trace::v1::{
        trace_service_server::{TraceService, TraceServiceServer},
        ExportTraceServiceRequest, ExportTraceServiceResponse,
    },
    common::v1::{any_value::Value as AnyValue, KeyValue},
    trace::v1::Span,
};
use prost::Message;
use tokio_rustls::{
    rustls::{
        pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
        ServerConfig,
    },
    TlsAcceptor,
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

    /// Every span attribute, as text.
    pub fn attrs(&self) -> std::collections::BTreeMap<String, String> {
        self.span
            .attributes
            .iter()
            .filter_map(|kv| Some((kv.key.clone(), text(&self.span.attributes, &kv.key)?)))
            .collect()
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

    /// Starts serving OTLP/HTTP (protobuf) on a free port; returns it and
    /// its address. Anything but `POST /v1/traces` with an
    /// `application/x-protobuf` body is answered 404 or 415.
    pub async fn start_http() -> (Collector, SocketAddr) {
        Collector::serve_http(None).await
    }

    /// OTLP/HTTP over TLS with `pki`'s server certificate (for `localhost`,
    /// signed by the test CA).
    pub async fn start_https(pki: &Pki) -> (Collector, SocketAddr) {
        let (cert, key) = pki.server();
        let chain = CertificateDer::pem_file_iter(cert)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        Collector::serve_http(Some(TlsAcceptor::from(Arc::new(config)))).await
    }

    async fn serve_http(tls: Option<TlsAcceptor>) -> (Collector, SocketAddr) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let collector = Collector::default();
        let serving = collector.clone();
        tokio::spawn(async move {
            while let Ok((stream, _)) = listener.accept().await {
                let collector = serving.clone();
                let service = service_fn(move |req| {
                    let collector = collector.clone();
                    async move { Ok::<_, std::convert::Infallible>(collector.export_http(req).await) }
                });
                let tls = tls.clone();
                tokio::spawn(async move {
                    let http = http1::Builder::new();
                    let _ = match tls {
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(stream) => {
                                http.serve_connection(TokioIo::new(stream), service).await
                            }
                            Err(_) => return,
                        },
                        None => http.serve_connection(TokioIo::new(stream), service).await,
                    };
                });
            }
        });
        (collector, addr)
    }

    async fn export_http(
        &self,
        req: hyper::Request<hyper::body::Incoming>,
    ) -> hyper::Response<Full<Bytes>> {
        let answer = |status: u16, body: Vec<u8>| {
            hyper::Response::builder()
                .status(status)
                .header("content-type", "application/x-protobuf")
                .body(Full::new(Bytes::from(body)))
                .unwrap()
        };
        if req.method() != hyper::Method::POST || req.uri().path() != "/v1/traces" {
            return answer(404, Vec::new());
        }
        if req
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            != Some("application/x-protobuf")
        {
            return answer(415, Vec::new());
        }
        let body = req.into_body().collect().await.unwrap().to_bytes();
        let request = ExportTraceServiceRequest::decode(body).unwrap();
        self.requests.lock().unwrap().push(request);
        answer(200, ExportTraceServiceResponse::default().encode_to_vec())
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
