//! The sink `forward` points hookd's tenants at: actix-web on 127.0.0.1
//! port 0, in a thread of its own, answering every POST as its [`Reply`]
//! says (204 by default) and noting, for each request, the event id hookd
//! forwards in `webhook-id` and when it arrived.

use std::{
    collections::HashMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, Ordering},
        Arc, Mutex,
    },
    time::Instant,
};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

use crate::background::Background;

/// The header hookd forwards the event id in (Standard Webhooks).
pub const EVENT_ID_HEADER: &str = "webhook-id";

/// Bodies up to this size are read.
const MAX_BODY: usize = 64 * 1024 * 1024;

/// How a sink answers: at once with a status, or with 204 after a delay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reply {
    /// This status, at once.
    Status(u16),
    /// 204 after this many milliseconds.
    Slow(u64),
}

impl std::str::FromStr for Reply {
    type Err = String;

    /// `204`, `500`, ... or `slow:MS`.
    fn from_str(text: &str) -> Result<Reply, String> {
        if let Some(ms) = text.strip_prefix("slow:") {
            return ms
                .parse()
                .map(Reply::Slow)
                .map_err(|_| format!("{text:?}: slow:MS takes milliseconds"));
        }
        match text.parse::<u16>() {
            Ok(status) if (200..600).contains(&status) => Ok(Reply::Status(status)),
            _ => Err(format!(
                "{text:?} is neither a status (200-599) nor slow:MS"
            )),
        }
    }
}

/// One event id's arrivals at the sink.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arrival {
    /// When it first arrived.
    pub first: Instant,
    /// How many times it arrived (more than once: a duplicate forward).
    pub count: u32,
}

/// Everything the sink saw, shared with its handler.
#[derive(Debug, Default)]
pub struct Arrivals {
    by_event: Mutex<HashMap<String, Arrival>>,
    requests: AtomicU64,
    without_id: AtomicU64,
}

impl Arrivals {
    /// Notes one request carrying `event_id` (`None`: no `webhook-id`) at `at`.
    pub fn record(&self, event_id: Option<&str>, at: Instant) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let Some(id) = event_id else {
            self.without_id.fetch_add(1, Ordering::Relaxed);
            return;
        };
        let mut map = self
            .by_event
            .lock()
            .expect("the arrivals lock is never poisoned");
        map.entry(id.to_owned())
            .and_modify(|a| a.count += 1)
            .or_insert(Arrival {
                first: at,
                count: 1,
            });
    }

    /// Requests received so far, with or without an event id.
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// Requests that carried no `webhook-id`.
    pub fn without_id(&self) -> u64 {
        self.without_id.load(Ordering::Relaxed)
    }

    /// How many of `ids` have arrived at least once.
    pub fn count_arrived<'a>(&self, ids: impl IntoIterator<Item = &'a String>) -> usize {
        let map = self
            .by_event
            .lock()
            .expect("the arrivals lock is never poisoned");
        ids.into_iter().filter(|id| map.contains_key(*id)).count()
    }

    /// A copy of every event id's arrivals.
    pub fn snapshot(&self) -> HashMap<String, Arrival> {
        self.by_event
            .lock()
            .expect("the arrivals lock is never poisoned")
            .clone()
    }
}

async fn receive(
    req: HttpRequest,
    _body: web::Bytes,
    arrivals: web::Data<Arrivals>,
    reply: web::Data<Reply>,
) -> HttpResponse {
    let at = Instant::now();
    let id = req
        .headers()
        .get(EVENT_ID_HEADER)
        .and_then(|v| v.to_str().ok());
    arrivals.record(id, at);
    match **reply {
        Reply::Status(status) => {
            let status = actix_web::http::StatusCode::from_u16(status)
                .unwrap_or(actix_web::http::StatusCode::NO_CONTENT);
            HttpResponse::build(status).finish()
        }
        Reply::Slow(ms) => {
            actix_rt::time::sleep(std::time::Duration::from_millis(ms)).await;
            HttpResponse::NoContent().finish()
        }
    }
}

/// The running sink; stopped by `stop` (or when its thread's system ends).
pub struct Sink {
    /// Where it listens.
    pub addr: SocketAddr,
    /// What it has received.
    pub arrivals: Arc<Arrivals>,
    server: Background,
}

impl Sink {
    /// Starts the sink on 127.0.0.1 port 0 with `workers` HTTP workers,
    /// answering every request as `reply` says.
    pub fn start(workers: usize, reply: Reply) -> anyhow::Result<Sink> {
        let arrivals = web::Data::new(Arrivals::default());
        let reply = web::Data::new(reply);
        let shared = arrivals.clone().into_inner();
        let server = Background::start("bench-sink", move || {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(arrivals.clone())
                    .app_data(reply.clone())
                    .app_data(web::PayloadConfig::new(MAX_BODY))
                    .route("/{tail:.*}", web::post().to(receive))
            })
            .workers(workers.max(1))
            .disable_signals()
            .bind(("127.0.0.1", 0))?;
            Ok((server.addrs()[0], server.run()))
        })?;
        Ok(Sink {
            addr: server.addr,
            arrivals: shared,
            server,
        })
    }

    /// Stops the sink without waiting for open requests.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_parse_from_a_status_or_slow_ms() {
        assert_eq!("500".parse::<Reply>(), Ok(Reply::Status(500)));
        assert_eq!("slow:2000".parse::<Reply>(), Ok(Reply::Slow(2000)));
        assert!("slow:soon".parse::<Reply>().is_err());
        assert!("99".parse::<Reply>().is_err());
    }

    #[test]
    fn arrivals_keep_the_first_instant_and_count_repeats() {
        let arrivals = Arrivals::default();
        let t0 = Instant::now();
        let t1 = t0 + std::time::Duration::from_millis(5);
        arrivals.record(Some("evt_a"), t0);
        arrivals.record(Some("evt_b"), t1);
        arrivals.record(Some("evt_a"), t1);
        arrivals.record(None, t1);
        let snap = arrivals.snapshot();
        assert_eq!(
            snap["evt_a"],
            Arrival {
                first: t0,
                count: 2
            }
        );
        assert_eq!(snap["evt_b"].count, 1);
        assert_eq!(arrivals.requests(), 4);
        assert_eq!(arrivals.without_id(), 1);
        let ids = ["evt_a".to_owned(), "evt_c".to_owned()];
        assert_eq!(arrivals.count_arrived(&ids), 1);
    }
}
