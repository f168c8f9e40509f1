//! Contracts saved over the control plane, per tenant, kept as catalog rows
//! ([`CatalogRows`]).

use std::sync::{Arc, Mutex};

use serde::{Deserialize, Serialize};

use crate::{
    error::{Error, Result},
    ids::TenantId,
    store::api::{CatalogRows, RowChange, Storage, Table},
};

/// One saved contract (one revision of it).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ContractRecord {
    /// The event type.
    pub event_type: String,
    /// The version, when the contract has one.
    pub version: Option<String>,
    /// JSON Schema text.
    pub schema: String,
    /// Example payload text.
    pub example: String,
    /// 1 for the first put of this (type, version), then one more each put.
    pub revision: u64,
    /// When this revision was put, Unix ms.
    pub updated_at_ms: i64,
}

/// The contract a put writes, before it has a revision.
#[derive(Debug, Clone)]
pub struct NewContract {
    /// The event type (1-128 bytes of visible ASCII, checked by the caller).
    pub event_type: String,
    /// The version, if any (visible ASCII, checked by the caller).
    pub version: Option<String>,
    /// JSON Schema text.
    pub schema: String,
    /// Example payload text.
    pub example: String,
}

/// Saved contracts of every tenant.
///
/// Contracts saved over the control plane, per tenant, kept as catalog rows
/// ([`CatalogRows`]): the contract in force for each (type, version) in
/// `contracts`, and its newest revision in `contract_revisions`, kept after
/// a delete too, so each put gets a new revision number. A put removes the
/// older revision rows (an older hookd kept every one), on every engine.
/// Both go with the tenant when it is deleted (`super::Catalog::delete`).
#[derive(Clone)]
pub struct ContractStore {
    rows: Arc<dyn CatalogRows>,
    /// Puts in this process one at a time, so two puts of one contract
    /// never read the same last revision.
    puts: Arc<Mutex<()>>,
}

impl ContractStore {
    /// The contracts kept in `store`'s catalog rows.
    pub fn open(store: &dyn Storage) -> Result<Self> {
        Ok(ContractStore {
            rows: store.catalog_rows()?,
            puts: Arc::default(),
        })
    }

    /// Saves `contract` as the one in force for its (type, version), with
    /// the next revision number, and returns it as stored.
    pub fn put(
        &self,
        tenant: &TenantId,
        contract: NewContract,
        now_ms: i64,
    ) -> Result<ContractRecord> {
        let _one_at_a_time = self.puts.lock().expect("contract puts");
        let key = key(tenant, &contract.event_type, contract.version.as_deref());
        let older = self
            .rows
            .scan(Table::ContractRevisions, &format!("{key}/"))?;
        let last = older
            .last()
            .map(|(_, bytes)| decode(bytes))
            .transpose()?
            .map_or(0, |r| r.revision);
        let record = ContractRecord {
            event_type: contract.event_type,
            version: contract.version,
            schema: contract.schema,
            example: contract.example,
            revision: last + 1,
            updated_at_ms: now_ms,
        };
        let bytes = serde_json::to_vec(&record).expect("a contract record serializes");
        let mut changes: Vec<RowChange> = older
            .into_iter()
            .map(|(row, _)| RowChange::Remove(Table::ContractRevisions, row))
            .collect();
        changes.push(RowChange::Put(Table::Contracts, key.clone(), bytes.clone()));
        changes.push(RowChange::Put(
            Table::ContractRevisions,
            revision_key(&key, record.revision),
            bytes,
        ));
        self.rows.apply(&changes)?;
        Ok(record)
    }

    /// The contract in force for (type, version).
    pub fn get(
        &self,
        tenant: &TenantId,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<Option<ContractRecord>> {
        self.rows
            .get(Table::Contracts, &key(tenant, event_type, version))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Every contract in force, by type then version.
    pub fn list(&self, tenant: &TenantId) -> Result<Vec<ContractRecord>> {
        self.rows
            .scan(Table::Contracts, &format!("{tenant}/"))?
            .iter()
            .map(|(_, bytes)| decode(bytes))
            .collect()
    }

    /// Removes the contract in force for (type, version); its newest
    /// revision is kept, so a later put continues the numbering. False when
    /// there was none.
    pub fn delete(
        &self,
        tenant: &TenantId,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<bool> {
        let key = key(tenant, event_type, version);
        if self.rows.get(Table::Contracts, &key)?.is_none() {
            return Ok(false);
        }
        self.rows
            .apply(&[RowChange::Remove(Table::Contracts, key)])?;
        Ok(true)
    }
}

/// Every row of `tenant`'s contracts and their revisions, to remove with it.
pub(super) fn rows_of(rows: &dyn CatalogRows, tenant: &str) -> Result<Vec<RowChange>> {
    let prefix = format!("{tenant}/");
    let mut changes = Vec::new();
    for table in [Table::Contracts, Table::ContractRevisions] {
        for (key, _) in rows.scan(table, &prefix)? {
            changes.push(RowChange::Remove(table, key));
        }
    }
    Ok(changes)
}

/// `tenant/type US version`: names are visible ASCII, so the unit
/// separator (0x1F) parts them.
fn key(tenant: &TenantId, event_type: &str, version: Option<&str>) -> String {
    format!("{tenant}/{event_type}\u{1f}{}", version.unwrap_or(""))
}

/// A revision's row: zero-padded, so rows sort by revision.
fn revision_key(key: &str, revision: u64) -> String {
    format!("{key}/{revision:020}")
}

fn decode(bytes: &[u8]) -> Result<ContractRecord> {
    serde_json::from_slice(bytes).map_err(|e| Error::Corrupt(format!("contract record: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn contract(schema: &str, version: Option<&str>) -> NewContract {
        NewContract {
            event_type: "order.paid".into(),
            version: version.map(str::to_owned),
            schema: schema.into(),
            example: "{}".into(),
        }
    }

    #[test]
    fn puts_get_new_revisions_that_survive_delete_and_a_new_handle() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::try_from("acme").unwrap();
        let (db, _committer) = crate::store::SledStore::open(dir.path(), 16, false).unwrap();
        let open = |store: &crate::store::SledStore| ContractStore::open(store).unwrap();
        {
            let store = open(&db);
            assert_eq!(
                store
                    .put(&tenant, contract("{}", None), 1)
                    .unwrap()
                    .revision,
                1
            );
            assert_eq!(
                store
                    .put(&tenant, contract("true", None), 2)
                    .unwrap()
                    .revision,
                2
            );
            assert_eq!(
                store
                    .put(&tenant, contract("{}", Some("2")), 3)
                    .unwrap()
                    .revision,
                1
            );
            assert!(store.delete(&tenant, "order.paid", None).unwrap());
            assert!(!store.delete(&tenant, "order.paid", None).unwrap());
            assert_eq!(
                store
                    .put(&tenant, contract("{}", None), 4)
                    .unwrap()
                    .revision,
                3
            );
        }
        let store = open(&db);
        let all = store.list(&tenant).unwrap();
        let keys: Vec<_> = all
            .iter()
            .map(|r| (r.version.clone(), r.revision, r.updated_at_ms))
            .collect();
        assert_eq!(keys, [(None, 3, 4), (Some("2".into()), 1, 3)]);
        assert_eq!(
            store
                .get(&tenant, "order.paid", Some("2"))
                .unwrap()
                .unwrap()
                .schema,
            "{}"
        );
        assert!(store
            .get(&tenant, "order.paid", Some("3"))
            .unwrap()
            .is_none());
    }

    /// Only the newest revision row is kept, rows an older hookd kept are
    /// swept by the next put, and the numbering carries on through a
    /// delete.
    fn keeps_only_the_newest_revision(db: &dyn Storage) {
        let tenant = TenantId::try_from("acme").unwrap();
        let store = ContractStore::open(db).unwrap();
        let revisions = |store: &ContractStore| {
            store
                .rows
                .scan(Table::ContractRevisions, "acme/")
                .unwrap()
                .len()
        };
        let key = key(&tenant, "order.paid", None);
        let older: Vec<RowChange> = (1..=5)
            .map(|revision| {
                let record = ContractRecord {
                    revision,
                    ..store.put(&tenant, contract("{}", None), 0).unwrap()
                };
                let bytes = serde_json::to_vec(&record).unwrap();
                RowChange::Put(
                    Table::ContractRevisions,
                    revision_key(&key, revision),
                    bytes,
                )
            })
            .collect();
        store.rows.apply(&older).unwrap();
        assert_eq!(
            store
                .put(&tenant, contract("{}", None), 1)
                .unwrap()
                .revision,
            6
        );
        assert_eq!(revisions(&store), 1, "only the newest revision is kept");
        for _ in 0..3 {
            store.put(&tenant, contract("{}", None), 2).unwrap();
        }
        assert_eq!(revisions(&store), 1);
        assert!(store.delete(&tenant, "order.paid", None).unwrap());
        assert_eq!(
            store
                .put(&tenant, contract("{}", None), 3)
                .unwrap()
                .revision,
            10
        );
        assert_eq!(revisions(&store), 1);
    }

    #[test]
    fn only_the_newest_revision_is_kept_on_sled() {
        let dir = tempfile::tempdir().unwrap();
        let (db, _committer) = crate::store::SledStore::open(dir.path(), 16, false).unwrap();
        keeps_only_the_newest_revision(&db);
    }

    #[test]
    fn only_the_newest_revision_is_kept_on_postgres() {
        let Some(database) =
            crate::store::postgres::testing::test_database("hookd_contract_revisions")
        else {
            return;
        };
        let db = crate::store::postgres::PgStore::open(crate::store::postgres::PgOptions {
            url: database.url.clone().into(),
            max_connections: 2,
            statement_timeout_ms: 30_000,
            batch_max: 16,
        })
        .unwrap();
        keeps_only_the_newest_revision(&db);
    }
}
