//! The real binary exporting to a fake OTLP collector: spans arrive, the
//! last ones at SIGTERM, and nothing secret ever reaches a log line, a span
//! or a metric.

use std::time::{Duration, Instant};

use hookd_sdk::{
    client::{proto::CreateTenantRequest, HookdClient},
    signature::{sign, Scheme, Secret},
};
use reqwest::StatusCode;
use serde_json::Value;

use super::{collector::Collector, parse_metrics, scrape, WAIT};
use crate::{
    harness::DEST_SECRET,
    harness::{now_secs, order, ACME},
    pki::Pki,
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

fn setup(config: &str) -> (tempfile::TempDir, std::path::PathBuf, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookd.toml");
    std::fs::write(&file, config).unwrap();
    let data = dir.path().join("data");
    (dir, data, file)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_binary_exports_spans_over_otlp_and_flushes_them_on_sigterm() {
    let (collector, addr) = Collector::start().await;
    let (_dir, data, config) = setup(ACME);
    let endpoint = format!("http://{addr}");
    let mut hookd = HookdProcess::spawn(
        &data,
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            // No batch leaves on its own schedule within this test: what the
            // collector gets, it gets from the flush at shutdown.
            ("OTEL_BSP_SCHEDULE_DELAY", "600000"),
        ],
    );
    let (status, answer) = hookd.post("msg_otlp", now_secs(), &order("evt_otlp")).await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    assert!(
        collector.spans().is_empty(),
        "nothing exported before shutdown"
    );

    let exit = hookd.terminate();
    assert!(exit.success(), "{exit:?}");
    let spans = collector.spans();
    let ingest = spans
        .iter()
        .find(|s| s.span.name == "hookd.ingest")
        .unwrap_or_else(|| panic!("no ingest span in {spans:#?}"));
    assert_eq!(
        ingest.attr("event_id").as_deref(),
        answer["event_id"].as_str()
    );
    assert_eq!(
        ingest.attr("delivery_id").as_deref(),
        answer["delivery_id"].as_str()
    );
    assert_eq!(ingest.attr("tenant").as_deref(), Some("acme"));
    assert_eq!(
        ingest.resource_attr("service.name").as_deref(),
        Some("hookd")
    );
    for name in ["hookd.actor", "hookd.commit"] {
        let child = spans.iter().find(|s| s.span.name == name).unwrap();
        assert_eq!(child.span.trace_id, ingest.span.trace_id, "{name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn otlp_over_http_protobuf_is_chosen_by_the_standard_variable() {
    let (collector, addr) = Collector::start_http().await;
    let (_dir, data, config) = setup(ACME);
    let endpoint = format!("http://{addr}");
    let mut hookd = HookdProcess::spawn(
        &data,
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
        ],
    );
    let (status, answer) = hookd
        .post("msg_otlp_http", now_secs(), &order("evt_otlp_http"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let exit = hookd.terminate();
    assert!(exit.success(), "{exit:?}");
    let spans = collector.spans();
    let ingest = spans
        .iter()
        .find(|s| s.span.name == "hookd.ingest")
        .unwrap_or_else(|| panic!("no ingest span over OTLP/HTTP: {}", hookd.logs()));
    assert_eq!(
        ingest.attr("hookd.event_id").as_deref(),
        answer["event_id"].as_str()
    );
    assert_eq!(
        ingest.resource_attr("service.name").as_deref(),
        Some("hookd")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unknown_otlp_protocol_stops_hookd_with_the_variable_named() {
    let (_dir, data, config) = setup(ACME);
    let mut child = std::process::Command::new(crate::process::hookd_bin())
        .args([
            "--data-dir",
            data.to_str().unwrap(),
            "--config",
            config.to_str().unwrap(),
        ])
        .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9")
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", "carrier-pigeon")
        .env_remove("RUST_LOG")
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + WAIT;
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("hookd started with an unknown OTLP protocol");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("OTEL_EXPORTER_OTLP_PROTOCOL") && stderr.contains("carrier-pigeon"),
        "{stderr}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_collector_is_trusted_through_the_system_roots() {
    let pki = Pki::new();
    let (collector, addr) = Collector::start_tls(&pki).await;
    let (_dir, data, config) = setup(ACME);
    let endpoint = format!("https://localhost:{}", addr.port());
    let ca = pki.ca();
    let mut hookd = HookdProcess::spawn(
        &data,
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            // The test CA is one of the system's roots for this process.
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
    );
    let (status, answer) = hookd
        .post("msg_otlp_tls", now_secs(), &order("evt_tls"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let exit = hookd.terminate();
    assert!(exit.success(), "{exit:?}");
    let spans = collector.spans();
    assert!(
        spans.iter().any(|s| s.span.name == "hookd.ingest"),
        "no ingest span over TLS: {}",
        hookd.logs()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_secret_token_or_body_reaches_logs_spans_or_metrics() {
    const ADMIN: &str = "hka_leakcheck_admin_token_5c1d9e";
    const MASTER: &str = "bGVha2NoZWNrLW1hc3Rlci1rZXktMzItYnl0ZXMhISE=";
    const URL_TOKEN: &str = "urltoken-77e1";
    const MARKER: &str = "BODY-MARKER-4410";
    let (collector, addr) = Collector::start().await;
    let dest = Receiver::start(Reply::Status(200)).await;
    dest.script([Reply::Status(400)]);
    let config = format!(
        "{ACME}[tenants.destination]\nurl = \"{}?token={URL_TOKEN}\"\nsecret = \"{DEST_SECRET}\"\n",
        dest.url
    );
    let (_dir, data, config) = setup(&config);
    let endpoint = format!("http://{addr}");
    let mut hookd = HookdProcess::spawn(
        &data,
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("HOOKD_LOG_FORMAT", "json"),
            ("HOOKD_ADMIN_TOKEN", ADMIN),
            ("HOOKD_MASTER_KEY", MASTER),
            // The API-created tenant below forwards to the receiver on 127.0.0.1.
            ("HOOKD_FORWARD__ALLOW_NETWORKS", r#"["127.0.0.1/32"]"#),
        ],
    );
    let body = |id: &str| {
        format!(r#"{{"event_id":"{id}","type":"order.paid","note":"{MARKER}"}}"#).into_bytes()
    };
    let ts = now_secs();

    // Accepted (the destination's first answer, 400, dead-letters it),
    // accepted and delivered, a duplicate, a stale and a forged one.
    let (status, dead) = hookd.post("msg_leak_1", ts, &body("evt_1")).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    dest.wait_for(1, WAIT).await;
    assert_eq!(
        hookd.post("msg_leak_2", ts, &body("evt_2")).await.0,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        hookd.post("msg_leak_2", ts, &body("evt_2")).await.0,
        StatusCode::OK
    );
    assert_eq!(
        hookd.post("msg_leak_3", ts - 3600, &body("evt_3")).await.0,
        StatusCode::UNAUTHORIZED
    );
    let forged = reqwest::Client::new()
        .post(format!("{}/hooks/acme", hookd.base))
        .header("webhook-id", "msg_leak_4")
        .header("webhook-timestamp", ts.to_string())
        .header("webhook-signature", "v1,Zm9yZ2VkLXNpZ25hdHVyZQ==")
        .body(body("evt_4"))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), StatusCode::UNAUTHORIZED);

    // The control plane, with the admin token: a tenant created over the API
    // (its secrets are generated), a delivery to it, the dead letter
    // redelivered; and a call with a wrong token.
    let admin = HookdClient::connect(hookd.grpc.clone(), ADMIN)
        .await
        .unwrap();
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "beta".into(),
            destination_url: dest.url.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let beta_key = Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap();
    let beta_body = body("evt_beta");
    let mut req = reqwest::Client::new().post(format!("{}/hooks/beta", hookd.base));
    for (k, v) in sign(Scheme::Standard, &beta_key, "msg_beta", ts, &beta_body) {
        req = req.header(k, v);
    }
    assert_eq!(
        req.body(beta_body).send().await.unwrap().status(),
        StatusCode::ACCEPTED
    );
    hookd.wait_for_log("delivery dead-lettered");
    let dead_id = dead["delivery_id"].as_str().unwrap();
    admin.redeliver_ids("acme", [dead_id]).await.unwrap();
    let intruder = HookdClient::connect(hookd.grpc.clone(), "hka_wrong_token_0000000000")
        .await
        .unwrap();
    assert!(intruder.list_all_tenants().await.is_err());
    dest.wait_for(4, WAIT).await;

    let metrics = scrape(&hookd.base).await;
    assert_eq!(
        parse_metrics(&metrics)["hookd_dead_letters{tenant=\"acme\",route=\"default\"}"],
        0.0,
        "redelivered"
    );
    let deadline = Instant::now() + WAIT;
    while hookd.logs().matches("\"forward delivered\"").count() < 3 {
        assert!(Instant::now() < deadline, "{}", hookd.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert!(hookd.terminate().success());
    let (logs, spans) = (hookd.logs(), collector.dump());
    assert!(spans.contains("hookd.forward"), "spans were exported");

    let secrets = [
        (
            "acme's signing secret",
            "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA",
        ),
        (
            "acme's previous secret",
            "ZWZnaGlqa2xtbm9wcXJzdHV2d3h5ent8fX5",
        ),
        (
            "the destination secret",
            DEST_SECRET.trim_start_matches("whsec_"),
        ),
        (
            "beta's signing secret",
            created.secret.trim_start_matches("whsec_"),
        ),
        (
            "beta's destination secret",
            created.destination_secret.trim_start_matches("whsec_"),
        ),
        ("the admin token", ADMIN),
        ("the master key", MASTER),
        ("a token in the destination URL", URL_TOKEN),
        ("a body", MARKER),
    ];
    for (what, needle) in secrets {
        assert!(!logs.contains(needle), "{what} reached a log line:\n{logs}");
        assert!(!spans.contains(needle), "{what} reached a span");
        assert!(!metrics.contains(needle), "{what} reached a metric");
    }

    // Every line about a delivery names it; rejections say why.
    let lines: Vec<Value> = logs
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("not JSON ({e}): {l}")))
        .collect();
    let about = |message: &str| -> Vec<&Value> {
        lines.iter().filter(|l| l["message"] == message).collect()
    };
    let delivery_lines: Vec<&Value> = [
        "delivery accepted",
        "forward delivered",
        "delivery dead-lettered",
    ]
    .iter()
    .flat_map(|m| about(m))
    .collect();
    assert!(delivery_lines.len() >= 8, "{logs}");
    for line in delivery_lines {
        for field in [
            "tenant",
            "event_id",
            "delivery_id",
            "request_id",
            "trace_id",
        ] {
            assert!(line[field].is_string(), "{field} missing in {line}");
        }
    }
    let rejected = about("delivery rejected");
    assert_eq!(rejected.len(), 2, "{logs}");
    for line in rejected {
        assert!(
            line["request_id"].is_string() && line["tenant"] == "acme",
            "{line}"
        );
        assert!(
            line["reason"].as_str().is_some_and(|r| r.len() > 10),
            "{line}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_https_collector_over_otlp_http_is_trusted_through_the_system_roots() {
    let pki = Pki::new();
    let (collector, addr) = Collector::start_https(&pki).await;
    let (_dir, data, config) = setup(ACME);
    let endpoint = format!("https://localhost:{}", addr.port());
    let ca = pki.ca();
    let mut hookd = HookdProcess::spawn(
        &data,
        &config,
        &[
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
            // The test CA is one of the system's roots for this process.
            ("SSL_CERT_FILE", ca.to_str().unwrap()),
        ],
    );
    let (status, answer) = hookd
        .post("msg_otlp_https", now_secs(), &order("evt_https"))
        .await;
    assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
    let exit = hookd.terminate();
    assert!(exit.success(), "{exit:?}");
    assert!(
        collector
            .spans()
            .iter()
            .any(|s| s.span.name == "hookd.ingest"),
        "no ingest span over OTLP/HTTP with TLS: {}",
        hookd.logs()
    );
}
