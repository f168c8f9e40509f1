//! The group committer: a batch of pending writes is applied as one sled
//! transaction, made durable with one flush and one fdatasync, and only then
//! are its waiters answered. Concurrent requests
//! share one fsync; none is acknowledged before it.

use std::{
    fs::File,
    path::{Path, PathBuf},
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    thread::JoinHandle,
    time::{Duration, SystemTime},
};

use sled::{transaction::TransactionError, Transactional};
use tokio::sync::{mpsc, oneshot};

use super::{
    records::{
        decode, encode, queue_key, DeliveryState, EventMeta, IdempotencyRecord, StoredEvent,
    },
    TenantTrees, SEGMENT_SIZE,
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId},
};

/// Writes waiting for the committer; a full queue makes senders wait.
const QUEUE_CAPACITY: usize = 8192;

/// A new event to record: idempotency entry, stored event and queue entry,
/// all or nothing.
pub struct NewDelivery {
    /// The tenant's trees.
    pub trees: TenantTrees,
    /// Idempotency key.
    pub event_id: EventId,
    /// Stored metadata.
    pub meta: EventMeta,
    /// Raw body.
    pub body: actix_web::web::Bytes,
    /// When the first forward attempt is due (Unix ms).
    pub due_ms: i64,
}

/// What happened to a [`NewDelivery`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CommitOutcome {
    /// Stored durably as a new delivery.
    Accepted,
    /// The event id was already recorded; nothing was written.
    Duplicate(DeliveryId),
}

struct Pending {
    item: NewDelivery,
    reply: oneshot::Sender<Result<CommitOutcome>>,
}

/// Handle to the committer thread.
#[derive(Clone)]
pub struct Committer {
    tx: mpsc::Sender<Pending>,
    stats: Arc<CommitStats>,
}

/// How much group commit is happening: writes per durable batch is the
/// number of requests that shared one fsync.
#[derive(Debug, Default)]
pub struct CommitStats {
    batches: AtomicU64,
    writes: AtomicU64,
}

impl CommitStats {
    /// Durable batches (flush + fdatasync) so far.
    pub fn batches(&self) -> u64 {
        self.batches.load(Ordering::Relaxed)
    }

    /// Writes those batches carried.
    pub fn writes(&self) -> u64 {
        self.writes.load(Ordering::Relaxed)
    }
}

impl Committer {
    pub(super) fn start(
        db: sled::Db,
        sled_dir: &Path,
        batch_max: usize,
        fsync: bool,
        healthy: Arc<AtomicBool>,
    ) -> Result<(Committer, JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let syncer = Syncer::open(sled_dir, fsync)?;
        let stats = Arc::new(CommitStats::default());
        let counted = stats.clone();
        let handle = std::thread::Builder::new()
            .name("hookd-committer".into())
            .spawn(move || run(db, rx, batch_max, syncer, healthy, counted))?;
        Ok((Committer { tx, stats }, handle))
    }

    /// Group-commit counters.
    pub fn stats(&self) -> &CommitStats {
        &self.stats
    }

    /// Records `item` durably unless its event id is already known; returns
    /// only once the outcome is on disk.
    pub async fn commit(&self, item: NewDelivery) -> Result<CommitOutcome> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(Pending { item, reply })
            .await
            .map_err(|_| Error::CommitterGone)?;
        answer.await.map_err(|_| Error::CommitterGone)?
    }
}

/// A batch whose writes are applied and now wait for one durable flush.
struct Applied {
    answers: Vec<(Pending, Result<CommitOutcome>)>,
    /// Set when a body went to a sled blob file: sync blobs newer than this.
    blobs_since: Option<SystemTime>,
}

/// Two stages on two threads: this one applies batch N+1 while the flusher
/// makes batch N durable, so transactions and fsyncs overlap. The flusher
/// takes batches in order and each flush covers every write applied before
/// it, so no answer (a duplicate of a write in flight included) goes out
/// before the write it depends on is on disk.
fn run(
    db: sled::Db,
    mut rx: mpsc::Receiver<Pending>,
    batch_max: usize,
    syncer: Syncer,
    healthy: Arc<AtomicBool>,
    stats: Arc<CommitStats>,
) {
    let (applied_tx, applied_rx) = std::sync::mpsc::sync_channel::<Applied>(1);
    let flush_db = db.clone();
    let flusher = std::thread::Builder::new()
        .name("hookd-flusher".into())
        .spawn(move || flush_batches(flush_db, applied_rx, syncer, healthy, stats));
    let Ok(flusher) = flusher else {
        tracing::error!("could not start the flusher thread; durable writes are unavailable");
        return;
    };
    while let Some(first) = rx.blocking_recv() {
        let mut batch = Vec::with_capacity(batch_max);
        batch.push(first);
        while batch.len() < batch_max {
            match rx.try_recv() {
                Ok(p) => batch.push(p),
                Err(_) => break,
            }
        }
        // mtime is coarse-grained: look a second further back than the batch.
        let blobs_since = batch
            .iter()
            .any(|p| p.item.body.len() > SEGMENT_SIZE / 8)
            .then(|| SystemTime::now() - Duration::from_secs(1));
        let items: Vec<&NewDelivery> = batch.iter().map(|p| &p.item).collect();
        let outcomes = apply_batch(&db, &items);
        drop(items);
        let answers = match outcomes {
            Ok(outcomes) => batch
                .into_iter()
                .zip(outcomes.into_iter().map(Ok))
                .collect(),
            Err(e) => {
                tracing::error!(error = %e, batch = batch.len(), "applying a batch failed; answering 503");
                batch
                    .into_iter()
                    .map(|p| (p, Err(Error::CommitterGone)))
                    .collect()
            }
        };
        if applied_tx
            .send(Applied {
                answers,
                blobs_since,
            })
            .is_err()
        {
            break;
        }
    }
    drop(applied_tx);
    let _ = flusher.join();
}

/// The second stage: one flush (+ fdatasync) per batch, then the answers.
fn flush_batches(
    db: sled::Db,
    applied: std::sync::mpsc::Receiver<Applied>,
    syncer: Syncer,
    healthy: Arc<AtomicBool>,
    stats: Arc<CommitStats>,
) {
    for batch in applied {
        let durable = db
            .flush()
            .map_err(Error::from)
            .and_then(|_| syncer.sync(batch.blobs_since));
        match &durable {
            Ok(()) => {
                healthy.store(true, Ordering::Relaxed);
                stats.batches.fetch_add(1, Ordering::Relaxed);
                stats
                    .writes
                    .fetch_add(batch.answers.len() as u64, Ordering::Relaxed);
            }
            Err(e) => {
                tracing::error!(error = %e, batch = batch.answers.len(), "durable commit failed; answering 503");
                healthy.store(false, Ordering::Relaxed);
            }
        }
        for (pending, outcome) in batch.answers {
            let answer = match (&durable, outcome) {
                (Err(_), _) => Err(Error::CommitterGone),
                (Ok(()), outcome) => outcome,
            };
            let _ = pending.reply.send(answer);
        }
    }
    if let Err(e) = db.flush() {
        tracing::error!(error = %e, "final flush failed");
    }
}

/// One write, encoded ahead of its transaction.
struct Encoded<'a> {
    /// Index of the item's tenant in the transaction's tree list.
    tenant: usize,
    event_id: &'a str,
    delivery_id: &'a str,
    queue_key: [u8; 16],
    idem: Vec<u8>,
    event: Vec<u8>,
    state: Vec<u8>,
}

/// Applies a whole batch as ONE sled transaction over the trees of the
/// tenants it touches: for each item, its idempotency record, stored event,
/// state and queue entry are inserted unless the event id is already known
/// (in storage or earlier in the same batch), which makes it a duplicate.
/// One transaction per batch instead of one per write: sled's transaction
/// overhead is paid once.
fn apply_batch(db: &sled::Db, items: &[&NewDelivery]) -> Result<Vec<CommitOutcome>> {
    let mut tenants: Vec<&TenantTrees> = Vec::new();
    let mut encoded = Vec::with_capacity(items.len());
    for item in items {
        let tenant = match tenants
            .iter()
            .position(|t| t.idem.name() == item.trees.idem.name())
        {
            Some(i) => i,
            None => {
                tenants.push(&item.trees);
                tenants.len() - 1
            }
        };
        let queue_key = queue_key(item.due_ms, db.generate_id()?);
        let mut state = DeliveryState::pending(item.event_id.clone(), item.meta.received_at_ms);
        state.queue_key = Some(hex::encode(queue_key));
        encoded.push(Encoded {
            tenant,
            event_id: item.event_id.as_str(),
            delivery_id: item.meta.delivery_id.as_str(),
            queue_key,
            idem: encode(&IdempotencyRecord {
                delivery_id: item.meta.delivery_id.clone(),
                received_at_ms: item.meta.received_at_ms,
            }),
            event: StoredEvent::encode(&item.meta, &item.body),
            state: encode(&state),
        });
    }
    let trees: Vec<&sled::Tree> = tenants
        .iter()
        .flat_map(|t| [&t.idem, &t.events, &t.state, &t.queue])
        .collect();
    let result = trees.as_slice().transaction(|views| {
        let mut existing = Vec::with_capacity(encoded.len());
        for e in &encoded {
            let [idem, events, states, queue] = &views[e.tenant * 4..e.tenant * 4 + 4] else {
                unreachable!("four trees per tenant")
            };
            if let Some(first) = idem.get(e.event_id)? {
                existing.push(Some(first));
                continue;
            }
            idem.insert(e.event_id, e.idem.as_slice())?;
            events.insert(e.delivery_id, e.event.as_slice())?;
            states.insert(e.delivery_id, e.state.as_slice())?;
            queue.insert(&e.queue_key[..], e.delivery_id)?;
            existing.push(None);
        }
        Ok(existing)
    });
    let existing = match result {
        Ok(existing) => existing,
        Err(TransactionError::Storage(e)) => return Err(e.into()),
        Err(TransactionError::Abort(())) => {
            return Err(Error::Corrupt("transaction aborted".into()))
        }
    };
    for (e, first) in encoded.iter().zip(&existing) {
        if first.is_none() {
            tenants[e.tenant].gauges.add_queued(1);
        }
    }
    existing
        .into_iter()
        .map(|first| match first {
            None => Ok(CommitOutcome::Accepted),
            Some(record) => Ok(CommitOutcome::Duplicate(
                decode::<IdempotencyRecord>(&record)?.delivery_id,
            )),
        })
        .collect()
}

/// fdatasync of sled's log (and fresh blob files): `flush()` alone uses
/// `sync_file_range`, which survives a process crash but not a power loss.
struct Syncer {
    enabled: bool,
    log: File,
    blobs: PathBuf,
}

impl Syncer {
    fn open(sled_dir: &Path, enabled: bool) -> Result<Syncer> {
        Ok(Syncer {
            enabled,
            log: File::open(sled_dir.join("db"))?,
            blobs: sled_dir.join("blobs"),
        })
    }

    fn sync(&self, blobs_since: Option<SystemTime>) -> Result<()> {
        if !self.enabled {
            return Ok(());
        }
        self.log.sync_data()?;
        if let Some(since) = blobs_since {
            for entry in std::fs::read_dir(&self.blobs)? {
                let entry = entry?;
                let fresh = entry
                    .metadata()?
                    .modified()
                    .map(|m| m >= since)
                    .unwrap_or(true);
                if fresh {
                    File::open(entry.path())?.sync_data()?;
                }
            }
            File::open(&self.blobs)?.sync_all()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{
        ids::{RequestId, TenantId},
        store::Store,
    };

    fn delivery(trees: &TenantTrees, n: usize) -> NewDelivery {
        NewDelivery {
            trees: trees.clone(),
            event_id: EventId::new(format!("evt_{n}")),
            meta: EventMeta {
                event_id: EventId::new(format!("evt_{n}")),
                delivery_id: DeliveryId::generate(),
                request_id: RequestId::generate(),
                received_at_ms: 1,
                headers: vec![],
                trace_id: String::new(),
                span_id: String::new(),
                sampled: true,
            },
            body: actix_web::web::Bytes::from_static(b"{}"),
            due_ms: 1,
        }
    }

    /// Concurrent writers share fsyncs: 64 simultaneous commits take far
    /// fewer durable batches than writes, and every one is answered.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_commits_share_durable_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _thread) = Store::open(dir.path(), 512, true).unwrap();
        let tenants = [
            store.tenant_trees(&TenantId::new("a")).unwrap(),
            store.tenant_trees(&TenantId::new("b")).unwrap(),
        ];
        let commits = (0..64).map(|n| {
            let item = delivery(&tenants[n % 2], n % 60);
            let committer = store.committer().clone();
            tokio::spawn(async move { committer.commit(item).await.unwrap() })
        });
        let outcomes = futures_util::future::join_all(commits).await;
        let accepted = outcomes
            .iter()
            .filter(|o| matches!(o.as_ref().unwrap(), CommitOutcome::Accepted))
            .count();
        assert_eq!(
            accepted, 60,
            "four event ids were sent twice: duplicates, not new"
        );
        let stats = store.committer().stats();
        assert_eq!(stats.writes(), 64);
        assert!(
            stats.batches() < 32,
            "64 writes took {} fsyncs",
            stats.batches()
        );
    }
}
