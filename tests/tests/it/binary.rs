//! The real `hookd` binary as a child process: SIGKILL and restart keep every
//! acknowledged event, SIGTERM shuts down cleanly, and logs say why a
//! delivery was rejected without leaking secrets or bodies.

use std::{path::PathBuf, time::Duration};

use reqwest::StatusCode;
use serde_json::Value;

use crate::{
    harness::{now_secs as now, order, ACME, DEST_SECRET},
    process::HookdProcess,
    receiver::{Receiver, Reply},
};

fn setup() -> (tempfile::TempDir, PathBuf, PathBuf) {
    setup_with(ACME)
}

fn setup_with(config_toml: &str) -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, config_toml).unwrap();
    let data = dir.path().join("data");
    (dir, data, config)
}

#[tokio::test]
async fn acknowledged_event_survives_sigkill() {
    let (_dir, data, config) = setup();
    let body = order("evt_k");
    let ts = now();
    let delivery_id = {
        let mut hookd = HookdProcess::spawn(&data, &config, &[]);
        let (status, answer) = hookd.post("msg_kill", ts, &body).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
        answer["delivery_id"].as_str().unwrap().to_owned()
    };
    let hookd = HookdProcess::spawn(&data, &config, &[]);
    let (status, answer) = hookd.post("msg_kill", ts, &body).await;
    assert_eq!(status, StatusCode::OK, "{answer}");
    assert_eq!(answer["duplicate"], true);
    assert_eq!(answer["delivery_id"], delivery_id.as_str());
}

#[tokio::test]
async fn sigterm_shuts_down_gracefully() {
    let (_dir, data, config) = setup();
    let mut hookd = HookdProcess::spawn(&data, &config, &[]);
    let body = order("evt_t");
    assert_eq!(
        hookd.post("msg_term", now(), &body).await.0,
        StatusCode::ACCEPTED
    );
    let status = hookd.terminate();
    assert!(status.success(), "{status:?}");
    hookd.wait_for_log("shutdown complete");
}

#[tokio::test]
async fn rejections_are_logged_in_plain_words_without_secrets_or_bodies() {
    let (_dir, data, config) = setup();
    let hookd = HookdProcess::spawn(&data, &config, &[("HOOKD_LOG__FORMAT", "json")]);
    let marker = "BODY-MARKER-7731";
    let body = format!(r#"{{"type":"order.paid","note":"{marker}"}}"#).into_bytes();
    let (status, answer) = hookd.post("msg_stale", now() - 3600, &body).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED);
    let request_id = answer["request_id"].as_str().unwrap().to_owned();
    hookd.wait_for_log(&request_id);

    let line = hookd
        .logs()
        .lines()
        .find(|l| l.contains(&request_id))
        .unwrap()
        .to_owned();
    let entry: Value =
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("not JSON ({e}): {line}"));
    assert_eq!(entry["tenant"], "acme", "{line}");
    assert_eq!(entry["code"], "STALE_TIMESTAMP", "{line}");
    assert!(
        entry["reason"]
            .as_str()
            .unwrap()
            .contains("timestamp too old"),
        "{line}"
    );

    let logs = hookd.logs();
    for secret in [
        "AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA",
        "ZWZnaGlqa2xtbm9wcXJzdHV2d3h5ent8fX5",
    ] {
        assert!(!logs.contains(secret), "a secret reached the logs");
    }
    assert!(!logs.contains(marker), "a body reached the logs");
}

#[tokio::test]
async fn events_acknowledged_while_the_destination_is_down_all_arrive_after_sigkill() {
    // A port nothing listens on yet: the destination is down.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let config = format!(
        "{ACME}[tenants.destination]\nurl = \"http://127.0.0.1:{port}/hooks\"\nsecret = \"{DEST_SECRET}\"\n\
         [tenants.retry]\nschedule_secs = [0.2]\nwindow_secs = 600\n[tenants.breaker]\ncooldown_secs = 0.2\n"
    );
    let (_dir, data, config) = setup_with(&config);
    const EVENTS: usize = 200;
    let ts = now();
    {
        let mut hookd = HookdProcess::spawn(&data, &config, &[]);
        for chunk in (0..EVENTS).collect::<Vec<_>>().chunks(20) {
            let posts = chunk.iter().map(|i| {
                let body = order(&format!("evt_{i}"));
                let hookd = &hookd;
                async move { hookd.post(&format!("msg_{i}"), ts, &body).await }
            });
            for (status, answer) in futures_util::future::join_all(posts).await {
                assert_eq!(status, StatusCode::ACCEPTED, "{answer}");
            }
        }
        hookd.child.kill().unwrap();
        hookd.child.wait().unwrap();
    }
    let dest = Receiver::start_on(
        format!("127.0.0.1:{port}").parse().unwrap(),
        Reply::Status(200),
    )
    .await;
    let _hookd = HookdProcess::spawn(&data, &config, &[]);
    let got = dest.wait_for(EVENTS, Duration::from_secs(60)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    let got = dest.received().len().max(got.len());
    let ids: std::collections::HashSet<String> = dest
        .received()
        .iter()
        .map(|r| r.header("webhook-id").unwrap().to_owned())
        .collect();
    assert_eq!(ids.len(), EVENTS, "every acknowledged event arrives");
    let duplicates = got - EVENTS;
    println!("{EVENTS} events acknowledged, hookd killed with SIGKILL, restarted: {got} requests at the destination, {duplicates} duplicates");
    assert!(
        duplicates <= 8,
        "only attempts in flight at the kill may repeat: {duplicates}"
    );
}

#[test]
fn a_listener_that_cannot_bind_is_named_with_its_address_and_setting() {
    let (_dir, data, config) = setup();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = std::process::Command::new(crate::process::hookd_bin())
        .args(["--config", config.to_str().unwrap()])
        .args(["--data-dir", data.to_str().unwrap()])
        .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
        .env("HOOKD_DASHBOARD__ADDR", &addr)
        .env("HOOKD_ADMIN_TOKEN", crate::harness::ADMIN_TOKEN)
        .output()
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains(&format!("dashboard {addr}")),
        "names the listener and its address: {stderr}"
    );
    assert!(
        stderr.contains("dashboard.addr") && stderr.contains("HOOKD_DASHBOARD__ADDR"),
        "names the setting that moves it: {stderr}"
    );
}

/// Every directory and file under `root` with its permission bits.
fn modes_under(root: &std::path::Path) -> Vec<(String, bool, u32)> {
    use std::os::unix::fs::MetadataExt;
    let mut out = Vec::new();
    let mut open = vec![root.to_path_buf()];
    while let Some(path) = open.pop() {
        let meta = std::fs::symlink_metadata(&path).unwrap();
        out.push((
            path.display().to_string(),
            meta.is_dir(),
            meta.mode() & 0o777,
        ));
        if meta.is_dir() {
            open.extend(std::fs::read_dir(&path).unwrap().map(|e| e.unwrap().path()));
        }
    }
    out
}

/// A fresh data dir is `0700` and every file hookd writes in it (the
/// store, the write-ahead log, the master key and admin token) `0600`,
/// whatever the umask it was started with: no other local account reads
/// a tenant's payloads.
#[tokio::test]
async fn the_data_dir_and_every_file_in_it_are_private() {
    let (_dir, data, config) = setup();
    let mut hookd = HookdProcess::spawn(&data, &config, &[]);
    let body = order("evt_private");
    assert_eq!(
        hookd.post("msg_private", now(), &body).await.0,
        StatusCode::ACCEPTED
    );
    let check = |when: &str| {
        let modes = modes_under(&data);
        assert!(modes.len() > 3, "{when}: {modes:?}");
        for (path, is_dir, mode) in modes {
            let want = if is_dir { 0o700 } else { 0o600 };
            assert_eq!(mode, want, "{when}: {path} is {mode:o}");
        }
    };
    check("running");
    assert!(hookd.terminate().success());
    check("stopped");
}
