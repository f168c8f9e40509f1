//! Observability as an operator uses it: spans of an in-process hookd in an
//! in-memory exporter, spans of the real binary at a fake OTLP collector
//! (SIGTERM included), `/metrics` after a scripted mix, and no secret,
//! token or body in any log line, span or metric.

mod collector;
mod export;
mod exposition;
mod gauges;
mod metrics;
mod semconv;
mod spans;

use std::{
    collections::BTreeMap,
    sync::Arc,
    time::{Duration, Instant},
};

use hookd_server::{
    clock::SystemClock,
    config::{Config, Overrides},
    Runtime, Server,
};
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider, SpanData};
use reqwest::StatusCode;
use serde_json::Value;
use tempfile::TempDir;

use crate::harness::ADMIN_TOKEN;

/// How long anything asynchronous gets.
const WAIT: Duration = Duration::from_secs(10);

/// An in-process hookd on the system clock whose spans land in memory.
pub struct Traced {
    server: Server,
    pub base: String,
    pub exporter: InMemorySpanExporter,
    _dir: TempDir,
}

impl Traced {
    /// Starts hookd with `toml` as its config file.
    pub fn start(toml: &str) -> Traced {
        let exporter = InMemorySpanExporter::default();
        let provider = SdkTracerProvider::builder()
            .with_simple_exporter(exporter.clone())
            .build();
        let mut traced = Traced::start_with(toml, provider);
        traced.exporter = exporter;
        traced
    }

    /// Starts hookd with `toml` as its config file and its spans going to
    /// `provider` ([`Traced::spans`] then sees only `start`'s exporter).
    pub fn start_with(toml: &str, provider: SdkTracerProvider) -> Traced {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("hookd.toml");
        std::fs::write(&file, toml).unwrap();
        let overrides = Overrides {
            data_dir: Some(dir.path().join("data")),
            http_addr: Some("127.0.0.1:0".into()),
            grpc_addr: Some("127.0.0.1:0".into()),
        };
        let mut config = Config::load(Some(&file), &overrides).unwrap();
        config.keys.admin_token = Some(ADMIN_TOKEN.into());
        config.dashboard.addr = "127.0.0.1:0".into();
        config.grpc.shutdown_grace_secs = 0.0;
        let runtime = Runtime::new(Arc::new(SystemClock)).with_tracer_provider(provider);
        let server = Server::start(config, runtime).unwrap();
        Traced {
            base: format!("http://{}", server.http_addr()),
            server,
            exporter: InMemorySpanExporter::default(),
            _dir: dir,
        }
    }

    /// The HTTP port.
    pub fn port(&self) -> u16 {
        self.server.http_addr().port()
    }

    /// A control-plane client with the admin token.
    pub async fn admin(&self) -> hookd_sdk::client::HookdClient {
        let endpoint = format!("http://{}", self.server.grpc_addr());
        hookd_sdk::client::HookdClient::connect(endpoint, ADMIN_TOKEN)
            .await
            .unwrap()
    }

    /// GETs `path` of the control plane's REST face with the admin token.
    pub async fn rest_get(&self, path: &str) -> reqwest::StatusCode {
        let url = format!("http://{}{path}", self.server.grpc_addr());
        let client = reqwest::Client::new();
        let answer = client.get(url).bearer_auth(ADMIN_TOKEN).send().await;
        answer.unwrap().status()
    }

    /// POSTs `body` with `headers` to `/hooks/{tenant}`.
    pub async fn post(
        &self,
        tenant: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new().post(format!("{}/hooks/{tenant}", self.base));
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let res = req.body(body.to_vec()).send().await.unwrap();
        (res.status(), res.json().await.unwrap_or(Value::Null))
    }

    /// Every span ended so far.
    pub fn spans(&self) -> Vec<SpanData> {
        self.exporter.get_finished_spans().unwrap()
    }

    /// Waits until `n` spans match `pred`; returns them.
    pub async fn wait_spans(&self, n: usize, pred: impl Fn(&SpanData) -> bool) -> Vec<SpanData> {
        let deadline = Instant::now() + WAIT;
        loop {
            let found: Vec<SpanData> = self.spans().into_iter().filter(|s| pred(s)).collect();
            if found.len() >= n {
                return found;
            }
            assert!(
                Instant::now() < deadline,
                "expected {n} matching spans, have {:#?}",
                self.spans()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

/// A span attribute as text ("true", "202", "shop").
pub fn attr(span: &SpanData, key: &str) -> Option<String> {
    span.attributes
        .iter()
        .find(|kv| kv.key.as_str() == key)
        .map(|kv| kv.value.to_string())
}

/// The one span named `name` whose `request_id` attribute is `request_id`.
pub fn span_of<'a>(spans: &'a [SpanData], name: &str, request_id: &str) -> &'a SpanData {
    let found: Vec<&SpanData> = spans
        .iter()
        .filter(|s| s.name == name && attr(s, "request_id").as_deref() == Some(request_id))
        .collect();
    assert_eq!(found.len(), 1, "{name} of {request_id} in {spans:#?}");
    found[0]
}

/// Samples of a Prometheus text exposition: series (name and labels, as
/// written) -> value.
pub fn parse_metrics(text: &str) -> BTreeMap<String, f64> {
    text.lines()
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|l| {
            let (series, value) = l.rsplit_once(' ').unwrap();
            (series.to_owned(), value.parse().unwrap())
        })
        .collect()
}

/// GETs `/metrics` from `base`.
pub async fn scrape(base: &str) -> String {
    let res = reqwest::get(format!("{base}/metrics")).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
    assert!(
        content_type.starts_with("text/plain; version=0.0.4"),
        "{content_type}"
    );
    res.text().await.unwrap()
}
