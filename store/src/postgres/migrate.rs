//! The schema's versioned migrations, embedded in the binary and applied in
//! order under a PostgreSQL advisory lock.

use secrecy::SecretString;

use super::{pg, PgOptions, PgStore};
use crate::error::{Error, Result};

/// Every migration: version and SQL, in order. Never edit one that was
/// released; add the next.
const MIGRATIONS: &[(i32, &str)] = &[
    (1, include_str!("migrations/0001_init.sql")),
    (2, include_str!("migrations/0002_rejections.sql")),
    (3, include_str!("migrations/0003_redirects.sql")),
    (4, include_str!("migrations/0004_rejection_signature.sql")),
    (5, include_str!("migrations/0005_lease_epoch.sql")),
    (6, include_str!("migrations/0006_rejections_at.sql")),
    (7, include_str!("migrations/0007_queue_waiting.sql")),
    (8, include_str!("migrations/0008_states_event_type.sql")),
];

/// The advisory lock key that serialises migrations ("hookd" in ASCII).
const LOCK_KEY: i64 = 0x68_6f6f_6b64;

/// Applies the migrations not yet applied on `client`'s database; returns
/// how many. Holds the advisory lock while it looks and applies.
pub(super) async fn apply(client: &mut deadpool_postgres::Client) -> Result<usize> {
    client
        .execute("SELECT pg_advisory_lock($1)", &[&LOCK_KEY])
        .await
        .map_err(pg)?;
    let applied = apply_locked(client).await;
    let unlocked = client
        .execute("SELECT pg_advisory_unlock($1)", &[&LOCK_KEY])
        .await
        .map_err(pg);
    let applied = applied?;
    unlocked?;
    Ok(applied)
}

async fn apply_locked(client: &mut deadpool_postgres::Client) -> Result<usize> {
    client
        .batch_execute(
            "CREATE TABLE IF NOT EXISTS hookd_schema_version (
                version int PRIMARY KEY,
                applied_at timestamptz NOT NULL DEFAULT now()
            )",
        )
        .await
        .map_err(pg)?;
    let current: i32 = client
        .query_one(
            "SELECT coalesce(max(version), 0) FROM hookd_schema_version",
            &[],
        )
        .await
        .map_err(pg)?
        .get(0);
    let newest = MIGRATIONS.last().map_or(0, |m| m.0);
    if current > newest {
        return Err(Error::config(
            "storage.postgres",
            format!(
                "the database's schema is version {current}, newer than this \
             hookd knows ({newest}); run a hookd at least as new"
            ),
        ));
    }
    let mut applied = 0;
    for (version, sql) in MIGRATIONS.iter().filter(|m| m.0 > current) {
        let tx = client.transaction().await.map_err(pg)?;
        tx.batch_execute(sql).await.map_err(pg)?;
        tx.execute(
            "INSERT INTO hookd_schema_version (version) VALUES ($1)",
            &[version],
        )
        .await
        .map_err(pg)?;
        tx.commit().await.map_err(pg)?;
        applied += 1;
    }
    Ok(applied)
}

/// `hookd migrate`: applies the migrations to the database at `url` (as
/// every start does) and returns the schema version it is at.
///
/// The schema's versioned migrations, embedded in the binary and applied in
/// order under a PostgreSQL advisory lock, so replicas starting together
/// never race; `hookd_schema_version` records each one applied.
pub fn migrate(url: SecretString, max_connections: usize) -> Result<usize> {
    let store = PgStore::open(PgOptions {
        url,
        max_connections,
        statement_timeout_ms: 0,
        batch_max: 1,
    })?;
    store.run(|db| async move {
        let client = db.client().await?;
        let version: i32 = client
            .query_one("SELECT max(version) FROM hookd_schema_version", &[])
            .await
            .map_err(pg)?
            .get(0);
        Ok(version as usize)
    })
}
