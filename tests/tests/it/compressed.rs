//! `Content-Encoding: gzip` / `deflate` bodies: decoded under the tenant's
//! `max_body_bytes` and `limits.max_decompression_ratio`, the signature
//! checked over the bytes the provider signed (`signed_body`), the decoded
//! body stored; bombs and unknown encodings refused.

use std::io::Write as _;

use flate2::{
    write::{GzEncoder, ZlibEncoder},
    Compression,
};
use hookd_sdk::signature::{sign, Scheme, Secret};
use reqwest::StatusCode;

use crate::harness::{order, signed, Answer, TestServer, ACME, NOW};

/// `acme` (signs the decoded body, the default), `wire` (signs the bytes as
/// sent) and `roomy` (8 MiB bodies, for bombs), all in pull mode.
fn tenants() -> String {
    let tenant = |id: &str, extra: &str| {
        format!(
            "[[tenants]]\nid = \"{id}\"\nscheme = \"hookd\"\n{extra}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-{id}\"\n"
        )
    };
    format!(
        "{ACME}\n{}{}",
        tenant("wire", "signed_body = \"wire\""),
        tenant("roomy", "max_body_bytes = 8388608")
    )
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn zlib(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = ZlibEncoder::new(Vec::new(), Compression::default());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn with_encoding(mut headers: Vec<(String, String)>, encoding: &str) -> Vec<(String, String)> {
    headers.push(("content-encoding".into(), encoding.into()));
    headers
}

/// hookd-scheme headers for `signed_bytes` under tenant `id`'s secret.
fn hookd_signed(id: &str, signed_bytes: &[u8]) -> Vec<(String, String)> {
    let key = Secret::from_provider(Scheme::Hookd, "k1", &format!("hk-{id}")).unwrap();
    sign(Scheme::Hookd, &key, "", NOW, signed_bytes)
}

/// The body of the one delivery waiting in `tenant`.
async fn stored_body(s: &TestServer, tenant: &str) -> Vec<u8> {
    let pulled = s.admin().await.pull(tenant, 10, 300).await.unwrap();
    assert_eq!(pulled.len(), 1, "one delivery waits in {tenant}");
    pulled[0].body.clone()
}

fn refused(a: &Answer, status: StatusCode, code: &str) {
    assert_eq!((a.status, a.code()), (status, code), "{:?}", a.body);
}

#[tokio::test]
async fn signed_then_compressed_bodies_are_decoded_verified_and_stored_decoded() {
    let s = TestServer::start(&tenants());
    let body = order("evt_gz");
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_gz", NOW, &body), "gzip"),
            &gzip(&body),
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    assert_eq!(stored_body(&s, "acme").await, body);

    let body = order("evt_zlib");
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_zlib", NOW, &body), "deflate"),
            &zlib(&body),
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    // Signed over the compressed bytes instead: not what acme's provider signs.
    let body = order("evt_wire");
    let wire = gzip(&body);
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_wire", NOW, &wire), "gzip"),
            &wire,
        )
        .await;
    refused(&a, StatusCode::UNAUTHORIZED, "BAD_SIGNATURE");
}

#[tokio::test]
async fn a_tenant_whose_provider_signs_the_wire_bytes() {
    let s = TestServer::start(&tenants());
    let body = br#"{"event_id":"w1","type":"t"}"#;
    let wire = gzip(body);
    let a = s
        .post(
            "wire",
            &with_encoding(hookd_signed("wire", &wire), "gzip"),
            &wire,
        )
        .await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
    assert_eq!(stored_body(&s, "wire").await, body);
    let body = br#"{"event_id":"w2","type":"t"}"#;
    let a = s
        .post(
            "wire",
            &with_encoding(hookd_signed("wire", body), "gzip"),
            &gzip(body),
        )
        .await;
    refused(&a, StatusCode::UNAUTHORIZED, "BAD_SIGNATURE");
}

/// 1 GiB of zeros as 1024 gzip members of 1 MiB each: about 1 MiB sent.
fn gibibyte_bomb() -> Vec<u8> {
    gzip(&vec![0u8; 1 << 20]).repeat(1024)
}

#[tokio::test]
async fn bombs_bad_streams_and_unknown_encodings_are_refused() {
    let s = TestServer::start(&tenants());
    let bomb = gibibyte_bomb();
    let headers = with_encoding(hookd_signed("roomy", b"{}"), "gzip");
    let a = s.post("roomy", &headers, &bomb).await;
    refused(
        &a,
        StatusCode::PAYLOAD_TOO_LARGE,
        "COMPRESSION_RATIO_TOO_HIGH",
    );
    assert_eq!(a.body["details"]["max_ratio"], 100, "{:?}", a.body);

    // Little compression, but more than acme's 64 KiB once decoded.
    let big: Vec<u8> = (0..200_000u32).flat_map(|n| n.to_le_bytes()).collect();
    let a = s
        .post("acme", &with_encoding(Vec::new(), "gzip"), &gzip(&big))
        .await;
    refused(&a, StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE");
    assert_eq!(a.body["details"]["limit_bytes"], 65536, "{:?}", a.body);

    let body = order("evt_br");
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_br", NOW, &body), "br"),
            &body,
        )
        .await;
    refused(
        &a,
        StatusCode::UNSUPPORTED_MEDIA_TYPE,
        "UNSUPPORTED_CONTENT_ENCODING",
    );
    let mut broken = gzip(&body);
    broken.truncate(broken.len() - 6);
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_br", NOW, &body), "gzip"),
            &broken,
        )
        .await;
    refused(&a, StatusCode::BAD_REQUEST, "INVALID_COMPRESSED_BODY");
    let a = s
        .post(
            "acme",
            &with_encoding(signed("evt_br", NOW, &body), "gzip"),
            &body,
        )
        .await;
    refused(&a, StatusCode::BAD_REQUEST, "INVALID_COMPRESSED_BODY");
    // Nothing was stored: the event, sent plainly, is new.
    let a = s.post("acme", &signed("evt_br", NOW, &body), &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
