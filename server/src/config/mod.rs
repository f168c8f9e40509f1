//! Layered configuration: embedded defaults, an optional TOML file, `HOOKD_*`
//! environment variables, then flags; validated once at start.

use std::{
    net::SocketAddr,
    path::{Path, PathBuf},
    time::Duration,
};

use actix_web::http::KeepAlive;
use figment::{
    providers::{Env, Format, Serialized, Toml},
    Figment,
};
use opentelemetry_sdk::trace::SdkTracerProvider;
use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    keyring::KeySources,
};
use tenant::positive;

mod tenant;

pub use tenant::{
    load_secret, BreakerConfig, DestinationConfig, ForwardSettings, RateLimitConfig, RetryConfig,
    SecretConfig, SecretState, TenantConfig, TenantSettings, MAX_BODY_LIMIT,
};

/// The embedded defaults, every key documented.
pub const DEFAULT_TOML: &str = include_str!("../../config.default.toml");

/// hookd's whole configuration.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct Config {
    /// Directory holding the sled database.
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
    /// Tenants declared in the file.
    #[serde(default)]
    pub tenants: Vec<TenantConfig>,
    /// Master key and admin token, from the environment (never the file).
    #[serde(skip)]
    pub keys: KeySources,
    /// Where spans go: the binary sets an OTLP pipeline from the `OTEL_*`
    /// variables, a test an in-memory exporter. `None`: spans still get ids,
    /// so `traceparent` reaches destinations, but nothing is exported.
    #[serde(skip)]
    pub tracer_provider: Option<SdkTracerProvider>,
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
}

/// The largest head actix-http itself reads before answering a bare 431.
pub const FRAMEWORK_MAX_HEAD_BYTES: usize = 128 * 1024;

impl HttpConfig {
    fn validate(&self) -> Result<()> {
        if !(1..=86_400).contains(&self.request_timeout_secs) {
            return Err(Error::Config(
                "http.request_timeout_secs must be between 1 and 86400".into(),
            ));
        }
        if !(1024..=FRAMEWORK_MAX_HEAD_BYTES).contains(&self.max_header_bytes) {
            return Err(Error::Config(format!(
                "http.max_header_bytes must be between 1024 and {FRAMEWORK_MAX_HEAD_BYTES}"
            )));
        }
        if self.max_connections == 0 {
            return Err(Error::Config(
                "http.max_connections must be at least 1".into(),
            ));
        }
        Ok(())
    }

    /// Keep-alive as actix takes it.
    pub fn keep_alive(&self) -> KeepAlive {
        match self.keep_alive_secs {
            0 => KeepAlive::Disabled,
            secs => KeepAlive::Timeout(Duration::from_secs(secs)),
        }
    }

    /// How long the head of a request may take to arrive: a sixth of the
    /// request deadline, at most 5 s (actix's head timer).
    pub fn head_timeout(&self) -> Duration {
        (Duration::from_secs(self.request_timeout_secs) / 6).min(Duration::from_secs(5))
    }

    /// How long the body may take once the head is in: the rest of the
    /// request deadline, so head and body together stay within it.
    pub fn body_timeout(&self) -> Duration {
        Duration::from_secs(self.request_timeout_secs) - self.head_timeout()
    }
}

/// gRPC control plane settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct GrpcConfig {
    /// Listen address; port 0 picks a free one.
    pub addr: String,
    /// How long open gRPC connections get to close at shutdown.
    pub shutdown_grace_secs: f64,
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
}

/// Durable storage settings.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct StorageConfig {
    /// Most writes one group commit takes.
    pub commit_batch_max: usize,
    /// fdatasync after each commit, so acknowledged events survive power loss.
    pub fsync: bool,
}

/// How long finished work is kept.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RetentionConfig {
    /// Idempotency records older than this are forgotten.
    pub idempotency_secs: u64,
    /// Delivered events (body, attempts) older than this are deleted.
    pub delivered_secs: u64,
    /// Pause between sweeps.
    pub sweep_interval_secs: f64,
    /// Most records one sweep step deletes per tenant.
    pub sweep_batch: usize,
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
                return Err(Error::Config(format!(
                    "config file {} does not exist",
                    path.display()
                )));
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
        let config: Config = figment
            .extract()
            .map_err(|e| Error::Config(e.to_string()))?;
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
        self.http.validate()?;
        if !(self.grpc.shutdown_grace_secs.is_finite() && self.grpc.shutdown_grace_secs >= 0.0) {
            return Err(Error::Config(
                "grpc.shutdown_grace_secs must be >= 0".into(),
            ));
        }
        if self.retention.sweep_batch == 0 || !positive(self.retention.sweep_interval_secs) {
            return Err(Error::Config(
                "retention: sweep_batch must be >= 1 and sweep_interval_secs > 0".into(),
            ));
        }
        if let Some(addr) = &self.metrics.addr {
            parse_addr("metrics.addr", addr)?;
        }
        if self.storage.commit_batch_max == 0 {
            return Err(Error::Config(
                "storage.commit_batch_max must be at least 1".into(),
            ));
        }
        let mut seen = std::collections::HashSet::new();
        for (i, tenant) in self.tenants.iter().enumerate() {
            tenant
                .resolve()
                .map_err(|e| Error::Config(format!("tenants[{i}] ({}): {e}", tenant.id)))?;
            if !seen.insert(tenant.id.as_str()) {
                return Err(Error::Config(format!(
                    "tenants[{i}].id: duplicate tenant id {:?}",
                    tenant.id
                )));
            }
        }
        Ok(())
    }
}

/// Parses a listen address, naming the key on failure.
pub fn parse_addr(key: &str, value: &str) -> Result<SocketAddr> {
    value.parse().map_err(|_| {
        Error::Config(format!(
            "{key}: {value:?} is not an address like 127.0.0.1:8080"
        ))
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
}
