//! Layered configuration: embedded defaults, an optional TOML file, `HOOKD_*`
//! environment variables, then flags; validated once at start.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
};

use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, InvalidSetting, Result},
    keyring::KeySources,
};
pub mod bounds;
mod dashboard;
#[cfg(test)]
mod hostile_tests;
mod http;
mod retention;
mod storage;
mod tenant;

pub use crate::tls::{GrpcTlsConfig, HttpTlsConfig};
pub use bounds::{FRAMEWORK_MAX_HEAD_BYTES, MAX_BODY_LIMIT};
pub use dashboard::DashboardConfig;
pub use retention::{RetentionConfig, LONGEST_SENDER_RETRY_SECS};
pub use storage::{PostgresConfig, StorageBackend};
pub use tenant::{
    load_secret, BreakerConfig, DestinationConfig, ForwardSettings, RateLimitConfig, RetryConfig,
    SecretConfig, SecretSourceError, SecretState, TenantConfig, TenantSettings,
};

/// The embedded defaults, every key documented.
pub const DEFAULT_TOML: &str = include_str!("../../config.default.toml");

/// hookd's whole configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Directory holding the embedded store, keys and tokens.
    pub data_dir: PathBuf,
    /// HTTP ingress.
    pub http: HttpConfig,
    /// gRPC control plane.
    pub grpc: GrpcConfig,
    /// Logging.
    pub log: LogConfig,
    /// Prometheus metrics.
    pub metrics: MetricsConfig,
    /// Durable storage.
    pub storage: StorageConfig,
    /// Retention of finished work.
    pub retention: RetentionConfig,
    /// Caps on what tenants may set.
    pub limits: LimitsConfig,
    /// Forwarding to destinations.
    pub forward: ForwardConfig,
    /// The delivery dashboard in the browser.
    pub dashboard: DashboardConfig,
    /// Tenants declared in the file.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// Master key and admin token, from the environment (never the file).
    #[serde(skip)]
    pub keys: KeySources,
}

/// HTTP ingress settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpConfig {
    /// Listen address; port 0 picks a free one.
    pub addr: String,
    /// Worker threads, 0 = one per core.
    pub workers: usize,
    /// Grace period for in-flight requests at shutdown.
    pub shutdown_timeout_secs: u64,
    /// Deadline for reading one whole request, head and body (408 past it).
    pub request_timeout_secs: u64,
    /// Largest request head (request line and header lines) accepted (431).
    pub max_header_bytes: usize,
    /// Open connections each worker serves at once; more wait to be accepted.
    pub max_connections: usize,
    /// How long an idle connection is kept for another request; 0 closes
    /// every connection after one answer.
    pub keep_alive_secs: u64,
    /// Serve HTTPS from these PEM files instead of plain HTTP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<HttpTlsConfig>,
}

/// gRPC control plane settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcConfig {
    /// Listen address; port 0 picks a free one.
    pub addr: String,
    /// How long open gRPC connections get to close at shutdown.
    pub shutdown_grace_secs: f64,
    /// Most WatchDeliveries streams one token holds open at once.
    pub watch_streams_per_token: usize,
    /// Serve gRPC over TLS from these PEM files instead of plaintext.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tls: Option<GrpcTlsConfig>,
}

/// Log output settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LogConfig {
    /// `text` or `json`.
    pub format: LogFormat,
    /// `RUST_LOG`-style filter.
    pub filter: String,
}

/// How log lines are written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum LogFormat {
    /// Human-readable lines.
    Text,
    /// One JSON object per line.
    Json,
}

impl std::str::FromStr for LogFormat {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Self, Self::Err> {
        match s {
            "text" => Ok(LogFormat::Text),
            "json" => Ok(LogFormat::Json),
            other => Err(format!(
                "log format {other:?} is neither \"text\" nor \"json\""
            )),
        }
    }
}

/// Prometheus metrics settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct MetricsConfig {
    /// Serve `GET /metrics`.
    pub enabled: bool,
    /// A separate address to serve `GET /metrics` on, e.g. `127.0.0.1:9090`;
    /// when set, the public HTTP address no longer serves it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub addr: Option<String>,
    /// Tenants that get a `tenant` label of their own, in the order they
    /// start; the rest are counted together as `tenant="other"`, so label
    /// cardinality stays bounded however many tenants there are.
    pub max_tenant_labels: usize,
    /// Deprecated and unused: queue and dead-letter gauges are kept by
    /// storage, so a scrape scans nothing. Still accepted (and bounded) so
    /// existing config files load; a value other than
    /// [`DEPRECATED_SCAN_LIMIT_DEFAULT`] is warned about once at start.
    pub scan_limit: usize,
}

/// The default of the unused `metrics.scan_limit`.
pub const DEPRECATED_SCAN_LIMIT_DEFAULT: usize = 100_000;

impl MetricsConfig {
    /// The warning to log at start when `metrics.scan_limit` is set to
    /// anything but its default: it no longer does anything.
    pub fn scan_limit_warning(&self) -> Option<String> {
        (self.scan_limit != DEPRECATED_SCAN_LIMIT_DEFAULT).then(|| {
            format!(
                "metrics.scan_limit = {} is deprecated and ignored: queue and dead-letter \
                 gauges are kept by storage and a scrape scans nothing; remove the key",
                self.scan_limit
            )
        })
    }
}

/// Durable storage settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Most writes one group commit takes.
    pub commit_batch_max: usize,
    /// fdatasync after each commit, so acknowledged events survive power loss.
    pub fsync: bool,
    /// Bytes of the embedded store's page cache.
    pub cache_capacity_bytes: u64,
    /// The engine: `sled` (embedded) or `postgres` (shared by replicas).
    pub backend: StorageBackend,
    /// How to reach PostgreSQL (with `backend = "postgres"`).
    pub postgres: PostgresConfig,
}

/// Caps the operator puts on every tenant's settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct LimitsConfig {
    /// Largest `max_body_bytes` any tenant may have (file or control plane).
    pub tenant_max_body_bytes: usize,
    /// Seconds without a delivery after which a tenant's actor (with its
    /// replay cache and rate limiter) is stopped; it starts again on the
    /// next delivery.
    pub tenant_idle_secs: u64,
    /// How many refusals per tenant are recorded for `ListRejections` and
    /// the dashboard, per kind (bad signature, refused content): beyond it
    /// a refusal is still answered and counted, but not written, so a
    /// flood of unsigned requests cannot fill the disk.
    pub refusal_records: RateLimitConfig,
}

/// Forwarding settings that are not per tenant.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct ForwardConfig {
    /// Networks a destination set over the control plane may reach although
    /// the destination address policy denies them by default.
    pub allow_networks: Vec<ipnet::IpNet>,
    /// PEM bundle of private CAs every destination may chain to, on top of
    /// the system's and the public roots.
    #[serde(default)]
    pub ca_file: Option<PathBuf>,
}

/// Values given on the command line (or their `HOOKD_*` env equivalents),
/// which win over the file.
#[derive(Debug, Clone, Default)]
pub struct Overrides {
    /// `--data-dir`.
    pub data_dir: Option<PathBuf>,
    /// `--http-addr`.
    pub http_addr: Option<String>,
    /// `--grpc-addr`.
    pub grpc_addr: Option<String>,
}

impl Config {
    /// Loads defaults, then `file`, then `HOOKD_*` env vars, then `overrides`,
    /// and validates the result.
    pub fn load(file: Option<&Path>, overrides: &Overrides) -> Result<Config> {
        let mut figment = Figment::from(Toml::string(DEFAULT_TOML));
        if let Some(path) = file {
            if !path.exists() {
                return Err(Error::config(
                    format!("config file {}", path.display()),
                    "does not exist",
                ));
            }
            figment = figment.merge(Toml::file(path));
        }
        figment = figment.merge(
            Env::prefixed("HOOKD_")
                .filter(|k| k.as_str().contains("__"))
                .split("__"),
        );
        if let Some(dir) = &overrides.data_dir {
            figment = figment.merge(Serialized::default("data_dir", dir));
        }
        if let Some(addr) = &overrides.http_addr {
            figment = figment.merge(Serialized::default("http.addr", addr));
        }
        if let Some(addr) = &overrides.grpc_addr {
            figment = figment.merge(Serialized::default("grpc.addr", addr));
        }
        let config: Config = figment.extract().map_err(|e| {
            let key = match e.path.is_empty() {
                true => "config file".to_owned(),
                false => e.path.join("."),
            };
            Error::config(key, e)
        })?;
        config.validate()?;
        Ok(config)
    }

    /// The embedded defaults alone, with the data dir and addresses given;
    /// handy for tests and embedding.
    pub fn with_defaults(data_dir: &Path) -> Config {
        let mut config: Config = Figment::from(Toml::string(DEFAULT_TOML))
            .extract()
            .expect("embedded defaults are valid");
        config.data_dir = data_dir.to_path_buf();
        config
    }

    /// Checks every key once, naming the key in the error.
    pub fn validate(&self) -> Result<()> {
        parse_addr("http.addr", &self.http.addr)?;
        parse_addr("grpc.addr", &self.grpc.addr)?;
        if let Some(addr) = &self.metrics.addr {
            parse_addr("metrics.addr", addr)?;
        }
        self.dashboard.validate()?;
        if let Some(tls) = &self.http.tls {
            crate::tls::http_server_config(tls)?;
        }
        if let Some(tls) = &self.grpc.tls {
            crate::tls::grpc_server_config(tls)?;
        }
        self.check_bounds()?;
        self.forward.ca_certs()?;
        let mut seen = std::collections::HashSet::new();
        for (i, tenant) in self.tenants.iter().enumerate() {
            tenant
                .resolve_under(self.limits.tenant_max_body_bytes)
                .map_err(|e| e.within(format_args!("tenants[{i}] ({})", tenant.id)))?;
            if !seen.insert(tenant.id.as_str()) {
                return Err(Error::config(
                    format!("tenants[{i}].id"),
                    format!("duplicate tenant id {:?}", tenant.id),
                ));
            }
        }
        Ok(self.retention.check_retry_windows(&self.tenants)?)
    }
}

impl ForwardConfig {
    /// The certificates of `ca_file`, none without it.
    pub fn ca_certs(&self) -> Result<Vec<reqwest::Certificate>> {
        match &self.ca_file {
            Some(path) => Ok(crate::egress::load_ca_file("forward.ca_file", path)?),
            None => Ok(Vec::new()),
        }
    }
}

impl Config {
    /// Every process-wide number against [`bounds`], naming the key.
    fn check_bounds(&self) -> std::result::Result<(), InvalidSetting> {
        use bounds::check_usize;
        check_usize(bounds::HTTP_WORKERS, "http.workers", self.http.workers)?;
        bounds::HTTP_SHUTDOWN_SECS.check(
            "http.shutdown_timeout_secs",
            self.http.shutdown_timeout_secs,
        )?;
        self.http.check_edge_bounds()?;
        bounds::GRPC_SHUTDOWN_SECS
            .check("grpc.shutdown_grace_secs", self.grpc.shutdown_grace_secs)?;
        check_usize(
            bounds::GRPC_WATCHES_PER_TOKEN,
            "grpc.watch_streams_per_token",
            self.grpc.watch_streams_per_token,
        )?;
        check_usize(
            bounds::METRICS_TENANT_LABELS,
            "metrics.max_tenant_labels",
            self.metrics.max_tenant_labels,
        )?;
        check_usize(
            bounds::METRICS_SCAN_LIMIT,
            "metrics.scan_limit",
            self.metrics.scan_limit,
        )?;
        check_usize(
            bounds::COMMIT_BATCH_MAX,
            "storage.commit_batch_max",
            self.storage.commit_batch_max,
        )?;
        bounds::CACHE_CAPACITY_BYTES.check(
            "storage.cache_capacity_bytes",
            self.storage.cache_capacity_bytes,
        )?;
        self.storage.postgres.check(self.storage.backend)?;
        let r = &self.retention;
        bounds::RETENTION_SECS.check("retention.idempotency_secs", r.idempotency_secs)?;
        bounds::RETENTION_SECS.check("retention.delivered_secs", r.delivered_secs)?;
        bounds::RETENTION_SECS.check("retention.dead_secs", r.dead_secs)?;
        bounds::SWEEP_INTERVAL_SECS
            .check("retention.sweep_interval_secs", r.sweep_interval_secs)?;
        check_usize(bounds::SWEEP_BATCH, "retention.sweep_batch", r.sweep_batch)?;
        check_usize(
            bounds::TENANT_BODY_CAP,
            "limits.tenant_max_body_bytes",
            self.limits.tenant_max_body_bytes,
        )?;
        bounds::TENANT_IDLE_SECS.check("limits.tenant_idle_secs", self.limits.tenant_idle_secs)?;
        let records = &self.limits.refusal_records;
        bounds::RATE_PER_SEC.check("limits.refusal_records.per_sec", records.per_sec)?;
        bounds::RATE_BURST.check("limits.refusal_records.burst", u64::from(records.burst))
    }
}

/// Parses a listen address, naming the key on failure.
pub fn parse_addr(key: &str, value: &str) -> Result<SocketAddr> {
    value.parse().map_err(|_| {
        Error::config(
            key,
            format!("{value:?} is not an address like 127.0.0.1:8080"),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load_str(toml: &str) -> Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.toml");
        std::fs::write(&path, toml).unwrap();
        Config::load(Some(&path), &Overrides::default())
    }

    #[test]
    fn embedded_defaults_match_the_design() {
        let c = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(c.data_dir, PathBuf::from("./hookd-data"));
        assert_eq!(c.http.addr, "127.0.0.1:8080");
        assert_eq!(c.grpc.addr, "127.0.0.1:50051");
        assert!(c.storage.fsync);
    }

    #[test]
    fn the_commented_tenant_example_loads_when_uncommented() {
        // The example names a CA bundle; put a real one where it points.
        let dir = tempfile::tempdir().unwrap();
        let ca = dir.path().join("partner-ca.pem");
        let cert = rcgen::generate_simple_self_signed(vec!["partner.example".into()]).unwrap();
        std::fs::write(&ca, cert.cert.pem()).unwrap();
        let example: String = DEFAULT_TOML
            .lines()
            .skip_while(|line| *line != "# [[tenants]]")
            .map(|line| format!("{}\n", line.trim_start_matches('#').trim_start()))
            .collect::<String>()
            .replace("/etc/hookd/partner-ca.pem", &ca.display().to_string());
        let c = load_str(&example).unwrap_or_else(|e| panic!("{e}\n{example}"));
        let t = c.tenants[0].resolve().unwrap();
        assert_eq!(t.id.as_str(), "acme");
        let forward = t.forward.as_ref().expect("the example forwards");
        assert_eq!(forward.max_in_flight, 8);
        assert!(forward.delivery_rate.is_some());
        let contracts = &t.contracts.contracts;
        assert_eq!(contracts.len(), 1, "the example declares a contract");
        assert_eq!(contracts[0].key(), ("order.paid", Some("2")));
        assert_eq!(contracts[0].required(), ["event_id", "type", "data"]);
        let broken = example.replace(r#""order_id": "o_1""#, r#""order_id": 7"#);
        let e = load_str(&broken).unwrap_err().to_string();
        assert!(
            e.contains("tenants[0] (acme): contracts[0] (order.paid): example: does not pass the schema at \"/data/order_id\""),
            "{e}"
        );
    }

    #[test]
    fn flags_win_over_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.toml");
        std::fs::write(&path, "[http]\naddr = \"127.0.0.1:9999\"\n").unwrap();
        let o = Overrides {
            http_addr: Some("127.0.0.1:0".into()),
            ..Default::default()
        };
        let c = Config::load(Some(&path), &o).unwrap();
        assert_eq!(c.http.addr, "127.0.0.1:0");
    }

    #[test]
    fn tenant_with_inline_and_file_secrets_resolves() {
        let dir = tempfile::tempdir().unwrap();
        let secret_path = dir.path().join("s");
        std::fs::write(&secret_path, "hk-previous\n").unwrap();
        let c = load_str(&format!(
            "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k2\"\nsecret = \"hk-current\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret_file = {:?}\n",
            secret_path
        ))
        .unwrap();
        let t = c.tenants[0].resolve().unwrap();
        assert_eq!(t.current.kid(), "k2");
        assert_eq!(t.previous.as_ref().unwrap().0.kid(), "k1");
    }

    #[test]
    fn secrets_can_come_from_the_environment() {
        std::env::set_var("HOOKD_TEST_SECRET_FROM_ENV", "hk-from-env");
        let c = load_str(
            "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k7\"\nsecret_env = \"HOOKD_TEST_SECRET_FROM_ENV\"\n",
        )
        .unwrap();
        assert_eq!(c.tenants[0].resolve().unwrap().current.kid(), "k7");
        let e = load_str(
            "[[tenants]]\nid = \"acme\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret_env = \"HOOKD_TEST_UNSET_VARIABLE\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("HOOKD_TEST_UNSET_VARIABLE is not set"), "{e}");
    }

    #[test]
    fn debug_output_holds_no_secret() {
        let mut c = load_str(
            "[[tenants]]\nid = \"acme\"\nscheme = \"hookd\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"hk-inline-signing-secret\"\n[tenants.destination]\nurl = \"http://127.0.0.1:9/\"\nsecret = \"whsec_ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl\"\n",
        )
        .unwrap();
        c.keys = KeySources {
            master_key: Some("bWFzdGVyLWtleS1ieXRlcy1tYXN0ZXIta2V5LWJ5dGVzIQ==".into()),
            master_key_file: None,
            admin_token: Some("hka_admin-token-that-must-not-leak".into()),
        };
        let printed = format!("{c:?} {c:#?} {:?} {:?}", c.tenants[0], c.keys);
        for secret in [
            "hk-inline-signing-secret",
            "ZGVzdGluYXRpb24tc2VjcmV0LXZhbHVl",
            "bWFzdGVyLWtleS1ieXRlcy1tYXN0ZXIta2V5LWJ5dGVzIQ==",
            "admin-token-that-must-not-leak",
        ] {
            assert!(
                !printed.contains(secret),
                "{{:?}} of the config shows {secret}"
            );
        }
        assert!(
            printed.contains("acme") && printed.contains("k1"),
            "{printed}"
        );
    }

    #[test]
    fn allow_networks_parse_and_a_bad_one_names_the_key() {
        let quickstart = Path::new(env!("CARGO_MANIFEST_DIR")).join("../examples/quickstart.toml");
        let c = Config::load(Some(&quickstart), &Overrides::default()).unwrap();
        assert_eq!(
            c.forward.allow_networks,
            vec!["127.0.0.1/32".parse::<ipnet::IpNet>().unwrap()]
        );
        assert!(Config::load(None, &Overrides::default())
            .unwrap()
            .forward
            .allow_networks
            .is_empty());
        let e = load_str("[forward]\nallow_networks = [\"10.0.0.0/33\"]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("forward.allow_networks"), "{e}");
    }

    #[test]
    fn errors_name_the_key() {
        let e = load_str("[[tenants]]\nid = \"acme\"\nscheme = \"paypal\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("tenants[0]") && e.contains("scheme"), "{e}");
        let e = load_str("[[tenants]]\nid = \"acme\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("current secret"), "{e}");
        let e = load_str("[http]\naddr = \"nope\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("http.addr"), "{e}");
        let e = load_str("[http]\nmax_header_bytes = 200000\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("http.max_header_bytes"), "{e}");
        let e = load_str("[metrics]\naddr = \"public\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("metrics.addr"), "{e}");
        let e = load_str("[http]\nrequest_timeout_secs = 0\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("http.request_timeout_secs"), "{e}");
        let e = load_str("[htttp]\naddr = \"127.0.0.1:1\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("htttp"), "{e}");
    }

    #[test]
    fn the_unused_scan_limit_still_loads_and_a_set_one_is_warned_about() {
        let c = load_str("[metrics]\nscan_limit = 500\n").unwrap();
        let warning = c.metrics.scan_limit_warning().unwrap();
        assert!(warning.contains("metrics.scan_limit = 500"), "{warning}");
        let defaults = Config::load(None, &Overrides::default()).unwrap();
        assert_eq!(defaults.metrics.scan_limit_warning(), None);
    }

    #[test]
    fn tls_files_are_checked_at_load_naming_the_key() {
        let e = load_str("[grpc.tls]\ncert_file = \"/nonexistent/grpc.pem\"\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("key_file"), "{e}");
        let e = load_str(
            "[grpc.tls]\ncert_file = \"/nonexistent/grpc.pem\"\nkey_file = \"/nonexistent/grpc.key\"\n",
        )
        .unwrap_err()
        .to_string();
        assert!(
            e.contains("grpc.tls.cert_file") && e.contains("/nonexistent/grpc.pem"),
            "{e}"
        );
        let e =
            load_str("[http.tls]\ncert_file = \"a\"\nkey_file = \"b\"\nclient_ca_file = \"c\"\n")
                .unwrap_err()
                .to_string();
        assert!(e.contains("client_ca_file"), "{e}");
        let c = Config::load(None, &Overrides::default()).unwrap();
        assert!(
            c.http.tls.is_none() && c.grpc.tls.is_none(),
            "plaintext by default"
        );
    }
}
