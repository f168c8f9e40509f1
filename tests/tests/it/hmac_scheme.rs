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

/// A template that signs `{url}` verifies against the tenant's public URL
/// with the query as received, and a tenant without one is refused at load.
#[tokio::test]
async fn a_template_over_the_url_verifies_against_the_public_url() {
    use hookd_sdk::signature::{sign_hmac, HmacFields, HmacSpec, Message, Secret};

    let table = "signature = \"header:X-Sig\"\nencoding = \"base64\"\nsigned = \"{method} {url}\\n{body}\"\n";
    let tenant = |public_url: &str| {
        format!("[[tenants]]\nid = \"u\"\nscheme = \"hmac\"\nevent_id_field = \"event_id\"\n{public_url}[tenants.hmac]\n{table}[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"url-secret\"\n")
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("hookd.toml");
    std::fs::write(&file, tenant("")).unwrap();
    let loaded = hookd_server::config::Config::load(Some(&file), &Default::default());
    let refused = match loaded.and_then(|c| hookd_server::check_tenants(&c)) {
        Ok(_) => panic!("a {{url}} template without a public_url loads"),
        Err(e) => e.to_string(),
    };
    assert!(
        refused.contains("public_url") && refused.contains("{url}"),
        "{refused}"
    );

    let s = TestServer::start(&tenant(
        "public_url = \"https://hooks.example.com/hooks/u\"\n",
    ));
    let spec = HmacSpec::new(HmacFields {
        signature: "header:X-Sig".into(),
        encoding: Some("base64".into()),
        signed: Some("{method} {url}\n{body}".into()),
        ..HmacFields::default()
    })
    .unwrap();
    let key = Secret::from_bytes("k1", b"url-secret".to_vec());
    let body = br#"{"event_id":"evt_url_1"}"#;
    let signed_for = |url: &str| {
        let message = Message {
            event_id: "evt_url_1",
            timestamp: NOW,
            body,
            method: "POST",
            url: Some(url),
        };
        sign_hmac(&spec, &key, &message, &[]).unwrap().headers
    };
    let good = signed_for("https://hooks.example.com/hooks/u?src=a");
    let a = s.request("POST", "/hooks/u?src=a", &good, body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    let a = s.request("POST", "/hooks/u?src=b", &good, body).await;
    assert_eq!(a.code(), "BAD_SIGNATURE", "another query: {:?}", a.body);
}
