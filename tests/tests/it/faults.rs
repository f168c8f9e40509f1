//! Forwarding faults below HTTP: a destination name that does not resolve,
//! an untrusted TLS certificate, a connection reset mid-request and a
//! response cut off after its status line. Each is retried per policy with
//! its reason recorded in plain words.

use std::sync::Arc;

use hookd_server::testing::DeliveryEventKind;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{TcpListener, TcpStream},
};
use tokio_rustls::{
    rustls::{
        pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer},
        ServerConfig,
    },
    TlsAcceptor,
};

use crate::{
    forward::wait_event,
    harness::tenant,
    harness::{now_secs, order, signed, TestServer},
};

/// Sends one event to `shop` forwarding to `url` with a 50 ms retry
/// schedule; asserts two failed attempts, each scheduled for a retry with a
/// reason containing `reason`, and returns the stored attempt errors.
async fn retried_with_reason(url: &str, reason: &str) -> Vec<String> {
    let s = TestServer::start_live(&tenant("shop", url, "", "", "schedule_secs = [0.05]"));
    let mut feed = s.server().services().feed.subscribe();
    let body = order("evt_fault");
    let answer = s
        .post("shop", &signed("evt_fault", now_secs(), &body), &body)
        .await;
    let id = answer.body["delivery_id"].as_str().unwrap().to_owned();
    for attempt in 1..=2 {
        let retry = wait_event(&mut feed, &id, DeliveryEventKind::RetryScheduled).await;
        assert_eq!(retry.attempt, attempt);
        let said = retry.reason.unwrap_or_default();
        assert!(said.contains(reason), "attempt {attempt}: {said:?}");
    }
    let delivery = s.admin().await.get_delivery("shop", id).await.unwrap();
    let errors: Vec<String> = delivery.attempts.iter().map(|a| a.error.clone()).collect();
    assert!(errors.len() >= 2, "{errors:?}");
    for error in &errors[..2] {
        assert!(error.contains(reason), "stored attempt: {error:?}");
    }
    errors
}

/// Accepts connections on 127.0.0.1 and hands each to `serve`; returns the
/// port.
async fn raw_destination<F, Fut>(serve: F) -> u16
where
    F: Fn(TcpStream) -> Fut + Send + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(serve(stream));
        }
    });
    port
}

/// Reads one whole HTTP request (head and `content-length` body).
async fn read_request(stream: &mut TcpStream) {
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = stream.read(&mut buf).await.unwrap_or(0);
        if n == 0 {
            return;
        }
        got.extend_from_slice(&buf[..n]);
        let Some(end) = got.windows(4).position(|w| w == b"\r\n\r\n") else {
            continue;
        };
        let head = String::from_utf8_lossy(&got[..end]).to_ascii_lowercase();
        let length: usize = head
            .lines()
            .find_map(|l| l.strip_prefix("content-length:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        if got.len() >= end + 4 + length {
            return;
        }
    }
}

#[tokio::test]
async fn unresolvable_destination_is_retried_as_a_dns_failure() {
    retried_with_reason("http://hookd-fault-test.invalid/hooks", "dns lookup failed").await;
}

#[tokio::test]
async fn untrusted_certificate_is_retried_as_a_tls_failure() {
    let cert = rcgen::generate_simple_self_signed(vec!["localhost".into()]).unwrap();
    let chain = vec![CertificateDer::from(cert.cert.der().to_vec())];
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(cert.signing_key.serialize_der()));
    let config = ServerConfig::builder()
        .with_no_client_auth()
        .with_single_cert(chain, key)
        .unwrap();
    let acceptor = TlsAcceptor::from(Arc::new(config));
    let port = raw_destination(move |stream| {
        let acceptor = acceptor.clone();
        async move {
            // The client refuses the certificate: the handshake fails.
            let _ = acceptor.accept(stream).await;
        }
    })
    .await;
    let errors = retried_with_reason(
        &format!("https://localhost:{port}/hooks"),
        "tls handshake failed",
    )
    .await;
    assert!(
        errors[0].to_lowercase().contains("certificate"),
        "{errors:?}"
    );
}

#[tokio::test]
async fn connection_reset_mid_request_is_retried() {
    let port = raw_destination(|mut stream| async move {
        let mut first = [0u8; 16];
        let _ = stream.read(&mut first).await;
        // Linger 0: closing sends RST instead of FIN.
        stream.set_zero_linger().unwrap();
        drop(stream);
    })
    .await;
    retried_with_reason(
        &format!("http://127.0.0.1:{port}/hooks"),
        "connection reset",
    )
    .await;
}

#[tokio::test]
async fn response_cut_off_after_the_status_line_is_retried() {
    let port = raw_destination(|mut stream| async move {
        read_request(&mut stream).await;
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n").await;
        let _ = stream.shutdown().await;
    })
    .await;
    retried_with_reason(
        &format!("http://127.0.0.1:{port}/hooks"),
        "response ended early",
    )
    .await;
}

/// A forward attempt whose first read of the delivery fails (the store
/// answered the queue, then failed: a database going away) is tried again
/// on a later pass, never left behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_whose_first_read_failed_is_forwarded_on_the_next_pass() {
    let dest = crate::receiver::Receiver::start(crate::receiver::Reply::Status(200)).await;
    let s = TestServer::start_live(&tenant("readfail", &dest.url, "", "", ""));
    hookd_server::testing::faults::fail_next_read("readfail");
    let body = order("evt_read");
    let a = s
        .post("readfail", &signed("evt_read", now_secs(), &body), &body)
        .await;
    assert_eq!(a.status, reqwest::StatusCode::ACCEPTED, "{:?}", a.body);
    let got = dest.wait_for(1, std::time::Duration::from_secs(5)).await;
    assert_eq!(got[0].header("webhook-id"), Some("evt_read"));
}
