//! The storage boundary: what hookd asks of a storage engine ([`api`]),
//! the records it keeps ([`records`]) and a delivery's lifecycle rules
//! ([`lifecycle`]), the same on every engine; the engines below it, the
//! embedded one on sled (`sled/`) and PostgreSQL ([`postgres`]), neither
//! importing the other. [`conformance`] runs one suite on both.

pub mod api;
#[cfg(test)]
mod conformance;
pub mod lifecycle;
pub mod postgres;
pub mod records;
mod sled;

#[cfg(any(test, feature = "fault-injection"))]
pub use self::sled::inject;
pub use self::sled::{OsSync, SharedSync, SledStore, SyncOps};
pub use api::{CommitOutcome, NewDelivery, Store, TenantStore};
