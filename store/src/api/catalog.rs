//! The catalog's rows: the control plane's few small tables of opaque
//! values ([`Table`]), changed atomically ([`RowChange`], [`CatalogRows`]).

use crate::error::Result;

/// A catalog row changed in one atomic write.
#[derive(Debug, Clone)]
pub enum RowChange {
    /// Set a key of a table.
    Put(Table, String, Vec<u8>),
    /// Set a key that must not be set yet: if it is (whoever set it, in
    /// whichever process), the whole write fails with
    /// `Error::AlreadyExists` and changes nothing.
    Create(Table, String, Vec<u8>),
    /// Remove a key of a table.
    Remove(Table, String),
}

impl RowChange {
    /// The table it changes.
    pub fn table(&self) -> Table {
        match self {
            RowChange::Put(table, ..)
            | RowChange::Create(table, ..)
            | RowChange::Remove(table, _) => *table,
        }
    }
}

/// The catalog's tables.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(usize)]
pub enum Table {
    /// Tenant records by tenant id.
    Tenants,
    /// Sealed secrets by tenant id.
    Secrets,
    /// Token records and hashes.
    Tokens,
    /// Ids of deleted tenants whose data is still to be dropped.
    Drops,
    /// Event contracts in force, by tenant, type and version.
    Contracts,
    /// Every revision of every contract.
    ContractRevisions,
    /// A tenant's alert settings (its sink, sealed secret, and rules), by
    /// tenant id.
    AlertSettings,
    /// Every tenant's alerts, by `tenant/alert id`.
    Alerts,
    /// Routes an operator paused or resumed, by `tenant/route`.
    Holds,
    /// Replays of stored events into a route as an operator ordered them
    /// (window, filter, rate, paused or cancelled), by `tenant/replay id`.
    Replays,
    /// How far each replay got (its cursor and counts), by `tenant/replay
    /// id`: written as it runs, followed by no other process.
    ReplayProgress,
}

/// The control plane's persistent rows: a few small tables of opaque
/// values, changed atomically. What the rows mean lives in
/// the server's catalog; an engine only keeps them.
pub trait CatalogRows: Send + Sync + 'static {
    /// One row.
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>>;

    /// Rows whose key starts with `prefix`, in key order.
    fn scan(&self, table: Table, prefix: &str) -> Result<Vec<(String, Vec<u8>)>>;

    /// Applies every change or none.
    fn apply(&self, changes: &[RowChange]) -> Result<()>;
}
