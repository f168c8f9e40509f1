//! hookd's storage: what hookd asks of a storage engine ([`api`]), the
//! records it keeps ([`records`]) and a delivery's lifecycle rules
//! ([`lifecycle`]), the same on every engine; the engines below it, the
//! embedded one on sled (`sled/`) and PostgreSQL ([`postgres`]), neither
//! importing the other. The conformance suite runs one set of cases on both.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod api;
#[cfg(test)]
mod conformance;
pub mod error;
pub mod lifecycle;
pub mod postgres;
pub mod records;
mod sled;
#[doc(hidden)]
pub mod testing;

pub use hookd_domain::ids;

#[cfg(any(test, feature = "fault-injection"))]
pub use self::sled::inject;
pub use self::sled::{OsSync, SharedSync, SledStore, SyncOps};
pub use api::{CommitOutcome, NewDelivery, Store, TenantStore};
pub use error::{Error, Result};
