//! The group committer: applies batches of pending writes and rounds of
//! finished attempts to sled and the write-ahead log, and answers their waiters.

use std::{
    sync::{
        atomic::{AtomicBool, Ordering},
        Arc,
    },
    thread::JoinHandle,
};

use tokio::sync::{mpsc, oneshot};

pub use super::pipeline::CommitStats;
use super::{
    api::{CommitOutcome, NewDelivery},
    apply::{decide, Write},
    deliveries::{record_round, RoundAttempt},
    pipeline::{self, Answer, DirectWrites, RoundAnswer, Shared, Stage, Waiter},
    records::DeliveryState,
    wal::record::Batch,
    TenantTrees,
};
use crate::error::{Error, Result};

/// Writes waiting for the committer; a full queue makes senders wait.
const QUEUE_CAPACITY: usize = 8192;

/// What the committer is asked to do.
pub(super) enum Request {
    /// Record a delivery.
    Write(Box<Write>, oneshot::Sender<Result<CommitOutcome>>),
    /// Record a round of finished attempts.
    Round(Vec<RoundAttempt>, oneshot::Sender<Result<RoundAnswer>>),
    /// Remove every key of the tenant, durably.
    DropTenant(Box<TenantTrees>, Waiter),
}

impl Request {
    fn fail(self, e: Error) {
        match self {
            Request::Write(_, reply) => drop(reply.send(Err(e))),
            Request::Round(_, reply) => drop(reply.send(Err(e))),
            Request::DropTenant(_, reply) => drop(reply.send(Err(e))),
        }
    }
}

/// Handle to the committer's threads.
///
/// The group committer: a batch of pending writes is applied as one sled
/// transaction and recorded as one record of the write-ahead log, which is
/// appended and fdatasynced once; only then are its waiters answered.
/// Concurrent requests share one fsync; none is acknowledged before it.
/// The dispatchers' rounds of finished attempts go the same way: every
/// round waiting is applied in one transaction after the batch's new
/// deliveries and logged as one record ([`super::deliveries::record_round`]).
/// sled itself is made durable by checkpoints ([`super::pipeline`]), which
/// control-plane writes wait for (a durable barrier); a tenant's data is
/// dropped on the committer thread, between batches.
///
/// A failed apply, append or sync poisons the store: the failed writes may
/// be in memory but never reach the disk (Linux reports a writeback error
/// once), so nothing more is acknowledged, not even a duplicate, until a
/// restart recovers from what really is on disk.
#[derive(Clone)]
pub struct Committer {
    tx: mpsc::Sender<Request>,
    checkpoints: std::sync::mpsc::Sender<Waiter>,
    stats: Arc<CommitStats>,
    poisoned: Arc<AtomicBool>,
    direct: Arc<DirectWrites>,
}

impl Committer {
    /// Starts the committer on `stages` (sled, the log and sled's syncer).
    pub(super) fn start(
        stages: Stage,
        batch_max: usize,
        poisoned: Arc<AtomicBool>,
    ) -> Result<(Committer, JoinHandle<()>)> {
        let (tx, rx) = mpsc::channel(QUEUE_CAPACITY);
        let stats = Arc::new(CommitStats::default());
        let direct = Arc::new(DirectWrites::default());
        let shared = Shared {
            poisoned: poisoned.clone(),
            stats: stats.clone(),
            direct: direct.clone(),
        };
        let (checkpoints, pipeline) = pipeline::start(stages, shared.clone())?;
        let handle = std::thread::Builder::new()
            .name("hookd-committer".into())
            .spawn(move || run(shared, rx, batch_max, pipeline))?;
        Ok((
            Committer {
                tx,
                checkpoints,
                stats,
                poisoned,
                direct,
            },
            handle,
        ))
    }

    /// Group-commit counters.
    pub fn stats(&self) -> &CommitStats {
        &self.stats
    }

    /// True once a write or sync failed: nothing more is acknowledged.
    pub fn is_poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Records `item` durably unless its event id is already known; returns
    /// only once the outcome is on disk.
    pub(super) async fn commit(
        &self,
        trees: TenantTrees,
        copies: Vec<TenantTrees>,
        delivery: NewDelivery,
    ) -> Result<CommitOutcome> {
        let write = Write {
            trees,
            copies,
            delivery,
        };
        self.ask(|reply| Request::Write(Box::new(write), reply))
            .await
    }

    /// Records a round of finished attempts (see
    /// [`super::deliveries::record_round`]) in order with the batches, and
    /// returns once it is durable: with the log's next fsync, or, when a
    /// change made to sled directly is not yet checkpointed, with a
    /// checkpoint after it.
    pub(super) async fn record_round(
        &self,
        round: Vec<RoundAttempt>,
    ) -> Result<Vec<Result<Option<DeliveryState>>>> {
        let answer = self.ask(|reply| Request::Round(round, reply)).await?;
        if !answer.logged {
            self.barrier().await?;
        }
        Ok(answer.states)
    }

    /// Counts a change to the deliveries made to sled directly, once it
    /// committed (see [`DirectWrites`]).
    pub(super) fn made_direct_write(&self) {
        self.direct.made();
    }

    /// Returns once everything written to the db before the call is flushed
    /// and fdatasynced: the next checkpoint that starts after it.
    pub async fn barrier(&self) -> Result<()> {
        if self.is_poisoned() {
            return Err(Error::StoragePoisoned);
        }
        let (reply, answer) = oneshot::channel();
        self.checkpoints
            .send(reply)
            .map_err(|_| Error::stopped("durable writer"))?;
        answer.await.map_err(|_| Error::stopped("durable writer"))?
    }

    /// Removes every key of the tenant, in order with the batches, and
    /// returns once that is durable.
    pub async fn drop_tenant(&self, trees: TenantTrees) -> Result<()> {
        self.ask(|reply| Request::DropTenant(Box::new(trees), reply))
            .await
    }

    async fn ask<T>(
        &self,
        request: impl FnOnce(oneshot::Sender<Result<T>>) -> Request,
    ) -> Result<T> {
        if self.is_poisoned() {
            return Err(Error::StoragePoisoned);
        }
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(request(reply))
            .await
            .map_err(|_| Error::stopped("durable writer"))?;
        answer.await.map_err(|_| Error::stopped("durable writer"))?
    }
}

/// The first stage: gathers the waiting requests into a batch, applies it
/// and hands its log record to the log, and goes on with the next: every
/// batch applied while the log syncs shares the log's next fsync, so a
/// write waits for at most the sync in progress and its own.
fn run(
    shared: Shared,
    mut rx: mpsc::Receiver<Request>,
    batch_max: usize,
    mut pipeline: pipeline::Pipeline,
) {
    while let Some(first) = rx.blocking_recv() {
        // A tenant drop ends its batch: the writes before it are applied
        // first, the ones after it see the tenant gone.
        let mut requests = vec![first];
        while requests.len() < batch_max
            && !matches!(requests.last(), Some(Request::DropTenant(..)))
        {
            match rx.try_recv() {
                Ok(r) => requests.push(r),
                Err(_) => break,
            }
        }
        if shared.is_poisoned() {
            requests
                .into_iter()
                .for_each(|r| r.fail(Error::StoragePoisoned));
            continue;
        }
        if !apply_requests(&shared, requests, &mut pipeline) {
            break;
        }
    }
    pipeline.finish();
}

/// Applies a batch of new deliveries and hands it to the log; false once
/// the log stopped.
fn apply_writes(
    shared: &Shared,
    writes: Vec<(Box<Write>, oneshot::Sender<Result<CommitOutcome>>)>,
    pipeline: &mut pipeline::Pipeline,
) -> bool {
    let items: Vec<&Write> = writes.iter().map(|(item, _)| &**item).collect();
    let decided = decide(&items, pipeline.marker(), pipeline.next_lsn());
    drop(items);
    let replies = writes.into_iter().map(|(_, reply)| reply);
    match decided {
        Ok(decided) => {
            let answers = replies
                .zip(decided.outcomes)
                .map(|(r, o)| Answer::Commit(r, o));
            pipeline.send(decided.batch, answers.collect())
        }
        Err(e) => {
            // Part of the batch may be applied in memory: poisoned.
            shared.poison("applying a batch of writes", &e);
            let cause = Arc::new(e);
            for reply in replies {
                let _ = reply.send(Err(Error::batch_failed(&cause)));
            }
            true
        }
    }
}

/// Applies every round of attempts of a batch as one transaction, logged
/// unless a direct change is not yet checkpointed, and hands it to the log
/// (which answers the rounds in order with the batches); false once the
/// log stopped. When that transaction fails (a state that does not
/// decode), each attempt is recorded on its own instead, unlogged, with
/// its own result.
fn apply_rounds(
    shared: &Shared,
    rounds: Vec<(Vec<RoundAttempt>, oneshot::Sender<Result<RoundAnswer>>)>,
    pipeline: &mut pipeline::Pipeline,
) -> bool {
    let mut lengths = Vec::with_capacity(rounds.len());
    let (mut attempts, mut replies) = (Vec::new(), Vec::new());
    for (round, reply) in rounds {
        lengths.push(round.len());
        attempts.extend(round);
        replies.push(reply);
    }
    let logged = shared.direct.all_checkpointed();
    let log_as = logged.then(|| pipeline.next_lsn());
    let one_by_one = |attempts: &[RoundAttempt]| -> Vec<Result<Option<DeliveryState>>> {
        attempts
            .iter()
            .map(|a| {
                record_round(std::slice::from_ref(a), pipeline.marker(), None)
                    .map(|(mut states, _)| states.pop().flatten())
            })
            .collect()
    };
    let (states, batch, logged) = match record_round(&attempts, pipeline.marker(), log_as) {
        Ok((states, batch)) => (states.into_iter().map(Ok).collect(), batch, logged),
        Err(_) => (one_by_one(&attempts), Batch::default(), false),
    };
    let mut states = states.into_iter();
    let answers = replies
        .into_iter()
        .zip(lengths)
        .map(|(reply, n)| {
            let states = states.by_ref().take(n).collect();
            Answer::Round(reply, RoundAnswer { states, logged })
        })
        .collect();
    pipeline.send(batch, answers)
}

/// Applies one batch of requests and hands it to the log; false once the
/// log stopped.
fn apply_requests(
    shared: &Shared,
    requests: Vec<Request>,
    pipeline: &mut pipeline::Pipeline,
) -> bool {
    let mut writes = Vec::with_capacity(requests.len());
    let (mut rounds, mut dropped) = (Vec::new(), None);
    for request in requests {
        match request {
            Request::Write(item, reply) => writes.push((item, reply)),
            Request::Round(round, reply) => rounds.push((round, reply)),
            Request::DropTenant(trees, reply) => dropped = Some((trees, reply)),
        }
    }
    let mut sent = writes.is_empty() || apply_writes(shared, writes, pipeline);
    if !rounds.is_empty() {
        sent &= apply_rounds(shared, rounds, pipeline);
    }
    if let Some((trees, reply)) = dropped {
        match trees.clear() {
            // Durable with the next checkpoint, which answers it.
            Ok(()) => pipeline.after_checkpoint(reply),
            Err(e) => {
                shared.poison("dropping a tenant's trees", &e);
                let _ = reply.send(Err(e));
            }
        }
    }
    sent
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::TenantData;
    use crate::{
        ids::{DeliveryId, EventId, RequestId, TenantId},
        {records::EventMeta, SledStore},
    };

    fn delivery(n: usize) -> NewDelivery {
        NewDelivery {
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
            body: bytes::Bytes::from_static(b"{}"),
            due_ms: 1,
            content_key: None,
            copies: Vec::new(),
            receipt: crate::api::Receipt::Queued,
            routes: Vec::new(),
            event_type: None,
        }
    }

    fn delivered(entry: Vec<u8>, id: DeliveryId, trees: &TenantTrees) -> Vec<RoundAttempt> {
        let record = crate::records::AttemptRecord::answered(200, 1);
        vec![RoundAttempt {
            trees: trees.clone(),
            entry,
            id,
            record,
            next: crate::lifecycle::Next::Delivered,
            now_ms: 2,
        }]
    }

    /// A round is trusted to the log only while every change made to sled
    /// directly is checkpointed: after one that is not, the round is
    /// written to sled alone and answered as durable only with a
    /// checkpoint; once one ran, rounds are logged again.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_round_after_a_direct_change_not_yet_checkpointed_waits_for_a_checkpoint() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _thread) = SledStore::open(dir.path(), 512, true).unwrap();
        let trees = store
            .tenant_trees(&TenantId::try_from("a").unwrap())
            .unwrap();
        let committer = store.committer().clone();
        for n in 0..3 {
            committer
                .commit(trees.clone(), Vec::new(), delivery(n))
                .await
                .unwrap();
        }
        store.durable_barrier().await.unwrap();
        let mut queued = TenantData::queue(&trees, None, 10).unwrap().into_iter();
        let mut round = || {
            let (entry, id) = queued.next().unwrap();
            let round = delivered(entry.as_bytes().to_vec(), id, &trees);
            let committer = committer.clone();
            async move {
                let answer = committer.ask(|reply| Request::Round(round, reply));
                let answer = answer.await.unwrap();
                assert!(matches!(answer.states[..], [Ok(Some(_))]));
                answer.logged
            }
        };
        assert!(round().await, "nothing direct: logged");
        committer.made_direct_write();
        assert!(!round().await, "a direct change not checkpointed: unlogged");
        store.durable_barrier().await.unwrap();
        assert!(round().await, "checkpointed: logged again");
    }

    /// Concurrent writers share fsyncs: 64 simultaneous commits take far
    /// fewer durable batches than writes, and every one is answered.
    #[tokio::test(flavor = "multi_thread", worker_threads = 4)]
    async fn concurrent_commits_share_durable_batches() {
        let dir = tempfile::tempdir().unwrap();
        let (store, _thread) = SledStore::open(dir.path(), 512, true).unwrap();
        let tenants = [
            store
                .tenant_trees(&TenantId::try_from("a").unwrap())
                .unwrap(),
            store
                .tenant_trees(&TenantId::try_from("b").unwrap())
                .unwrap(),
        ];
        let commits = (0..64).map(|n| {
            let (trees, item) = (tenants[n % 2].clone(), delivery(n % 60));
            let committer = store.committer().clone();
            tokio::spawn(async move { committer.commit(trees, Vec::new(), item).await.unwrap() })
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
