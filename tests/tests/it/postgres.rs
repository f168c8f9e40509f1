//! Several real `hookd` processes sharing one PostgreSQL database (each test
//! its own database on `HOOKD_TEST_POSTGRES_URL`; skipped without it unless
//! `HOOKD_REQUIRE_POSTGRES=1`): idempotency across replicas, a tenant
//! created on one replica served by another, forwarding taken over after
//! `kill -9`, a contract saved on one replica enforced by another, and a
//! replica with the wrong master key refusing to start.

use std::{
    path::PathBuf,
    process::Command,
    time::{Duration, Instant},
};

use futures_util::future::join_all;
use hookd_sdk::{
    client::{
        proto::{Contract, CreateTenantRequest, DeliveryStatus},
        HookdClient,
    },
    signature::{sign, Scheme, Secret},
};
use hookd_server::testing::{test_database, TestDatabase};
use reqwest::StatusCode;
use serde_json::Value;
use tempfile::TempDir;

use crate::{
    harness::{now_secs, order, signed, tenant, ADMIN_TOKEN},
    process::{hookd_bin, HookdProcess},
    receiver::{Receiver, Reply},
};

/// The master key every replica shares (base64 of 32 bytes).
pub(crate) const MASTER_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";
/// Another key.
const OTHER_KEY: &str = "HxwdHhsaGRgXFhUUExIREA8ODQwLCgkIBwYFBAMCAQA=";
/// The shortest forwarding lease, so a takeover is quick.
pub(crate) const LEASE_SECS: u64 = 3;

/// Replicas of one hookd on one database, each with its own data dir.
pub(crate) struct Cluster {
    dir: TempDir,
    config: PathBuf,
    url: String,
    /// Dropped after the replicas (declared before them in each test).
    _database: Option<TestDatabase>,
}

impl Cluster {
    /// A config on a fresh database, with tenant acme forwarding to `sink`;
    /// `None` when there is no PostgreSQL to test on.
    fn new(case: &str, sink: &str) -> Option<Cluster> {
        Cluster::with_tenants(case, &tenant("acme", sink, "", "", ""))
    }

    /// A config on a fresh database with `tenants` (`[[tenants]]` tables);
    /// `None` when there is no PostgreSQL to test on.
    pub(crate) fn with_tenants(case: &str, tenants: &str) -> Option<Cluster> {
        let database = test_database(&format!("hookd_it_{case}"))?;
        let url = database.url.clone();
        Some(Cluster::on(url, tenants, Some(database)))
    }

    /// A config on the database at `url` with `tenants`.
    pub(crate) fn on(url: String, tenants: &str, database: Option<TestDatabase>) -> Cluster {
        let dir = tempfile::tempdir().unwrap();
        let config = dir.path().join("hookd.toml");
        let cluster = Cluster {
            dir,
            config,
            url,
            _database: database,
        };
        cluster.set_tenants(tenants);
        cluster
    }

    /// Writes the config again with `tenants`: replicas started from now
    /// on run them.
    pub(crate) fn set_tenants(&self, tenants: &str) {
        let url = &self.url;
        let toml = format!(
            "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{url}\"\n\
             forward_lease_secs = {LEASE_SECS}\ncatalog_poll_ms = 100\n\
             [forward]\nallow_networks = [\"127.0.0.1/32\"]\n{tenants}"
        );
        std::fs::write(&self.config, toml).unwrap();
    }

    /// Starts replica `n` with `key` as its master key.
    pub(crate) fn start(&self, n: usize, key: &str) -> HookdProcess {
        let data = self.dir.path().join(format!("replica-{n}"));
        tokio::task::block_in_place(|| spawn_replica(&data, &self.config, key))
    }

    /// Starts replica `n` with `key` as its master key and `env` added.
    pub(crate) fn start_with(&self, n: usize, key: &str, env: &[(&str, &str)]) -> HookdProcess {
        let data = self.dir.path().join(format!("replica-{n}"));
        let mut all = vec![
            ("HOOKD_MASTER_KEY", key),
            ("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN),
        ];
        all.extend_from_slice(env);
        tokio::task::block_in_place(|| HookdProcess::spawn(&data, &self.config, &all))
    }

    /// Starts replica `n` on a thread of its own: the handle gives it back
    /// once it listens.
    pub(crate) fn start_apart(
        &self,
        n: usize,
        key: &'static str,
    ) -> std::thread::JoinHandle<HookdProcess> {
        let (data, config) = (
            self.dir.path().join(format!("replica-{n}")),
            self.config.clone(),
        );
        std::thread::spawn(move || spawn_replica(&data, &config, key))
    }

    /// The database's URL.
    pub(crate) fn url(&self) -> &str {
        &self.url
    }
}

/// A replica on `data` and `config` with `key` as its master key.
fn spawn_replica(data: &std::path::Path, config: &std::path::Path, key: &str) -> HookdProcess {
    HookdProcess::spawn(
        data,
        config,
        &[
            ("HOOKD_MASTER_KEY", key),
            ("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN),
        ],
    )
}

/// POSTs a signed order event to acme on `base`.
async fn post(base: &str, event_id: &str) -> (StatusCode, Value) {
    post_to(base, "acme", event_id).await.unwrap()
}

/// POSTs a signed order event to `tenant` on `base` (every tenant of
/// [`tenant`] has acme's secret); an error when no answer came.
pub(crate) async fn post_to(
    base: &str,
    tenant: &str,
    event_id: &str,
) -> reqwest::Result<(StatusCode, Value)> {
    let body = order(event_id);
    let mut request = reqwest::Client::new().post(format!("{base}/hooks/{tenant}"));
    for (name, value) in signed(event_id, now_secs(), &body) {
        request = request.header(name, value);
    }
    let response = request.body(body).send().await?;
    Ok((response.status(), response.json().await?))
}

/// Polls `check` until it holds, for at most `limit`.
pub(crate) async fn within(limit: Duration, what: &str, mut check: impl FnMut() -> bool) {
    let deadline = Instant::now() + limit;
    while !check() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn the_same_event_sent_to_three_replicas_is_accepted_once() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::new("dedup", &sink.url) else {
        return;
    };
    let replicas: Vec<HookdProcess> = (0..3).map(|n| cluster.start(n, MASTER_KEY)).collect();
    for round in 0..5 {
        let event = format!("evt_same_{round}");
        let answers = join_all(replicas.iter().map(|r| post(&r.base, &event))).await;
        let fresh: Vec<&Value> = answers
            .iter()
            .filter(|(status, _)| *status == StatusCode::ACCEPTED)
            .map(|(_, body)| body)
            .collect();
        assert_eq!(fresh.len(), 1, "exactly one 202: {answers:?}");
        let first = fresh[0]["delivery_id"].as_str().unwrap();
        for (status, body) in answers.iter().filter(|(s, _)| *s != StatusCode::ACCEPTED) {
            assert_eq!(*status, StatusCode::OK, "{body}");
            assert_eq!(body["delivery_id"].as_str(), Some(first), "{body}");
        }
    }
    // Events spread over the replicas reach the sink once each: one
    // replica at a time forwards the tenant.
    for n in 0..15 {
        let (status, body) = post(&replicas[n % 3].base, &format!("evt_spread_{n}")).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let received = sink.wait_for(20, Duration::from_secs(20)).await;
    let mut ids: Vec<String> = received
        .iter()
        .map(|r| r.header("webhook-id").unwrap_or_default().to_owned())
        .collect();
    ids.sort();
    let total = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), total, "an event was forwarded twice: {ids:?}");
    assert_eq!(total, 20);
    for replica in &replicas {
        assert!(replica.logs().contains("storage: postgres"));
        assert!(
            !replica.logs().contains(&cluster.url),
            "the URL is a secret"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_tenant_created_on_one_replica_is_served_by_another() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::new("catalog", &sink.url) else {
        return;
    };
    let (a, b) = (cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY));
    let admin = HookdClient::connect(a.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    let created = admin
        .create_tenant(CreateTenantRequest {
            tenant_id: "orders".into(),
            destination_url: sink.url.clone(),
            ..Default::default()
        })
        .await
        .unwrap();
    let client = reqwest::Client::new();
    let send = |kid: String, secret: String, event: &'static str| {
        let key = Secret::from_provider(Scheme::Standard, &kid, &secret).unwrap();
        let body = order(event);
        let mut request = client.post(format!("{}/hooks/orders", b.base));
        for (name, value) in sign(Scheme::Standard, &key, event, now_secs(), &body) {
            request = request.header(name, value);
        }
        async move { request.body(body).send().await.unwrap().status() }
    };
    let (kid, secret) = (created.kid.clone(), created.secret.clone());
    let deadline = Instant::now() + Duration::from_secs(5);
    loop {
        let status = send(kid.clone(), secret.clone(), "evt_1").await;
        if status == StatusCode::ACCEPTED {
            break;
        }
        assert_eq!(status, StatusCode::NOT_FOUND, "before it is seen");
        assert!(
            Instant::now() < deadline,
            "replica B never served the tenant"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    sink.wait_for(1, Duration::from_secs(10)).await;

    // A secret rotated on A (no overlap) is the one B accepts.
    let rotated = admin.rotate_secret("orders", 0).await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while send(rotated.kid.clone(), rotated.secret.clone(), "evt_2").await != StatusCode::ACCEPTED {
        assert!(
            Instant::now() < deadline,
            "replica B never took the rotated secret"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    // A applied its own changes when it made them, never again from the
    // poll (that would restart the tenant); B applied each from the poll.
    let applied = "tenant changed on another replica: applied here";
    assert!(b.logs().contains(applied), "{}", b.logs());
    assert!(
        !a.logs().contains(applied),
        "A re-applied its own change:\n{}",
        a.logs()
    );

    // A token made on A works on B until A revokes it, then at once not.
    let token = admin.create_token("orders", "ci").await.unwrap();
    let on_b = HookdClient::connect(b.grpc.clone(), &token.token)
        .await
        .unwrap();
    let seen = on_b
        .list_all_deliveries("orders", DeliveryStatus::Unspecified)
        .await
        .unwrap();
    assert_eq!(seen.len(), 2);
    admin.revoke_token(&token.token_id).await.unwrap();
    let refused = on_b
        .list_all_deliveries("orders", DeliveryStatus::Unspecified)
        .await;
    assert!(refused.is_err(), "a revoked token still works on B");

    admin.delete_tenant("orders").await.unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while send(rotated.kid.clone(), rotated.secret.clone(), "evt_3").await != StatusCode::NOT_FOUND
    {
        assert!(
            Instant::now() < deadline,
            "replica B still serves a deleted tenant"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn after_kill_9_of_the_forwarding_replica_another_delivers_within_the_lease() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::new("takeover", &sink.url) else {
        return;
    };
    let mut replicas = vec![cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY)];
    let taken = "forwarding lease taken";
    within(Duration::from_secs(10), "a replica to take acme", || {
        replicas.iter().any(|r| r.logs().contains(taken))
    })
    .await;
    let owner = replicas
        .iter()
        .position(|r| r.logs().contains(taken))
        .unwrap();
    let mut dead = replicas.remove(owner);
    let survivor = &replicas[0];
    assert!(!survivor.logs().contains(taken), "two owners");
    dead.child.kill().unwrap();
    dead.child.wait().unwrap();
    let killed = Instant::now();
    for n in 0..5 {
        let (status, body) = post(&survivor.base, &format!("evt_after_{n}")).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{body}");
    }
    let received = sink.wait_for(5, Duration::from_secs(LEASE_SECS + 10)).await;
    assert_eq!(received.len(), 5);
    let took = killed.elapsed();
    assert!(
        took <= Duration::from_secs(LEASE_SECS + 2),
        "the queued events were delivered {took:?} after the kill (lease {LEASE_SECS} s)"
    );
    assert!(survivor.logs().contains(taken));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replica_with_another_master_key_refuses_to_start() {
    let Some(cluster) = Cluster::new("masterkey", "http://127.0.0.1:9/") else {
        return;
    };
    let first = cluster.start(0, MASTER_KEY);
    let data = cluster.dir.path().join("replica-1");
    let output = tokio::task::block_in_place(|| {
        Command::new(hookd_bin())
            .args(["--data-dir", data.to_str().unwrap()])
            .args(["--config", cluster.config.to_str().unwrap()])
            .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
            .env("HOOKD_MASTER_KEY", OTHER_KEY)
            .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
            .output()
            .unwrap()
    });
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        !output.status.success(),
        "started with the wrong key: {stderr}"
    );
    assert!(
        stderr.contains("HOOKD_MASTER_KEY is not the key this database's secrets were sealed with"),
        "{stderr}"
    );
    assert!(first.logs().contains("listening"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hookd_migrate_applies_the_schema_for_operators() {
    let Some(cluster) = Cluster::new("migrate", "http://127.0.0.1:9/") else {
        return;
    };
    for _ in 0..2 {
        let output = tokio::task::block_in_place(|| {
            Command::new(hookd_bin())
                .args(["migrate", "--config", cluster.config.to_str().unwrap()])
                .env("HOOKD_STORAGE__POSTGRES__URL", &cluster.url)
                .output()
                .unwrap()
        });
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert_eq!(stdout.trim(), "database schema at version 8");
    }
}

/// A contract for `order.paid` wanting `data.amount` as a string, which
/// [`order`] (an integer amount) breaks.
fn amount_as_text() -> Contract {
    Contract {
        r#type: "order.paid".into(),
        version: String::new(),
        schema: r#"{"type":"object","required":["data"],"properties":{"data":{"type":"object","properties":{"amount":{"type":"string"}}}}}"#.into(),
        example: r#"{"event_id":"evt_x","type":"order.paid","data":{"amount":"1"}}"#.into(),
    }
}

/// Posts fresh events to `base` until one gets `want`, for at most `limit`;
/// returns how long that took.
async fn until_status(base: &str, prefix: &str, want: StatusCode, limit: Duration) -> Duration {
    let started = Instant::now();
    let mut n = 0;
    loop {
        let (status, body) = post(base, &format!("{prefix}_{n}")).await;
        if status == want {
            return started.elapsed();
        }
        assert!(
            started.elapsed() < limit,
            "no {want} from {base} within {limit:?}; last answer {status} {body}"
        );
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_contract_saved_on_one_replica_is_enforced_by_another_within_a_second() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let Some(cluster) = Cluster::new("contracts", &sink.url) else {
        return;
    };
    let (a, b) = (cluster.start(0, MASTER_KEY), cluster.start(1, MASTER_KEY));
    assert_eq!(post(&b.base, "evt_before").await.0, StatusCode::ACCEPTED);
    let admin = HookdClient::connect(a.grpc.clone(), ADMIN_TOKEN)
        .await
        .unwrap();
    admin.put_contract("acme", amount_as_text()).await.unwrap();
    let (status, body) = post(&a.base, "evt_on_a").await;
    assert_eq!(status, StatusCode::UNPROCESSABLE_ENTITY, "{body}");
    assert_eq!(body["code"], "CONTRACT_VIOLATION", "{body}");
    let limit = Duration::from_secs(3);
    let took = until_status(&b.base, "evt_put", StatusCode::UNPROCESSABLE_ENTITY, limit).await;
    assert!(
        took <= Duration::from_millis(1500),
        "B enforced the contract after {took:?}"
    );

    admin
        .delete_contract("acme", "order.paid", "")
        .await
        .unwrap();
    let took = until_status(&b.base, "evt_deleted", StatusCode::ACCEPTED, limit).await;
    assert!(
        took <= Duration::from_millis(1500),
        "B dropped the contract after {took:?}"
    );
}
