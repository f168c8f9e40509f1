//! The storage layer's error, typed by what a caller decides on, and its
//! [`Result`]; the server answers with it as its own internal error.

use std::sync::Arc;

/// A cause carried inside an [`Error`], kept for its chain of sources.
pub type BoxError = Box<dyn std::error::Error + Send + Sync>;

/// Failures of storage and of the work around it, one variant per thing a caller
/// decides on: the control plane's status, a retry, the log level.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The caller's input is not valid (a page token that does not decode);
    /// the text says what to fix and nothing was changed.
    #[error("{0}")]
    InvalidArgument(String),
    /// The storage engine refused or failed an operation.
    #[error("{context}")]
    Storage {
        /// The engine rolled the work back whole (a lost deadlock or
        /// serialization race): the same operation may succeed if tried
        /// again.
        retryable: bool,
        /// What failed, in the words logs and callers see, the cause's
        /// own words included.
        context: String,
        /// The engine's error, where there is one.
        #[source]
        source: Option<BoxError>,
    },
    /// An earlier write or sync failed: nothing is written or acknowledged
    /// until hookd restarts and recovers from what is on disk.
    #[error("storage failed earlier and takes no writes until hookd restarts")]
    StoragePoisoned,
    /// A worker, task or thread the operation needed is gone: stopped for
    /// shutdown, or `panicked`. Nothing was done.
    #[error("{worker} {}", if *.panicked { "panicked" } else { "is not running" })]
    Stopped {
        /// Which one: "durable writer", "storage task".
        worker: &'static str,
        /// It ended by a panic (a bug), not by shutdown.
        panicked: bool,
    },
    /// A file in the data dir could not be read or written.
    #[error("io: {0}")]
    Io(#[from] std::io::Error),
    /// A stored record could not be decoded.
    #[error("corrupt record: {0}")]
    Corrupt(String),
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
    /// Configuration is invalid.
    #[error("config: {key}: {reason}")]
    Config {
        /// The setting at fault: a config key (`storage.postgres.url`), or
        /// the thing configured where no one key is (`master key`).
        key: String,
        /// What is wrong with it and what would do.
        reason: String,
    },
}

impl Error {
    /// A storage failure that trying again will not mend.
    pub fn storage(context: impl Into<String>, source: Option<BoxError>) -> Error {
        Error::Storage {
            retryable: false,
            context: context.into(),
            source,
        }
    }

    /// A write of a batch storage could not apply; `cause` is shared by
    /// every write of the batch.
    pub fn batch_failed(cause: &Arc<Error>) -> Error {
        Error::storage(
            format!("applying writes to storage failed: {cause}"),
            Some(Box::new(Arc::clone(cause))),
        )
    }

    /// A write of a batch storage could not make durable (flush and
    /// fdatasync); `cause` is shared by every write of the batch.
    pub fn sync_failed(cause: &Arc<Error>) -> Error {
        Error::storage(
            format!("making writes durable failed: {cause}"),
            Some(Box::new(Arc::clone(cause))),
        )
    }

    /// A worker that stopped (shutdown) before it answered.
    pub fn stopped(worker: &'static str) -> Error {
        Error::Stopped {
            worker,
            panicked: false,
        }
    }

    /// A worker that panicked before it answered.
    pub fn panicked(worker: &'static str) -> Error {
        Error::Stopped {
            worker,
            panicked: true,
        }
    }

    /// Invalid configuration at `key`.
    pub fn config(key: impl Into<String>, reason: impl std::fmt::Display) -> Error {
        Error::Config {
            key: key.into(),
            reason: reason.to_string(),
        }
    }
}

/// Result with the storage error.
pub type Result<T, E = Error> = std::result::Result<T, E>;

#[cfg(test)]
mod tests {
    use super::*;

    /// Whether a storage failure may be retried is its flag; its cause
    /// stays reachable as the source.
    #[test]
    fn a_storage_failure_keeps_its_cause() {
        let cause = Arc::new(Error::Io(std::io::Error::other("disk full")));
        let error = Error::batch_failed(&cause);
        assert_eq!(
            error.to_string(),
            "applying writes to storage failed: io: disk full"
        );
        assert!(matches!(
            error,
            Error::Storage {
                retryable: false,
                ..
            }
        ));
        let source = std::error::Error::source(&error).expect("the cause");
        assert_eq!(source.to_string(), "io: disk full");
        assert_eq!(
            Error::sync_failed(&cause).to_string(),
            "making writes durable failed: io: disk full"
        );
    }
}
