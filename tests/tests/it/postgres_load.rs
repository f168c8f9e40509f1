//! Load across three real `hookd` replicas on one PostgreSQL database: 30
//! tenants, a few hundred events spread over every replica (some sent to
//! two at once), a tenant created on replica 1 used on replica 3, and
//! `kill -9` of a replica under load. Every event is accepted once, every
//! accepted event reaches the sink once (a second copy only for an attempt
//! in flight at the kill), and the dead replica's tenants are forwarded by
//! the others within the lease.

use std::{
    collections::{HashMap, HashSet},
    sync::atomic::{AtomicUsize, Ordering},
    time::{Duration, Instant},
};

use futures_util::{stream, StreamExt};
use hookd_sdk::{
    client::{proto::CreateTenantRequest, HookdClient},
    signature::{sign, Scheme, Secret},
};
use nix::{sys::signal, unistd::Pid};
use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::{now_secs, order, tenant, ADMIN_TOKEN},
    postgres::{post_to, within, Cluster, LEASE_SECS, MASTER_KEY},
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

/// Tenants in the config file: `t00` … `t29`.
const TENANTS: usize = 30;
/// Events sent before the kill, and as many while it happens.
const EVENTS: usize = 150;
/// Requests in flight at once.
const CONCURRENCY: usize = 24;
/// Forwards in flight at once per tenant (the default `max_in_flight`).
const MAX_IN_FLIGHT: usize = 8;

fn tenant_of(n: usize) -> String {
    format!("t{:02}", n % TENANTS)
}

/// How many times the sink got each event id.
pub(crate) fn forwarded(sink: &Receiver) -> HashMap<String, usize> {
    let mut counts = HashMap::new();
    for received in sink.received() {
        let body: Value = serde_json::from_slice(&received.body).unwrap();
        let id = body["event_id"].as_str().unwrap().to_owned();
        *counts.entry(id).or_default() += 1;
    }
    counts
}

/// The tenants whose forwarding lease the replica with `logs` took.
fn leased(logs: &str) -> HashSet<String> {
    logs.lines()
        .filter(|line| line.contains("forwarding lease taken"))
        .filter_map(|line| line.split("tenant=").nth(1))
        .filter_map(|rest| rest.split_whitespace().next())
        .map(|id| id.trim_matches('"').to_owned())
        .collect()
}

/// Sends event `n` to replica `n % 3`, and every fifth also to the next
/// replica at the same moment: one answer is 202, the others 200
/// duplicates naming the first delivery id.
async fn accepted_once(replicas: &[HookdProcess], n: usize) {
    let (tenant, event) = (tenant_of(n), format!("evt_{n}"));
    let mut targets = vec![n % 3];
    if n.is_multiple_of(5) {
        targets.push((n + 1) % 3);
    }
    let answers = futures_util::future::join_all(
        targets
            .iter()
            .map(|&r| post_to(&replicas[r].base, &tenant, &event)),
    )
    .await;
    let answers: Vec<(StatusCode, Value)> = answers.into_iter().map(Result::unwrap).collect();
    let fresh: Vec<&Value> = answers
        .iter()
        .filter(|(status, _)| *status == StatusCode::ACCEPTED)
        .map(|(_, body)| body)
        .collect();
    assert_eq!(fresh.len(), 1, "{event}: exactly one 202: {answers:?}");
    for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
        assert_eq!(*status, StatusCode::OK, "{event}: {body}");
        assert_eq!(body["delivery_id"], fresh[0]["delivery_id"], "{event}");
    }
}

/// Sends event `n` to replica `n % 3`; when no answer comes (that replica
/// was killed), sends it again to `fallback`, as a sender would. It must be
/// accepted: 202, or a 200 duplicate of a copy the dead replica committed
/// without answering.
async fn sent_through_kill(replicas: &[HookdProcess], n: usize, fallback: usize) {
    let (tenant, event) = (tenant_of(n), format!("evt_{n}"));
    let first = post_to(&replicas[n % 3].base, &tenant, &event).await;
    let (status, body) = match first {
        Ok(answer) => answer,
        Err(_) => post_to(&replicas[fallback].base, &tenant, &event)
            .await
            .unwrap(),
    };
    assert!(
        status == StatusCode::ACCEPTED || status == StatusCode::OK,
        "{event}: {status} {body}"
    );
}

/// Creates tenant `fresh` through `on`; returns its signing key.
async fn create_fresh(on: &HookdProcess, sink: &str) -> Secret {
    let admin = HookdClient::connect(on.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "fresh".into(),
            destination_url: sink.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap()
}

/// Posts `event` to tenant `fresh` on `base`, signed with `key`.
async fn post_fresh(base: &str, key: &Secret, event: &str) -> StatusCode {
    let body = order(event);
    let mut request = reqwest::Client::new().post(format!("{base}/hooks/fresh"));
    for (name, value) in sign(Scheme::Standard, key, event, now_secs(), &body) {
        request = request.header(name, value);
    }
    request.body(body).send().await.unwrap().status()
}

/// Creates tenant `fresh` on replica 1 and sends it an event through
/// replica 3 until replica 3 serves it.
async fn fresh_across_replicas(replicas: &[HookdProcess], sink: &str) {
    let key = create_fresh(&replicas[0], sink).await;
    let deadline = Instant::now() + Duration::from_secs(5);
    while post_fresh(&replicas[2].base, &key, "fresh_1").await != StatusCode::ACCEPTED {
        assert!(Instant::now() < deadline, "replica 3 never served fresh");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// The tenants whose forwarding lease a replica other than `victim` took.
fn taken_by_survivors(replicas: &[HookdProcess], victim: usize) -> HashSet<String> {
    (0..replicas.len())
        .filter(|&r| r != victim)
        .flat_map(|r| leased(&replicas[r].logs()))
        .collect()
}

/// Sends events `EVENTS..2 * EVENTS` over all replicas and `kill -9`s
/// `victim` once a quarter of them were answered; the survivors must take
/// its tenants (`dead`) over within the lease (and the second a replica
/// waits between claims), under that load. Returns when it died.
async fn load_through_kill(
    replicas: &[HookdProcess],
    victim: usize,
    dead: &HashSet<String>,
) -> Instant {
    let answered = AtomicUsize::new(0);
    let pid = Pid::from_raw(replicas[victim].child.id() as i32);
    let load = stream::iter(EVENTS..2 * EVENTS).for_each_concurrent(CONCURRENCY, |n| {
        let answered = &answered;
        async move {
            sent_through_kill(replicas, n, (victim + 1) % 3).await;
            answered.fetch_add(1, Ordering::SeqCst);
        }
    });
    let kill = async {
        within(Duration::from_secs(30), "the load to get going", || {
            answered.load(Ordering::SeqCst) >= EVENTS / 4
        })
        .await;
        signal::kill(pid, signal::Signal::SIGKILL).unwrap();
        let killed = Instant::now();
        let lease = Duration::from_secs(LEASE_SECS + 2);
        within(lease, "the dead replica's tenants taken over", || {
            taken_by_survivors(replicas, victim).is_superset(dead)
        })
        .await;
        eprintln!(
            "its tenants taken over {:?} after the kill",
            killed.elapsed()
        );
        killed
    };
    let ((), killed) = tokio::join!(load, kill);
    killed
}

/// Each of `expected` reached the sink once; a second copy only of an
/// event of a tenant the dead replica forwarded (an attempt in flight or
/// not yet recorded at the kill), at most 2 × `max_in_flight` per such
/// tenant (docs/durability.md).
fn forwarded_once(sink: &Receiver, expected: &HashSet<String>, dead: &HashSet<String>) {
    let counts = forwarded(sink);
    assert_eq!(
        counts.len(),
        expected.len(),
        "an unknown event was forwarded"
    );
    let twice: Vec<(&String, &usize)> = counts.iter().filter(|(_, c)| **c > 1).collect();
    assert!(
        twice.len() <= dead.len() * 2 * MAX_IN_FLIGHT,
        "forwarded more than once: {twice:?}"
    );
    for (id, count) in &twice {
        let tenant = match id.strip_prefix("evt_") {
            Some(n) => tenant_of(n.parse().unwrap()),
            None => "fresh".to_owned(),
        };
        assert!(
            **count == 2 && dead.contains(&tenant),
            "{id} forwarded {count} times (tenant {tenant})"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thirty_tenants_on_three_replicas_survive_kill_9_under_load() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let tenants: String = (0..TENANTS)
        .map(|n| tenant(&tenant_of(n), &sink.url, "", "", ""))
        .collect();
    let Some(cluster) = Cluster::with_tenants("load", &tenants) else {
        return;
    };
    let replicas: Vec<HookdProcess> = (0..3).map(|n| cluster.start(n, MASTER_KEY)).collect();
    fresh_across_replicas(&replicas, &sink.url).await;
    let started = Instant::now();
    stream::iter(0..EVENTS)
        .for_each_concurrent(CONCURRENCY, |n| accepted_once(&replicas, n))
        .await;
    eprintln!(
        "{EVENTS} events on three replicas in {:?}",
        started.elapsed()
    );

    // The replica forwarding the most tenants dies under load.
    let held: Vec<HashSet<String>> = replicas.iter().map(|r| leased(&r.logs())).collect();
    let victim = (0..3).max_by_key(|&r| held[r].len()).unwrap();
    assert!(!held[victim].is_empty(), "no replica forwards: {held:?}");
    let killed = load_through_kill(&replicas, victim, &held[victim]).await;

    // Every accepted event reaches the sink, the dead replica's tenants'
    // through the survivors.
    let expected: HashSet<String> = (0..2 * EVENTS)
        .map(|n| format!("evt_{n}"))
        .chain(["fresh_1".to_owned()])
        .collect();
    let limit = Duration::from_secs(LEASE_SECS + 20);
    within(limit, "every event forwarded", || {
        let got = forwarded(&sink);
        expected.iter().all(|id| got.contains_key(id))
    })
    .await;
    eprintln!(
        "every event forwarded {:?} after the kill",
        killed.elapsed()
    );
    forwarded_once(&sink, &expected, &held[victim]);
}
