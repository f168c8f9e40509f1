//! Retention through a running server: the sweeper removes a tenant's
//! delivered events and dead letters past their retention although the
//! tenant's gate dropped idle long before; the real binary refuses an
//! idempotency retention below a tenant's retry window and warns about one
//! below the longest sender retry window.

use std::{
    process::{Command, Stdio},
    time::{Duration, Instant},
};

use hookd_server::testing::DeliveryEventKind;
use tonic::Code;

use crate::{
    forward::{send, wait_event},
    harness::{tenant, TestServer, ACME},
    process::{hookd_bin, HookdProcess},
    receiver::{Receiver, Reply},
};

/// An hour, the retention of both kinds here.
const HOUR_MS: i64 = 3_600_000;

/// Whether the control plane no longer knows `delivery_id`.
async fn forgotten(s: &TestServer, delivery_id: &str) -> bool {
    let admin = s.admin().await;
    match admin.get_delivery("shop", delivery_id).await {
        Ok(_) => false,
        Err(e) => {
            assert_eq!(e.code(), Code::NotFound, "{e}");
            true
        }
    }
}

#[tokio::test]
async fn an_idle_tenants_delivered_events_and_dead_letters_are_swept() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let config = format!(
        "[retention]\nsweep_interval_secs = 0.05\ndelivered_secs = 3600\ndead_secs = 3600\n{}",
        tenant("shop", &dest.url, "", "", "")
    );
    let s = TestServer::start(&config);
    let registry = s.server().registry();
    let mut feed = s.server().services().feed.subscribe();
    let dead = send(&s, "shop", "evt_dead").await;
    wait_event(&mut feed, &dead, DeliveryEventKind::DeadLettered).await;
    dest.set_default(Reply::Status(200));
    let delivered = send(&s, "shop", "evt_ok").await;
    wait_event(&mut feed, &delivered, DeliveryEventKind::Delivered).await;

    s.clock.advance_ms(HOUR_MS + 1_000);
    assert_eq!(registry.stop_idle_gates(300_000), 1, "shop's gate stops");
    assert_eq!(registry.running_gates(), 0);

    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        let (dead_gone, delivered_gone) =
            (forgotten(&s, &dead).await, forgotten(&s, &delivered).await);
        if dead_gone && delivered_gone {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "not swept: dead letter gone {dead_gone}, delivered event gone {delivered_gone}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(registry.running_gates(), 0, "sweeping starts no gate");
}

/// A config file holding `toml` and a data dir, in a fresh temp dir.
fn config_file(toml: &str) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("hookd.toml");
    std::fs::write(&config, toml).unwrap();
    (dir, config)
}

#[test]
fn an_idempotency_retention_below_a_retry_window_stops_the_binary() {
    let (dir, config) = config_file(&format!("{ACME}[tenants.retry]\nwindow_secs = 172800\n"));
    let log = dir.path().join("stderr.log");
    let mut child = Command::new(hookd_bin())
        .arg("--data-dir")
        .arg(dir.path().join("data"))
        .arg("--config")
        .arg(&config)
        .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
        .env("HOOKD_DASHBOARD__ADDR", "127.0.0.1:0")
        .env("HOOKD_RETENTION__IDEMPOTENCY_SECS", "86400")
        .env_remove("RUST_LOG")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "hookd started and ran: {}",
                std::fs::read_to_string(&log).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let stderr = std::fs::read_to_string(&log).unwrap();
    assert!(!status.success(), "{stderr}");
    assert!(
        stderr.contains(
            "retention.idempotency_secs: 86400 is below tenants[0] (acme) retry.window_secs (172800)"
        ),
        "{stderr}"
    );
    assert!(!dir.path().join("data").exists(), "nothing written");
}

#[tokio::test]
async fn an_idempotency_retention_below_three_days_is_logged_as_a_warning() {
    let (dir, config) = config_file(ACME);
    let env = [("HOOKD_RETENTION__IDEMPOTENCY_SECS", "172800")];
    let hookd = HookdProcess::spawn(&dir.path().join("data"), &config, &env);
    hookd.wait_for_log("retention.idempotency_secs (172800) is below 259200 s");
    let line = hookd
        .logs()
        .lines()
        .find(|l| l.contains("retention.idempotency_secs (172800)"))
        .unwrap()
        .to_owned();
    assert!(line.contains("WARN") && line.contains("Stripe"), "{line}");
}
