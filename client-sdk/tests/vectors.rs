//! Checks `verify` against deliveries signed by each provider's own library
//! (`tests/vectors/signatures.json`), so the schemes match the real wire formats.

use std::collections::{HashMap, HashSet};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hookd_sdk::signature::{verify, Scheme, Secret};
use serde::Deserialize;

#[derive(Deserialize)]
struct VectorFile {
    vectors: Vec<Vector>,
}

#[derive(Deserialize)]
struct Vector {
    scheme: String,
    name: String,
    secrets: Vec<SecretSpec>,
    tolerance_s: u64,
    now: i64,
    headers: HashMap<String, String>,
    body_b64: String,
    expect: Expect,
}

#[derive(Deserialize)]
struct SecretSpec {
    kid: String,
    secret: String,
    state: String,
}

#[derive(Deserialize)]
struct Expect {
    ok: bool,
    event_id: Option<String>,
    code: Option<String>,
}

fn load() -> Vec<Vector> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/vectors/signatures.json");
    let text = std::fs::read_to_string(path).expect("read signatures.json");
    let file: VectorFile = serde_json::from_str(&text).expect("parse signatures.json");
    file.vectors
}

/// Current key first, then previous, as the server hands them to `verify`.
fn keys(scheme: Scheme, vector: &Vector) -> Vec<Secret> {
    let rank = |state: &str| match state {
        "current" => 0,
        "previous" => 1,
        other => panic!("{}: unknown secret state {other:?}", vector.name),
    };
    let mut specs: Vec<&SecretSpec> = vector.secrets.iter().collect();
    specs.sort_by_key(|spec| rank(&spec.state));
    specs
        .into_iter()
        .map(|spec| {
            Secret::from_provider(scheme, spec.kid.clone(), &spec.secret)
                .unwrap_or_else(|e| panic!("{}/{}: {e}", scheme, vector.name))
        })
        .collect()
}

fn body_event_id(body: &[u8], field: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    value.get(field)?.as_str().map(str::to_owned)
}

/// Checks one vector; `Err` describes the mismatch.
fn check(vector: &Vector, scheme: Scheme) -> Result<(), String> {
    let body = STANDARD.decode(&vector.body_b64).expect("body is base64");
    let keys = keys(scheme, vector);
    let result = verify(
        scheme,
        &vector.headers,
        &body,
        &keys,
        vector.now,
        vector.tolerance_s,
    );
    match (&vector.expect, result) {
        (
            Expect {
                ok: true, event_id, ..
            },
            Ok(verified),
        ) => {
            let found = match scheme.body_event_id_field() {
                Some(field) => body_event_id(&body, field),
                None => verified.header_event_id,
            };
            match event_id {
                Some(expected) if found.as_ref() != Some(expected) => {
                    Err(format!("event id {found:?}, expected {expected:?}"))
                }
                _ => Ok(()),
            }
        }
        (Expect { ok: true, .. }, Err(error)) => Err(format!("expected ok, got {error}")),
        (Expect { code, .. }, Ok(_)) => Err(format!("expected {code:?}, got ok")),
        (Expect { code, .. }, Err(error)) if code.as_deref() != Some(error.code()) => {
            Err(format!("expected {code:?}, got {} ({error})", error.code()))
        }
        (_, Err(_)) => Ok(()),
    }
}

#[test]
fn every_vector_verifies_as_expected() {
    let vectors = load();
    let mut schemes = HashSet::new();
    let mut failures = Vec::new();
    for vector in &vectors {
        let scheme: Scheme = vector.scheme.parse().expect("known scheme");
        schemes.insert(scheme);
        if let Err(problem) = check(vector, scheme) {
            failures.push(format!("{}/{}: {problem}", vector.scheme, vector.name));
        }
    }
    assert!(
        failures.is_empty(),
        "failing vectors:\n{}",
        failures.join("\n")
    );
    let all: HashSet<Scheme> = Scheme::ALL.into_iter().collect();
    assert_eq!(schemes, all, "vectors must cover every scheme");
    assert!(vectors.len() > 40, "only {} vectors checked", vectors.len());
}
