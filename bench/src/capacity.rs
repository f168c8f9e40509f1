//! The sink `adaptive` points hookd at: actix-web on 127.0.0.1 port 0 that
//! serves at most `capacity` requests at once, each for a fixed service
//! time, and answers 503 at once to any beyond that. Its capacity can be
//! changed while it runs; it counts what it served and refused, per tenant
//! (the number ending the path segment after `/t/`: `/t/bench-7` is 7).

use std::{
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc, Mutex,
    },
    time::Duration,
};

use actix_web::{web, App, HttpRequest, HttpResponse, HttpServer};

use crate::background::Background;

/// What the sink has done, shared with its handler.
#[derive(Debug, Default)]
pub struct Counts {
    /// Requests it may serve at once now.
    pub capacity: AtomicUsize,
    /// Requests in service now.
    pub in_service: AtomicUsize,
    /// Requests served (204).
    pub served: AtomicU64,
    /// Requests refused (503).
    pub refused: AtomicU64,
    /// Served requests by tenant number, for fairness.
    served_by_tenant: Mutex<Vec<u64>>,
}

impl Counts {
    /// Served requests of each tenant number so far.
    pub fn served_by_tenant(&self) -> Vec<u64> {
        self.served_by_tenant
            .lock()
            .expect("the counts lock is never poisoned")
            .clone()
    }

    fn served_one(&self, tenant: Option<usize>) {
        self.served.fetch_add(1, Ordering::Relaxed);
        if let Some(n) = tenant {
            let mut by = self
                .served_by_tenant
                .lock()
                .expect("the counts lock is never poisoned");
            if by.len() <= n {
                by.resize(n + 1, 0);
            }
            by[n] += 1;
        }
    }
}

/// Releases a slot when the request ends, however it ends.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

async fn receive(
    req: HttpRequest,
    _body: web::Bytes,
    counts: web::Data<Counts>,
    service: web::Data<Duration>,
) -> HttpResponse {
    let taken = counts.in_service.fetch_add(1, Ordering::AcqRel);
    let _slot = Slot(&counts.in_service);
    if taken >= counts.capacity.load(Ordering::Acquire) {
        counts.refused.fetch_add(1, Ordering::Relaxed);
        return HttpResponse::ServiceUnavailable().finish();
    }
    actix_rt::time::sleep(**service).await;
    let tenant = req
        .path()
        .strip_prefix("/t/")
        .and_then(|rest| rest.split('/').next())
        .and_then(|tenant| tenant.rsplit('-').next())
        .and_then(|n| n.parse().ok());
    counts.served_one(tenant);
    HttpResponse::NoContent().finish()
}

/// The running sink; stopped by `stop`.
pub struct CapacitySink {
    /// Where it listens.
    pub addr: std::net::SocketAddr,
    /// What it has done; its `capacity` may be changed.
    pub counts: Arc<Counts>,
    server: Background,
}

impl CapacitySink {
    /// Starts the sink on 127.0.0.1 port 0 serving `capacity` requests at
    /// once for `service` each, on `workers` HTTP workers.
    pub fn start(capacity: usize, service: Duration, workers: usize) -> anyhow::Result<Self> {
        let counts = web::Data::new(Counts::default());
        counts.capacity.store(capacity, Ordering::Release);
        let shared = counts.clone().into_inner();
        let service = web::Data::new(service);
        let server = Background::start("bench-capacity-sink", move || {
            let server = HttpServer::new(move || {
                App::new()
                    .app_data(counts.clone())
                    .app_data(service.clone())
                    .route("/{tail:.*}", web::post().to(receive))
            })
            .workers(workers.max(1))
            .backlog(4096)
            .max_connections(100_000)
            .disable_signals()
            .bind(("127.0.0.1", 0))?;
            Ok((server.addrs()[0], server.run()))
        })?;
        Ok(CapacitySink {
            addr: server.addr,
            counts: shared,
            server,
        })
    }

    /// Stops the sink without waiting for open requests.
    pub async fn stop(self) {
        self.server.stop().await;
    }
}
