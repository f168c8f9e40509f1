//! A fake destination on 127.0.0.1: records every request it gets and
//! answers as the test scripts (status codes, `Retry-After`, redirects, hangs,
//! a gate the test opens), over plain HTTP or HTTPS with a certificate from a test CA.

use std::{
    collections::VecDeque,
    convert::Infallible,
    net::SocketAddr,
    sync::{Arc, Mutex},
    time::{Duration, Instant},
};

use http_body_util::{BodyExt, Full};
use hyper::{body::Bytes, server::conn::http1, service::service_fn, Request, Response};
use hyper_util::rt::TokioIo;
use tokio::{net::TcpListener, sync::Notify};
use tokio_rustls::{
    rustls::{
        pki_types::{pem::PemObject, CertificateDer, PrivateKeyDer},
        ServerConfig,
    },
    TlsAcceptor,
};

use crate::pki::Pki;

/// How the receiver answers one request.
#[derive(Debug, Clone)]
pub enum Reply {
    /// This status, empty body.
    Status(u16),
    /// This status with a `Retry-After` header.
    RetryAfter(u16, String),
    /// Wait this long, then answer 200.
    Hang(Duration),
    /// This status with a body of this many bytes.
    Body(u16, usize),
    /// This (3xx) status with a `Location` header.
    Redirect(u16, String),
    /// Wait until the test opens the gate ([`Receiver::open_gate`]), then
    /// answer 200: what arrived and is not answered is in flight.
    Gated,
}

/// One request the receiver got.
#[derive(Debug, Clone)]
pub struct Received {
    /// The request's path and query.
    pub path: String,
    pub headers: Vec<(String, String)>,
    pub body: Bytes,
}

impl Received {
    /// A header's value.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

#[derive(Default)]
struct Shared {
    script: Mutex<VecDeque<Reply>>,
    default: Mutex<Option<Reply>>,
    received: Mutex<Vec<Received>>,
    arrived: Notify,
    /// Whether [`Reply::Gated`] answers.
    gate: tokio::sync::watch::Sender<bool>,
}

/// A running fake destination.
#[derive(Clone)]
pub struct Receiver {
    pub url: String,
    shared: Arc<Shared>,
}

impl Receiver {
    /// Starts on a free port, answering `default` unless scripted.
    pub async fn start(default: Reply) -> Receiver {
        Receiver::start_on("127.0.0.1:0".parse().unwrap(), default).await
    }

    /// Starts on `addr`.
    pub async fn start_on(addr: SocketAddr, default: Reply) -> Receiver {
        Receiver::serve(addr, None, default).await
    }

    /// Starts on a free port speaking HTTPS with `pki`'s server certificate
    /// (for `localhost` and 127.0.0.1, signed by the test CA).
    pub async fn start_tls(pki: &Pki, default: Reply) -> Receiver {
        let (cert, key) = pki.server();
        let chain = CertificateDer::pem_file_iter(cert)
            .unwrap()
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let key = PrivateKeyDer::from_pem_file(key).unwrap();
        let config = ServerConfig::builder()
            .with_no_client_auth()
            .with_single_cert(chain, key)
            .unwrap();
        let acceptor = TlsAcceptor::from(Arc::new(config));
        Receiver::serve("127.0.0.1:0".parse().unwrap(), Some(acceptor), default).await
    }

    async fn serve(addr: SocketAddr, tls: Option<TlsAcceptor>, default: Reply) -> Receiver {
        let listener = TcpListener::bind(addr).await.unwrap();
        let bound = listener.local_addr().unwrap();
        let url = match tls {
            Some(_) => format!("https://localhost:{}/hooks", bound.port()),
            None => format!("http://{bound}/hooks"),
        };
        let shared = Arc::new(Shared::default());
        *shared.default.lock().unwrap() = Some(default);
        let state = shared.clone();
        tokio::spawn(async move {
            loop {
                let Ok((stream, _)) = listener.accept().await else {
                    return;
                };
                let state = state.clone();
                let tls = tls.clone();
                tokio::spawn(async move {
                    let service = service_fn(move |req| handle(state.clone(), req));
                    let http = http1::Builder::new();
                    let _ = match tls {
                        // A client that does not trust the certificate ends
                        // the handshake: nothing is served.
                        Some(acceptor) => match acceptor.accept(stream).await {
                            Ok(stream) => {
                                http.serve_connection(TokioIo::new(stream), service).await
                            }
                            Err(_) => return,
                        },
                        None => http.serve_connection(TokioIo::new(stream), service).await,
                    };
                });
            }
        });
        Receiver { url, shared }
    }

    /// Answers the next requests with `replies`, in order, then the default.
    pub fn script(&self, replies: impl IntoIterator<Item = Reply>) {
        self.shared.script.lock().unwrap().extend(replies);
    }

    /// Changes the default answer.
    pub fn set_default(&self, reply: Reply) {
        *self.shared.default.lock().unwrap() = Some(reply);
    }

    /// Lets every request held by [`Reply::Gated`], and every later one,
    /// be answered.
    pub fn open_gate(&self) {
        self.shared.gate.send_replace(true);
    }

    /// Everything received so far.
    pub fn received(&self) -> Vec<Received> {
        self.shared.received.lock().unwrap().clone()
    }

    /// Waits until at least `n` requests arrived; panics after `limit`.
    pub async fn wait_for(&self, n: usize, limit: Duration) -> Vec<Received> {
        let deadline = Instant::now() + limit;
        loop {
            let notified = self.shared.arrived.notified();
            let got = self.received();
            if got.len() >= n {
                return got;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            assert!(
                !left.is_zero(),
                "expected {n} requests, got {} within {limit:?}",
                got.len()
            );
            let _ = tokio::time::timeout(left, notified).await;
        }
    }
}

async fn handle(
    state: Arc<Shared>,
    req: Request<hyper::body::Incoming>,
) -> Result<Response<Full<Bytes>>, Infallible> {
    let path = req
        .uri()
        .path_and_query()
        .map(|p| p.as_str().to_owned())
        .unwrap_or_default();
    let headers = req
        .headers()
        .iter()
        .map(|(k, v)| {
            (
                k.as_str().to_owned(),
                v.to_str().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    let body = req
        .into_body()
        .collect()
        .await
        .map(|b| b.to_bytes())
        .unwrap_or_default();
    let reply = {
        let next = state.script.lock().unwrap().pop_front();
        next.or_else(|| state.default.lock().unwrap().clone())
            .unwrap()
    };
    state.received.lock().unwrap().push(Received {
        path,
        headers,
        body,
    });
    state.arrived.notify_waiters();
    let response = match reply {
        Reply::Status(code) => Response::builder()
            .status(code)
            .body(Full::new(Bytes::from_static(b"ok"))),
        Reply::RetryAfter(code, after) => Response::builder()
            .status(code)
            .header("retry-after", after)
            .body(Full::new(Bytes::from_static(b"slow down"))),
        Reply::Redirect(code, location) => Response::builder()
            .status(code)
            .header("location", location)
            .body(Full::new(Bytes::new())),
        Reply::Body(code, len) => Response::builder()
            .status(code)
            .body(Full::new(Bytes::from(vec![b'x'; len]))),
        Reply::Gated => {
            let mut open = state.gate.subscribe();
            let _ = open.wait_for(|open| *open).await;
            Response::builder()
                .status(200)
                .body(Full::new(Bytes::new()))
        }
        Reply::Hang(wait) => {
            tokio::time::sleep(wait).await;
            Response::builder()
                .status(200)
                .body(Full::new(Bytes::new()))
        }
    };
    Ok(response.unwrap())
}
