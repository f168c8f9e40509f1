//! The real `hookd` binary as a child process: built once, started on
//! port 0 with its stderr collected, signalled like an operator would.

use std::{
    io::{BufRead, BufReader},
    path::{Path, PathBuf},
    process::{Child, Command, ExitStatus, Stdio},
    sync::{mpsc, Arc, Mutex, OnceLock},
    time::{Duration, Instant},
};

use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::signed;

/// Path of the `hookd` binary next to this test binary, built if missing.
pub fn hookd_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| workspace_bin("hookd-server", "hookd"))
}

/// Path of the `hookctl` binary next to this test binary, built if missing.
pub fn hookctl_bin() -> &'static Path {
    static BIN: OnceLock<PathBuf> = OnceLock::new();
    BIN.get_or_init(|| workspace_bin("hookd-sdk", "hookctl"))
}

/// Builds (a no-op when fresh) binary `name` of workspace `package` into the
/// target dir this test runs from, and returns its path.
fn workspace_bin(package: &str, name: &str) -> PathBuf {
    let target = std::env::current_exe()
        .unwrap()
        .parent()
        .unwrap()
        .parent()
        .unwrap()
        .to_path_buf();
    let bin = target.join(name);
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = Command::new(cargo)
        .args(["build", "-q", "-p", package, "--bin", name])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(
        status.success() && bin.exists(),
        "could not build {}",
        bin.display()
    );
    bin
}

/// A running `hookd` child with its log lines collected.
pub struct HookdProcess {
    pub child: Child,
    /// `http://` and the HTTP address.
    pub base: String,
    /// `http://` and the gRPC address.
    pub grpc: String,
    logs: Arc<Mutex<Vec<String>>>,
}

impl HookdProcess {
    /// A control-plane client of this process with the admin token.
    pub async fn admin(&self) -> hookd_sdk::client::HookdClient {
        hookd_sdk::client::HookdClient::connect(self.grpc.clone(), crate::harness::ADMIN_TOKEN)
            .await
            .unwrap()
    }

    /// Starts hookd on `data` and `config` with `env` added, and waits until
    /// it logged both addresses.
    pub fn spawn(data: &Path, config: &Path, env: &[(&str, &str)]) -> HookdProcess {
        let mut child = Command::new(hookd_bin())
            .args([
                "--data-dir",
                data.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ])
            .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
            .env("HOOKD_DASHBOARD__ADDR", "127.0.0.1:0")
            .envs(env.iter().copied())
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let logs = Arc::new(Mutex::new(Vec::new()));
        let (addr_tx, addr_rx) = mpsc::channel();
        let stderr = child.stderr.take().unwrap();
        let sink = logs.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                for kind in ["http", "grpc"] {
                    if let Some(rest) = line.split(&format!("{kind} listening on ")).nth(1) {
                        let addr: String = rest
                            .chars()
                            .take_while(|c| !c.is_whitespace() && *c != '"')
                            .collect();
                        let _ = addr_tx.send((kind, addr));
                    }
                }
                sink.lock().unwrap().push(line);
            }
        });
        let mut addrs = std::collections::HashMap::new();
        while addrs.len() < 2 {
            let (kind, addr) = addr_rx
                .recv_timeout(Duration::from_secs(30))
                .unwrap_or_else(|_| panic!("hookd did not start: {:?}", logs.lock().unwrap()));
            addrs.insert(kind, format!("http://{addr}"));
        }
        HookdProcess {
            child,
            base: addrs.remove("http").unwrap(),
            grpc: addrs.remove("grpc").unwrap(),
            logs,
        }
    }

    /// Starts hookd on `data` and `config` expecting it to refuse to start:
    /// returns what it wrote to stderr once it exited unsuccessfully; fails
    /// the test if it began serving or did not exit, bounded.
    pub fn refused(data: &Path, config: &Path) -> String {
        let mut child = Command::new(hookd_bin())
            .args([
                "--data-dir",
                data.to_str().unwrap(),
                "--config",
                config.to_str().unwrap(),
            ])
            .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
            .env("HOOKD_DASHBOARD__ADDR", "127.0.0.1:0")
            .env_remove("RUST_LOG")
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let stderr = child.stderr.take().unwrap();
        let lines = std::thread::spawn(move || {
            let mut lines = Vec::new();
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                let serving = line.contains("http listening on ");
                lines.push(line);
                if serving {
                    return (lines.join("\n"), true);
                }
            }
            (lines.join("\n"), false)
        });
        let deadline = Instant::now() + Duration::from_secs(60);
        while !lines.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        let hung = !lines.is_finished();
        if hung {
            let _ = child.kill();
        }
        let (stderr, serving) = lines.join().unwrap();
        if serving {
            let _ = child.kill();
        }
        let status = child.wait().unwrap();
        assert!(
            !hung && !serving && !status.success(),
            "hookd did not refuse to start ({status}):\n{stderr}"
        );
        stderr
    }

    /// POSTs `body` to acme, signed with its current secret at `ts`.
    pub async fn post(&self, event_id: &str, ts: i64, body: &[u8]) -> (StatusCode, Value) {
        let mut req = reqwest::Client::new().post(format!("{}/hooks/acme", self.base));
        for (k, v) in signed(event_id, ts, body) {
            req = req.header(k, v);
        }
        let res = req.body(body.to_vec()).send().await.unwrap();
        (res.status(), res.json().await.unwrap())
    }

    /// Every log line so far.
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().join("\n")
    }

    /// Waits for the log line `needle`, bounded.
    pub fn wait_for_log(&self, needle: &str) {
        let deadline = Instant::now() + Duration::from_secs(10);
        while !self.logs().contains(needle) {
            assert!(
                Instant::now() < deadline,
                "no log line {needle:?} in:\n{}",
                self.logs()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Sends SIGTERM and waits (bounded) for the process to exit.
    pub fn terminate(&mut self) -> ExitStatus {
        let pid = nix::unistd::Pid::from_raw(self.child.id() as i32);
        nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM).unwrap();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some(status) = self.child.try_wait().unwrap() {
                return status;
            }
            assert!(
                Instant::now() < deadline,
                "hookd did not exit after SIGTERM"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

impl Drop for HookdProcess {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
