//! Every provider-made signature vector, end to end through HTTP, with the
//! server clock set to the vector's `now`.

use std::fmt::Write as _;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{TestServer, NOW};

fn vectors() -> Vec<Value> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../client-sdk/tests/vectors/signatures.json"
    );
    let file: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    file["vectors"].as_array().unwrap().clone()
}

/// One tenant per vector, with the vector's scheme, secrets and tolerance.
fn tenants_toml(vectors: &[Value]) -> String {
    let mut toml = String::new();
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(
            v["now"].as_i64(),
            Some(NOW),
            "harness clock must match the vectors"
        );
        writeln!(
            toml,
            "[[tenants]]\nid = \"v{i}\"\nscheme = {}\ntolerance_secs = {}",
            v["scheme"], v["tolerance_s"]
        )
        .unwrap();
        for s in v["secrets"].as_array().unwrap() {
            writeln!(
                toml,
                "[[tenants.secrets]]\nkid = {}\nsecret = {}\nstate = {}",
                s["kid"], s["secret"], s["state"]
            )
            .unwrap();
        }
    }
    toml
}

#[tokio::test]
async fn every_vector_gets_its_verdict_through_http() {
    let vectors = vectors();
    assert!(vectors.len() > 40);
    let s = TestServer::start(&tenants_toml(&vectors));
    let mut failures = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        let name = format!(
            "{}/{}",
            v["scheme"].as_str().unwrap(),
            v["name"].as_str().unwrap()
        );
        let headers: Vec<(String, String)> = v["headers"]
            .as_object()
            .unwrap()
            .iter()
            .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
            .collect();
        let body = base64::engine::general_purpose::STANDARD
            .decode(v["body_b64"].as_str().unwrap())
            .unwrap();
        let a = s.post(&format!("v{i}"), &headers, &body).await;
        let expect = &v["expect"];
        if expect["ok"] == true {
            if a.status != StatusCode::ACCEPTED {
                failures.push(format!(
                    "{name}: expected 202, got {} {:?}",
                    a.status, a.body
                ));
            } else if let Some(id) = expect["event_id"].as_str() {
                if a.body["event_id"] != id {
                    failures.push(format!("{name}: event_id {} != {id}", a.body["event_id"]));
                }
            }
        } else if a.status != StatusCode::UNAUTHORIZED || a.code() != expect["code"] {
            failures.push(format!(
                "{name}: expected 401 {}, got {} {:?}",
                expect["code"], a.status, a.body
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
