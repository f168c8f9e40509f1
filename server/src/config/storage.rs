//! `[storage]`'s engine choice and `[storage.postgres]`: which engine keeps
//! hookd's data, and how to reach a shared PostgreSQL.

use std::path::PathBuf;

use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};

use super::bounds::Count;
use crate::error::{Error, InvalidSetting, Result};

/// Which storage engine keeps hookd's data.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum StorageBackend {
    /// The embedded engine under `data_dir` (one process).
    #[default]
    Sled,
    /// A shared PostgreSQL (any number of replicas).
    Postgres,
}

/// `[storage.postgres]`.
#[derive(Debug, Clone, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct PostgresConfig {
    /// Connection URL (`postgres://user:pass@host:port/db?sslmode=..`): a
    /// secret, never logged.
    #[serde(default, skip_serializing)]
    pub url: Option<SecretString>,
    /// A file holding the URL (a mounted Secret), instead of `url`.
    #[serde(default)]
    pub url_file: Option<PathBuf>,
    /// Most connections this process opens.
    pub max_connections: usize,
    /// Longest one statement may run (ms); 0 for no limit.
    pub statement_timeout_ms: u64,
    /// How long a replica's claim to forward a tenant lasts unrenewed.
    pub forward_lease_secs: u64,
    /// How often each replica checks the catalog for changes made elsewhere.
    pub catalog_poll_ms: u64,
}

const MAX_CONNECTIONS: Count = Count { min: 1, max: 1_000 };
const STATEMENT_TIMEOUT_MS: Count = Count {
    min: 0,
    max: 3_600_000,
};
const FORWARD_LEASE_SECS: Count = Count { min: 3, max: 3_600 };
const CATALOG_POLL_MS: Count = Count {
    min: 50,
    max: 60_000,
};

impl PostgresConfig {
    /// Checks every key, naming it.
    pub fn check(&self, backend: StorageBackend) -> std::result::Result<(), InvalidSetting> {
        let max = self.max_connections as u64;
        MAX_CONNECTIONS.check("storage.postgres.max_connections", max)?;
        STATEMENT_TIMEOUT_MS.check(
            "storage.postgres.statement_timeout_ms",
            self.statement_timeout_ms,
        )?;
        FORWARD_LEASE_SECS.check(
            "storage.postgres.forward_lease_secs",
            self.forward_lease_secs,
        )?;
        CATALOG_POLL_MS.check("storage.postgres.catalog_poll_ms", self.catalog_poll_ms)?;
        match (backend, &self.url, &self.url_file) {
            (_, Some(_), Some(_)) => Err(InvalidSetting::new(
                "storage.postgres.url and storage.postgres.url_file",
                "set one, not both",
            )),
            (StorageBackend::Postgres, None, None) => Err(InvalidSetting::new(
                "storage.postgres.url",
                "required with storage.backend = \"postgres\" (or storage.postgres.url_file)",
            )),
            _ => Ok(()),
        }
    }

    /// The connection URL, from `url` or read from `url_file`.
    pub fn connection_url(&self) -> Result<SecretString> {
        match (&self.url, &self.url_file) {
            (Some(url), _) => Ok(SecretString::from(url.expose_secret().trim())),
            (None, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|e| {
                    Error::config(
                        "storage.postgres.url_file",
                        format!("{} cannot be read: {e}", path.display()),
                    )
                })?;
                Ok(SecretString::from(text.trim()))
            }
            (None, None) => Err(Error::config(
                "storage.postgres.url",
                "required with storage.backend = \"postgres\"",
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use secrecy::ExposeSecret;

    use super::StorageBackend;
    use crate::config::{Config, Overrides};

    fn load(toml: &str) -> crate::error::Result<Config> {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("hookd.toml");
        std::fs::write(&path, toml).unwrap();
        Config::load(Some(&path), &Overrides::default())
    }

    #[test]
    fn sled_is_the_default_and_postgres_keys_have_defaults() {
        let c = Config::with_defaults(Path::new("/tmp/x"));
        assert_eq!(c.storage.backend, StorageBackend::Sled);
        let pg = &c.storage.postgres;
        assert!(pg.url.is_none());
        assert_eq!(
            (
                pg.max_connections,
                pg.forward_lease_secs,
                pg.catalog_poll_ms
            ),
            (16, 15, 500)
        );
    }

    #[test]
    fn postgres_needs_a_url_and_errors_name_the_key() {
        let e = load("[storage]\nbackend = \"postgres\"\n").unwrap_err();
        assert!(e.to_string().contains("storage.postgres.url"), "{e}");
        let e = load("[storage]\nbackend = \"mysql\"\n").unwrap_err();
        assert!(e.to_string().contains("backend"), "{e}");
        let both = "[storage]\nbackend = \"postgres\"\n[storage.postgres]\n\
                    url = \"postgres://h/db\"\nurl_file = \"/run/secrets/url\"\n";
        let e = load(both).unwrap_err();
        assert!(e.to_string().contains("url_file"), "{e}");
        let short = "[storage.postgres]\nforward_lease_secs = 1\n";
        let e = load(short).unwrap_err();
        assert!(
            e.to_string()
                .contains("storage.postgres.forward_lease_secs"),
            "{e}"
        );
        let typo = "[storage.postgres]\nurll = \"x\"\n";
        assert!(load(typo).unwrap_err().to_string().contains("urll"));
    }

    #[test]
    fn the_url_comes_from_the_file_or_url_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("url");
        std::fs::write(&file, "postgres://u:secret@db:5432/hookd\n").unwrap();
        let toml = format!(
            "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl_file = {:?}\n",
            file.display().to_string()
        );
        let c = load(&toml).unwrap();
        let url = c.storage.postgres.connection_url().unwrap();
        assert_eq!(url.expose_secret(), "postgres://u:secret@db:5432/hookd");
        assert!(!format!("{:?}", c.storage.postgres).contains("secret@"));
        let c = load("[storage.postgres]\nurl = \"postgres://u:pw@h/d\"\n").unwrap();
        let url = c.storage.postgres.connection_url().unwrap();
        assert_eq!(url.expose_secret(), "postgres://u:pw@h/d");
    }
}
