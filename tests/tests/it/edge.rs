//! The public edge against slow and heavy senders, over raw TCP: a body
//! trickled past the request deadline, an oversized header block, and the
//! bound on open connections.

use std::time::{Duration, Instant};

use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::TcpStream,
    time::timeout,
};

use crate::harness::{TestServer, ACME};

/// Whether `bytes` hold a whole HTTP answer: head and `content-length` body.
fn complete(bytes: &[u8]) -> bool {
    let text = String::from_utf8_lossy(bytes);
    let Some(end) = text.find("\r\n\r\n") else {
        return false;
    };
    let length = text[..end]
        .lines()
        .filter_map(|l| l.split_once(':'))
        .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
        .and_then(|(_, v)| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    bytes.len() >= end + 4 + length
}

/// Reads one answer, until it is complete, the peer closes or `limit` passes.
async fn read_answer(conn: &mut (impl AsyncReadExt + Unpin), limit: Duration) -> String {
    let mut out = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + limit;
    while !complete(&out) {
        let left = deadline.saturating_duration_since(Instant::now());
        match timeout(left, conn.read(&mut buf)).await {
            Ok(Ok(n)) if n > 0 => out.extend_from_slice(&buf[..n]),
            _ => break,
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn addr(s: &TestServer) -> String {
    s.base.trim_start_matches("http://").to_owned()
}

#[tokio::test]
async fn a_body_trickled_past_the_deadline_gets_408() {
    let s = TestServer::start(&format!("[http]\nrequest_timeout_secs = 1\n{ACME}"));
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    let head = "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ncontent-length: 1000\r\n\r\n";
    conn.write_all(head.as_bytes()).await.unwrap();
    let started = Instant::now();
    // One byte every 100 ms: 1000 bytes would take 100 s; the deadline is 1 s.
    let (mut read, mut write) = conn.into_split();
    let trickle = tokio::spawn(async move {
        for _ in 0..1000 {
            if write.write_all(b" ").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let answer = read_answer(&mut read, Duration::from_secs(10)).await;
    trickle.abort();
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    assert!(
        answer.to_lowercase().contains("x-request-id: req_"),
        "{answer}"
    );
    assert!(
        started.elapsed() < Duration::from_secs(5),
        "answered after {:?}",
        started.elapsed()
    );
}

#[tokio::test]
async fn a_100_kb_header_block_gets_431_with_the_standard_body() {
    let s = TestServer::start(ACME);
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    let filler = "a".repeat(1000);
    let headers: String = (0..90)
        .map(|i| format!("x-filler-{i}: {filler}\r\n"))
        .collect();
    assert!(headers.len() > 90_000);
    let request = format!(
        "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n{headers}content-length: 2\r\n\r\n{{}}"
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
    assert!(answer.contains("HEADERS_TOO_LARGE"), "{answer}");
    assert!(
        answer.to_lowercase().contains("x-request-id: req_"),
        "{answer}"
    );
    let metrics = crate::telemetry::scrape(&s.base).await;
    assert!(
        metrics.contains(
            "hookd_deliveries_rejected_total{tenant=\"other\",code=\"HEADERS_TOO_LARGE\"} 1"
        ),
        "{metrics}"
    );
}

#[tokio::test]
async fn a_header_block_under_the_limit_is_served() {
    let s = TestServer::start(&format!("[http]\nmax_header_bytes = 16384\n{ACME}"));
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    let request = format!(
        "GET /healthz HTTP/1.1\r\nhost: x\r\nx-filler: {}\r\nconnection: close\r\n\r\n",
        "a".repeat(12_000)
    );
    conn.write_all(request.as_bytes()).await.unwrap();
    let answer = read_answer(&mut conn, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// With one worker allowed one connection, a second client is not served
/// while the first holds its connection open, and is served once it closes.
#[tokio::test]
async fn connections_past_max_connections_wait_for_a_free_slot() {
    let s = TestServer::start(&format!("[http]\nworkers = 1\nmax_connections = 1\n{ACME}"));
    let mut first = TcpStream::connect(addr(&s)).await.unwrap();
    first
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_answer(&mut first, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    // `first` stays open (keep-alive) and holds the only slot.

    let mut second = TcpStream::connect(addr(&s)).await.unwrap();
    second
        .write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut buf = [0u8; 64];
    let early = timeout(Duration::from_millis(1500), second.read(&mut buf)).await;
    assert!(
        early.is_err(),
        "the second connection was served while the first held the only slot: {early:?}"
    );

    drop(first);
    let answer = read_answer(&mut second, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
}

/// A reused connection's second head is not timed by actix (its head timer
/// covers only a connection's first request): with keep-alive off, every
/// request is the first on its connection, and the connection closes after
/// each answer.
#[tokio::test]
async fn with_keep_alive_off_a_connection_carries_one_request() {
    let s = TestServer::start(&format!("[http]\nkeep_alive_secs = 0\n{ACME}"));
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    conn.write_all(b"GET /healthz HTTP/1.1\r\nhost: x\r\n\r\n")
        .await
        .unwrap();
    let answer = read_answer(&mut conn, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 200"), "{answer}");
    let mut buf = [0u8; 64];
    let after = timeout(Duration::from_secs(2), conn.read(&mut buf)).await;
    assert!(
        matches!(after, Ok(Ok(0)) | Ok(Err(_))),
        "the connection stays open for another request: {after:?}"
    );
}

/// The head has its share of the deadline (a sixth): past it actix answers
/// a bare 408 and closes the connection.
#[tokio::test]
async fn a_head_trickled_past_its_share_of_the_deadline_gets_408() {
    let s = TestServer::start(&format!("[http]\nrequest_timeout_secs = 1\n{ACME}"));
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    let started = Instant::now();
    conn.write_all(b"POST /hooks/acme HTTP/1.1\r\nhost: x\r\nx-slow: ")
        .await
        .unwrap();
    let answer = read_answer(&mut conn, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "answered after {:?}",
        started.elapsed()
    );
}

/// A chunked body trickled past the deadline: answered 408, and the
/// connection is closed rather than drained for as long as the sender likes.
#[tokio::test]
async fn a_trickled_chunked_body_gets_408_and_loses_its_connection() {
    let s = TestServer::start(&format!("[http]\nrequest_timeout_secs = 1\n{ACME}"));
    let conn = TcpStream::connect(addr(&s)).await.unwrap();
    let (mut read, mut write) = conn.into_split();
    let head = "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n";
    write.write_all(head.as_bytes()).await.unwrap();
    let trickle = tokio::spawn(async move {
        for _ in 0..600 {
            if write.write_all(b"1\r\n \r\n").await.is_err() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
    let answer = read_answer(&mut read, Duration::from_secs(10)).await;
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    assert!(answer.contains("REQUEST_TIMEOUT"), "{answer}");
    let mut buf = [0u8; 64];
    let after = timeout(Duration::from_secs(3), read.read(&mut buf)).await;
    trickle.abort();
    assert!(
        matches!(after, Ok(Ok(0)) | Ok(Err(_))),
        "the connection stays open after the 408: {after:?}"
    );
}

/// Bodies read to their end keep the connection for the next request.
#[tokio::test]
async fn a_fully_read_body_keeps_the_connection_alive() {
    let s = TestServer::start(ACME);
    let body = crate::harness::order("evt_keep");
    let mut request = format!(
        "POST /hooks/acme HTTP/1.1\r\nhost: x\r\ncontent-length: {}\r\n",
        body.len()
    );
    for (name, value) in crate::harness::signed("msg_keep", crate::harness::NOW, &body) {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    let mut bytes = request.into_bytes();
    bytes.extend_from_slice(&body);
    let mut conn = TcpStream::connect(addr(&s)).await.unwrap();
    for expected in ["HTTP/1.1 202", "HTTP/1.1 200"] {
        conn.write_all(&bytes).await.unwrap();
        let answer = read_answer(&mut conn, Duration::from_secs(10)).await;
        assert!(answer.starts_with(expected), "{answer}");
    }
}
