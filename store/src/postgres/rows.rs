//! The control plane's rows in one PostgreSQL table, `hookd_catalog`.

use super::{pg, PgStore};
use crate::{
    api::{CatalogRows, RowChange, Table},
    error::{Error, Result},
};

/// The catalog's rows of one database.
///
/// The control plane's rows in one PostgreSQL table, `hookd_catalog`
/// (table name, key, value); every change but an alert's bumps
/// `hookd_catalog_version` in the same transaction, so other processes see
/// it by polling. A row
/// created ([`RowChange::Create`]) is one `INSERT .. ON CONFLICT DO
/// NOTHING`: of processes creating one key at once, one wins.
pub(super) struct PgRows {
    store: PgStore,
}

impl PgRows {
    pub(super) fn new(store: PgStore) -> PgRows {
        PgRows { store }
    }
}

/// A table's name in `hookd_catalog.tbl`.
fn name(table: Table) -> &'static str {
    match table {
        Table::Tenants => "tenants",
        Table::Secrets => "secrets",
        Table::Tokens => "tokens",
        Table::Drops => "tenant_drops",
        Table::Contracts => "contracts",
        Table::ContractRevisions => "contract_revisions",
        Table::AlertSettings => "alert_settings",
        Table::Alerts => "alerts",
        Table::Holds => "route_holds",
        Table::Replays => "replays",
        Table::ReplayProgress => "replay_progress",
    }
}

impl CatalogRows for PgRows {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>> {
        let key = key.to_string();
        self.store.run(|db| async move {
            let row = db
                .client()
                .await?
                .query_opt(
                    "SELECT value FROM hookd_catalog WHERE tbl = $1 AND key = $2",
                    &[&name(table), &key],
                )
                .await
                .map_err(pg)?;
            Ok(row.map(|r| r.get(0)))
        })
    }

    fn scan(&self, table: Table, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        let prefix = prefix.to_string();
        self.store.run(|db| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT key, value FROM hookd_catalog WHERE tbl = $1 AND starts_with(key, $2) \
                     ORDER BY key",
                    &[&name(table), &prefix],
                )
                .await
                .map_err(pg)?;
            Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
        })
    }

    fn apply(&self, changes: &[RowChange]) -> Result<()> {
        let changes = changes.to_vec();
        self.store.run(|db| async move {
            let mut client = db.client().await?;
            let tx = client.transaction().await.map_err(pg)?;
            // The version row first: concurrent catalog writes queue on it.
            // Alerts change as often as their conditions are seen, a
            // replay's progress as often as it takes a step, and no other
            // process follows either, so they alone bump nothing.
            let unfollowed = |table| matches!(table, Table::Alerts | Table::ReplayProgress);
            if changes.iter().any(|change| !unfollowed(change.table())) {
                tx.execute(
                    "UPDATE hookd_catalog_version SET version = version + 1 WHERE id = 1",
                    &[],
                )
                .await
                .map_err(pg)?;
            }
            for change in &changes {
                match change {
                    RowChange::Create(table, key, value) => {
                        let inserted = tx
                            .execute(
                                "INSERT INTO hookd_catalog (tbl, key, value) VALUES ($1, $2, $3) \
                                 ON CONFLICT (tbl, key) DO NOTHING",
                                &[&name(*table), key, value],
                            )
                            .await
                            .map_err(pg)?;
                        // Dropping the transaction rolls every change back.
                        if inserted == 0 {
                            return Err(Error::AlreadyExists(key.clone()));
                        }
                        Ok(inserted)
                    }
                    RowChange::Put(table, key, value) => {
                        tx.execute(
                            "INSERT INTO hookd_catalog (tbl, key, value) VALUES ($1, $2, $3) \
                             ON CONFLICT (tbl, key) DO UPDATE SET value = EXCLUDED.value",
                            &[&name(*table), key, value],
                        )
                        .await
                    }
                    RowChange::Remove(table, key) => {
                        tx.execute(
                            "DELETE FROM hookd_catalog WHERE tbl = $1 AND key = $2",
                            &[&name(*table), key],
                        )
                        .await
                    }
                }
                .map_err(pg)?;
            }
            tx.commit().await.map_err(pg)
        })
    }
}
