//! `hookctl apply`, `diff` and `export`, the real binary, against the fake
//! control plane (`hookd_control::fake`): the file is checked before hookd
//! is reached, diff changes nothing and exits 2 on a difference, a missing
//! secret stops apply before its first change, and an export applies as no
//! change.

use std::{path::Path, process::Command, sync::Arc};

use hookd_control::fake::{FakeBackend, FakeServer, ADMIN};

/// (exit code, stdout, stderr) of hookctl run in `dir` with `env`.
async fn hookctl(
    endpoint: &str,
    dir: &Path,
    args: &[&str],
    env: &[(&str, &str)],
) -> (Option<i32>, String, String) {
    let mut command = Command::new(env!("CARGO_BIN_EXE_hookctl"));
    command
        .args(["--endpoint", endpoint])
        .args(args)
        .current_dir(dir)
        .env_remove("HOOKCTL_TOKEN")
        .env_remove("HOOKCTL_OUTPUT")
        .env_remove("INITECH_SECRET")
        .env("HOOKD_ADMIN_TOKEN", ADMIN)
        .envs(env.iter().copied());
    let output = tokio::task::spawn_blocking(move || command.output())
        .await
        .expect("join")
        .expect("hookctl runs");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// The fake's two tenants as they are, and a new one, `initech`.
const FILE: &str = "
tenants:
  - id: acme
    max_in_flight: 16
  - id: globex
    destination_url: https://globex.test/hooks
    max_in_flight: 16
  - id: initech
    max_in_flight: 16
    secret: {env: INITECH_SECRET}
";

fn write(dir: &Path, text: &str) {
    std::fs::write(dir.join("hookd.yaml"), text).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn diff_changes_nothing_and_apply_reads_every_secret_first() {
    let server = FakeServer::start(Arc::new(FakeBackend::new())).await;
    let dir = tempfile::tempdir().unwrap();
    write(dir.path(), FILE);
    let diff = ["diff", "-f", "hookd.yaml"];

    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &diff, &[]).await;
    assert_eq!(code, Some(2), "{out}{err}");
    assert_eq!(
        out,
        "+ create tenant initech\n    scheme: \"standard\"\n    tolerance_secs: 300\n    \
         enabled: true\n    max_body_bytes: 1048576\n    required_fields: []\n    \
         max_in_flight: 16\n    secret: (set)\n1 resource to change.\n"
    );

    let apply = ["apply", "-f", "hookd.yaml"];
    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &apply, &[]).await;
    assert_eq!(code, Some(1), "{out}{err}");
    assert!(err.contains("$INITECH_SECRET"), "{err}");
    assert!(
        !server.backend.calls().contains(&"create_tenant"),
        "a missing secret changes nothing: {:?}",
        server.backend.calls()
    );

    let secret = [("INITECH_SECRET", "whsec_aW5pdGVjaA==")];
    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &apply, &secret).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert!(out.starts_with("+ create tenant initech"), "{out}");
    assert!(!out.contains("whsec_aW5pdGVjaA=="), "{out}");
    assert!(out.contains("destination secret: whsec_ZGVzdA=="), "{out}");
    assert!(out.contains("shown only this once"), "{out}");

    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &diff, &[]).await;
    assert_eq!(code, Some(0), "{out}{err}");
    assert_eq!(out, "No changes: hookd matches the file.\n");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_bad_file_fails_before_hookd_is_reached() {
    let server = FakeServer::start(Arc::new(FakeBackend::new())).await;
    let dir = tempfile::tempdir().unwrap();
    for (file, expected) in [
        (
            "tenants: [{id: acme, max_in_flite: 2}]",
            "tenants[0]: unknown field `max_in_flite`",
        ),
        (
            "tenants: [{id: acme, routes: [{name: a, breaker: {cooldown: 1}}]}]",
            "tenants[0].routes[0].breaker: unknown field `cooldown`",
        ),
        (
            "tenants: [{id: acme, secret: {value: whsec_x}}]",
            "tenants[acme]: secret: an inline value is refused",
        ),
        ("version: 2", "version: 2 is not a version"),
    ] {
        write(dir.path(), file);
        for command in ["diff", "apply"] {
            let args = [command, "-f", "hookd.yaml"];
            let (code, _, err) = hookctl(&server.endpoint, dir.path(), &args, &[]).await;
            assert_eq!(code, Some(1), "{file}: {err}");
            assert!(err.contains(expected), "{expected} in {err}");
        }
    }
    assert!(
        server.backend.calls().is_empty(),
        "{:?}",
        server.backend.calls()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_export_applies_as_no_change() {
    let server = FakeServer::start(Arc::new(FakeBackend::new())).await;
    let dir = tempfile::tempdir().unwrap();
    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &["export"], &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert!(out.contains("env: HOOKD_SECRET_GLOBEX"), "{out}");
    write(dir.path(), &out);
    let args = ["apply", "-f", "hookd.yaml", "--prune"];
    let (code, out, err) = hookctl(&server.endpoint, dir.path(), &args, &[]).await;
    assert_eq!(code, Some(0), "{err}");
    assert_eq!(out, "No changes: hookd matches the file.\n");
    let (code, out, _) = hookctl(
        &server.endpoint,
        dir.path(),
        &["export", "--tenant", "ghost"],
        &[],
    )
    .await;
    assert_eq!(code, Some(3), "{out}");
}
