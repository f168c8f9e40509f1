//! One tenant's slice of a tree shared by every tenant: its keys are the
//! tenant id and `/` followed by the key the storage functions use (tenant
//! ids cannot contain `/`, so no tenant's range holds another's keys).
//! [`Keyspace`] and [`TxKeyspace`] offer the few `sled::Tree` operations
//! the store uses, adding the prefix to every key given and taking it off
//! every key returned, so the store's functions read as if each tenant had
//! its own trees. Adding a tenant writes nothing to sled's list of trees,
//! and removing one is a range delete over a fixed set of trees.

use std::{ops::Bound, sync::Arc};

use sled::{transaction::TransactionalTree, IVec};

use crate::ids::TenantId;

/// The key prefix of one tenant in every shared tree.
pub(super) fn tenant_prefix(tenant: &TenantId) -> Arc<[u8]> {
    let mut prefix = tenant.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    prefix.into()
}

/// One tenant's keys in a shared tree.
#[derive(Clone)]
pub(super) struct Keyspace {
    tree: sled::Tree,
    prefix: Arc<[u8]>,
}

type Entry = sled::Result<(IVec, IVec)>;

impl Keyspace {
    pub(super) fn new(tree: sled::Tree, prefix: Arc<[u8]>) -> Keyspace {
        Keyspace { tree, prefix }
    }

    /// The shared tree, for transactions (see [`Keyspace::tx`]).
    pub(super) fn tree(&self) -> &sled::Tree {
        &self.tree
    }

    /// This keyspace inside a transaction over its shared tree.
    pub(super) fn tx<'a>(&'a self, view: &'a TransactionalTree) -> TxKeyspace<'a> {
        TxKeyspace {
            view,
            prefix: &self.prefix,
        }
    }

    fn key(&self, key: impl AsRef<[u8]>) -> Vec<u8> {
        [&self.prefix[..], key.as_ref()].concat()
    }

    fn strip(&self, entry: Entry) -> Entry {
        let (key, value) = entry?;
        Ok((IVec::from(&key[self.prefix.len()..]), value))
    }

    pub(super) fn get(&self, key: impl AsRef<[u8]>) -> sled::Result<Option<IVec>> {
        self.tree.get(self.key(key))
    }

    #[cfg(test)]
    pub(super) fn insert(
        &self,
        key: impl AsRef<[u8]>,
        value: impl Into<IVec>,
    ) -> sled::Result<Option<IVec>> {
        self.tree.insert(self.key(key), value)
    }

    pub(super) fn remove(&self, key: impl AsRef<[u8]>) -> sled::Result<Option<IVec>> {
        self.tree.remove(self.key(key))
    }

    /// Entries with keys in `[from, to)` (unbounded ends as `None`), in key order.
    pub(super) fn range(
        &self,
        from: Option<&[u8]>,
        to: Option<&[u8]>,
    ) -> impl DoubleEndedIterator<Item = Entry> + '_ {
        let start = Bound::Included(self.key(from.unwrap_or_default()));
        let end = match to {
            Some(to) => Bound::Excluded(self.key(to)),
            None => match prefix_end(&self.prefix) {
                Some(end) => Bound::Excluded(end),
                None => Bound::Unbounded,
            },
        };
        self.tree
            .range::<Vec<u8>, _>((start, end))
            .map(|entry| self.strip(entry))
    }

    /// How many entries there are.
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.iter().count()
    }

    /// Every entry, in key order.
    pub(super) fn iter(&self) -> impl DoubleEndedIterator<Item = Entry> + '_ {
        self.range(None, None)
    }

    /// Entries whose key starts with `prefix`.
    pub(super) fn scan_prefix(
        &self,
        prefix: impl AsRef<[u8]>,
    ) -> impl DoubleEndedIterator<Item = Entry> + '_ {
        self.tree
            .scan_prefix(self.key(prefix))
            .map(|entry| self.strip(entry))
    }

    /// The entry with the lowest key.
    pub(super) fn first(&self) -> sled::Result<Option<(IVec, IVec)>> {
        self.iter().next().transpose()
    }

    /// Removes every key of this tenant, in batches; returns how many.
    pub(super) fn clear(&self) -> sled::Result<usize> {
        let mut removed = 0;
        loop {
            let keys: Vec<IVec> = self
                .tree
                .scan_prefix(&self.prefix[..])
                .keys()
                .take(1024)
                .collect::<sled::Result<_>>()?;
            if keys.is_empty() {
                return Ok(removed);
            }
            let mut batch = sled::Batch::default();
            for key in &keys {
                batch.remove(key);
            }
            self.tree.apply_batch(batch)?;
            removed += keys.len();
        }
    }
}

/// The smallest key after every key starting with `prefix`.
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < u8::MAX {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// One tenant's keys in a shared tree, inside a transaction.
#[derive(Clone, Copy)]
pub(super) struct TxKeyspace<'a> {
    view: &'a TransactionalTree,
    prefix: &'a [u8],
}

type TxResult<T> = sled::transaction::ConflictableTransactionResult<T, crate::error::Error>;

impl TxKeyspace<'_> {
    fn key(&self, key: impl AsRef<[u8]>) -> Vec<u8> {
        [self.prefix, key.as_ref()].concat()
    }

    pub(super) fn get(&self, key: impl AsRef<[u8]>) -> TxResult<Option<IVec>> {
        Ok(self.view.get(self.key(key))?)
    }

    pub(super) fn insert(
        &self,
        key: impl AsRef<[u8]>,
        value: impl Into<IVec>,
    ) -> TxResult<Option<IVec>> {
        Ok(self.view.insert(self.key(key), value)?)
    }

    pub(super) fn remove(&self, key: impl AsRef<[u8]>) -> TxResult<Option<IVec>> {
        Ok(self.view.remove(self.key(key))?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(db: &sled::Db, tenant: &str) -> Keyspace {
        Keyspace::new(
            db.open_tree("shared").unwrap(),
            tenant_prefix(&TenantId::try_from(tenant).unwrap()),
        )
    }

    #[test]
    fn tenants_sharing_a_tree_see_only_their_own_keys() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let (a, ab, b) = (space(&db, "a"), space(&db, "a-b"), space(&db, "b"));
        for (space, n) in [(&a, 3u8), (&ab, 2), (&b, 1)] {
            for k in 0..n {
                space.insert([k], vec![n]).unwrap();
            }
        }
        let keys =
            |s: &Keyspace| -> Vec<Vec<u8>> { s.iter().map(|e| e.unwrap().0.to_vec()).collect() };
        assert_eq!(keys(&a), vec![vec![0], vec![1], vec![2]]);
        assert_eq!(keys(&ab), vec![vec![0], vec![1]]);
        assert_eq!(a.range(Some(&[1]), None).count(), 2);
        assert_eq!(a.range(None, Some(&[2])).rev().count(), 2);
        assert_eq!(a.first().unwrap().unwrap().0.to_vec(), vec![0]);
        assert_eq!(a.clear().unwrap(), 3);
        assert!(a.iter().next().is_none());
        assert_eq!(keys(&ab).len() + keys(&b).len(), 3);
    }
}
