//! A PostgreSQL server of a test's own, for tests that stop and start it:
//! `initdb` and `pg_ctl` of the distribution's server (the newest under
//! `/usr/lib/postgresql/*/bin`, else `pg_config --bindir`) on a temporary
//! directory and a free loopback port, run as the `postgres` user when the
//! test runs as root. Without those programs a test is skipped with a line
//! saying so, unless `HOOKD_REQUIRE_POSTGRES=1` makes that a failure.

use std::{
    net::TcpListener,
    path::{Path, PathBuf},
    process::{Command, Output},
};

use tempfile::TempDir;

/// A running throwaway server; stopped (immediately) and removed on drop.
pub struct PgServer {
    dir: TempDir,
    bin: PathBuf,
    port: u16,
    as_postgres: bool,
}

impl PgServer {
    /// A new cluster, started; `None` (the test is skipped) when the server
    /// programs are not installed.
    ///
    /// # Panics
    /// When they are missing but required, or the cluster cannot start.
    pub fn start(case: &str) -> Option<PgServer> {
        let Some(bin) = server_bin() else {
            if std::env::var("HOOKD_REQUIRE_POSTGRES").as_deref() == Ok("1") {
                panic!("HOOKD_REQUIRE_POSTGRES=1 but initdb and pg_ctl are not installed");
            }
            eprintln!("skipped ({case}): initdb and pg_ctl are not installed");
            return None;
        };
        let dir = tempfile::Builder::new()
            .prefix("hookd-pg-")
            .tempdir()
            .unwrap();
        let as_postgres = is_root();
        if as_postgres {
            run(Command::new("chown").arg("postgres").arg(dir.path()));
        }
        let port = free_port();
        let server = PgServer {
            dir,
            bin,
            port,
            as_postgres,
        };
        let data = server.data();
        server.run_tool("initdb", &["-D", &data, "-A", "trust", "-U", "postgres"]);
        server.resume();
        Some(server)
    }

    /// The URL of its `postgres` database.
    pub fn url(&self) -> String {
        format!("postgres://postgres@127.0.0.1:{}/postgres", self.port)
    }

    /// Stops the server, waiting until it is down: `mode` is `fast` (clients
    /// disconnected, a clean shutdown) or `immediate` (a crash: recovery
    /// from the WAL at the next start).
    pub fn stop(&self, mode: &str) {
        let data = self.data();
        self.run_tool("pg_ctl", &["-D", &data, "-m", mode, "-w", "stop"]);
    }

    /// Starts the (stopped) server again on the same port, waiting until it
    /// accepts connections.
    pub fn resume(&self) {
        let (data, log) = (self.data(), self.path("log"));
        let options = format!(
            "-h 127.0.0.1 -p {} -k {} -c max_connections=200",
            self.port,
            self.dir.path().display()
        );
        self.run_tool(
            "pg_ctl",
            &["-D", &data, "-l", &log, "-o", &options, "-w", "start"],
        );
    }

    fn data(&self) -> String {
        self.path("data")
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).display().to_string()
    }

    /// Runs one of the server's programs (as `postgres` when root); panics
    /// with its output when it fails.
    fn run_tool(&self, tool: &str, args: &[&str]) -> Output {
        let program = self.bin.join(tool);
        let mut command = match self.as_postgres {
            true => {
                let mut c = Command::new("runuser");
                c.args(["-u", "postgres", "--"]).arg(&program);
                c
            }
            false => Command::new(&program),
        };
        run(command.args(args))
    }
}

impl Drop for PgServer {
    fn drop(&mut self) {
        let data = self.data();
        let program = self.bin.join("pg_ctl");
        let args = ["-D", data.as_str(), "-m", "immediate", "-w", "stop"];
        // Already stopped by the test is fine: nothing to report on drop.
        let _ = match self.as_postgres {
            true => Command::new("runuser")
                .args(["-u", "postgres", "--"])
                .arg(&program)
                .args(args)
                .output(),
            false => Command::new(&program).args(args).output(),
        };
    }
}

/// The directory of `initdb` and `pg_ctl`, if installed.
fn server_bin() -> Option<PathBuf> {
    let has_tools = |dir: &Path| dir.join("initdb").exists() && dir.join("pg_ctl").exists();
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .into_iter()
        .flatten()
        .flatten()
        .filter_map(|entry| {
            let version = entry.file_name().to_str()?.parse().ok()?;
            Some((version, entry.path().join("bin")))
        })
        .filter(|(_, bin)| has_tools(bin))
        .collect();
    versions.sort();
    if let Some((_, bin)) = versions.pop() {
        return Some(bin);
    }
    let output = Command::new("pg_config").arg("--bindir").output().ok()?;
    let bin = PathBuf::from(String::from_utf8_lossy(&output.stdout).trim());
    has_tools(&bin).then_some(bin)
}

fn is_root() -> bool {
    let output = Command::new("id").arg("-u").output().unwrap();
    String::from_utf8_lossy(&output.stdout).trim() == "0"
}

/// A loopback port nothing listens on now.
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn run(command: &mut Command) -> Output {
    let output = command.output().unwrap();
    assert!(
        output.status.success(),
        "{command:?} failed: {}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    output
}
