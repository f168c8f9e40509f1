//! Every provider-made signature vector (`signatures.json` and
//! `providers/*.json`), end to end through HTTP, with the server clock set to
//! the vector's `now`: each tenant gets the vector's public URL (its `url`
//! without the query) and each request the vector's method and query.

use std::fmt::Write as _;

use base64::Engine;
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{TestServer, NOW};

/// The vectors of `signatures.json`, then of each `providers/*.json` by name.
fn vectors() -> Vec<Value> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../client-sdk/tests/vectors");
    let mut paths = vec![dir.join("signatures.json")];
    let mut providers: Vec<_> = std::fs::read_dir(dir.join("providers"))
        .map(|entries| {
            entries
                .map(|entry| entry.unwrap().path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                .collect()
        })
        .unwrap_or_default();
    providers.sort();
    paths.extend(providers);
    paths
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap();
            let file: Value = serde_json::from_str(&text).unwrap();
            file["vectors"].as_array().unwrap().clone()
        })
        .collect()
}

/// The public URL and the query of a vector's `url`.
fn split_url(vector: &Value) -> (Option<&str>, &str) {
    match vector["url"].as_str() {
        None => (None, ""),
        Some(url) => match url.split_once('?') {
            Some((base, query)) => (Some(base), query),
            None => (Some(url), ""),
        },
    }
}

/// One tenant per vector, with the vector's scheme, secrets, tolerance and
/// public URL.
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
        if let (Some(public_url), _) = split_url(v) {
            writeln!(toml, "public_url = {}", Value::from(public_url)).unwrap();
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

/// Sends one vector to tenant `v{i}` as the provider did; `Err` describes a
/// verdict other than the vector's.
async fn check(s: &TestServer, i: usize, v: &Value) -> Result<(), String> {
    let headers: Vec<(String, String)> = v["headers"]
        .as_object()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.clone(), v.as_str().unwrap().to_owned()))
        .collect();
    let body = base64::engine::general_purpose::STANDARD
        .decode(v["body_b64"].as_str().unwrap())
        .unwrap();
    let method = v["method"].as_str().unwrap_or("POST");
    let path = match split_url(v) {
        (_, "") => format!("/hooks/v{i}"),
        (_, query) => format!("/hooks/v{i}?{query}"),
    };
    let a = s.request(method, &path, &headers, &body).await;
    let expect = &v["expect"];
    if method != "POST" {
        // hookd takes events by POST only: a vector signed for another method
        // is refused at the route, before its signature is read.
        if expect["ok"] == true || a.code() != "METHOD_NOT_ALLOWED" {
            return Err(format!(
                "{method}: expected 405, got {} {:?}",
                a.status, a.body
            ));
        }
    } else if expect["ok"] == true {
        if a.status != StatusCode::ACCEPTED {
            return Err(format!("expected 202, got {} {:?}", a.status, a.body));
        }
        if let Some(id) = expect["event_id"].as_str() {
            if a.body["event_id"] != id {
                return Err(format!("event_id {} != {id}", a.body["event_id"]));
            }
        }
    } else if a.status != StatusCode::UNAUTHORIZED || a.code() != expect["code"] {
        return Err(format!(
            "expected 401 {}, got {} {:?}",
            expect["code"], a.status, a.body
        ));
    }
    Ok(())
}

async fn every_verdict(vectors: &[Value]) {
    let s = TestServer::start(&tenants_toml(vectors));
    let mut failures = Vec::new();
    for (i, v) in vectors.iter().enumerate() {
        if let Err(problem) = check(&s, i, v).await {
            let scheme = v["scheme"].as_str().unwrap();
            failures.push(format!("{scheme}/{}: {problem}", v["name"]));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[tokio::test]
async fn every_vector_gets_its_verdict_through_http() {
    let vectors = vectors();
    assert!(vectors.len() > 40);
    every_verdict(&vectors).await;
}

/// A vector given a `url` with a query (as provider files for schemes that
/// sign the URL have) reaches a tenant with that public URL, sent with the
/// query, and keeps its verdict: the query and the public URL do not get in
/// the way of a scheme that does not sign them.
#[tokio::test]
async fn a_provider_style_vector_with_a_url_and_query_keeps_its_verdict() {
    let mut vectors: Vec<Value> = vectors()
        .into_iter()
        .filter(|v| v["scheme"] == "standard")
        .take(3)
        .collect();
    assert!(!vectors.is_empty());
    for v in &mut vectors {
        v["url"] = "https://hooks.example.com/hooks/shop?topic=orders%2Fpaid&shop=eu".into();
    }
    let toml = tenants_toml(&vectors);
    assert!(
        toml.contains(r#"public_url = "https://hooks.example.com/hooks/shop""#),
        "{toml}"
    );
    every_verdict(&vectors).await;
}
