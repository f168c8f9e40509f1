//! Crash campaign against the real `hookd` binary: a steady load of signed
//! deliveries (about one in ten a re-send of an event already answered) to
//! a tenant with three routes, each forwarding to a live sink of its own,
//! while hookd is killed with SIGKILL at random moments and restarted on the
//! same data dir. Afterwards every event that got a 2xx is stored (a re-send
//! answers `200 duplicate` with the same delivery id) and reached the sink
//! of every route, and no event got two 202s.
//!
//! The short run in `cargo test` takes about 15 s; `scripts/crash-campaign.sh`
//! runs a long one. Knobs (environment): `HOOKD_CRASH_SECS` (load duration,
//! default 8), `HOOKD_CRASH_KILLS` (default 10), `HOOKD_CRASH_SEED`.

use std::{
    collections::HashMap,
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc, Mutex, RwLock,
    },
    time::{Duration, Instant},
};

use futures_util::future::join_all;
use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::tenant,
    harness::{now_secs, order, signed, DEST_SECRET},
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

/// Concurrent senders.
const SENDERS: u64 = 4;
/// Attempts in flight per route (`max_in_flight` default).
const MAX_IN_FLIGHT: usize = 8;
/// The campaign tenant's routes, each forwarding to a sink of its own.
const ROUTES: [&str; 3] = ["default", "audit", "crm"];

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// A small xorshift generator: the campaign prints its seed to be replayed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// What the senders were told.
#[derive(Default)]
struct Ledger {
    /// event id -> delivery id of its 202.
    accepted: HashMap<String, String>,
    /// event id -> delivery id of any 2xx.
    acknowledged: HashMap<String, String>,
    /// Broken promises, in words.
    violations: Vec<String>,
    /// 202 answers, 200 duplicate answers, unanswered attempts (kill,
    /// refused, 5xx).
    fresh: u64,
    duplicates: u64,
    unanswered: u64,
}

impl Ledger {
    fn record(&mut self, event_id: &str, status: StatusCode, delivery_id: &str) {
        if let Some(known) = self.acknowledged.get(event_id) {
            if known != delivery_id {
                self.violations.push(format!(
                    "{event_id}: answered {status} with {delivery_id}, earlier with {known}"
                ));
            }
        }
        if status == StatusCode::ACCEPTED {
            self.fresh += 1;
            if let Some(first) = self.accepted.insert(event_id.into(), delivery_id.into()) {
                self.violations
                    .push(format!("{event_id}: two 202s ({first}, {delivery_id})"));
            }
        } else {
            self.duplicates += 1;
        }
        self.acknowledged
            .insert(event_id.into(), delivery_id.into());
    }
}

/// POSTs one signed event to acme at `base`; `None` when unanswered.
async fn post(client: &reqwest::Client, base: &str, event_id: &str) -> Option<(StatusCode, Value)> {
    let body = order(event_id);
    let mut request = client.post(format!("{base}/hooks/acme"));
    for (name, value) in signed(event_id, now_secs(), &body) {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await.ok()?;
    let status = response.status();
    let answer = response.json().await.ok()?;
    status.is_success().then_some((status, answer))
}

/// One sender: new events, about one in ten a re-send of an answered one;
/// an unanswered event is sent again until it is answered, like a real
/// sender would.
async fn sender(
    n: u64,
    base: Arc<RwLock<String>>,
    ledger: Arc<Mutex<Ledger>>,
    stop: Arc<AtomicBool>,
    seed: u64,
) {
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let mut rng = Rng(seed ^ (n + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15));
    let mut next = 0u64;
    let mut pending: Option<String> = None;
    while !stop.load(Ordering::Relaxed) {
        let event_id = match pending.take() {
            Some(id) => id,
            None => {
                let resend = rng.below(10) == 0;
                let known: Vec<String> = if resend {
                    let l = ledger.lock().unwrap();
                    l.acknowledged.keys().take(64).cloned().collect()
                } else {
                    Vec::new()
                };
                if known.is_empty() {
                    next += 1;
                    format!("evt_{n}_{next}")
                } else {
                    known[rng.below(known.len() as u64) as usize].clone()
                }
            }
        };
        let at = base.read().unwrap().clone();
        match post(&client, &at, &event_id).await {
            Some((status, answer)) => {
                let delivery_id = answer["delivery_id"].as_str().unwrap_or_default();
                ledger
                    .lock()
                    .unwrap()
                    .record(&event_id, status, delivery_id);
                // A steady load, not a flood.
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
            None => {
                ledger.lock().unwrap().unanswered += 1;
                pending = Some(event_id);
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    }
}

fn spawn_hookd(data: &std::path::Path, config: &std::path::Path) -> HookdProcess {
    tokio::task::block_in_place(|| HookdProcess::spawn(data, config, &[]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_campaign_loses_no_acknowledged_event() {
    let secs = knob("HOOKD_CRASH_SECS", 8);
    let kills = knob("HOOKD_CRASH_KILLS", 10);
    let seed = knob("HOOKD_CRASH_SEED", now_secs() as u64 | 1);
    println!("crash campaign: {secs} s of load, {kills} kills, seed {seed}");
    let mut sinks = Vec::new();
    for _ in ROUTES {
        sinks.push(Receiver::start(Reply::Status(200)).await);
    }
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    let retry = "schedule_secs = [0.1]\nwindow_secs = 3600\n[tenants.breaker]\ncooldown_secs = 0.2";
    let mut toml = tenant("acme", &sinks[0].url, "", "", retry);
    for (route, sink) in ROUTES.iter().zip(&sinks).skip(1) {
        toml += &format!(
            "[[tenants.routes]]\nname = \"{route}\"\n[tenants.routes.destination]\nurl = \"{}\"\n\
             secret = \"{DEST_SECRET}\"\n[tenants.routes.retry]\nschedule_secs = [0.1]\n\
             window_secs = 3600\n[tenants.routes.breaker]\ncooldown_secs = 0.2\n",
            sink.url
        );
    }
    std::fs::write(&config, toml).unwrap();
    let data = dir.path().join("data");

    let mut hookd = spawn_hookd(&data, &config);
    let base = Arc::new(RwLock::new(hookd.base.clone()));
    let ledger = Arc::new(Mutex::new(Ledger::default()));
    let stop = Arc::new(AtomicBool::new(false));
    let senders: Vec<_> = (0..SENDERS)
        .map(|n| tokio::spawn(sender(n, base.clone(), ledger.clone(), stop.clone(), seed)))
        .collect();

    let mut rng = Rng(seed);
    let spacing_ms = secs * 1000 / kills.max(1);
    let restarts = AtomicU64::new(0);
    let started = Instant::now();
    for _ in 0..kills {
        // Kill at a random moment: 20 % to 180 % of the mean spacing.
        let wait = spacing_ms / 5 + rng.below(spacing_ms * 8 / 5);
        tokio::time::sleep(Duration::from_millis(wait)).await;
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
        hookd = spawn_hookd(&data, &config);
        *base.write().unwrap() = hookd.base.clone();
        restarts.fetch_add(1, Ordering::Relaxed);
    }
    stop.store(true, Ordering::Relaxed);
    for s in senders {
        s.await.unwrap();
    }
    let load_secs = started.elapsed().as_secs_f64();

    let ledger = std::mem::take(&mut *ledger.lock().unwrap());
    assert!(ledger.violations.is_empty(), "{:#?}", ledger.violations);
    assert!(
        ledger.acknowledged.len() > 50,
        "too little load to prove anything: {}",
        ledger.acknowledged.len()
    );

    // Every acknowledged event is stored: a re-send is a duplicate of the
    // same delivery.
    let client = reqwest::Client::new();
    let events: Vec<(&String, &String)> = ledger.acknowledged.iter().collect();
    for chunk in events.chunks(32) {
        let answers = join_all(
            chunk
                .iter()
                .map(|(event_id, _)| post(&client, &hookd.base, event_id)),
        )
        .await;
        for ((event_id, delivery_id), answer) in chunk.iter().zip(answers) {
            let (status, answer) = answer.unwrap_or_else(|| panic!("{event_id}: no answer"));
            assert_eq!(status, StatusCode::OK, "{event_id} was lost: {answer}");
            assert_eq!(answer["duplicate"], true, "{event_id}: {answer}");
            assert_eq!(answer["delivery_id"], delivery_id.as_str(), "{event_id}");
        }
    }

    // ...and reaches the sink of every route.
    let deadline = Instant::now() + Duration::from_secs(20 + secs);
    let (mut twice, mut requests) = (0, 0);
    for (route, sink) in ROUTES.iter().zip(&sinks) {
        let seen = loop {
            let mut seen: HashMap<String, usize> = HashMap::new();
            for r in sink.received() {
                *seen
                    .entry(r.header("webhook-id").unwrap_or_default().to_owned())
                    .or_default() += 1;
            }
            let missing = events
                .iter()
                .filter(|(e, _)| !seen.contains_key(*e))
                .count();
            if missing == 0 {
                break seen;
            }
            assert!(
                Instant::now() < deadline,
                "{missing} acknowledged events never reached route {route}'s sink"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        let route_twice = seen.values().filter(|&&n| n > 1).count();
        // In flight, and as many finished and not yet recorded
        // (docs/durability.md).
        let bound = kills as usize * 2 * MAX_IN_FLIGHT;
        assert!(
            route_twice <= bound,
            "route {route}: {route_twice} events forwarded twice; at most 2 × {MAX_IN_FLIGHT} attempts are sent and not yet recorded at each of {kills} kills"
        );
        twice += route_twice;
        requests += seen.values().sum::<usize>();
    }
    println!(
        "crash campaign tally: {load_secs:.1} s, {} kills, {} events acknowledged \
         ({} answered 202, {} answered 200 duplicate, {} unanswered attempts retried), \
         {} routes, {requests} requests at their sinks, {twice} (event, route) pairs seen twice \
         or more, 0 lost, 0 double 202",
        restarts.load(Ordering::Relaxed),
        ledger.acknowledged.len(),
        ledger.fresh,
        ledger.duplicates,
        ledger.unanswered,
        ROUTES.len(),
    );
}

/// Waits (bounded) until `hookd` logged `n` forwards as delivered.
fn wait_for_delivered(hookd: &HookdProcess, n: usize) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while hookd.logs().matches(" forward delivered").count() < n {
        assert!(
            Instant::now() < deadline,
            "fewer than {n} forwards delivered:\n{}",
            hookd.logs()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forward_logged_as_delivered_is_not_sent_again_after_sigkill() {
    const ROUNDS: usize = 4;
    const EVENTS: usize = 10;
    let sink = Receiver::start(Reply::Status(200)).await;
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    let toml = tenant("acme", &sink.url, "max_in_flight = 1", "", "");
    std::fs::write(&config, toml).unwrap();
    let data = dir.path().join("data");
    let client = reqwest::Client::new();
    for round in 0..ROUNDS {
        let mut hookd = spawn_hookd(&data, &config);
        for i in 0..EVENTS {
            let answer = post(&client, &hookd.base, &format!("evt_{round}_{i}")).await;
            assert_eq!(answer.map(|a| a.0), Some(StatusCode::ACCEPTED));
        }
        // Killed as soon as the last forward is reported delivered: that
        // outcome must already be on disk.
        tokio::task::block_in_place(|| wait_for_delivered(&hookd, EVENTS));
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
    }
    // One at a time in due order: anything sent again comes before this.
    let hookd = spawn_hookd(&data, &config);
    let answer = post(&client, &hookd.base, "evt_last").await;
    assert_eq!(answer.map(|a| a.0), Some(StatusCode::ACCEPTED));
    let deadline = Instant::now() + Duration::from_secs(20);
    while !sink
        .received()
        .iter()
        .any(|r| r.header("webhook-id") == Some("evt_last"))
    {
        assert!(Instant::now() < deadline, "evt_last never reached the sink");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let mut seen: HashMap<String, usize> = HashMap::new();
    for r in sink.received() {
        *seen
            .entry(r.header("webhook-id").unwrap_or_default().to_owned())
            .or_default() += 1;
    }
    let again: Vec<_> = seen.iter().filter(|(_, &n)| n > 1).collect();
    assert!(
        again.is_empty(),
        "delivered forwards sent again after SIGKILL: {again:?}"
    );
    assert_eq!(seen.len(), ROUNDS * EVENTS + 1);
}
