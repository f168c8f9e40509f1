//! A replay survives `kill -9`: against the real `hookd` binary on sled,
//! killed at random moments while it replays, and on PostgreSQL, the
//! replica running it killed and another taking it over. Every event of
//! the window ends up with exactly one delivery on the route, made in
//! accept order, and reaches the route's sink; the dry run counted them
//! all. Knobs (environment): `HOOKD_REPLAY_EVENTS` (sled, default 3,000;
//! 50,000 for the full run), `HOOKD_REPLAY_KILLS` (default 3),
//! `HOOKD_REPLAY_SEED`.

use std::{
    collections::HashSet,
    path::Path,
    time::{Duration, Instant},
};

use futures_util::future::join_all;
use hookd_sdk::client::{
    proto::{ListDeliveriesRequest, ReplayState, ReplayToRouteRequest},
    HookdClient,
};
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, ADMIN_TOKEN, DEST_SECRET},
    postgres::{Cluster, MASTER_KEY},
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

fn knob(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// acme pulling its own deliveries (nothing forwarded on `default`), and,
/// once `crm` is given, a route `crm` forwarding to it.
fn tenants(crm: Option<&str>) -> String {
    let mut toml = String::from(
        "[[tenants]]\nid = \"acme\"\nscheme = \"standard\"\n[[tenants.secrets]]\nkid = \"k2\"\n\
         secret = \"whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=\"\n",
    );
    if let Some(url) = crm {
        toml += &format!(
            "[[tenants.routes]]\nname = \"crm\"\nmax_in_flight = 32\n\
             [tenants.routes.destination]\nurl = \"{url}\"\nsecret = \"{DEST_SECRET}\"\n"
        );
    }
    toml
}

/// Posts events `evt_0 .. evt_{n-1}` to acme at `base`, 100 at a time.
async fn store(base: &str, n: usize) {
    let client = reqwest::Client::new();
    let numbers: Vec<usize> = (0..n).collect();
    for chunk in numbers.chunks(100) {
        let posts = chunk.iter().map(|i| {
            let event = format!("evt_{i}");
            let body = order(&event);
            let mut request = client.post(format!("{base}/hooks/acme"));
            for (name, value) in signed(&event, now_secs(), &body) {
                request = request.header(name, value);
            }
            async move { request.body(body).send().await.unwrap().status() }
        });
        for status in join_all(posts).await {
            assert_eq!(status, StatusCode::ACCEPTED);
        }
    }
}

/// The event ids of `route`'s deliveries, oldest first.
async fn events_on(admin: &HookdClient, route: &str) -> Vec<String> {
    let mut listed = Vec::new();
    let mut token = String::new();
    loop {
        let page = admin
            .list_deliveries(ListDeliveriesRequest {
                tenant_id: "acme".into(),
                route: route.into(),
                page_size: 1000,
                page_token: token,
                ..Default::default()
            })
            .await
            .unwrap();
        listed.extend(page.deliveries.into_iter().map(|d| d.event_id));
        if page.next_page_token.is_empty() {
            listed.reverse();
            return listed;
        }
        token = page.next_page_token;
    }
}

fn replay(since_ms: i64, rate: u32, dry_run: bool) -> ReplayToRouteRequest {
    ReplayToRouteRequest {
        tenant_id: "acme".into(),
        route: "crm".into(),
        since_unix_ms: since_ms,
        rate_per_second: rate,
        dry_run,
        ..Default::default()
    }
}

/// Waits (bounded) until replay `id` is done; its `replayed`.
async fn until_done(admin: &HookdClient, id: &str, limit: Duration) -> u64 {
    let deadline = Instant::now() + limit;
    loop {
        if let Ok(r) = admin.get_replay("acme", id).await {
            if r.state() == ReplayState::Done {
                return r.replayed;
            }
            assert!(Instant::now() < deadline, "not done in {limit:?}: {r:?}");
        }
        assert!(Instant::now() < deadline, "no answer in {limit:?}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Every event of acme's `default` route has exactly one delivery on
/// `crm`, made in the same order, and reached `sink`.
async fn exactly_once_in_order(admin: &HookdClient, sink: &Receiver, n: usize) {
    let accepted = events_on(admin, "default").await;
    assert_eq!(accepted.len(), n);
    let replayed = events_on(admin, "crm").await;
    let distinct: HashSet<&String> = replayed.iter().collect();
    assert_eq!(
        (replayed.len(), distinct.len()),
        (n, n),
        "one delivery on crm for each event"
    );
    if let Some(at) = (0..n).find(|&i| replayed[i] != accepted[i]) {
        let around = at.saturating_sub(3)..(at + 4).min(n);
        panic!(
            "crm's deliveries were not made in accept order: from #{at}, accepted {:?}, made {:?}",
            &accepted[around.clone()],
            &replayed[around]
        );
    }
    let deadline = Instant::now() + Duration::from_secs(120);
    loop {
        let seen: HashSet<String> = sink
            .received()
            .iter()
            .filter_map(|r| r.header("webhook-id").map(str::to_owned))
            .collect();
        if seen.len() == n {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "{} of {n} events reached crm's sink",
            seen.len()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn spawn(data: &Path, config: &Path) -> HookdProcess {
    tokio::task::block_in_place(|| {
        HookdProcess::spawn(data, config, &[("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)])
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_killed_at_random_moments_makes_each_delivery_once_in_accept_order() {
    let n = knob("HOOKD_REPLAY_EVENTS", 3_000) as usize;
    let kills = knob("HOOKD_REPLAY_KILLS", 3);
    let mut seed = knob("HOOKD_REPLAY_SEED", now_secs() as u64 | 1);
    println!("replay under kill -9: {n} events, {kills} kills, seed {seed}");
    let sink = Receiver::start(Reply::Status(200)).await;
    let dir = tempfile::tempdir().unwrap();
    let (config, data) = (dir.path().join("hookd.toml"), dir.path().join("data"));
    std::fs::write(&config, tenants(None)).unwrap();
    let since_ms = now_secs() * 1000 - 1_000;
    let mut hookd = spawn(&data, &config);
    store(&hookd.base, n).await;
    assert!(hookd.terminate().success());

    // The route is added; its history is replayed into it.
    std::fs::write(&config, tenants(Some(&sink.url))).unwrap();
    hookd = spawn(&data, &config);
    let admin = hookd.admin().await;
    let rate = 5_000;
    let counted = admin
        .replay_to_route(replay(since_ms, rate, true))
        .await
        .unwrap()
        .count;
    assert_eq!(counted, n as u64, "the dry run counts every event");
    let id = admin
        .replay_to_route(replay(since_ms, rate, false))
        .await
        .unwrap()
        .replay
        .unwrap()
        .id;
    let started = Instant::now();
    for _ in 0..kills {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        tokio::time::sleep(Duration::from_millis(150 + seed % 900)).await;
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
        hookd = spawn(&data, &config);
    }
    let admin = hookd.admin().await;
    let replayed = until_done(&admin, &id, Duration::from_secs(300)).await;
    println!(
        "replay of {n} events done {:.1} s after it was ordered, {kills} kills",
        started.elapsed().as_secs_f64()
    );
    assert_eq!(replayed, n as u64, "its count matches what it made");
    exactly_once_in_order(&admin, &sink, n).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replay_carries_on_at_another_replica_after_kill_9() {
    const EVENTS: usize = 2_000;
    let sink = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::with_tenants("replay_takeover", &tenants(None)) else {
        return;
    };
    let since_ms = now_secs() * 1000 - 1_000;
    let mut first = cluster.start(0, MASTER_KEY);
    store(&first.base, EVENTS).await;
    assert!(first.terminate().success());

    cluster.set_tenants(&tenants(Some(&sink.url)));
    // Replica 0 starts alone and takes crm's lease; replica 1 waits.
    let mut holder = cluster.start(0, MASTER_KEY);
    let mut admin = holder.admin().await;
    let held = Instant::now() + Duration::from_secs(10);
    while !holder.logs().contains("forwarding lease taken") {
        assert!(Instant::now() < held, "{}", holder.logs());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let other = cluster.start(1, MASTER_KEY);
    let other_admin = other.admin().await;
    let counted = admin
        .replay_to_route(replay(since_ms, 500, true))
        .await
        .unwrap()
        .count;
    assert_eq!(counted, EVENTS as u64);
    // Ordered on the replica without the lease: the holder runs it.
    let id = other_admin
        .replay_to_route(replay(since_ms, 500, false))
        .await
        .unwrap()
        .replay
        .unwrap()
        .id;
    let under_way = Instant::now() + Duration::from_secs(20);
    loop {
        let r = admin.get_replay("acme", &id).await.unwrap();
        if r.replayed > 0 {
            assert!(r.replayed < EVENTS as u64, "killed too late: {r:?}");
            break;
        }
        assert!(
            Instant::now() < under_way,
            "the replay did not start: {r:?}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    holder.child.kill().unwrap();
    holder.child.wait().unwrap();
    admin = other_admin;
    let replayed = until_done(&admin, &id, Duration::from_secs(60)).await;
    assert_eq!(replayed, EVENTS as u64);
    exactly_once_in_order(&admin, &sink, EVENTS).await;
    drop(other);
}
