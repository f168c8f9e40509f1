//! Where hookd keeps its data in a run: its embedded engine (sled, in the
//! run's temp data dir) or PostgreSQL. `forward` gives every run on
//! PostgreSQL a database of its own, created empty on the server of
//! `--postgres-url` before the run and dropped after it, whatever the
//! run's outcome; `compare` points hookd at the URL as given.

use std::{fmt::Write as _, future::Future};

use anyhow::{bail, Context};
use tokio_postgres::{Client, NoTls};

/// What a run's hookd stores its data in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Storage {
    /// hookd's embedded engine, in its data dir.
    Sled,
    /// PostgreSQL: the URL of the database hookd makes its tables in.
    Postgres(String),
}

impl Storage {
    /// The engine's name in reports: `sled` or `postgres`.
    pub fn engine(&self) -> &'static str {
        match self {
            Storage::Sled => "sled",
            Storage::Postgres(_) => "postgres",
        }
    }

    /// The part of hookd's config file that chooses this storage (nothing
    /// for sled, hookd's default).
    pub fn config(&self) -> String {
        match self {
            Storage::Sled => String::new(),
            Storage::Postgres(url) => postgres_config(url),
        }
    }
}

/// The engine's name in reports for runs on `server` (a PostgreSQL URL,
/// `None`: sled), whatever database each run gets there.
pub fn engine_of(server: Option<&str>) -> &'static str {
    match server {
        Some(_) => "postgres",
        None => "sled",
    }
}

/// hookd's storage on the PostgreSQL at `url`.
pub fn postgres_config(url: &str) -> String {
    format!("\n[storage]\nbackend = \"postgres\"\n\n[storage.postgres]\nurl = {url:?}\n")
}

/// Runs `run` on fresh storage: sled when `server` is `None` (each hookd
/// gets a temp data dir of its own), else a database created empty for it
/// on the PostgreSQL server at `server` and dropped once `run` is over,
/// whether it succeeded or not (a failed drop is reported on stderr, the
/// run's outcome kept).
pub async fn with_fresh<T, F, Fut>(server: Option<&str>, run: F) -> anyhow::Result<T>
where
    F: FnOnce(Storage) -> Fut,
    Fut: Future<Output = anyhow::Result<T>>,
{
    let Some(server) = server else {
        return run(Storage::Sled).await;
    };
    let database = RunDatabase::create(server).await?;
    let outcome = run(Storage::Postgres(database.url.clone())).await;
    database.drop_now().await;
    outcome
}

/// A database of one run's own on a PostgreSQL server, dropped (best
/// effort) by [`RunDatabase::drop_now`], or when dropped unawaited (a
/// panic unwinding through the run).
#[derive(Debug)]
struct RunDatabase {
    /// The server's URL as given: the connection that creates and drops.
    server: String,
    /// `hookd_bench_<pid>_<random>`.
    name: String,
    /// `server` with `name` as its database: hookd's URL.
    url: String,
    /// Whether the drop was already tried.
    dropped: bool,
}

impl RunDatabase {
    /// Creates a database named after this process and a random number on
    /// the server at `server`.
    async fn create(server: &str) -> anyhow::Result<RunDatabase> {
        let name = format!(
            "hookd_bench_{}_{:08x}",
            std::process::id(),
            rand::random::<u32>()
        );
        let url = with_database(server, &name)?;
        let client = connect(server).await?;
        client
            .batch_execute(&format!("CREATE DATABASE \"{name}\""))
            .await
            .with_context(|| format!("cannot create the database {name} on --postgres-url"))?;
        Ok(RunDatabase {
            server: server.to_owned(),
            name,
            url,
            dropped: false,
        })
    }

    /// Drops the database, even with hookd still connected, and says on
    /// stderr if that failed.
    async fn drop_now(mut self) {
        self.dropped = true;
        if let Err(e) = drop_database(&self.server, &self.name).await {
            eprintln!(
                "warning: could not drop the database {}: {e:#}; drop it by hand",
                self.name
            );
        }
    }
}

impl Drop for RunDatabase {
    fn drop(&mut self) {
        if self.dropped {
            return;
        }
        let (server, name) = (self.server.clone(), self.name.clone());
        // Inside the run's runtime: drop it from a thread of its own.
        let dropped = std::thread::spawn(move || {
            tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .map_err(anyhow::Error::from)
                .and_then(|runtime| runtime.block_on(drop_database(&server, &name)))
        })
        .join();
        if !matches!(dropped, Ok(Ok(()))) {
            eprintln!("warning: could not drop the database {}", self.name);
        }
    }
}

/// Connects to the server at `url` (without TLS), the connection driven
/// by a task of its own.
async fn connect(url: &str) -> anyhow::Result<Client> {
    // The URL may hold a password: never put it in a message.
    let (client, connection) = tokio_postgres::connect(url, NoTls)
        .await
        .context("cannot connect to --postgres-url (hookd-bench connects without TLS)")?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(client)
}

/// Drops the database `name` on the server at `server`, ending any
/// session still connected to it.
async fn drop_database(server: &str, name: &str) -> anyhow::Result<()> {
    let client = connect(server).await?;
    client
        .batch_execute(&format!("DROP DATABASE IF EXISTS \"{name}\" WITH (FORCE)"))
        .await?;
    Ok(())
}

/// `url` (`postgres://` or `postgresql://`) with `database` as its
/// database, its user, password, hosts and parameters kept. Read as
/// tokio-postgres reads it: the credentials run to the first `@`, the
/// hosts to the first `/` or `?`, the database to the `?`.
pub fn with_database(url: &str, database: &str) -> anyhow::Result<String> {
    let Some(scheme_end) = ["postgres://", "postgresql://"]
        .iter()
        .find_map(|scheme| url.starts_with(scheme).then_some(scheme.len()))
    else {
        bail!("--postgres-url must be a URL starting with postgres:// or postgresql://");
    };
    let rest = &url[scheme_end..];
    let hosts_start = rest.find('@').map_or(0, |at| at + 1);
    let hosts_end = rest[hosts_start..]
        .find(['/', '?'])
        .map_or(rest.len(), |i| hosts_start + i);
    let query = rest[hosts_end..].find('?').map(|i| &rest[hosts_end + i..]);
    if query.is_some_and(|q| q[1..].split('&').any(|p| p.starts_with("dbname="))) {
        bail!("--postgres-url names its database in the path, not as a dbname parameter");
    }
    let mut out = url[..scheme_end + hosts_end].to_owned();
    let _ = write!(out, "/{database}{}", query.unwrap_or(""));
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_replaced_and_everything_else_kept() {
        for (url, expected) in [
            (
                "postgres://postgres@127.0.0.1:55441/postgres",
                "postgres://postgres@127.0.0.1:55441/db",
            ),
            (
                "postgresql://u:p%40ss@h1:5432,h2:5433/bench?sslmode=disable&application_name=x",
                "postgresql://u:p%40ss@h1:5432,h2:5433/db?sslmode=disable&application_name=x",
            ),
            // No database: one is added, before the parameters.
            ("postgres://u@localhost", "postgres://u@localhost/db"),
            ("postgres://u@localhost/", "postgres://u@localhost/db"),
            (
                "postgres://localhost?connect_timeout=5",
                "postgres://localhost/db?connect_timeout=5",
            ),
            // A socket directory given as a parameter, no host at all.
            (
                "postgres:///postgres?host=/run/postgresql",
                "postgres:///db?host=/run/postgresql",
            ),
            // A '/' or '?' in the password ends nothing: the credentials
            // run to the '@', as tokio-postgres reads them.
            (
                "postgres://u:a/b?c@[::1]:5432/old",
                "postgres://u:a/b?c@[::1]:5432/db",
            ),
        ] {
            assert_eq!(with_database(url, "db").unwrap(), expected, "{url}");
        }
    }

    #[test]
    fn urls_it_cannot_rewrite_are_refused() {
        for (url, expected) in [
            ("host=localhost dbname=postgres", "postgres://"),
            ("mysql://u@localhost/db", "postgres://"),
            ("postgres://u@localhost?dbname=x", "dbname"),
        ] {
            let err = with_database(url, "db").unwrap_err().to_string();
            assert!(err.contains(expected), "{url}: {err}");
        }
    }

    #[test]
    fn the_rewritten_url_names_the_new_database_for_tokio_postgres() {
        let url = with_database(
            "postgres://u:pw@h:6000/old?sslmode=disable",
            "hookd_bench_1_2",
        )
        .unwrap();
        let config: tokio_postgres::Config = url.parse().unwrap();
        assert_eq!(config.get_dbname(), Some("hookd_bench_1_2"));
        assert_eq!(config.get_user(), Some("u"));
        assert_eq!(config.get_password(), Some(&b"pw"[..]));
        assert_eq!(config.get_ports(), [6000]);
    }

    #[test]
    fn the_storage_names_its_engine_and_writes_its_config() {
        assert_eq!(
            (Storage::Sled.engine(), Storage::Sled.config()),
            ("sled", String::new())
        );
        let pg = Storage::Postgres("postgres://u@127.0.0.1/b".into());
        assert_eq!(pg.engine(), "postgres");
        let config = pg.config();
        assert!(config.contains("backend = \"postgres\""), "{config}");
        assert!(
            config.contains("url = \"postgres://u@127.0.0.1/b\""),
            "{config}"
        );
        assert_eq!(
            (engine_of(None), engine_of(Some("postgres://h/db"))),
            ("sled", "postgres")
        );
    }
}
