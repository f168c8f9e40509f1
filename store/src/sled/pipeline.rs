//! The committer's later stages, each on its own thread: the log and the
//! checkpointer.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        mpsc::{sync_channel, Receiver, RecvTimeoutError, Sender, SyncSender},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, Instant},
};

use tokio::sync::oneshot;

use super::{
    api::CommitOutcome,
    records::DeliveryState,
    sync::Syncer,
    wal::{
        record::{Batch, Sealed},
        Log, Truncator,
    },
};
use crate::error::{Error, Result};

/// How much group commit is happening: writes per durable batch is the
/// number of requests that shared one fsync.
#[derive(Debug, Default)]
pub struct CommitStats {
    pub(super) batches: AtomicU64,
    pub(super) writes: AtomicU64,
}

impl CommitStats {
    /// Durable batches (log append + fdatasync) so far.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Writes those batches carried.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

/// What the committer's threads share.
#[derive(Clone)]
pub(super) struct Shared {
    pub(super) poisoned: Arc<AtomicBool>,
    pub(super) stats: Arc<CommitStats>,
    pub(super) direct: Arc<DirectWrites>,
}

/// Changes to the deliveries made to sled directly, not through the log
/// (a redelivery, a pull, an ack, a sweep), each counted once it
/// committed. Such a change is durable only with the next checkpoint, so a
/// round of attempts that may have read it is not trusted to the log
/// until every one is checkpointed: replayed after a crash onto a sled
/// without the change, the round's record would write a state the change
/// it followed never left.
#[derive(Debug, Default)]
pub(super) struct DirectWrites {
    made: AtomicU64,
    checkpointed: AtomicU64,
}

impl DirectWrites {
    /// Counts a change that committed.
    pub(super) fn made(&self) {
        self.made.fetch_add(1, Ordering::SeqCst);
    }

    /// True when every change counted so far is durable.
    pub(super) fn all_checkpointed(&self) -> bool {
        self.made.load(Ordering::SeqCst) == self.checkpointed.load(Ordering::SeqCst)
    }
}

impl Shared {
    /// Marks the store poisoned; the first failure is logged loudly, once.
    pub(super) fn poison(&self, what: &str, e: &Error) {
        if !self.poisoned.swap(true, Ordering::SeqCst) {
            tracing::error!(
                error = %e,
                "{what} failed: storage is poisoned, every write is refused with 503 \
                 and /readyz and /healthz fail until hookd is restarted; check the disk and \
                 the kernel log"
            );
        }
    }

    pub(super) fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }
}

/// How often sled is made durable when nothing asks sooner: the log holds
/// at most about this much of the ingest before its segments can go.
pub const CHECKPOINT_INTERVAL: Duration = Duration::from_secs(1);

/// Someone waiting for a durable checkpoint (or a tenant's drop).
pub(super) type Waiter = oneshot::Sender<Result<()>>;

/// What the stages work on: the sled database, the tree recording how far
/// it holds the log, the log, and the syncer of sled's files.
pub(super) struct Stage {
    pub(super) db: sled::Db,
    pub(super) marker: sled::Tree,
    pub(super) log: Log,
    pub(super) syncer: Syncer,
    /// The last record sled holds when the stages start.
    pub(super) applied: u64,
}

/// An applied batch on its way to the log: its record (none when nothing
/// was changed) and its waiters with their answers.
struct Decided {
    record: Option<Sealed>,
    answers: Vec<Answer>,
}

/// What a round of attempts answers: each attempt's result, and whether
/// the round is durable with the log (false: only with the next checkpoint).
pub(super) struct RoundAnswer {
    pub(super) states: Vec<Result<Option<DeliveryState>>>,
    pub(super) logged: bool,
}

/// A waiter with its answer, sent once the batch it is in is on disk.
pub(super) enum Answer {
    /// A new delivery's outcome.
    Commit(
        oneshot::Sender<Result<CommitOutcome>>,
        Result<CommitOutcome>,
    ),
    /// A round of attempts.
    Round(oneshot::Sender<Result<RoundAnswer>>, RoundAnswer),
}

impl Answer {
    fn send(self) {
        match self {
            Answer::Commit(reply, outcome) => drop(reply.send(outcome)),
            Answer::Round(reply, answer) => drop(reply.send(Ok(answer))),
        }
    }

    fn fail(self, e: Error) {
        match self {
            Answer::Commit(reply, _) => drop(reply.send(Err(e))),
            Answer::Round(reply, _) => drop(reply.send(Err(e))),
        }
    }
}

/// The running stages: the committer hands batches to the log through it.
pub(super) struct Pipeline {
    to_log: SyncSender<Decided>,
    checkpoints: Sender<Waiter>,
    marker: sled::Tree,
    /// The number the next batch with inserts takes.
    next_lsn: u64,
    /// The last record applied to sled (in memory): what a checkpoint
    /// makes durable.
    applied: Arc<AtomicU64>,
    /// The last record durable in the log (or in sled), which each record
    /// carries: recovery tells by it a damaged record from one torn by a
    /// crash before its sync.
    synced: Arc<AtomicU64>,
    threads: Vec<JoinHandle<()>>,
}

impl Pipeline {
    /// The tree the batch's number goes in, in its transaction.
    pub(super) fn marker(&self) -> &sled::Tree {
        &self.marker
    }

    /// The number of the next batch.
    pub(super) fn next_lsn(&self) -> u64 {
        self.next_lsn
    }

    /// Hands an applied batch to the log (numbered [`Pipeline::next_lsn`]
    /// when it changed anything) with its waiters; false once the log
    /// stopped.
    pub(super) fn send(&mut self, batch: Batch, answers: Vec<Answer>) -> bool {
        let record = (!batch.is_empty()).then(|| {
            let lsn = self.next_lsn;
            self.next_lsn += 1;
            self.applied.store(lsn, Ordering::SeqCst);
            batch.seal(lsn, self.synced.load(Ordering::SeqCst))
        });
        self.to_log.send(Decided { record, answers }).is_ok()
    }

    /// Answers `waiter` after the next checkpoint.
    pub(super) fn after_checkpoint(&self, waiter: Waiter) {
        if let Err(unsent) = self.checkpoints.send(waiter) {
            let _ = unsent.0.send(Err(Error::stopped("durable writer")));
        }
    }

    /// Lets every batch handed over go through, then a last checkpoint.
    pub(super) fn finish(self) {
        drop(self.to_log);
        drop(self.checkpoints);
        for thread in self.threads {
            let _ = thread.join();
        }
    }
}

/// Starts the stages; returns where barriers are sent and the pipeline.
///
/// The committer's later stages, each on its own thread, so that applying
/// batches and syncing the ones before overlap:
///
/// 1. the log: takes every batch applied while it synced the last ones,
///    appends their records to the write-ahead log with one fdatasync
///    ([`super::wal::Log::append_all`]) and answers their waiters;
/// 2. the checkpointer: every [`CHECKPOINT_INTERVAL`], or at once when a
///    durable barrier waits, flushes sled and fdatasyncs its files, then
///    recycles the log segments sled now holds, and answers the barriers.
///
/// Batches reach the log in order, so no answer (a duplicate of a write in
/// flight included) goes out before the write it depends on is in the log.
pub(super) fn start(stage: Stage, shared: Shared) -> Result<(Sender<Waiter>, Pipeline)> {
    let Stage {
        db,
        marker,
        log,
        syncer,
        applied,
    } = stage;
    let (to_log, from_committer) = sync_channel::<Decided>(LOG_GROUP_MAX);
    let (checkpoints, waiters) = std::sync::mpsc::channel::<Waiter>();
    let applied_now = Arc::new(AtomicU64::new(applied));
    let synced = Arc::new(AtomicU64::new(applied));
    let log_synced = synced.clone();
    let checkpointer = Checkpointer {
        db,
        syncer,
        truncator: log.truncator(),
        applied: applied_now.clone(),
        shared: shared.clone(),
    };
    let threads = vec![
        std::thread::Builder::new()
            .name("hookd-log".into())
            .spawn(move || write_log(log, from_committer, shared, log_synced))?,
        std::thread::Builder::new()
            .name("hookd-checkpoint".into())
            .spawn(move || checkpointer.run(waiters))?,
    ];
    Ok((
        checkpoints.clone(),
        Pipeline {
            to_log,
            checkpoints,
            marker,
            next_lsn: applied + 1,
            applied: applied_now,
            synced,
            threads,
        },
    ))
}

/// The most applied batches the log takes into one write and fdatasync.
const LOG_GROUP_MAX: usize = 256;

/// The longest the log waits for more batches before a sync.
const GATHER_MAX: Duration = Duration::from_millis(1);

/// The log stage: takes every batch applied while it synced the last ones,
/// appends their records and syncs once, then answers them all. While
/// several writers share the syncs, it first waits an eighth of the last
/// sync's time (at most [`GATHER_MAX`]) for more: the writers it just
/// answered send their next write within that, and join this sync instead
/// of waiting a whole one for the next (a lone writer is never held).
/// After each sync, `synced` is the last record it made durable.
fn write_log(mut log: Log, batches: Receiver<Decided>, shared: Shared, synced: Arc<AtomicU64>) {
    let mut gather = Duration::ZERO;
    while let Ok(first) = batches.recv() {
        let group = gather_group(first, &batches, gather);
        let answers = group.iter().map(|b| b.answers.len()).sum::<usize>();
        let (records, answered): (Vec<_>, Vec<_>) =
            group.into_iter().map(|b| (b.record, b.answers)).unzip();
        let records: Vec<Sealed> = records.into_iter().flatten().collect();
        let answered = answered.into_iter().flatten();
        if shared.is_poisoned() {
            answered.for_each(|answer| answer.fail(Error::StoragePoisoned));
            continue;
        }
        let started = Instant::now();
        if let Err(e) = log.append_all(&records) {
            let e = Error::from(e);
            shared.poison("appending to the write-ahead log (+ fdatasync)", &e);
            let cause = Arc::new(e);
            answered.for_each(|answer| answer.fail(Error::sync_failed(&cause)));
            continue;
        }
        gather = match answers > 1 {
            true => (started.elapsed() / 8).min(GATHER_MAX),
            false => Duration::ZERO,
        };
        if let Some(record) = records.last() {
            synced.store(record.lsn(), Ordering::SeqCst);
            shared.stats.batches.fetch_add(1, Ordering::Relaxed);
        }
        shared
            .stats
            .writes
            .fetch_add(answers as u64, Ordering::Relaxed);
        answered.for_each(Answer::send);
    }
}

/// `first` and the batches that follow it within `gather` (or are
/// already waiting), at most [`LOG_GROUP_MAX`].
fn gather_group(first: Decided, batches: &Receiver<Decided>, gather: Duration) -> Vec<Decided> {
    let mut group = vec![first];
    let deadline = Instant::now() + gather;
    while group.len() < LOG_GROUP_MAX {
        group.extend(batches.try_iter().take(LOG_GROUP_MAX - group.len()));
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || group.len() >= LOG_GROUP_MAX {
            break;
        }
        match batches.recv_timeout(left) {
            Ok(batch) => group.push(batch),
            Err(_) => break,
        }
    }
    group
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
            let direct = self.shared.direct.all_checkpointed();
            if waiting.is_empty() && applied == checkpointed && direct && !stopping {
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
        // Read before the flush: every change counted by then is in it.
        let direct = self.shared.direct.made.load(Ordering::SeqCst);
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
        self.shared
            .direct
            .checkpointed
            .store(direct, Ordering::SeqCst);
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
