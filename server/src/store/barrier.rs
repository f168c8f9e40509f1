//! A durability barrier for writes made outside the group committer (queue
//! transitions of the control plane): returns once everything written
//! before the call is on disk, power loss included.

use std::{
    fs::File,
    path::{Path, PathBuf},
};

use super::Store;
use crate::error::{Error, Result};

/// Where sled's log lives, to fdatasync it.
#[derive(Clone)]
pub(super) struct Barrier {
    log: PathBuf,
}

impl Barrier {
    /// A barrier for the sled database in `sled_dir`.
    pub(super) fn new(sled_dir: &Path) -> Barrier {
        Barrier {
            log: sled_dir.join("db"),
        }
    }
}

impl Store {
    /// Returns once everything written before the call is flushed and
    /// fdatasynced; the blocking work runs off the async threads.
    pub async fn durable_barrier(&self) -> Result<()> {
        let db = self.db.clone();
        let log = self.barrier.log.clone();
        tokio::task::spawn_blocking(move || -> Result<()> {
            db.flush()?;
            File::open(log)?.sync_data()?;
            Ok(())
        })
        .await
        .map_err(|e| Error::Io(std::io::Error::other(e)))?
    }
}
