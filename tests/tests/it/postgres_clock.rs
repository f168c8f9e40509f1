//! Two in-process replicas on one PostgreSQL database, one whose clock runs
//! 40 s ahead (a `ManualClock`): pull visibility is the database's, so the
//! replica ahead never hands out what the other just pulled (skipped
//! without `HOOKD_TEST_POSTGRES_URL` unless `HOOKD_REQUIRE_POSTGRES=1`).

use std::{path::Path, sync::Arc};

use hookd_sdk::client::HookdClient;
use hookd_server::{
    clock::{ManualClock, SharedClock, SystemClock},
    config::{Config, Overrides},
    testing::test_database,
    Runtime, Server,
};
use reqwest::StatusCode;

use crate::{
    harness::{now_secs, order, signed, ACME, ADMIN_TOKEN},
    postgres::MASTER_KEY,
};

/// A replica on the database at `url` with pull-mode tenant acme, on `clock`.
fn replica(dir: &Path, url: &str, clock: SharedClock) -> Server {
    let file = dir.join("hookd.toml");
    let toml =
        format!("[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{url}\"\n{ACME}");
    std::fs::write(&file, toml).unwrap();
    let overrides = Overrides {
        data_dir: Some(dir.join("data")),
        http_addr: Some("127.0.0.1:0".into()),
        grpc_addr: Some("127.0.0.1:0".into()),
    };
    let mut config = Config::load(Some(&file), &overrides).unwrap();
    config.keys.admin_token = Some(ADMIN_TOKEN.into());
    config.keys.master_key = Some(MASTER_KEY.into());
    config.dashboard.addr = "127.0.0.1:0".into();
    config.grpc.shutdown_grace_secs = 0.0;
    Server::start(config, Runtime::new(clock)).unwrap()
}

async fn admin(server: &Server) -> HookdClient {
    HookdClient::connect(format!("http://{}", server.grpc_addr()), ADMIN_TOKEN)
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_replica_40_s_ahead_never_hands_out_what_another_pulled() {
    let Some(database) = test_database("hookd_it_pull_clock") else {
        return;
    };
    let (dir_on_time, dir_ahead) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let on_time = replica(dir_on_time.path(), &database.url, Arc::new(SystemClock));
    let ahead_clock = ManualClock::at_secs(now_secs() + 40);
    let ahead = replica(dir_ahead.path(), &database.url, Arc::new(ahead_clock));
    let client = reqwest::Client::new();
    for n in 0..5 {
        let event_id = format!("evt_{n}");
        let body = order(&event_id);
        let mut request = client.post(format!("http://{}/hooks/acme", on_time.http_addr()));
        for (name, value) in signed(&event_id, now_secs(), &body) {
            request = request.header(name, value);
        }
        let status = request.body(body).send().await.unwrap().status();
        assert_eq!(status, StatusCode::ACCEPTED);
    }
    let (first, second) = (admin(&on_time).await, admin(&ahead).await);
    let pulled = first.pull("acme", 5, 30).await.unwrap();
    assert_eq!(pulled.len(), 5);
    let again = second.pull("acme", 5, 30).await.unwrap();
    assert_eq!(
        again.len(),
        0,
        "the replica ahead handed out deliveries another consumer holds"
    );
    // Nacked on the replica ahead, they are visible again now, not in 40 s.
    let ids: Vec<String> = pulled.iter().map(|p| p.delivery_id.clone()).collect();
    second.nack("acme", ids.iter()).await.unwrap();
    assert_eq!(first.pull("acme", 5, 30).await.unwrap().len(), 5);
    tokio::task::block_in_place(|| {
        on_time.shutdown().unwrap();
        ahead.shutdown().unwrap();
    });
}
