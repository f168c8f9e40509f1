//! One tenant's slice of a tree shared by every tenant: its keys, prefixed by
//! the tenant id, and the few `sled::Tree` operations the store uses on them.

use std::{cell::RefCell, ops::Bound, sync::Arc};

use sled::{transaction::TransactionalTree, IVec};

use super::{entry, wal::record::Batch};
use crate::ids::TenantId;

/// The key prefix of one tenant in every shared tree.
pub(super) fn tenant_prefix(tenant: &TenantId) -> Arc<[u8]> {
    let mut prefix = tenant.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    prefix.into()
}

/// How a keyspace places its keys in the shared tree.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Layout {
    /// `{tenant}/{key}`: a tenant's keys are one range, read in key order.
    TenantFirst,
    /// `{time}{tenant}/{key}`, where the key is a delivery id and time the
    /// first ten characters of its ULID (the millisecond timestamp in
    /// base 32, which sorts as bytes). Read and written by key only; a
    /// tenant's keys are found through the delivery ids it holds.
    TimeFirst,
}

/// The key `key` of the tenant with `prefix` is stored under.
pub(super) fn stored_key(layout: Layout, prefix: &[u8], key: &[u8]) -> Vec<u8> {
    match layout {
        Layout::TenantFirst => [prefix, key].concat(),
        Layout::TimeFirst => [time_of(key), prefix, key].concat(),
    }
}

/// The sortable time in a delivery id (`dlv_` and a 26-character ULID):
/// its first ten characters; any other key sorts before all of them.
fn time_of(key: &[u8]) -> &[u8] {
    match key.strip_prefix(b"dlv_") {
        Some(ulid) if ulid.len() == 26 => &ulid[..10],
        _ => b"0000000000",
    }
}

/// One tenant's keys in a shared tree.
///
/// Its keys are the tenant id and `/` followed by the key the storage
/// functions use (tenant ids cannot contain `/`, so no tenant's range holds
/// another's keys). [`Keyspace`] and [`TxKeyspace`] offer the few
/// `sled::Tree` operations the store uses, adding the prefix to every key
/// given and taking it off every key returned, so the store's functions
/// read as if each tenant had its own trees. Adding a tenant writes nothing
/// to sled's list of trees, and removing one is a range delete over a fixed
/// set of trees.
///
/// The stored events, the store's largest values, are laid out time first
/// instead ([`Layout::TimeFirst`]): with the tenant first, every tenant's
/// newest events sit in a leaf of their own, so a batch spread over 10,000
/// tenants rewrites a different page per write and the pages being written
/// soon outgrow sled's cache; time first, new events of every tenant land
/// together at the end of the tree, as one tenant's do.
#[derive(Clone)]
pub(super) struct Keyspace {
    tree: sled::Tree,
    prefix: Arc<[u8]>,
    layout: Layout,
}

type Entry = sled::Result<(IVec, IVec)>;

impl Keyspace {
    pub(super) fn new(tree: sled::Tree, prefix: Arc<[u8]>, layout: Layout) -> Keyspace {
        Keyspace {
            tree,
            prefix,
            layout,
        }
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
            layout: self.layout,
            log: None,
        }
    }

    /// [`Keyspace::tx`], recording each insert and remove in `log` as ops
    /// on shared tree `index` of the write-ahead log.
    pub(super) fn logged_tx<'a>(
        &'a self,
        view: &'a TransactionalTree,
        log: &'a RefCell<Batch>,
        index: u8,
    ) -> TxKeyspace<'a> {
        TxKeyspace {
            log: Some((log, index)),
            ..self.tx(view)
        }
    }

    /// The key `key` is stored under in the shared tree.
    pub(super) fn key(&self, key: impl AsRef<[u8]>) -> Vec<u8> {
        stored_key(self.layout, &self.prefix, key.as_ref())
    }

    /// The stored key of a range read: only a tenant-first keyspace is one
    /// range.
    fn range_key(&self, key: impl AsRef<[u8]>) -> Vec<u8> {
        debug_assert_eq!(self.layout, Layout::TenantFirst, "ranges are per tenant");
        stored_key(Layout::TenantFirst, &self.prefix, key.as_ref())
    }

    fn strip(&self, entry: Entry) -> Entry {
        let (key, value) = entry?;
        Ok((IVec::from(&key[self.prefix.len()..]), value))
    }

    pub(super) fn get(&self, key: impl AsRef<[u8]>) -> sled::Result<Option<IVec>> {
        self.tree.get(self.key(key))
    }

    /// The value under `stored`, a key as the shared tree holds it (of any
    /// tenant's keyspace).
    pub(super) fn get_stored(&self, stored: &[u8]) -> sled::Result<Option<IVec>> {
        self.tree.get(stored)
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
        let start = Bound::Included(self.range_key(from.unwrap_or_default()));
        let end = match to {
            Some(to) => Bound::Excluded(self.range_key(to)),
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
            .scan_prefix(self.range_key(prefix))
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
                .scan_prefix(self.range_key([]))
                .keys()
                .take(1024)
                .collect::<sled::Result<_>>()?;
            if keys.is_empty() {
                return Ok(removed);
            }
            removed += self.remove_stored(&keys)?;
        }
    }

    /// Removes the entries named by `keys` (as the store's functions name
    /// them), in batches; returns how many keys were named.
    pub(super) fn remove_each(
        &self,
        keys: impl Iterator<Item = sled::Result<IVec>>,
    ) -> sled::Result<usize> {
        let mut removed = 0;
        let mut keys = keys.peekable();
        while keys.peek().is_some() {
            let chunk: Vec<Vec<u8>> = keys
                .by_ref()
                .take(1024)
                .map(|key| key.map(|key| self.key(key)))
                .collect::<sled::Result<_>>()?;
            removed += self.remove_stored(&chunk)?;
        }
        Ok(removed)
    }

    fn remove_stored(&self, keys: &[impl AsRef<[u8]>]) -> sled::Result<usize> {
        let mut batch = sled::Batch::default();
        for key in keys {
            batch.remove(key.as_ref());
        }
        self.tree.apply_batch(batch)?;
        Ok(keys.len())
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

/// One tenant's keys in a shared tree, inside a transaction; with a log,
/// every change is also recorded there as the write-ahead log's op.
#[derive(Clone, Copy)]
pub(super) struct TxKeyspace<'a> {
    view: &'a TransactionalTree,
    prefix: &'a [u8],
    layout: Layout,
    log: Option<(&'a RefCell<Batch>, u8)>,
}

type TxResult<T> = sled::transaction::ConflictableTransactionResult<T, crate::error::Error>;

impl TxKeyspace<'_> {
    fn key(&self, key: impl AsRef<[u8]>) -> Vec<u8> {
        stored_key(self.layout, self.prefix, key.as_ref())
    }

    pub(super) fn get(&self, key: impl AsRef<[u8]>) -> TxResult<Option<IVec>> {
        Ok(self.view.get(self.key(key))?)
    }

    /// [`Keyspace::get_stored`] inside the transaction.
    pub(super) fn get_stored(&self, stored: &[u8]) -> TxResult<Option<IVec>> {
        Ok(self.view.get(stored)?)
    }

    pub(super) fn insert(
        &self,
        key: impl AsRef<[u8]>,
        value: impl Into<IVec>,
    ) -> TxResult<Option<IVec>> {
        let (key, value) = (self.key(key), value.into());
        if let Some((log, index)) = self.log {
            log.borrow_mut().insert(index, &key, &value);
        }
        Ok(self.view.insert(key, value)?)
    }

    pub(super) fn remove(&self, key: impl AsRef<[u8]>) -> TxResult<Option<IVec>> {
        let key = self.key(key);
        if let Some((log, index)) = self.log {
            log.borrow_mut().remove(index, &key);
        }
        Ok(self.view.remove(key)?)
    }

    /// Takes the record of delivery `id` out of the queue entry `key`
    /// ([`entry`]), removing the entry with its last record; the log
    /// records only the record taken. Whether there was one.
    pub(super) fn take_record(&self, key: impl AsRef<[u8]>, id: &[u8]) -> TxResult<bool> {
        let key = self.key(key);
        let Some(value) = self.view.get(&key)? else {
            return Ok(false);
        };
        let Some(rest) = entry::without(&value, id) else {
            return Ok(false);
        };
        if let Some((log, index)) = self.log {
            log.borrow_mut().take_record(index, &key, id);
        }
        match rest {
            Some(rest) => drop(self.view.insert(key, rest)?),
            None => drop(self.view.remove(key)?),
        }
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn space(db: &sled::Db, tenant: &str) -> Keyspace {
        Keyspace::new(
            db.open_tree("shared").unwrap(),
            tenant_prefix(&TenantId::try_from(tenant).unwrap()),
            Layout::TenantFirst,
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

    /// Time-first keys: ordered by the delivery id's time whatever the
    /// tenant, each tenant reading only its own, and removed by name.
    #[test]
    fn time_first_keys_sort_by_time_and_stay_per_tenant() {
        let db = sled::Config::new().temporary(true).open().unwrap();
        let tree = db.open_tree("events").unwrap();
        let space = |tenant: &str| {
            Keyspace::new(
                tree.clone(),
                tenant_prefix(&TenantId::try_from(tenant).unwrap()),
                Layout::TimeFirst,
            )
        };
        let (zeta, alpha) = (space("zeta"), space("alpha"));
        let id = |ms: u64| format!("dlv_{}", ulid::Ulid::from_parts(ms, 7));
        let (early, late) = (id(1_000), id(2_000));
        zeta.tree.insert(zeta.key(&early), "z").unwrap();
        alpha.tree.insert(alpha.key(&late), "a").unwrap();
        zeta.tree.insert(zeta.key("dlv_1"), "short").unwrap();
        let order: Vec<IVec> = tree.iter().values().map(Result::unwrap).collect();
        assert_eq!(order, vec![IVec::from("short"), "z".into(), "a".into()]);
        assert_eq!(zeta.get(&early).unwrap(), Some(IVec::from("z")));
        assert_eq!(alpha.get(&early).unwrap(), None);
        let named = [early.clone(), "dlv_1".into(), late.clone()];
        let named = named.iter().map(|k| Ok(IVec::from(k.as_bytes())));
        assert_eq!(zeta.remove_each(named).unwrap(), 3);
        assert_eq!(zeta.get(&early).unwrap(), None);
        assert_eq!(alpha.get(&late).unwrap(), Some(IVec::from("a")));
        assert_eq!(tree.len(), 1);
    }
}
