//! `/metrics` read by another client: the Prometheus Python client's
//! parsers take both formats hookd serves, and find the build info, the
//! process metrics, a rejection series per error code from the start, and
//! (in OpenMetrics) trace-id exemplars on the latency histograms. Skipped
//! when Python lacks `prometheus_client`, unless `HOOKD_REQUIRE_PYTHON` is
//! set (CI installs it).

use std::{io::Write, process::Command};

use hookd_server::ErrorCode;
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{order, signed, TestServer, ACME};

/// The parse of `body` by scripts/parse-metrics.py in `format`, or `None`
/// when prometheus_client is missing and not required.
fn parse_with_python(format: &str, body: &str) -> Option<Value> {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../scripts/parse-metrics.py");
    let mut child = Command::new("python3")
        .args([script, format])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("python3");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(body.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let required = std::env::var_os("HOOKD_REQUIRE_PYTHON").is_some();
    if out.status.code() == Some(3) && !required {
        eprintln!("skipped: python3 has no prometheus_client");
        return None;
    }
    assert!(
        out.status.success(),
        "{format} did not parse: {}\n{body}",
        String::from_utf8_lossy(&out.stderr)
    );
    Some(serde_json::from_slice(&out.stdout).unwrap())
}

fn samples<'a>(parsed: &'a Value, name: &'a str) -> impl Iterator<Item = &'a Value> + 'a {
    parsed["samples"]
        .as_array()
        .unwrap()
        .iter()
        .filter(move |s| s["name"] == name)
}

#[tokio::test]
async fn metrics_parse_with_the_prometheus_client_and_carry_build_process_and_exemplars() {
    let s = TestServer::start(ACME);
    let body = order("evt_expo");
    let answer = s
        .post("acme", &signed("msg_expo", s.clock_secs(), &body), &body)
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);

    let text = s.get("/metrics").await.text().await.unwrap();
    let Some(parsed) = parse_with_python("text", &text) else {
        return;
    };
    let build: Vec<&Value> = samples(&parsed, "hookd_build_info").collect();
    assert_eq!(build.len(), 1, "{text}");
    assert_eq!(build[0]["labels"]["version"], env!("CARGO_PKG_VERSION"));
    let commit = build[0]["labels"]["commit"].as_str().unwrap();
    assert!(
        commit == "unknown"
            || (commit.len() == 40 && commit.chars().all(|c| c.is_ascii_hexdigit())),
        "{commit}"
    );
    for name in [
        "process_cpu_seconds_total",
        "process_resident_memory_bytes",
        "process_open_fds",
        "process_start_time_seconds",
    ] {
        let value = samples(&parsed, name)
            .next()
            .unwrap_or_else(|| panic!("no {name} in\n{text}"))["value"]
            .as_f64()
            .unwrap();
        assert!(value >= 0.0, "{name} = {value}");
    }
    let rejected: Vec<&Value> = samples(&parsed, "hookd_deliveries_rejected_total")
        .filter(|s| s["labels"]["tenant"] == "acme")
        .collect();
    for code in ErrorCode::ALL {
        let series = rejected
            .iter()
            .find(|s| s["labels"]["code"] == code.as_str())
            .unwrap_or_else(|| panic!("no rejection series for {code:?} in\n{text}"));
        assert_eq!(series["value"], 0.0);
    }

    let res = reqwest::Client::new()
        .get(format!("{}/metrics", s.base))
        .header(
            "accept",
            "application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5",
        )
        .send()
        .await
        .unwrap();
    assert!(
        res.headers()["content-type"]
            .to_str()
            .unwrap()
            .starts_with("application/openmetrics-text; version=1.0.0"),
        "{:?}",
        res.headers()
    );
    let open = res.text().await.unwrap();
    let parsed = parse_with_python("openmetrics", &open).unwrap();
    let exemplars: Vec<&Value> = samples(&parsed, "hookd_ingest_duration_seconds_bucket")
        .filter(|s| s["labels"]["outcome"] == "accepted" && !s["exemplar"].is_null())
        .collect();
    assert_eq!(exemplars.len(), 1, "{open}");
    let trace_id = exemplars[0]["exemplar"]["labels"]["trace_id"]
        .as_str()
        .unwrap();
    assert_eq!(trace_id.len(), 32, "{trace_id}");
    assert!(samples(&parsed, "hookd_build_info").next().is_some());
}
