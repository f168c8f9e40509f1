//! The committer's later stages, each on its own thread, so that deciding
//! batch N+2, syncing batch N+1 and applying batch N overlap:
//!
//! 1. the log: numbers a decided batch, appends it to the write-ahead log
//!    and fdatasyncs it ([`super::wal::Log::append`]);
//! 2. the applier: makes the batch's inserts in sled (the record's number
//!    last), counts its queue entries, drops a tenant whose drop ended the
//!    batch, and answers the waiters;
//! 3. the checkpointer: every [`CHECKPOINT_INTERVAL`], or at once when a
//!    durable barrier waits, flushes sled and fdatasyncs its files, then
//!    deletes the log segments sled now holds, and answers the barriers.
//!
//! Batches go through the stages in order, so no answer (a duplicate of a
//! write in flight included) goes out before the write it depends on is in
//! the log and in sled.

use std::{
    sync::{
        atomic::{AtomicU64, Ordering},
        mpsc::{sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender},
        Arc,
    },
    thread::JoinHandle,
    time::Duration,
};

use tokio::sync::oneshot;

use super::{
    api::CommitOutcome,
    apply::{self, apply_record, Pending},
    committer::Shared,
    gauges::Delta,
    sync::Syncer,
    wal::{record::Sealed, Log, Truncator},
    TenantTrees,
};
use crate::error::{Error, Result};

/// How often sled is made durable when nothing asks sooner: the log holds
/// at most about this much of the ingest before its segments can go.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// Someone waiting for a durable checkpoint (or a tenant's drop).
pub(super) type Waiter = oneshot::Sender<Result<()>>;

/// What the stages work on: the sled database, its shared trees and the
/// tree recording how far it applied the log, the log, and the syncer of
/// sled's files.
pub(super) struct Stage {
    pub(super) db: sled::Db,
    pub(super) trees: Vec<sled::Tree>,
    pub(super) marker: sled::Tree,
    pub(super) log: Log,
    pub(super) syncer: Syncer,
    /// The last record sled holds when the stages start.
    pub(super) applied: u64,
}

/// A decided batch on its way through the stages.
pub(super) struct Decided {
    decided: Option<apply::Decided>,
    replies: Vec<oneshot::Sender<Result<CommitOutcome>>>,
    dropped: Option<(Box<TenantTrees>, Waiter)>,
    record: Option<Sealed>,
}

impl Decided {
    /// A batch and who waits for it: `decided` is `None` for a batch that
    /// failed before anything of it was recorded.
    pub(super) fn new(
        decided: Option<apply::Decided>,
        replies: Vec<oneshot::Sender<Result<CommitOutcome>>>,
        dropped: Option<(Box<TenantTrees>, Waiter)>,
    ) -> Decided {
        Decided {
            decided,
            replies,
            dropped,
            record: None,
        }
    }

    /// Answers every waiter with `cause`.
    pub(super) fn fail(self, cause: &dyn Fn() -> Error) {
        for reply in self.replies {
            let _ = reply.send(Err(cause()));
        }
        if let Some((_, reply)) = self.dropped {
            let _ = reply.send(Err(cause()));
        }
    }
}

/// The running stages: the committer hands batches to the log through it.
pub(super) struct Pipeline {
    to_log: SyncSender<Decided>,
    pending: Pending,
    threads: Vec<JoinHandle<()>>,
}

impl Pipeline {
    /// The idempotency records decided and not yet in sled.
    pub(super) fn pending(&self) -> Pending {
        self.pending.clone()
    }

    /// Hands `batch` to the log, waiting until the log takes it; false once
    /// the stages stopped.
    pub(super) fn send(&self, batch: Decided) -> bool {
        self.to_log.send(batch).is_ok()
    }

    /// Lets every batch handed over go through, then a last checkpoint.
    pub(super) fn finish(self) {
        drop(self.to_log);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// Starts the three stages; returns where barriers are sent and the
/// pipeline.
pub(super) fn start(stage: Stage, shared: Shared) -> Result<(Sender<Waiter>, Pipeline)> {
    let Stage {
        db,
        trees,
        marker,
        log,
        syncer,
        applied,
    } = stage;
    let (to_log, from_committer) = sync_channel::<Decided>(0);
    let (to_apply, from_log) = sync_channel::<Decided>(1);
    let (checkpoints, waiters) = std::sync::mpsc::channel::<Waiter>();
    let applied = Arc::new(AtomicU64::new(applied));
    let pending = Pending::default();
    let checkpointer = Checkpointer {
        db: db.clone(),
        syncer,
        truncator: log.truncator(),
        applied: applied.clone(),
        shared: shared.clone(),
    };
    let applier = Applier {
        trees,
        marker,
        applied,
        pending: pending.clone(),
        checkpoints: checkpoints.clone(),
        shared: shared.clone(),
    };
    let next_lsn = applier.applied.load(Ordering::SeqCst) + 1;
    let spawn = |name: &str, run: Box<dyn FnOnce() + Send>| {
        std::thread::Builder::new().name(name.into()).spawn(run)
    };
    let threads = vec![
        spawn(
            "hookd-log",
            Box::new(move || write_log(log, next_lsn, from_committer, to_apply, shared)),
        )?,
        spawn("hookd-applier", Box::new(move || applier.run(from_log)))?,
        spawn(
            "hookd-checkpoint",
            Box::new(move || checkpointer.run(waiters)),
        )?,
    ];
    Ok((
        checkpoints,
        Pipeline {
            to_log,
            pending,
            threads,
        },
    ))
}

/// The log stage: numbers each batch that has inserts, appends it and
/// syncs, then passes it on.
fn write_log(
    mut log: Log,
    mut next_lsn: u64,
    batches: Receiver<Decided>,
    to_apply: SyncSender<Decided>,
    shared: Shared,
) {
    for mut batch in batches {
        if shared.is_poisoned() {
            batch.fail(&|| Error::StoragePoisoned);
            continue;
        }
        let inserts = batch.decided.as_mut().map(|d| std::mem::take(&mut d.batch));
        if let Some(inserts) = inserts.filter(|b| !b.is_empty()) {
            let record = inserts.seal(next_lsn);
            if let Err(e) = log.append(&record) {
                let e = Error::from(e);
                shared.poison("appending a batch to the write-ahead log", &e);
                let cause = Arc::new(e);
                batch.fail(&|| Error::sync_failed(&cause));
                continue;
            }
            next_lsn += 1;
            shared.stats.batches.fetch_add(1, Ordering::Relaxed);
            batch.record = Some(record);
        }
        shared
            .stats
            .writes
            .fetch_add(batch.replies.len() as u64, Ordering::Relaxed);
        if to_apply.send(batch).is_err() {
            break;
        }
    }
}

/// The applier stage.
struct Applier {
    trees: Vec<sled::Tree>,
    marker: sled::Tree,
    applied: Arc<AtomicU64>,
    pending: Pending,
    checkpoints: Sender<Waiter>,
    shared: Shared,
}

impl Applier {
    fn run(self, batches: Receiver<Decided>) {
        for batch in batches {
            self.apply(batch);
        }
    }

    fn apply(&self, batch: Decided) {
        if self.shared.is_poisoned() {
            return batch.fail(&|| Error::StoragePoisoned);
        }
        if let Some(record) = &batch.record {
            if let Err(e) = apply_record(&self.trees, &self.marker, record.lsn(), record.ops()) {
                self.shared.poison("applying a logged batch to sled", &e);
                let cause = Arc::new(e);
                return batch.fail(&|| Error::batch_failed(&cause));
            }
            self.applied.store(record.lsn(), Ordering::SeqCst);
        }
        let Decided {
            decided,
            replies,
            dropped,
            ..
        } = batch;
        if let Some(decided) = decided {
            for counts in &decided.queued {
                counts.apply(Delta { queued: 1, dead: 0 });
            }
            let mut pending = self.pending.lock().expect("pending records lock");
            for key in &decided.pending {
                pending.remove(key);
            }
            drop(pending);
            for (reply, outcome) in replies.into_iter().zip(decided.outcomes) {
                let _ = reply.send(outcome);
            }
        }
        if let Some((trees, reply)) = dropped {
            match trees.clear() {
                // Durable with the next checkpoint, which answers it.
                Ok(()) => {
                    let _ = self.checkpoints.send(reply);
                }
                Err(e) => {
                    self.shared.poison("dropping a tenant's trees", &e);
                    let _ = reply.send(Err(e));
                }
            }
        }
    }
}

/// The checkpoint stage.
struct Checkpointer {
    db: sled::Db,
    syncer: Syncer,
    truncator: Truncator,
    applied: Arc<AtomicU64>,
    shared: Shared,
}

impl Checkpointer {
    /// Checkpoints every interval while the log grows, and at once for
    /// waiting barriers (all of them answered by one checkpoint); a last
    /// one when every sender is gone.
    fn run(mut self, waiters: Receiver<Waiter>) {
        let mut checkpointed = self.applied.load(Ordering::SeqCst);
        loop {
            let mut waiting = Vec::new();
            let stopping = match waiters.recv_timeout(CHECKPOINT_INTERVAL) {
                Ok(waiter) => {
                    waiting.push(waiter);
                    false
                }
                Err(RecvTimeoutError::Timeout) => false,
                Err(RecvTimeoutError::Disconnected) => true,
            };
            waiting.extend(waiters.try_iter());
            let applied = self.applied.load(Ordering::SeqCst);
            if waiting.is_empty() && applied == checkpointed && !stopping {
                continue;
            }
            let failed = self.checkpoint(applied).err();
            if failed.is_none() {
                checkpointed = applied;
            }
            for waiter in waiting {
                let _ = waiter.send(match &failed {
                    None => Ok(()),
                    Some(Failure::Poisoned) => Err(Error::StoragePoisoned),
                    Some(Failure::Sync(cause)) => Err(Error::sync_failed(cause)),
                });
            }
            if stopping {
                return;
            }
        }
    }

    /// Makes sled durable up to (at least) record `applied`, then deletes
    /// the segments it covers.
    fn checkpoint(&mut self, applied: u64) -> std::result::Result<(), Failure> {
        if self.shared.is_poisoned() {
            return Err(Failure::Poisoned);
        }
        let durable = self
            .db
            .flush()
            .map_err(Error::from)
            .and_then(|_| self.syncer.sync().map_err(Error::from));
        if let Err(e) = durable {
            self.shared
                .poison("making sled durable (flush + fdatasync)", &e);
            return Err(Failure::Sync(Arc::new(e)));
        }
        if let Err(e) = self.truncator.truncate_through(applied) {
            tracing::warn!(error = %e, "deleting write-ahead log segments sled holds failed; they are retried at the next checkpoint");
        }
        Ok(())
    }
}

/// Why a checkpoint made nothing durable.
enum Failure {
    /// The store was poisoned before it.
    Poisoned,
    /// Its flush or a sync failed (and poisoned the store).
    Sync(Arc<Error>),
}
