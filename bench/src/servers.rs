//! The servers `compare` starts as child processes on 127.0.0.1 port 0: the
//! bare actix-web server (this binary's hidden `bare-server` command) and
//! hookd with a temp data dir and a generated config declaring the bench
//! tenants. Both are stopped when dropped.

use std::{
    fmt::Write as _,
    io::{BufRead, BufReader},
    net::SocketAddr,
    path::{Path, PathBuf},
    process::{Child, Command, Stdio},
    time::{Duration, Instant},
};

use anyhow::{bail, Context};
use hookd_sdk::signature::Scheme;

use crate::{cpu, load::get_status};

/// A child server, killed and reaped on drop.
#[derive(Debug)]
pub struct ServerProcess {
    child: Child,
    /// Where it listens.
    pub addr: SocketAddr,
    /// Where hookd's control plane (gRPC and REST) listens; `None` for the bare server.
    pub grpc_addr: Option<SocketAddr>,
    /// Temp dir holding hookd's data, config and log, removed on drop;
    /// `None` when the caller owns the dir (or for the bare server).
    _dir: Option<tempfile::TempDir>,
}

impl ServerProcess {
    /// Its resident memory now, from `/proc/PID/status` (Linux).
    pub fn rss_kib(&self) -> anyhow::Result<u64> {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .context("reading the server's /proc status")?;
        status
            .lines()
            .find_map(|line| line.strip_prefix("VmRSS:"))
            .and_then(|rest| rest.trim().trim_end_matches("kB").trim().parse().ok())
            .context("no VmRSS line in the server's /proc status")
    }

    /// The CPU time it has used so far (user and system, every thread),
    /// from `/proc/PID/stat` (Linux).
    pub fn cpu_time(&self) -> anyhow::Result<Duration> {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id()))
            .context("reading the server's /proc stat")?;
        let Some((_, ticks)) = cpu::stat_ticks(&stat) else {
            bail!("no utime and stime in the server's /proc stat");
        };
        Ok(Duration::from_secs_f64(ticks as f64 / cpu::USER_HZ as f64))
    }

    /// Its CPU ticks now, in all and by thread (Linux; `None` elsewhere).
    pub fn ticks(&self) -> Option<cpu::Ticks> {
        cpu::Ticks::of(self.child.id())
    }

    /// Stops the child: SIGTERM, then SIGKILL if it is still there after `grace`.
    pub fn stop(mut self, grace: Duration) {
        terminate(&mut self.child, grace);
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        terminate(&mut self.child, Duration::from_secs(5));
    }
}

fn terminate(child: &mut Child, grace: Duration) {
    if let Ok(Some(_)) = child.try_wait() {
        return;
    }
    let pid = nix::unistd::Pid::from_raw(child.id() as i32);
    let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
}

/// Starts this binary's bare server with `workers` HTTP workers (0: one per core).
pub fn start_bare(workers: usize) -> anyhow::Result<ServerProcess> {
    let exe = std::env::current_exe().context("cannot find the hookd-bench binary")?;
    let mut child = Command::new(exe)
        .args(["bare-server", "--addr", "127.0.0.1:0", "--workers"])
        .arg(workers.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .context("cannot start the bare server")?;
    let stdout = child.stdout.take().context("bare server stdout")?;
    let mut line = String::new();
    BufReader::new(stdout)
        .read_line(&mut line)
        .context("reading the bare server's address")?;
    let addr = line
        .trim()
        .strip_prefix("listening on ")
        .and_then(|a| a.parse().ok());
    let Some(addr) = addr else {
        let _ = child.kill();
        bail!("the bare server did not start (it said {line:?})");
    };
    Ok(ServerProcess {
        child,
        addr,
        grpc_addr: None,
        _dir: None,
    })
}

/// How to start hookd.
#[derive(Debug, Clone)]
pub struct HookdSpec {
    /// The `hookd` binary.
    pub binary: PathBuf,
    /// Tenant ids to declare.
    pub tenants: Vec<String>,
    /// Their scheme.
    pub scheme: Scheme,
    /// Their secret and its key id.
    pub secret: String,
    /// Key id of `secret`.
    pub kid: String,
    /// Signed-timestamp tolerance, long enough for the whole run.
    pub tolerance_secs: u64,
    /// Largest body each tenant accepts.
    pub max_body_bytes: usize,
    /// HTTP workers (0: one per core).
    pub workers: usize,
    /// hookd's log filter (its default is `info`, one line per accepted delivery).
    pub log_filter: String,
    /// How long to wait for `/readyz`.
    pub ready_timeout: Duration,
    /// Where every tenant forwards its events (`None`: pull mode).
    pub destination: Option<DestinationSpec>,
    /// Routes each tenant has besides its own, in pull mode (`p1`, `p2`,
    /// ...): every accepted event is written once more per route.
    pub pulled_routes: usize,
    /// More of the config file, appended as written (e.g. another tenant).
    pub extra_config: String,
}

/// A destination every tenant forwards to, declared in the config file (so
/// a loopback URL is trusted as written).
#[derive(Debug, Clone)]
pub struct DestinationSpec {
    /// URL hookd POSTs each event to; `{tenant}` becomes the tenant's id.
    pub url: String,
    /// Standard Webhooks secret hookd signs forwards with.
    pub secret: String,
    /// More of each tenant's table, written after its `max_in_flight`
    /// (keys such as `adaptive_concurrency`, then its own tables).
    pub tenant_keys: String,
    /// Forwards in flight at once per tenant (and per route).
    pub max_in_flight: usize,
    /// URLs of the tenant's other routes (`r1`, `r2`, ...), each with the
    /// same secret and `max_in_flight`.
    pub routes: Vec<String>,
}

/// The directive that keeps the line announcing hookd's addresses, which
/// the bench reads to find the port, whatever filter is asked for.
const ADDRESS_LINE_FILTER: &str = "hookd_server::run=info";

/// The admin token of every hookd the bench starts (`HOOKD_ADMIN_TOKEN`),
/// for calls to its control plane.
pub const ADMIN_TOKEN: &str = "hookd-bench-admin-token";

/// The config file declaring `spec`'s tenants.
pub fn hookd_config(spec: &HookdSpec) -> String {
    let filter = format!("{},{ADDRESS_LINE_FILTER}", spec.log_filter);
    let mut out = format!(
        "[http]\nworkers = {}\n\n[log]\nfilter = {filter:?}\n",
        spec.workers
    );
    for id in &spec.tenants {
        out += &tenant_table(spec, id, spec.destination.as_ref());
    }
    out.push_str(&spec.extra_config);
    out
}

/// The table of tenant `id`, with `spec`'s scheme, secret, limits and
/// pulled routes, forwarding to `destination` (`None`: pull mode).
pub fn tenant_table(spec: &HookdSpec, id: &str, destination: Option<&DestinationSpec>) -> String {
    let mut out = format!(
        "\n[[tenants]]\nid = {id:?}\nscheme = {scheme:?}\ntolerance_secs = {tol}\n\
         max_body_bytes = {max}\n",
        scheme = spec.scheme.as_str(),
        tol = spec.tolerance_secs,
        max = spec.max_body_bytes,
    );
    if let Some(dest) = destination {
        let _ = writeln!(out, "max_in_flight = {}", dest.max_in_flight);
        out.push_str(&dest.tenant_keys);
    }
    let _ = write!(
        out,
        "[[tenants.secrets]]\nkid = {kid:?}\nsecret = {secret:?}\n",
        kid = spec.kid,
        secret = spec.secret,
    );
    for n in 1..=spec.pulled_routes {
        let _ = write!(out, "[[tenants.routes]]\nname = \"p{n}\"\n");
    }
    if let Some(dest) = destination {
        let _ = write!(
            out,
            "[tenants.destination]\nurl = {url:?}\nsecret = {secret:?}\n",
            url = dest.url.replace("{tenant}", id),
            secret = dest.secret,
        );
        for (i, url) in dest.routes.iter().enumerate() {
            let _ = write!(
                out,
                "[[tenants.routes]]\nname = \"r{n}\"\nmax_in_flight = {mif}\n\
                 [tenants.routes.destination]\nurl = {url:?}\nsecret = {secret:?}\n",
                n = i + 1,
                mif = dest.max_in_flight,
                secret = dest.secret,
            );
        }
    }
    out
}

/// Starts hookd on a temp data dir and waits until `/readyz` answers 200.
pub async fn start_hookd(spec: &HookdSpec) -> anyhow::Result<ServerProcess> {
    let dir = tempfile::tempdir().context("cannot create a temp dir for hookd")?;
    let mut process = start_hookd_in(spec, dir.path()).await?;
    process._dir = Some(dir);
    Ok(process)
}

/// Starts hookd with its data, config and log in `dir`, which the caller
/// keeps (and may start hookd on again: the data dir is `dir/data`, the
/// config and log are written anew), and waits until `/readyz` answers 200.
pub async fn start_hookd_in(spec: &HookdSpec, dir: &Path) -> anyhow::Result<ServerProcess> {
    if !spec.binary.is_file() {
        bail!(
            "no hookd binary at {} (build it with `cargo build --release -p hookd-server`, or pass --hookd PATH)",
            spec.binary.display()
        );
    }
    let config = dir.join("hookd.toml");
    std::fs::write(&config, hookd_config(spec)).context("writing hookd's config")?;
    let log_path = dir.join("hookd.log");
    let log = std::fs::File::create(&log_path).context("creating hookd's log file")?;
    let child = Command::new(&spec.binary)
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--config")
        .arg(&config)
        .args(["--http-addr", "127.0.0.1:0", "--grpc-addr", "127.0.0.1:0"])
        .env_remove("RUST_LOG")
        .env("HOOKD_LOG__FORMAT", "text")
        // Parallel runs (and a hookd already on 8081) must not collide.
        .env("HOOKD_DASHBOARD__ADDR", "127.0.0.1:0")
        .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(log)
        .spawn()
        .with_context(|| format!("cannot start {}", spec.binary.display()))?;
    let mut process = ServerProcess {
        child,
        addr: SocketAddr::from(([127, 0, 0, 1], 0)),
        grpc_addr: None,
        _dir: None,
    };
    let deadline = Instant::now() + spec.ready_timeout;
    process.addr = wait_for_addr(&mut process.child, &log_path, "http", deadline)?;
    process.grpc_addr = Some(wait_for_addr(
        &mut process.child,
        &log_path,
        "grpc",
        deadline,
    )?);
    loop {
        if let Ok(status) = get_status(process.addr, "/readyz").await {
            if status.is_success() {
                return Ok(process);
            }
        }
        if Instant::now() >= deadline {
            bail!(
                "hookd was not ready within {:?}:\n{}",
                spec.ready_timeout,
                tail(&log_path)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Reads hookd's log until it names the address of its `listener`
/// (`http`, `grpc`).
fn wait_for_addr(
    child: &mut Child,
    log: &Path,
    listener: &str,
    deadline: Instant,
) -> anyhow::Result<SocketAddr> {
    let announced = format!("{listener} listening on ");
    loop {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let found = text.lines().find_map(|line| {
            let rest = line.split(&announced).nth(1)?;
            let addr: String = rest
                .chars()
                .take_while(|c| !c.is_whitespace() && *c != '"')
                .collect();
            addr.parse().ok()
        });
        if let Some(addr) = found {
            return Ok(addr);
        }
        if let Ok(Some(status)) = child.try_wait() {
            bail!(
                "hookd exited ({status}) before its {listener} listener:\n{}",
                tail(log)
            );
        }
        if Instant::now() >= deadline {
            bail!(
                "hookd's {listener} listener was not up in time:\n{}",
                tail(log)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The last lines of hookd's log, for error messages.
fn tail(log: &Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    lines[lines.len().saturating_sub(20)..].join("\n")
}

/// `target/release/hookd` next to this binary's target dir.
pub fn default_hookd() -> PathBuf {
    let exe = std::env::current_exe().unwrap_or_default();
    let target = exe
        .parent()
        .and_then(Path::parent)
        .unwrap_or_else(|| Path::new("target"));
    target.join("release").join("hookd")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Two tenants of `scheme` forwarding to `destination`, if any.
    fn two_tenants(scheme: Scheme, destination: Option<DestinationSpec>) -> HookdSpec {
        HookdSpec {
            binary: PathBuf::from("hookd"),
            tenants: vec!["t-0".into(), "t-1".into()],
            scheme,
            secret: "whsec_abc".into(),
            kid: "k1".into(),
            tolerance_secs: 900,
            max_body_bytes: 2048,
            workers: 0,
            log_filter: "info".into(),
            ready_timeout: Duration::from_secs(1),
            destination,
            pulled_routes: 0,
            extra_config: String::new(),
        }
    }

    #[test]
    fn config_declares_every_tenant_with_its_secret() {
        let spec = two_tenants(Scheme::Stripe, None);
        let text = hookd_config(&spec);
        assert_eq!(text.matches("[[tenants]]").count(), 2, "{text}");
        assert!(text.contains("id = \"t-1\""), "{text}");
        assert!(text.contains("scheme = \"stripe\""), "{text}");
        assert!(text.contains("secret = \"whsec_abc\""), "{text}");
        assert!(text.contains("tolerance_secs = 900"), "{text}");
        assert!(!text.contains("destination"), "{text}");
    }

    #[test]
    fn each_extra_route_is_declared_with_its_own_sink() {
        let spec = two_tenants(
            Scheme::Standard,
            Some(DestinationSpec {
                url: "http://127.0.0.1:9/sink".into(),
                secret: "whsec_def".into(),
                tenant_keys: String::new(),
                max_in_flight: 4,
                routes: vec![
                    "http://127.0.0.1:10/sink".into(),
                    "http://127.0.0.1:11/sink".into(),
                ],
            }),
        );
        let text = hookd_config(&spec);
        assert_eq!(
            text.matches("[[tenants.routes]]").count(),
            4,
            "two per tenant: {text}"
        );
        assert!(text.contains("name = \"r2\"\nmax_in_flight = 4"), "{text}");
        assert!(
            text.contains("url = \"http://127.0.0.1:11/sink\""),
            "{text}"
        );
    }

    #[test]
    fn pulled_routes_are_declared_for_every_tenant() {
        let spec = HookdSpec {
            pulled_routes: 2,
            ..two_tenants(Scheme::Standard, None)
        };
        let text = hookd_config(&spec);
        assert_eq!(text.matches("[[tenants.routes]]").count(), 4, "{text}");
        assert_eq!(text.matches("name = \"p2\"").count(), 2, "{text}");
        assert!(!text.contains("destination"), "{text}");
    }

    #[test]
    fn a_destination_is_declared_for_every_tenant() {
        let spec = two_tenants(
            Scheme::Standard,
            Some(DestinationSpec {
                url: "http://127.0.0.1:9/sink".into(),
                secret: "whsec_def".into(),
                tenant_keys: String::new(),
                max_in_flight: 32,
                routes: Vec::new(),
            }),
        );
        let text = hookd_config(&spec);
        assert_eq!(text.matches("[tenants.destination]").count(), 2, "{text}");
        assert_eq!(text.matches("max_in_flight = 32").count(), 2, "{text}");
        assert!(text.contains("url = \"http://127.0.0.1:9/sink\""), "{text}");
        assert!(text.contains("secret = \"whsec_def\""), "{text}");
    }
}
