//! Reaching PostgreSQL: the sessions' settings, the connection pools, TLS
//! as the URL's `sslmode` asks, and the health probe.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    time::Duration,
};

use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use secrecy::ExposeSecret;
use tokio_postgres_rustls::MakeRustlsConnect;

use super::{Db, PgOptions, SIDE_CONNECTIONS};
use crate::error::{Error, Result};

/// The sessions' settings from `options`; the URL's host and database are
/// logged, never the URL.
pub(super) fn session_config(options: &PgOptions) -> Result<tokio_postgres::Config> {
    let mut config: tokio_postgres::Config = options.url.expose_secret().parse().map_err(|_| {
        Error::config(
            "storage.postgres.url",
            "not a valid PostgreSQL connection URL",
        )
    })?;
    // Every run of a prepared statement is planned for its parameters: the
    // queue grows from empty to a backlog within seconds, and a generic
    // plan made while it was small stays.
    let mut session = String::from("-c synchronous_commit=on -c plan_cache_mode=force_custom_plan");
    if options.statement_timeout_ms > 0 {
        session.push_str(&format!(
            " -c statement_timeout={}",
            options.statement_timeout_ms
        ));
    }
    config.options(&session);
    config.application_name("hookd");
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(Duration::from_secs(5));
    }
    let hosts: Vec<String> = config
        .get_hosts()
        .iter()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .collect();
    tracing::info!(
        hosts = %hosts.join(","),
        database = config.get_dbname().unwrap_or("(default)"),
        max_connections = options.max_connections,
        side_connections = SIDE_CONNECTIONS,
        "storage: postgres"
    );
    Ok(config)
}

/// A pool of at most `size` connections with `config`.
pub(super) fn pool(config: &tokio_postgres::Config, size: usize) -> Result<Pool> {
    let manager = Manager::from_config(
        config.clone(),
        tls_connector(),
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(Some(Duration::from_secs(10)))
        .create_timeout(Some(Duration::from_secs(5)))
        .recycle_timeout(Some(Duration::from_secs(5)))
        .build()
        .map_err(|e| Error::config("storage.postgres", e))
}

/// TLS as the URL's `sslmode` asks (`prefer`, the default, falls back to
/// plaintext when the server offers none; `require` insists): the server's
/// certificate is verified against the system's roots (`SSL_CERT_FILE`
/// for a private CA) and the public ones, and must name the host.
fn tls_connector() -> MakeRustlsConnect {
    let mut roots = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    let native = rustls_native_certs::load_native_certs();
    roots.add_parsable_certificates(native.certs);
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .expect("ring supports the default TLS versions")
        .with_root_certificates(roots)
        .with_no_client_auth();
    MakeRustlsConnect::new(config)
}

/// Keeps [`Storage::is_healthy`] true while the database answers.
pub(super) async fn probe(db: Db, healthy: Arc<AtomicBool>) {
    let mut tick = tokio::time::interval(Duration::from_millis(500));
    loop {
        tick.tick().await;
        let up = match db.side_client().await {
            Ok(client) => client.simple_query("SELECT 1").await.is_ok(),
            Err(_) => false,
        };
        if healthy.swap(up, Ordering::SeqCst) != up {
            match up {
                true => tracing::info!("postgres answers again"),
                false => tracing::error!(
                    "postgres does not answer: deliveries get 503 STORAGE_UNAVAILABLE and \
                     /readyz fails until it does"
                ),
            }
        }
    }
}
