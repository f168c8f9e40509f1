//! A round of finished attempts, of any tenants and routes, recorded in one
//! sled transaction.

use std::cell::RefCell;

use sled::{transaction::TransactionalTree, Transactional};

use super::{claim, counted, flatten, settle, tallied, Settle, TxResult};
use crate::{
    error::Result,
    ids::DeliveryId,
    lifecycle::{Next, Outcome},
    records::{AttemptRecord, DeliveryState},
    sled::{apply, tree, wal::record::Batch, Keyspace, TenantTrees, TxKeyspace},
};

/// One finished attempt of a round, in its route's trees.
pub(in crate::sled) struct RoundAttempt {
    pub(in crate::sled) trees: TenantTrees,
    pub(in crate::sled) entry: Vec<u8>,
    pub(in crate::sled) id: DeliveryId,
    pub(in crate::sled) record: AttemptRecord,
    pub(in crate::sled) next: Next,
    /// When it ended (Unix ms).
    pub(in crate::sled) now_ms: i64,
}

/// Records `round` in one transaction: for each attempt, what
/// [`super::record_attempt`] returns. With `log_as`, the round's changes
/// are also recorded as that log record (empty when nothing changed), and
/// the transaction writes its number to `marker` as the last record sled
/// holds; without, the round is durable with the next checkpoint. An error
/// changed nothing.
///
/// A round of finished attempts, of any tenants and routes, recorded in ONE
/// sled transaction, each attempt the same compare-and-set as
/// [`super::record_attempt`]. The committer runs it between batches and,
/// when it may, records every change the round made as one record of the
/// write-ahead log, so the round is durable with the log's next fsync
/// instead of a checkpoint of sled.
pub(in crate::sled) fn record_round(
    round: &[RoundAttempt],
    marker: &sled::Tree,
    log_as: Option<u64>,
) -> Result<(Vec<Option<DeliveryState>>, Batch)> {
    let Some(first) = round.first() else {
        return Ok((Vec::new(), Batch::default()));
    };
    let seqs = round
        .iter()
        .map(|a| a.trees.sequence())
        .collect::<Result<Vec<u64>>>()?;
    let log = RefCell::new(Batch::default());
    let (queue, states, attempts, dead, done) = first.trees.attempt_trees();
    let settled = (queue, states, attempts, dead, done, marker)
        .transaction(|(queue, states, attempts, dead, done, marker)| {
            *log.borrow_mut() = Batch::default();
            let logged = log_as.map(|_| &log);
            let results = round
                .iter()
                .zip(&seqs)
                .map(|(a, &retry_seq)| {
                    let t = &a.trees;
                    tallied(|tally| {
                        let (queue, states) = (
                            space(&t.queue, queue, logged, tree::QUEUE),
                            space(&t.state, states, logged, tree::STATE),
                        );
                        let Some(state) = claim(queue, states, &a.entry, &a.id, tally)? else {
                            return Ok(None);
                        };
                        let trees = Settle {
                            queue,
                            states,
                            attempts: space(&t.attempts, attempts, logged, tree::ATTEMPTS),
                            dead: space(&t.dead, dead, logged, tree::DEAD),
                            done: space(&t.done, done, logged, tree::DONE),
                            tally,
                        };
                        let outcome = Outcome {
                            attempt: &a.record,
                            next: &a.next,
                            retry_seq,
                            now_ms: a.now_ms,
                        };
                        settle(&trees, state, &a.entry, &a.id, &outcome).map(Some)
                    })
                })
                .collect::<TxResult<Vec<_>>>()?;
            if let Some(lsn) = log_as {
                if !log.borrow().is_empty() {
                    apply::mark_applied(marker, lsn)?;
                }
            }
            Ok(results)
        })
        .map_err(flatten)?;
    let states = round
        .iter()
        .zip(settled)
        .map(|(a, result)| counted(&a.trees, result))
        .collect();
    Ok((states, log.into_inner()))
}

/// A keyspace in the round's transaction, its changes recorded in `log`
/// (when logged) as ops on shared tree `index`.
fn space<'a>(
    keyspace: &'a Keyspace,
    view: &'a TransactionalTree,
    log: Option<&'a RefCell<Batch>>,
    index: u8,
) -> TxKeyspace<'a> {
    match log {
        Some(log) => keyspace.logged_tx(view, log, index),
        None => keyspace.tx(view),
    }
}
