//! Contracts saved over the control plane, per tenant: the contract in force
//! for each (type, version) in `t/{tenant}/contracts`, and every revision
//! ever put in `t/{tenant}/contract_revisions`, so each put gets a new
//! revision number. Both trees go with the tenant's other trees when it is
//! deleted.

use serde::{Deserialize, Serialize};
use sled::Transactional;

use crate::{
    error::{Error, Result},
    ids::TenantId,
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
#[derive(Clone)]
pub struct ContractStore {
    db: sled::Db,
}

impl ContractStore {
    pub(super) fn new(db: sled::Db) -> Self {
        ContractStore { db }
    }

    fn trees(&self, tenant: &TenantId) -> Result<(sled::Tree, sled::Tree)> {
        Ok((
            self.db.open_tree(format!("t/{tenant}/contracts"))?,
            self.db
                .open_tree(format!("t/{tenant}/contract_revisions"))?,
        ))
    }

    /// Saves `contract` as the one in force for its (type, version), with
    /// the next revision number, and returns it as stored.
    pub fn put(
        &self,
        tenant: &TenantId,
        contract: NewContract,
        now_ms: i64,
    ) -> Result<ContractRecord> {
        let (current, revisions) = self.trees(tenant)?;
        let key = key(&contract.event_type, contract.version.as_deref());
        let stored = (&current, &revisions)
            .transaction(|(current, revisions)| {
                let revision = next_after_history(revisions, &key)?;
                let record = ContractRecord {
                    event_type: contract.event_type.clone(),
                    version: contract.version.clone(),
                    schema: contract.schema.clone(),
                    example: contract.example.clone(),
                    revision,
                    updated_at_ms: now_ms,
                };
                let bytes = serde_json::to_vec(&record).expect("a contract record serializes");
                current.insert(key.as_slice(), bytes.as_slice())?;
                revisions.insert(revision_key(&key, record.revision), bytes)?;
                Ok(record)
            })
            .map_err(|e| match e {
                sled::transaction::TransactionError::Abort(()) => {
                    Error::Corrupt("contract put aborted".into())
                }
                sled::transaction::TransactionError::Storage(e) => Error::Storage(e),
            })?;
        Ok(stored)
    }

    /// The contract in force for (type, version).
    pub fn get(
        &self,
        tenant: &TenantId,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<Option<ContractRecord>> {
        let (current, _) = self.trees(tenant)?;
        current
            .get(key(event_type, version))?
            .map(|bytes| decode(&bytes))
            .transpose()
    }

    /// Every contract in force, by type then version.
    pub fn list(&self, tenant: &TenantId) -> Result<Vec<ContractRecord>> {
        let (current, _) = self.trees(tenant)?;
        current
            .iter()
            .values()
            .map(|bytes| decode(&bytes?))
            .collect()
    }

    /// Removes the contract in force for (type, version); its revisions are
    /// kept, so a later put continues their numbering. False when there was
    /// none.
    pub fn delete(
        &self,
        tenant: &TenantId,
        event_type: &str,
        version: Option<&str>,
    ) -> Result<bool> {
        let (current, _) = self.trees(tenant)?;
        Ok(current.remove(key(event_type, version))?.is_some())
    }
}

/// The revision after the last one ever stored for `key` (1 when none).
fn next_after_history(
    revisions: &sled::transaction::TransactionalTree,
    key: &[u8],
) -> sled::transaction::ConflictableTransactionResult<u64, ()> {
    // Transactional trees cannot scan: probe upwards from the first
    // revision. Puts of one contract are rare, so the walk stays short.
    let mut next = 1;
    while revisions.get(revision_key(key, next))?.is_some() {
        next += 1;
    }
    Ok(next)
}

/// `type NUL version`: names are visible ASCII, so NUL separates them.
fn key(event_type: &str, version: Option<&str>) -> Vec<u8> {
    [
        event_type.as_bytes(),
        b"\0",
        version.unwrap_or("").as_bytes(),
    ]
    .concat()
}

fn revision_key(key: &[u8], revision: u64) -> Vec<u8> {
    [key, b"\0", &revision.to_be_bytes()].concat()
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
    fn puts_get_new_revisions_that_survive_delete_and_reopen() {
        let dir = tempfile::tempdir().unwrap();
        let tenant = TenantId::try_from("acme").unwrap();
        {
            let db = sled::open(dir.path()).unwrap();
            let store = ContractStore::new(db);
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
        let store = ContractStore::new(sled::open(dir.path()).unwrap());
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
}
