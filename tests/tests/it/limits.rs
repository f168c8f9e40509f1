//! Body limits: an oversized body is refused without being read into memory.

use std::time::Duration;

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::timeout,
};

use crate::harness::{TestServer, ACME};

/// Writes a raw request head (and a little body), then reads the answer
/// while the rest of the promised body is never sent.
async fn answer_to_partial_request(s: &TestServer, head: &str, first_bytes: &[u8]) -> String {
    let addr = s.base.trim_start_matches("http://");
    let mut conn = TcpStream::connect(addr).await.unwrap();
    conn.write_all(head.as_bytes()).await.unwrap();
    conn.write_all(first_bytes).await.unwrap();
    let mut buf = vec![0u8; 4096];
    let n = timeout(Duration::from_secs(10), conn.read(&mut buf))
        .await
        .expect("hookd must answer before the body is complete")
        .unwrap();
    String::from_utf8_lossy(&buf[..n]).into_owned()
}

#[tokio::test]
async fn declared_oversized_body_is_refused_before_it_is_sent() {
    let s = TestServer::start(ACME);
    // acme allows 64 KiB; promise 100 MB and send only 10 bytes of it.
    let head = "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 100000000\r\n\r\n";
    let answer = answer_to_partial_request(&s, head, b"{\"type\":1,").await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("PAYLOAD_TOO_LARGE"), "{answer}");
    assert!(
        answer.to_lowercase().contains("x-request-id: req_"),
        "{answer}"
    );
}

#[tokio::test]
async fn chunked_body_is_refused_as_soon_as_it_crosses_the_limit() {
    let s = TestServer::start(ACME);
    let head = "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ntransfer-encoding: chunked\r\n\r\n";
    // 70 KiB in 1 KiB chunks, past the 64 KiB limit, and no final chunk.
    let chunk = format!("400\r\n{}\r\n", "a".repeat(1024));
    let body = chunk.repeat(70);
    let answer = answer_to_partial_request(&s, head, body.as_bytes()).await;
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
}

#[tokio::test]
async fn body_at_the_limit_is_read_and_checked() {
    let s = TestServer::start(ACME);
    let pad = "x".repeat(65536 - 40);
    let body = format!(r#"{{"type":"big","pad":"{pad}"}}"#);
    let body = &body.as_bytes()[..body.len().min(65536)];
    let a = s
        .post(
            "acme",
            &crate::harness::signed("m_big", crate::harness::NOW, body),
            body,
        )
        .await;
    assert_ne!(a.code(), "PAYLOAD_TOO_LARGE", "{:?}", a.body);
}
