//! hookd's spans as the OpenTelemetry semantic conventions describe them,
//! for an accepted, a rejected (4xx) and a storage-failed (5xx) delivery,
//! two forward attempts (the first refused with 500), two control-plane
//! RPCs and one REST call. One scenario, checked on spans read from memory
//! and on spans the fake collector received over OTLP/gRPC and OTLP/HTTP
//! (protobuf).

use std::{
    collections::BTreeMap,
    time::{Duration, Instant},
};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry_sdk::trace::{SdkTracerProvider, SpanData};
use reqwest::StatusCode;

use hookd_server::{OtlpExport, OtlpProtocol};
use opentelemetry_proto::tonic::trace::v1::{
    span::SpanKind as ProtoKind, status::StatusCode as ProtoStatus,
};

use super::{
    collector::{Collector, Received},
    Traced, WAIT,
};
use crate::{
    harness::{now_secs, order, signed, tenant},
    receiver::{Receiver, Reply},
};

/// A span as any source shows it: name, kind, status and attributes as text.
#[derive(Debug, Clone)]
pub struct Seen {
    pub name: String,
    pub kind: &'static str,
    pub error: bool,
    pub attrs: BTreeMap<String, String>,
}

impl Seen {
    fn attr(&self, key: &str) -> Option<&str> {
        self.attrs.get(key).map(String::as_str)
    }

    fn has(&self, expected: &[(&str, &str)]) {
        for (key, value) in expected {
            assert_eq!(self.attr(key), Some(*value), "{key} of {self:#?}");
        }
    }
}

impl From<&SpanData> for Seen {
    fn from(span: &SpanData) -> Seen {
        Seen {
            name: span.name.to_string(),
            kind: match span.span_kind {
                SpanKind::Server => "server",
                SpanKind::Client => "client",
                _ => "other",
            },
            error: matches!(span.status, Status::Error { .. }),
            attrs: span
                .attributes
                .iter()
                .map(|kv| (kv.key.to_string(), kv.value.to_string()))
                .collect(),
        }
    }
}

/// What the scenario's requests were answered.
pub struct Answers {
    tenant: String,
    accepted: serde_json::Value,
    rejected: serde_json::Value,
    failed: serde_json::Value,
    port: u16,
    dest_port: String,
}

impl From<&Received> for Seen {
    fn from(received: &Received) -> Seen {
        let span = &received.span;
        Seen {
            name: span.name.clone(),
            kind: match ProtoKind::try_from(span.kind) {
                Ok(ProtoKind::Server) => "server",
                Ok(ProtoKind::Client) => "client",
                _ => "other",
            },
            error: span
                .status
                .as_ref()
                .is_some_and(|s| s.code == ProtoStatus::Error as i32),
            attrs: received.attrs(),
        }
    }
}

/// Polls `spans` (every span its source has so far) until `n` match `pred`.
async fn wait_for(spans: &impl Fn() -> Vec<Seen>, n: usize, pred: impl Fn(&Seen) -> bool) {
    let deadline = Instant::now() + WAIT;
    loop {
        let seen = spans();
        if seen.iter().filter(|s| pred(s)).count() >= n {
            return;
        }
        assert!(
            Instant::now() < deadline,
            "expected {n} matching spans in {seen:#?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Starts hookd with spans going to `provider` and runs the scenario on
/// tenant `id` (one per test: the storage fault is armed per tenant id), whose
/// destination URL carries a token; `spans` reads what its spans' source got.
/// Returns every span once the last one arrived.
pub async fn run_scenario(
    id: &str,
    provider: SdkTracerProvider,
    spans: impl Fn() -> Vec<Seen>,
) -> (Vec<Seen>, Answers) {
    let dest = Receiver::start(Reply::Status(204)).await;
    dest.script([Reply::Status(500)]);
    let url = format!("{}?token=sekrit-7f", dest.url);
    let s = Traced::start_with(
        &tenant(id, &url, "", "", "schedule_secs = [0.05]"),
        provider,
    );
    let body = order("evt_sem");
    let mut headers = signed("msg_sem", now_secs(), &body);
    headers.push(("user-agent".into(), "semconv-sender/1.0".into()));
    let (status, accepted) = s.post(id, &headers, &body).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{accepted}");
    dest.wait_for(2, WAIT).await;
    wait_for(&spans, 2, |span| span.name == "hookd.forward").await;

    let (status, rejected) = s.post(id, &[], &body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{rejected}");

    let admin = s.admin().await;
    assert_eq!(admin.list_all_tenants().await.unwrap().len(), 1);
    assert!(admin.get_tenant("nobody").await.is_err());
    assert_eq!(
        s.rest_get("/v1/tenants/nobody").await,
        StatusCode::NOT_FOUND
    );

    hookd_server::testing::faults::fail_next_write(id);
    let body = order("evt_sem_fail");
    let (status, failed) = s
        .post(id, &signed("msg_sem_fail", now_secs(), &body), &body)
        .await;
    assert_eq!(status, StatusCode::SERVICE_UNAVAILABLE, "{failed}");
    let request_id = failed["request_id"].as_str().unwrap().to_owned();
    wait_for(&spans, 1, |span| {
        span.attr("hookd.request_id") == Some(&request_id)
    })
    .await;
    wait_for(&spans, 1, |span| span.name.ends_with("/GetTenant")).await;
    wait_for(&spans, 1, |span| span.name == "GET /v1/tenants/{tenant_id}").await;
    let port = s.port();
    let dest_port = dest
        .url
        .rsplit(':')
        .next()
        .unwrap()
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    (
        spans(),
        Answers {
            tenant: id.to_owned(),
            accepted,
            rejected,
            failed,
            port,
            dest_port,
        },
    )
}

/// Asserts what the conventions ask of every span of the scenario.
pub fn check(spans: &[Seen], answers: &Answers) {
    let ingest_of = |answer: &serde_json::Value| -> &Seen {
        let id = answer["request_id"].as_str().unwrap();
        let found: Vec<&Seen> = spans
            .iter()
            .filter(|s| s.name == "hookd.ingest" && s.attr("hookd.request_id") == Some(id))
            .collect();
        assert_eq!(found.len(), 1, "ingest span of {id} in {spans:#?}");
        found[0]
    };
    let port = answers.port.to_string();
    let tenant = answers.tenant.as_str();
    let path = format!("/hooks/{tenant}");
    let http = [
        ("http.request.method", "POST"),
        ("url.path", path.as_str()),
        ("url.scheme", "http"),
        ("http.route", "/hooks/{tenant_id}"),
        ("server.port", port.as_str()),
        ("client.address", "127.0.0.1"),
        ("hookd.tenant", tenant),
        ("tenant", tenant),
    ];

    let accepted = ingest_of(&answers.accepted);
    assert_eq!(accepted.kind, "server");
    accepted.has(&http);
    accepted.has(&[
        ("http.response.status_code", "202"),
        ("user_agent.original", "semconv-sender/1.0"),
        (
            "hookd.event_id",
            answers.accepted["event_id"].as_str().unwrap(),
        ),
        (
            "hookd.delivery_id",
            answers.accepted["delivery_id"].as_str().unwrap(),
        ),
        ("event_id", answers.accepted["event_id"].as_str().unwrap()),
    ]);
    assert!(!accepted.error && accepted.attr("error.type").is_none());

    let rejected = ingest_of(&answers.rejected);
    rejected.has(&http);
    rejected.has(&[
        ("http.response.status_code", "401"),
        ("hookd.error_code", "MISSING_SIGNATURE"),
    ]);
    assert!(
        !rejected.error,
        "a 4xx leaves a server span unset: {rejected:#?}"
    );

    let failed = ingest_of(&answers.failed);
    failed.has(&http);
    failed.has(&[
        ("http.response.status_code", "503"),
        ("error.type", "STORAGE_UNAVAILABLE"),
    ]);
    assert!(failed.error, "a 5xx is an error: {failed:#?}");

    let mut forwards: Vec<&Seen> = spans.iter().filter(|s| s.name == "hookd.forward").collect();
    forwards.sort_by_key(|s| s.attr("hookd.attempt").map(str::to_owned));
    assert_eq!(forwards.len(), 2, "{spans:#?}");
    let url_full = format!(
        "http://127.0.0.1:{}/hooks?token=REDACTED",
        answers.dest_port
    );
    for (i, forward) in forwards.iter().enumerate() {
        assert_eq!(forward.kind, "client");
        forward.has(&[
            ("http.request.method", "POST"),
            ("url.full", url_full.as_str()),
            ("server.address", "127.0.0.1"),
            ("server.port", answers.dest_port.as_str()),
            ("hookd.tenant", tenant),
            (
                "hookd.delivery_id",
                answers.accepted["delivery_id"].as_str().unwrap(),
            ),
            ("hookd.attempt", &(i + 1).to_string()),
            ("attempt", &(i + 1).to_string()),
        ]);
    }
    let (first, second) = (forwards[0], forwards[1]);
    first.has(&[("http.response.status_code", "500"), ("error.type", "500")]);
    assert!(first.error && first.attr("http.request.resend_count").is_none());
    second.has(&[
        ("http.response.status_code", "204"),
        ("http.request.resend_count", "1"),
    ]);
    assert!(!second.error && second.attr("error.type").is_none());

    let rpc = |method: &str| -> &Seen {
        let name = format!("hookd.v1.TenantService/{method}");
        spans
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("no {name} span in {spans:#?}"))
    };
    let list = rpc("ListTenants");
    assert_eq!(list.kind, "server");
    list.has(&[
        ("rpc.system", "grpc"),
        ("rpc.service", "hookd.v1.TenantService"),
        ("rpc.method", "ListTenants"),
        ("rpc.grpc.status_code", "0"),
    ]);
    let get = rpc("GetTenant");
    get.has(&[("rpc.system", "grpc"), ("rpc.grpc.status_code", "5")]);
    assert!(!list.error && !get.error, "NOT_FOUND is the caller's error");
    let rest = spans
        .iter()
        .find(|s| s.name == "GET /v1/tenants/{tenant_id}")
        .unwrap_or_else(|| panic!("no REST span in {spans:#?}"));
    assert_eq!(rest.kind, "server");
    rest.has(&[
        ("http.request.method", "GET"),
        ("http.route", "/v1/tenants/{tenant_id}"),
        ("http.response.status_code", "404"),
        ("rpc.service", "hookd.v1.TenantService"),
        ("rpc.method", "GetTenant"),
    ]);
    assert!(!rest.error, "a 404 is the caller's error");
    let dump = format!("{spans:?}");
    assert!(
        !dump.contains("sekrit-7f"),
        "the URL's token reached a span"
    );
    assert!(
        !dump.contains("nobody\\\""),
        "no request body in an RPC span"
    );
}

#[tokio::test]
async fn spans_follow_the_http_and_rpc_semantic_conventions() {
    let exporter = opentelemetry_sdk::trace::InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder()
        .with_simple_exporter(exporter.clone())
        .build();
    let (spans, answers) = run_scenario("semconv_mem", provider, || {
        exporter
            .get_finished_spans()
            .unwrap()
            .iter()
            .map(Seen::from)
            .collect()
    })
    .await;
    check(&spans, &answers);
}

/// The scenario with spans exported over `protocol` to a fake collector.
async fn over_otlp(protocol: OtlpProtocol, id: &str) {
    let (collector, endpoint) = match protocol {
        OtlpProtocol::Grpc => {
            let (collector, addr) = Collector::start().await;
            (collector, format!("http://{addr}"))
        }
        OtlpProtocol::HttpProtobuf => {
            let (collector, addr) = Collector::start_http().await;
            (collector, format!("http://{addr}/v1/traces"))
        }
    };
    let export = OtlpExport::start(protocol, Some(&endpoint)).unwrap();
    let provider = export.provider().clone();
    let (spans, answers) = run_scenario(id, provider.clone(), || {
        provider.force_flush().unwrap();
        collector.spans().iter().map(Seen::from).collect()
    })
    .await;
    check(&spans, &answers);
    tokio::task::spawn_blocking(move || export.shutdown())
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_gets_the_conventional_spans_over_otlp_grpc() {
    over_otlp(OtlpProtocol::Grpc, "semconv_grpc").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_collector_gets_the_conventional_spans_over_otlp_http() {
    over_otlp(OtlpProtocol::HttpProtobuf, "semconv_http").await;
}
