//! hookd's internal error, typed by what a caller decides on, and its
//! [`Result`]. The HTTP face is [`http`]; the gRPC one is the control
//! plane's mapping in `admin`.

mod http;

pub use http::{ApiError, ErrorCode};

/// Internal failures of the server library.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The storage engine refused an operation.
    #[error("storage: {0}")]
    Storage(String),
    /// A storage task ended without an answer (it panicked).
    #[error("storage task failed: {0}")]
    Internal(String),
    /// A file in the data dir could not be read or written.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// A stored record could not be decoded.
    #[error("corrupt record: {0}")]
    Corrupt(String),
    /// The durable writer's thread has stopped (shutdown).
    #[error("durable writer is not running")]
    CommitterGone,
    /// Applying a batch of writes to storage failed; the store is poisoned.
    #[error("applying writes to storage failed: {0}")]
    BatchFailed(String),
    /// Flushing or fdatasyncing a batch failed; the store is poisoned.
    #[error("making writes durable failed: {0}")]
    SyncFailed(String),
    /// An earlier write or sync failed: nothing is written or acknowledged
    /// until hookd restarts and recovers from what is on disk.
    #[error("storage failed earlier and takes no writes until hookd restarts")]
    StoragePoisoned,
    /// A transaction lost a deadlock or serialization race and was rolled
    /// back whole: safe to try again.
    #[error("storage contended: {0}")]
    Contended(String),
    /// The tenant was deleted while its write waited.
    #[error("tenant {0} was deleted")]
    TenantDeleted(String),
    /// The thing asked for does not exist.
    #[error("not found: {0}")]
    NotFound(String),
    /// The thing to create exists already (another process may have just
    /// created it); nothing was changed.
    #[error("already exists: {0}")]
    AlreadyExists(String),
    /// The request is valid but the thing is not in a state that allows it.
    #[error("{0}")]
    Precondition(String),
    /// Configuration is invalid; the message names the key.
    #[error("config: {0}")]
    Config(String),
}

/// Result with the server's internal error.
pub type Result<T, E = Error> = std::result::Result<T, E>;
