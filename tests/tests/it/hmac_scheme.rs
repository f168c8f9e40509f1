//! `scheme = "hmac"` end to end: providers no preset covers (Mailgun signs
//! inside the body, GitLab sends its secret token in a header) verified by
//! configuration alone, each vector of `client-sdk/tests/vectors/hmac/`
//! through HTTP with the server clock at the vector's `now`.

use std::fmt::Write as _;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{TestServer, NOW};

fn vectors() -> Vec<Value> {
    let dir = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../client-sdk/tests/vectors/hmac"
    );
    ["mailgun.json", "gitlab_token.json"]
        .iter()
        .flat_map(|name| {
            let text = std::fs::read_to_string(format!("{dir}/{name}")).unwrap();
            let file: Value = serde_json::from_str(&text).unwrap();
            file["vectors"].as_array().unwrap().clone()
        })
        .collect()
}

/// One tenant per vector: its `[hmac]` table, secrets, tolerance and event
/// id field, and nothing else.
fn tenants_toml(vectors: &[Value]) -> String {
    let mut toml = String::new();
    for (i, v) in vectors.iter().enumerate() {
        assert_eq!(v["now"].as_i64(), Some(NOW), "harness clock must match");
        writeln!(
            toml,
            "[[tenants]]\nid = \"h{i}\"\nscheme = \"hmac\"\ntolerance_secs = {}\nevent_id_field = {}",
            v["tolerance_s"], v["event_id_field"]
        )
        .unwrap();
        writeln!(toml, "[tenants.hmac]").unwrap();
        for (key, value) in v["hmac"].as_object().unwrap() {
            writeln!(toml, "{key} = {value}").unwrap();
        }
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

fn request(v: &Value) -> (Vec<(String, String)>, Vec<u8>) {
    let headers = v["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let body = base64::engine::general_purpose::STANDARD
        .decode(v["body_b64"].as_str().unwrap())
        .unwrap();
    (headers, body)
}

#[tokio::test]
async fn configured_providers_verify_without_code() {
    let vectors = vectors();
    assert!(vectors.len() >= 10, "{} vectors", vectors.len());
    let s = TestServer::start(&tenants_toml(&vectors));
    let mut failures = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        let name = format!("{}", v["name"]);
        let (headers, body) = request(v);
        let a = s.post(&format!("h{i}"), &headers, &body).await;
        let expect = &v["expect"];
        if expect["ok"] == true {
            if a.status != StatusCode::ACCEPTED || a.body["event_id"] != expect["event_id"] {
                failures.push(format!(
                    "h{i} {name}: expected 202 {}, got {} {:?}",
                    expect["event_id"], a.status, a.body
                ));
            }
        } else if a.status != StatusCode::UNAUTHORIZED || a.code() != expect["code"] {
            failures.push(format!(
                "h{i} {name}: expected 401 {}, got {} {:?}",
                expect["code"], a.status, a.body
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A Mailgun delivery sent again is the same event (the tolerance window and
/// then the replay cache and idempotency log catch it), and a GitLab token
/// delivery, which signs no timestamp, is caught by its event id.
#[tokio::test]
async fn resends_are_duplicates() {
    let vectors: Vec<Value> = vectors()
        .into_iter()
        .filter(|v| v["name"] == "valid")
        .collect();
    let s = TestServer::start(&tenants_toml(&vectors));
    for (i, v) in vectors.iter().enumerate() {
        let (headers, body) = request(v);
        let first = s.post(&format!("h{i}"), &headers, &body).await;
        assert_eq!(first.status, StatusCode::ACCEPTED, "{:?}", first.body);
        let again = s.post(&format!("h{i}"), &headers, &body).await;
        assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
        assert_eq!(again.body["duplicate"], true);
        assert_eq!(again.body["delivery_id"], first.body["delivery_id"]);
    }
    // Mailgun does not sign the event data: a resend with another event id
    // is caught by the digest of what it does sign.
    let (headers, body) = request(&vectors[0]);
    let renamed = String::from_utf8(body).unwrap().replace("CPgfbm", "XXgfbm");
    let again = s.post("h0", &headers, renamed.as_bytes()).await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
    assert_eq!(again.body["duplicate"], true, "{:?}", again.body);
}
