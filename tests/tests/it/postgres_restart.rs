//! The database restarted under load: two real `hookd` replicas on a
//! PostgreSQL server of the test's own ([`crate::pg_server`]), stopped
//! while events keep arriving (`pg_ctl stop -m fast`, then `-m immediate`:
//! a crash) and started again each time. While it is down every delivery
//! gets 503 `STORAGE_UNAVAILABLE`, never 202, and `/readyz` fails;
//! afterwards everything answered 202 is stored and forwarded, and what got
//! a 503 is accepted when sent again.

use std::{
    collections::HashSet,
    sync::{
        atomic::{AtomicBool, Ordering},
        Mutex,
    },
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::tenant,
    pg_server::PgServer,
    postgres::{post_to, within, Cluster, MASTER_KEY},
    postgres_load::forwarded,
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

/// One delivery sent during the test and its answer.
struct Sent {
    event: String,
    at: Instant,
    answered: Instant,
    status: StatusCode,
    body: Value,
}

/// Whether `/readyz` on `replica` answers 200.
async fn ready(replica: &HookdProcess) -> bool {
    let url = format!("{}/readyz", replica.base);
    reqwest::get(url).await.unwrap().status() == StatusCode::OK
}

/// Polls until every replica's `/readyz` answers 200 (`want`) or not.
async fn readiness(replicas: &[HookdProcess], want: bool, limit: Duration) {
    let deadline = Instant::now() + limit;
    loop {
        let mut all = true;
        for replica in replicas {
            all &= ready(replica).await == want;
        }
        if all {
            return;
        }
        assert!(Instant::now() < deadline, "/readyz never became {want}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Sends fresh events (`{prefix}_{n}`), one after another over the
/// replicas in turn, until `stop` is set; records each answer.
async fn load(replicas: &[HookdProcess], prefix: &str, sent: &Mutex<Vec<Sent>>, stop: &AtomicBool) {
    let mut n = 0;
    while !stop.load(Ordering::SeqCst) {
        let event = format!("{prefix}_{n}");
        let at = Instant::now();
        let (status, body) = post_to(&replicas[n % 2].base, "acme", &event)
            .await
            .unwrap();
        sent.lock().unwrap().push(Sent {
            event,
            at,
            answered: Instant::now(),
            status,
            body,
        });
        n += 1;
    }
}

/// How many answers with `status` came for requests sent after `since`.
fn answers_after(sent: &Mutex<Vec<Sent>>, since: Instant, status: StatusCode) -> usize {
    let sent = sent.lock().unwrap();
    sent.iter()
        .filter(|s| s.at >= since && s.status == status)
        .count()
}

/// Once the load got 20 202s: stops the server (`mode`), waits for
/// `/readyz` to fail and for 503s, starts it again, waits for `/readyz` and
/// 20 more 202s, then stops the load. Returns when the server was down and
/// when it was being started again.
async fn stop_and_resume(
    server: &PgServer,
    replicas: &[HookdProcess],
    mode: &str,
    sent: &Mutex<Vec<Sent>>,
    stop: &AtomicBool,
) -> (Instant, Instant) {
    let began = Instant::now();
    within(Duration::from_secs(10), "load accepted", || {
        answers_after(sent, began, StatusCode::ACCEPTED) >= 20
    })
    .await;
    tokio::task::block_in_place(|| server.stop(mode));
    let stopped = Instant::now();
    readiness(replicas, false, Duration::from_secs(5)).await;
    within(Duration::from_secs(5), "503s while down", || {
        answers_after(sent, stopped, StatusCode::SERVICE_UNAVAILABLE) >= 5
    })
    .await;
    let resumed = Instant::now();
    tokio::task::block_in_place(|| server.resume());
    readiness(replicas, true, Duration::from_secs(20)).await;
    let recovered = Instant::now();
    within(Duration::from_secs(20), "load accepted again", || {
        answers_after(sent, recovered, StatusCode::ACCEPTED) >= 20
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    (stopped, resumed)
}

/// The events answered 202 and those answered 503 `STORAGE_UNAVAILABLE`;
/// no 202 for a request sent after the server was down and answered before
/// it was started again, and no other answer.
fn sort_answers(
    sent: &[Sent],
    stopped: Instant,
    resumed: Instant,
) -> (HashSet<String>, Vec<String>) {
    let mut accepted = HashSet::new();
    let mut refused = Vec::new();
    for s in sent {
        match s.status {
            StatusCode::ACCEPTED => {
                assert!(
                    s.at < stopped || s.answered > resumed,
                    "{} got 202 while the database was down",
                    s.event
                );
                accepted.insert(s.event.clone());
            }
            StatusCode::SERVICE_UNAVAILABLE => {
                assert_eq!(s.body["code"], "STORAGE_UNAVAILABLE", "{}", s.body);
                refused.push(s.event.clone());
            }
            other => panic!("{}: {other} {}", s.event, s.body),
        }
    }
    (accepted, refused)
}

/// Polls until the sink got every one of `accepted`; fails naming those
/// it did not get, with the replicas' logs.
async fn forwarded_all(sink: &Receiver, accepted: &HashSet<String>, replicas: &[HookdProcess]) {
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        let got = forwarded(sink);
        let mut missing: Vec<&String> = accepted
            .iter()
            .filter(|id| !got.contains_key(*id))
            .collect();
        if missing.is_empty() {
            return;
        }
        missing.sort();
        assert!(
            Instant::now() < deadline,
            "accepted but never forwarded: {missing:?}\n{}\n{}",
            replicas[0].logs(),
            replicas[1].logs()
        );
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

/// One stop and start of the server in `mode` under load; returns the
/// events accepted, those refused while it was down sent again.
async fn round(server: &PgServer, replicas: &[HookdProcess], mode: &str) -> HashSet<String> {
    let (sent, stop) = (Mutex::new(Vec::new()), AtomicBool::new(false));
    let ((), (stopped, resumed)) = tokio::join!(
        load(replicas, mode, &sent, &stop),
        stop_and_resume(server, replicas, mode, &sent, &stop)
    );
    let (mut accepted, refused) = sort_answers(&sent.into_inner().unwrap(), stopped, resumed);
    eprintln!(
        "stop -m {mode}: {} accepted, {} refused while down",
        accepted.len(),
        refused.len()
    );
    // A refused event is accepted when sent again (a 200 duplicate only for
    // one committed as the database stopped, its answer lost).
    for event in &refused {
        let (status, body) = post_to(&replicas[0].base, "acme", event).await.unwrap();
        assert!(
            status == StatusCode::ACCEPTED || status == StatusCode::OK,
            "{event}: {status} {body}"
        );
        accepted.insert(event.clone());
    }
    accepted
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_database_restarted_under_load_gives_503_then_recovers_losing_nothing() {
    let Some(server) = PgServer::start("restart") else {
        return;
    };
    let sink = Receiver::start(Reply::Status(200)).await;
    let cluster = Cluster::on(server.url(), &tenant("acme", &sink.url, "", "", ""), None);
    let replicas = [cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY)];
    let test_start = Instant::now();
    let mut accepted = round(&server, &replicas, "fast").await;
    accepted.extend(round(&server, &replicas, "immediate").await);
    forwarded_all(&sink, &accepted, &replicas).await;
    // A second copy only for an attempt in flight at a stop (at most
    // `max_in_flight`, 8, each time).
    let counts = forwarded(&sink);
    let twice: Vec<_> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(
        twice.iter().all(|(_, c)| **c == 2) && twice.len() <= 16,
        "forwarded more than once beyond the attempts in flight at the stops: {twice:?}"
    );
    let took = test_start.elapsed();
    eprintln!("two restarts under load in {took:?}");
    assert!(took < Duration::from_secs(60), "took {took:?}");
}
