//! Checks `verify_delivery` against deliveries signed by each provider's own
//! library (`tests/vectors/signatures.json` and `tests/vectors/providers/*.json`),
//! so the schemes match the real wire formats; and `verify_hmac` against the
//! `scheme = "hmac"` deliveries of `tests/vectors/hmac/*.json`, each with its spec.

use std::collections::{HashMap, HashSet};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use hookd_sdk::signature::{
    verify_delivery, verify_hmac, Delivery, HmacFields, HmacSpec, Scheme, Secret,
};
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
    /// The request method; `POST` when absent.
    #[serde(default)]
    method: Option<String>,
    /// The public URL the provider called, query included, for schemes that sign it.
    #[serde(default)]
    url: Option<String>,
    /// `scheme = "hmac"`: the tenant's `[hmac]` table.
    #[serde(default)]
    hmac: Option<HashMap<String, String>>,
    /// Where the event id is, when the scheme does not say (a JSON pointer).
    #[serde(default)]
    event_id_field: Option<String>,
    expect: Expect,
}

/// The vector's `[hmac]` table, validated.
fn spec_of(vector: &Vector) -> Option<HmacSpec> {
    let table = vector.hmac.as_ref()?;
    let mut fields = HmacFields::default();
    for (key, value) in table {
        let value = value.clone();
        match key.as_str() {
            "signature" => fields.signature = value,
            "mode" => fields.mode = Some(value),
            "algorithm" => fields.algorithm = Some(value),
            "encoding" => fields.encoding = Some(value),
            "prefix" => fields.prefix = Some(value),
            "signed" => fields.signed = Some(value),
            "timestamp" => fields.timestamp = Some(value),
            "timestamp_unit" => fields.timestamp_unit = Some(value),
            other => panic!("{}: unknown hmac field {other:?}", vector.name),
        }
    }
    Some(HmacSpec::new(fields).unwrap_or_else(|e| panic!("{}: {e}", vector.name)))
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

/// Every vector file: `signatures.json`, then `providers/*.json` by name.
fn load() -> Vec<Vector> {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/vectors");
    let mut paths = vec![dir.join("signatures.json")];
    for folder in ["providers", "hmac"] {
        let mut found: Vec<_> = std::fs::read_dir(dir.join(folder))
            .map(|entries| {
                entries
                    .map(|entry| entry.expect("list vector folder").path())
                    .filter(|path| path.extension().is_some_and(|ext| ext == "json"))
                    .collect()
            })
            .unwrap_or_default();
        found.sort();
        paths.extend(found);
    }
    paths
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path)
                .unwrap_or_else(|e| panic!("read {}: {e}", path.display()));
            let file: VectorFile = serde_json::from_str(&text)
                .unwrap_or_else(|e| panic!("parse {}: {e}", path.display()));
            file.vectors
        })
        .collect()
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

/// The body's event id under `field`: a top-level name, or a JSON pointer when it
/// starts with `/`.
fn body_event_id(body: &[u8], field: &str) -> Option<String> {
    let value: serde_json::Value = serde_json::from_slice(body).ok()?;
    let found = if field.starts_with('/') {
        value.pointer(field)?
    } else {
        value.get(field)?
    };
    match found {
        serde_json::Value::String(text) => Some(text.clone()),
        serde_json::Value::Number(number) => Some(number.to_string()),
        _ => None,
    }
}

/// Checks one vector; `Err` describes the mismatch.
fn check(vector: &Vector, scheme: Scheme) -> Result<(), String> {
    let body = STANDARD.decode(&vector.body_b64).expect("body is base64");
    let keys = keys(scheme, vector);
    let delivery = Delivery {
        method: vector.method.as_deref().unwrap_or("POST"),
        url: vector.url.as_deref(),
        headers: &vector.headers,
        body: &body,
    };
    let result = match spec_of(vector) {
        Some(spec) => verify_hmac(&spec, &delivery, &keys, vector.now, vector.tolerance_s),
        None => verify_delivery(scheme, &delivery, &keys, vector.now, vector.tolerance_s),
    };
    match (&vector.expect, result) {
        (
            Expect {
                ok: true, event_id, ..
            },
            Ok(verified),
        ) => {
            let field = vector.event_id_field.as_deref();
            let found = match field.or(scheme.body_event_id_field()) {
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
