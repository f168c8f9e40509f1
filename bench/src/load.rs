//! The load driver: N keep-alive HTTP/1.1 connections, each sending the next
//! planned request as soon as its previous answer is read (or, paced, at the
//! request's planned instant), until the plan or the time runs out. Latency
//! is recorded per request in an HDR histogram.

use std::{
    collections::BTreeMap,
    net::SocketAddr,
    sync::{
        atomic::{AtomicU64, AtomicUsize, Ordering},
        Arc,
    },
    time::{Duration, Instant},
};

use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Empty, Full};
use hyper::{body::Bytes, client::conn::http1::SendRequest, Method, Request, StatusCode};
use hyper_util::rt::TokioIo;
use indicatif::{ProgressBar, ProgressStyle};
use tokio::net::TcpStream;

use crate::plan::Plan;

/// Longest latency the histogram holds, in microseconds (a minute).
const MAX_LATENCY_US: u64 = 60_000_000;

/// How one phase runs.
#[derive(Debug, Clone)]
pub struct LoadOptions {
    /// Where the server listens (loopback only).
    pub addr: SocketAddr,
    /// Concurrent keep-alive connections.
    pub connections: usize,
    /// Stop sending after this long; `None` sends the whole plan.
    pub duration: Option<Duration>,
    /// A request unanswered this long counts as an error and its connection is replaced.
    pub request_timeout: Duration,
    /// Draw a progress bar on stderr (hidden when stderr is not a terminal).
    pub progress: bool,
    /// Keep the pool index and instant of every 202 answer (`PhaseResult::accepted`).
    pub record_accepted: bool,
    /// Send at a fixed rate: request `i` goes out `i` gaps after the start
    /// (on the first free connection), and its latency counts from that
    /// planned instant, so a slow answer is never hidden by the requests it
    /// held back. `None` sends as fast as the connections are answered.
    pub pace: Option<Duration>,
}

/// What one phase measured.
#[derive(Debug)]
pub struct PhaseResult {
    /// Requests answered, by status code.
    pub statuses: BTreeMap<u16, u64>,
    /// Requests that got no answer, by cause.
    pub errors: BTreeMap<String, u64>,
    /// Requests sent (answered or failed).
    pub sent: u64,
    /// Of `sent`, replays of seed deliveries.
    pub sent_duplicates: u64,
    /// Latency of answered requests, microseconds.
    pub latency: Histogram<u64>,
    /// From the first request to the last answer.
    pub elapsed: Duration,
    /// The plan ran out before the duration did.
    pub plan_exhausted: bool,
    /// When the first request went out.
    pub started: Instant,
    /// Pool index and arrival instant of each 202 answer, when
    /// `LoadOptions::record_accepted` asked for them (else empty).
    pub accepted: Vec<(u32, Instant)>,
}

/// Sends `order` (pool indexes of `plan`) with `opts`.
pub async fn run_phase(
    plan: Arc<Plan>,
    order: Arc<Vec<u32>>,
    opts: &LoadOptions,
    label: &str,
) -> PhaseResult {
    let next = Arc::new(AtomicUsize::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = opts.duration.map(|d| start + d);
    let bar = progress_bar(opts, order.len(), label);
    let ticker = {
        let (bar, done) = (bar.clone(), done.clone());
        tokio::spawn(async move {
            loop {
                tokio::time::sleep(Duration::from_millis(200)).await;
                tick(&bar, done.load(Ordering::Relaxed), start, deadline);
            }
        })
    };
    let workers: Vec<_> = (0..opts.connections.max(1))
        .map(|_| {
            let worker = Worker {
                plan: plan.clone(),
                order: order.clone(),
                next: next.clone(),
                done: done.clone(),
                addr: opts.addr,
                deadline,
                timeout: opts.request_timeout,
                record_accepted: opts.record_accepted,
                pace: opts.pace.map(|gap| (start, gap)),
            };
            tokio::spawn(worker.run())
        })
        .collect();
    let mut total = WorkerStats::new();
    for worker in workers {
        let stats = worker.await.expect("a load connection panicked");
        total.merge(stats);
    }
    let elapsed = start.elapsed();
    ticker.abort();
    bar.finish_and_clear();
    PhaseResult {
        statuses: total.statuses,
        errors: total.errors,
        sent: total.sent,
        sent_duplicates: total.sent_duplicates,
        latency: total.latency,
        elapsed,
        plan_exhausted: opts.duration.is_some_and(|d| match opts.pace {
            // Paced: the plan's instants stop more than a gap short of the end.
            Some(gap) => gap * (order.len() as u32 + 1) <= d,
            None => elapsed < d && next.load(Ordering::Relaxed) >= order.len(),
        }),
        started: start,
        accepted: total.accepted,
    }
}

fn progress_bar(opts: &LoadOptions, total: usize, label: &str) -> ProgressBar {
    if !opts.progress {
        return ProgressBar::hidden();
    }
    let (len, template) = match opts.duration {
        Some(d) => (
            d.as_millis() as u64,
            "{prefix} [{elapsed_precise}] {wide_bar} {msg}",
        ),
        None => (
            total as u64,
            "{prefix} [{elapsed_precise}] {wide_bar} {pos}/{len} {msg}",
        ),
    };
    let bar = ProgressBar::new(len);
    bar.set_style(ProgressStyle::with_template(template).expect("a valid template"));
    bar.set_prefix(label.to_owned());
    bar
}

fn tick(bar: &ProgressBar, done: u64, start: Instant, deadline: Option<Instant>) {
    let secs = start.elapsed().as_secs_f64();
    let rate = if secs > 0.0 { done as f64 / secs } else { 0.0 };
    match deadline {
        Some(_) => {
            bar.set_position(start.elapsed().as_millis() as u64);
            bar.set_message(format!("{done} req, {rate:.0} req/s"));
        }
        None => {
            bar.set_position(done);
            bar.set_message(format!("{rate:.0} req/s"));
        }
    }
}

struct WorkerStats {
    statuses: BTreeMap<u16, u64>,
    errors: BTreeMap<String, u64>,
    sent: u64,
    sent_duplicates: u64,
    latency: Histogram<u64>,
    accepted: Vec<(u32, Instant)>,
}

impl WorkerStats {
    fn new() -> Self {
        WorkerStats {
            statuses: BTreeMap::new(),
            errors: BTreeMap::new(),
            sent: 0,
            sent_duplicates: 0,
            latency: Histogram::new_with_bounds(1, MAX_LATENCY_US, 3).expect("valid bounds"),
            accepted: Vec::new(),
        }
    }

    fn merge(&mut self, other: WorkerStats) {
        for (status, n) in other.statuses {
            *self.statuses.entry(status).or_default() += n;
        }
        for (cause, n) in other.errors {
            *self.errors.entry(cause).or_default() += n;
        }
        self.sent += other.sent;
        self.sent_duplicates += other.sent_duplicates;
        self.latency
            .add(&other.latency)
            .expect("histograms with the same bounds");
        self.accepted.extend(other.accepted);
    }

    fn error(&mut self, cause: String) {
        *self.errors.entry(cause).or_default() += 1;
    }
}

struct Worker {
    plan: Arc<Plan>,
    order: Arc<Vec<u32>>,
    next: Arc<AtomicUsize>,
    done: Arc<AtomicU64>,
    addr: SocketAddr,
    deadline: Option<Instant>,
    timeout: Duration,
    record_accepted: bool,
    pace: Option<(Instant, Duration)>,
}

impl Worker {
    async fn run(self) -> WorkerStats {
        let mut stats = WorkerStats::new();
        let mut sender: Option<SendRequest<Full<Bytes>>> = None;
        loop {
            let i = self.next.fetch_add(1, Ordering::Relaxed);
            let Some(&pool_index) = self.order.get(i) else {
                break;
            };
            let planned = self.pace.map(|(start, gap)| start + gap * i as u32);
            if past_the_end(planned, Instant::now(), self.deadline) {
                break;
            }
            let conn = match sender.take() {
                Some(conn) => conn,
                None => match tokio::time::timeout(self.timeout, connect(self.addr)).await {
                    Ok(Ok(conn)) => conn,
                    Ok(Err(e)) => {
                        // No server to talk to: this connection stops, the run ends.
                        stats.sent += 1;
                        stats.error(format!("connect: {e}"));
                        break;
                    }
                    Err(_) => {
                        stats.sent += 1;
                        stats.error("connect: timed out".into());
                        break;
                    }
                },
            };
            let delivery = &self.plan.pool[pool_index as usize];
            stats.sent += 1;
            if (pool_index as usize) < self.plan.seed_len {
                stats.sent_duplicates += 1;
            }
            let started = match planned {
                Some(planned) => {
                    tokio::time::sleep_until(planned.into()).await;
                    planned
                }
                None => Instant::now(),
            };
            let outcome = tokio::time::timeout(self.timeout, send(conn, delivery, self.addr)).await;
            match outcome {
                Ok(Ok((status, conn))) => {
                    let answered = Instant::now();
                    if self.record_accepted && status == StatusCode::ACCEPTED {
                        stats.accepted.push((pool_index, answered));
                    }
                    let us = answered.duration_since(started).as_micros() as u64;
                    stats.latency.saturating_record(us.clamp(1, MAX_LATENCY_US));
                    *stats.statuses.entry(status.as_u16()).or_default() += 1;
                    sender = Some(conn);
                }
                Ok(Err(e)) => stats.error(e),
                Err(_) => stats.error("timed out".into()),
            }
            self.done.fetch_add(1, Ordering::Relaxed);
        }
        stats
    }
}

/// Whether a request is past the end of a run with `deadline`: paced, when
/// its `planned` instant is, so a request planned inside the run is sent
/// however late its connection gets to it and a slow answer is counted,
/// never skipped; as fast as answered, when the time is up at `now`.
fn past_the_end(planned: Option<Instant>, now: Instant, deadline: Option<Instant>) -> bool {
    deadline.is_some_and(|deadline| planned.unwrap_or(now) >= deadline)
}

/// Opens one keep-alive HTTP/1.1 connection.
pub async fn connect(addr: SocketAddr) -> Result<SendRequest<Full<Bytes>>, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    stream.set_nodelay(true).map_err(|e| e.to_string())?;
    let (sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        // Ends when the sender is dropped or the server hangs up.
        let _ = conn.await;
    });
    Ok(sender)
}

async fn send(
    mut conn: SendRequest<Full<Bytes>>,
    delivery: &crate::plan::Delivery,
    addr: SocketAddr,
) -> Result<(StatusCode, SendRequest<Full<Bytes>>), String> {
    conn.ready().await.map_err(|e| format!("http: {e}"))?;
    let mut request = Request::builder()
        .method(Method::POST)
        .uri(delivery.path.as_str())
        .header(hyper::header::HOST, addr.to_string())
        .body(Full::new(delivery.body.clone()))
        .map_err(|e| format!("request: {e}"))?;
    request.headers_mut().extend(delivery.headers.clone());
    let response = conn
        .send_request(request)
        .await
        .map_err(|e| format!("http: {e}"))?;
    let status = response.status();
    response
        .into_body()
        .collect()
        .await
        .map_err(|e| format!("http body: {e}"))?;
    Ok((status, conn))
}

/// GETs `path` on a fresh connection and returns the status.
pub async fn get_status(addr: SocketAddr, path: &str) -> Result<StatusCode, String> {
    let stream = TcpStream::connect(addr).await.map_err(|e| e.to_string())?;
    let (mut sender, conn) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| e.to_string())?;
    tokio::spawn(async move {
        let _ = conn.await;
    });
    let request = Request::builder()
        .uri(path)
        .header(hyper::header::HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .map_err(|e| e.to_string())?;
    let response = sender
        .send_request(request)
        .await
        .map_err(|e| e.to_string())?;
    Ok(response.status())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_paced_request_planned_inside_the_run_is_sent_however_late() {
        let start = Instant::now();
        let deadline = Some(start + Duration::from_secs(1));
        let late = start + Duration::from_secs(2);
        let planned = |ms| Some(start + Duration::from_millis(ms));
        assert!(!past_the_end(planned(995), late, deadline));
        assert!(past_the_end(planned(1_000), start, deadline));
        assert!(
            past_the_end(None, late, deadline),
            "unpaced: the time is up"
        );
        assert!(!past_the_end(None, start, deadline));
        assert!(!past_the_end(planned(5_000), late, None), "no deadline");
    }
}
