//! Starts hookd in-process on 127.0.0.1:0 with a temp data dir and a clock
//! the test controls, and sends signed deliveries to it.

use std::{path::Path, sync::Arc};

use hookd_sdk::signature::{sign, Scheme, Secret};
use hookd_server::{
    clock::{ManualClock, SharedClock, SystemClock},
    config::{Config, Overrides},
    testing::{OsSync, SharedSync},
    Runtime, Server,
};
use reqwest::StatusCode;
use serde_json::Value;
use tempfile::TempDir;

/// The server clock every in-process test starts at (the vectors' `now`).
pub const NOW: i64 = 1_764_480_000;

/// A standard-scheme tenant `acme` requiring `type`, with a current and a previous secret.
pub const ACME: &str = r#"
[[tenants]]
id = "acme"
scheme = "standard"
required_fields = ["type"]
max_body_bytes = 65536
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
[[tenants.secrets]]
kid = "k1"
secret = "whsec_ZWZnaGlqa2xtbm9wcXJzdHV2d3h5ent8fX5/gIGCg4Q="
"#;

/// The admin token every in-process server runs with.
pub const ADMIN_TOKEN: &str = "hka_test_admin_token_0123456789";

/// One answer from the ingress.
#[derive(Debug)]
pub struct Answer {
    pub status: StatusCode,
    pub body: Value,
    pub request_id_header: Option<String>,
}

impl Answer {
    /// The error code, for error answers.
    pub fn code(&self) -> &str {
        self.body["code"].as_str().unwrap_or("")
    }
}

/// An in-process hookd.
pub struct TestServer {
    server: Option<Server>,
    pub base: String,
    pub clock: ManualClock,
    shared_clock: SharedClock,
    pub dir: TempDir,
    client: reqwest::Client,
}

impl TestServer {
    /// Starts hookd with `tenants_toml` appended to an otherwise default config.
    pub fn start(tenants_toml: &str) -> TestServer {
        let clock = ManualClock::at_secs(NOW);
        TestServer::start_with(tenants_toml, clock.clone(), Arc::new(clock))
    }

    /// Starts hookd with a test clock standing at `unix_secs`.
    pub fn start_at(tenants_toml: &str, unix_secs: i64) -> TestServer {
        let clock = ManualClock::at_secs(unix_secs);
        TestServer::start_with(tenants_toml, clock.clone(), Arc::new(clock))
    }

    /// Starts hookd on the system clock, for forwarding with real (short)
    /// retry schedules; sign with [`now_secs`].
    pub fn start_live(tenants_toml: &str) -> TestServer {
        TestServer::start_with(
            tenants_toml,
            ManualClock::at_secs(NOW),
            Arc::new(SystemClock),
        )
    }

    /// Starts hookd with storage's syncs going through `sync` (recorded or
    /// failing); a restart goes back to real syncs.
    pub fn start_with_sync(tenants_toml: &str, sync: SharedSync) -> TestServer {
        let clock = ManualClock::at_secs(NOW);
        TestServer::start_on_sync(tenants_toml, clock.clone(), Arc::new(clock), sync)
    }

    fn start_with(tenants_toml: &str, clock: ManualClock, shared_clock: SharedClock) -> TestServer {
        TestServer::start_on_sync(tenants_toml, clock, shared_clock, Arc::new(OsSync))
    }

    fn start_on_sync(
        tenants_toml: &str,
        clock: ManualClock,
        shared_clock: SharedClock,
        sync: SharedSync,
    ) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let server = start_on(dir.path(), tenants_toml, shared_clock.clone(), sync);
        TestServer {
            base: format!("http://{}", server.http_addr()),
            server: Some(server),
            clock,
            shared_clock,
            dir,
            client: reqwest::Client::new(),
        }
    }

    /// The running server, for library entry points (redelivery, event feed).
    pub fn server(&self) -> &Server {
        self.server.as_ref().unwrap()
    }

    /// Stops gracefully and starts again on the same data dir.
    pub fn restart(&mut self, tenants_toml: &str) {
        self.restart_with(tenants_toml, |_| {});
    }

    /// Stops gracefully, runs `offline` on the stopped data dir (for
    /// instance to leave it as a crash would), and starts again.
    pub fn restart_with(&mut self, tenants_toml: &str, offline: impl FnOnce(&Path)) {
        self.try_restart_with(tenants_toml, offline).unwrap();
    }

    /// [`TestServer::restart_with`], handing back a failure to start.
    pub fn try_restart_with(
        &mut self,
        tenants_toml: &str,
        offline: impl FnOnce(&Path),
    ) -> hookd_server::Result<()> {
        self.server.take().unwrap().shutdown().unwrap();
        offline(&self.dir.path().join("data"));
        let server = try_start_on(
            self.dir.path(),
            tenants_toml,
            self.shared_clock.clone(),
            Arc::new(OsSync),
        )?;
        self.base = format!("http://{}", server.http_addr());
        self.server = Some(server);
        Ok(())
    }

    /// Stops gracefully, lets `edit` change the data dir while nothing has
    /// it open (as an older hookd version or an operator would), and starts
    /// again on it.
    pub fn restart_after(&mut self, tenants_toml: &str, edit: impl FnOnce(&Path)) {
        self.server.take().unwrap().shutdown().unwrap();
        edit(&self.dir.path().join("data"));
        let server = start_on(
            self.dir.path(),
            tenants_toml,
            self.shared_clock.clone(),
            Arc::new(OsSync),
        );
        self.base = format!("http://{}", server.http_addr());
        self.server = Some(server);
    }

    /// POSTs `body` with `headers` to `/hooks/{tenant}`.
    pub async fn post(&self, tenant: &str, headers: &[(String, String)], body: &[u8]) -> Answer {
        self.request("POST", &format!("/hooks/{tenant}"), headers, body)
            .await
    }

    /// Sends `body` with `headers` as `method` to `path_and_query`.
    pub async fn request(
        &self,
        method: &str,
        path_and_query: &str,
        headers: &[(String, String)],
        body: &[u8],
    ) -> Answer {
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
        let url = format!("{}{path_and_query}", self.base);
        let mut req = self.client.request(method, url);
        for (k, v) in headers {
            req = req.header(k.as_str(), v.as_str());
        }
        let res = req.body(body.to_vec()).send().await.unwrap();
        let status = res.status();
        let request_id_header = res
            .headers()
            .get("x-request-id")
            .map(|v| v.to_str().unwrap().to_owned());
        let body = res.json().await.unwrap_or(Value::Null);
        Answer {
            status,
            body,
            request_id_header,
        }
    }

    /// POSTs an order event `event_id` to `tenant`, signed (Standard
    /// Webhooks) with `kid`/`secret` at the server's clock.
    pub async fn post_signed(
        &self,
        tenant: &str,
        kid: &str,
        secret: &str,
        event_id: &str,
    ) -> Answer {
        let key = Secret::from_provider(Scheme::Standard, kid, secret).unwrap();
        let body = order(event_id);
        let headers = sign(Scheme::Standard, &key, event_id, self.clock_secs(), &body);
        self.post(tenant, &headers, &body).await
    }

    /// Unix seconds on the server's clock.
    pub fn clock_secs(&self) -> i64 {
        self.shared_clock.now_secs()
    }

    /// A control-plane client with `token`.
    pub async fn client(&self, token: &str) -> hookd_sdk::client::HookdClient {
        let endpoint = format!("http://{}", self.server().grpc_addr());
        hookd_sdk::client::HookdClient::connect(endpoint, token)
            .await
            .unwrap()
    }

    /// A control-plane client with the admin token.
    pub async fn admin(&self) -> hookd_sdk::client::HookdClient {
        self.client(ADMIN_TOKEN).await
    }

    /// GETs a path.
    pub async fn get(&self, path: &str) -> reqwest::Response {
        self.client
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .unwrap()
    }
}

fn start_on(dir: &Path, tenants_toml: &str, clock: SharedClock, sync: SharedSync) -> Server {
    try_start_on(dir, tenants_toml, clock, sync).unwrap()
}

fn try_start_on(
    dir: &Path,
    tenants_toml: &str,
    clock: SharedClock,
    sync: SharedSync,
) -> hookd_server::Result<Server> {
    let file = dir.join("hookd.toml");
    std::fs::write(&file, tenants_toml).unwrap();
    let overrides = Overrides {
        data_dir: Some(dir.join("data")),
        http_addr: Some("127.0.0.1:0".into()),
        grpc_addr: Some("127.0.0.1:0".into()),
    };
    let mut config = Config::load(Some(&file), &overrides).unwrap();
    config.keys.admin_token = Some(ADMIN_TOKEN.into());
    config.dashboard.addr = "127.0.0.1:0".into();
    // A test's gRPC clients live on the runtime that is blocked dropping the
    // server, so they cannot hang up: don't wait for them.
    config.grpc.shutdown_grace_secs = 0.0;
    // This test binary is not hookd: transforms run in the built one.
    hookd_server::use_transform_worker(crate::process::hookd_bin().to_owned());
    Server::start(config, Runtime::new(clock).with_sync(sync))
}

/// The secret hookd signs forwards with, as the tenant's service holds it.
pub const DEST_SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// A standard tenant `id` forwarding to `url`; `top` adds tenant keys,
/// `tables` adds tables after the destination.
pub fn tenant(id: &str, url: &str, top: &str, destination: &str, retry: &str) -> String {
    format!(
        r#"
[[tenants]]
id = "{id}"
scheme = "standard"
{top}
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
[tenants.destination]
url = "{url}"
secret = "{DEST_SECRET}"
{destination}
[tenants.retry]
jitter = 0.0
{retry}
"#
    )
}

/// acme's current secret.
pub fn acme_secret() -> Secret {
    Secret::from_provider(
        Scheme::Standard,
        "k2",
        "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=",
    )
    .unwrap()
}

/// Headers of a delivery to acme signed at `ts`.
pub fn signed(event_id: &str, ts: i64, body: &[u8]) -> Vec<(String, String)> {
    let mut headers = sign(Scheme::Standard, &acme_secret(), event_id, ts, body);
    headers.push(("content-type".into(), "application/json".into()));
    headers
}

/// A valid order event body.
pub fn order(event_id: &str) -> Vec<u8> {
    format!(r#"{{"event_id":"{event_id}","type":"order.paid","data":{{"amount":100}}}}"#)
        .into_bytes()
}

/// Unix seconds now, for servers on the system clock.
pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

/// Puts the data dir fixture `name` (`tests/fixtures/{name}`: sled's
/// `store/conf` and `store/db`, and the `sled` file) in place of `data`'s
/// store, with no write-ahead log beside it: the fixture's hookd was
/// stopped gracefully, so sled holds all it wrote.
pub fn put_fixture(data: &Path, name: &str) {
    let from = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(name);
    for dir in ["store", "wal"] {
        let _ = std::fs::remove_dir_all(data.join(dir));
    }
    std::fs::create_dir_all(data.join("store")).unwrap();
    for file in ["conf", "db"] {
        std::fs::copy(from.join("store").join(file), data.join("store").join(file)).unwrap();
    }
    std::fs::copy(from.join("sled"), data.join("sled")).unwrap();
}
