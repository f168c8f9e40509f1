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
mod alerts;
pub mod bounds;
mod dashboard;
mod event_id;
mod forwarding;
#[cfg(test)]
mod hmac_tests;
#[cfg(test)]
mod hostile_tests;
mod http;
mod retention;
mod route;
mod secrets;
mod storage;
mod tenant;
#[cfg(test)]
mod tests;

pub use crate::tls::{GrpcTlsConfig, HttpTlsConfig};
pub use alerts::{
    check_rule, sink_secret, AlertsConfig, RuleConfig, SinkConfig, SinkFormat, TenantAlertsConfig,
    TenantRuleConfig, SINK_KID,
};
pub use bounds::{FRAMEWORK_MAX_HEAD_BYTES, MAX_BODY_LIMIT};
pub use dashboard::DashboardConfig;
pub use event_id::{EventIdRule, IdPart, CONTENT_EVENT_ID_PREFIX};
pub use retention::{RetentionConfig, LONGEST_SENDER_RETRY_SECS};
pub use route::{RouteConfig, MAX_ROUTES};
pub use storage::{PostgresConfig, StorageBackend};
pub use tenant::{
    check_public_url, load_secret, BreakerConfig, ConcurrencySettings, DestinationConfig,
    Forwarding, RateLimitConfig, RetryConfig, SecretConfig, SecretSourceError, SecretState,
    SignedBody, TenantConfig,
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
    /// Operational alerts: the operator's sink and the default rules.
    pub alerts: AlertsConfig,
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
    /// replay scope and rate limiter) is stopped; it starts again on the
    /// next delivery.
    pub tenant_idle_secs: u64,
    /// Keys the replay cache every tenant shares holds at most; full, the
    /// least recently used goes first, and a resend of its delivery is
    /// caught by the durable idempotency log instead.
    pub replay_cache_keys: u64,
    /// How many refusals per tenant are recorded for `ListRejections` and
    /// the dashboard, per kind (bad signature, refused content): beyond it
    /// a refusal is still answered and counted, but not written, so a
    /// flood of unsigned requests cannot fill the disk.
    pub rejection_records: RateLimitConfig,
    /// Most times a compressed body may grow when decoded (beyond its first
    /// 64 KiB): a bigger ratio is a decompression bomb, refused with 413
    /// `COMPRESSION_RATIO_TOO_HIGH` while it is being decoded.
    pub max_decompression_ratio: u64,
}

impl LimitsConfig {
    /// `replay_cache_keys` by default (`config.default.toml`): the keys of
    /// five tenants at the per-tenant default each had before the cache
    /// was shared.
    pub const DEFAULT_REPLAY_CACHE_KEYS: u64 = 500_000;
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
    /// and validates the result as data; the start resolves each tenant
    /// ([`check_tenants`](crate::check_tenants) does it without starting).
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

    /// Checks every key once, naming the key in the error: a tenant's
    /// numbers here; what it compiles and the secrets it loads when it is
    /// resolved (`tenant::resolve_tenants`).
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
        self.alerts.validate()?;
        self.forward.ca_certs()?;
        let mut seen = std::collections::HashSet::new();
        for (i, tenant) in self.tenants.iter().enumerate() {
            bounds::check_body_under_cap(self.limits.tenant_max_body_bytes, tenant.max_body_bytes)
                .and_then(|()| tenant.check_bounds())
                .map_err(|e| e.within(format_args!("tenants[{i}] ({})", tenant.id)))?;
            if let Some(alerts) = &tenant.alerts {
                alerts
                    .validate()
                    .map_err(|e| e.within(format_args!("tenants[{i}] ({})", tenant.id)))?;
            }
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
        bounds::REPLAY_CACHE_KEYS
            .check("limits.replay_cache_keys", self.limits.replay_cache_keys)?;
        bounds::DECOMPRESSION_RATIO.check(
            "limits.max_decompression_ratio",
            self.limits.max_decompression_ratio,
        )?;
        let records = &self.limits.rejection_records;
        bounds::RATE_PER_SEC.check("limits.rejection_records.per_sec", records.per_sec)?;
        bounds::RATE_BURST.check("limits.rejection_records.burst", u64::from(records.burst))
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
