//! A forwarding pass on PostgreSQL in a fixed number of round trips: the due
//! deliveries read at once, a batch of attempts claimed at once, and a round
//! of finished attempts recorded in one transaction.

use std::{
    collections::{HashMap, HashSet},
    time::Duration,
};

use tokio_postgres::types::ToSql;

use super::{pg, retrying, Db};
use crate::{
    api::{Due, DueEntry, Fence, FinishedAttempt, QueueKey},
    error::Result,
    ids::DeliveryId,
    lifecycle::{holds_entry, settled},
    records::{decode, encode, queue_key, DeliveryState, StoredEvent},
};

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// The due entries with their states and events, in one statement.
const DUE: &str = "SELECT q.qkey, q.delivery_id, s.state, e.event FROM hookd_queue q \
     LEFT JOIN hookd_states s ON s.tenant = q.tenant AND s.delivery_id = q.delivery_id \
     LEFT JOIN hookd_events e ON e.tenant = q.tenant AND e.delivery_id = q.delivery_id \
     WHERE q.tenant = $1 AND q.qkey < $2 AND NOT (q.qkey = ANY($3)) \
     ORDER BY q.qkey LIMIT $4";

/// The first entry not yet due.
const NEXT_DUE: &str =
    "SELECT qkey FROM hookd_queue WHERE tenant = $1 AND qkey >= $2 ORDER BY qkey LIMIT 1";

/// Which of the entries are still queued for their deliveries while the
/// lease is still the fence's, and how long it has left (whole ms).
const CLAIM: &str = "SELECT q.qkey, q.delivery_id, \
     floor(extract(epoch FROM l.expires_at - now()) * 1000)::bigint \
     FROM hookd_queue q JOIN hookd_forward_leases l ON l.tenant = q.tenant \
     WHERE q.tenant = $1 AND q.qkey = ANY($2) \
     AND l.owner = $3 AND l.epoch = $4 AND l.expires_at > now()";

/// The round's states, locked in delivery id order (the one order of every
/// writer that locks several).
const LOCK_STATES: &str = "SELECT delivery_id, state FROM hookd_states \
     WHERE tenant = $1 AND delivery_id = ANY($2) ORDER BY delivery_id FOR UPDATE";

/// The round's queue entries under one fence, locked, while the lease is
/// still that fence (its row share-locked, so no takeover commits first).
const LOCK_ENTRIES: &str = "SELECT q.qkey, q.delivery_id FROM hookd_queue q \
     JOIN hookd_forward_leases l ON l.tenant = q.tenant \
     WHERE q.tenant = $1 AND q.qkey = ANY($2) \
     AND l.owner = $3 AND l.epoch = $4 AND l.expires_at > now() \
     ORDER BY q.qkey FOR UPDATE OF q FOR SHARE OF l";

/// The due deliveries of `tenant` at `now_ms`: at most `limit`, leaving out
/// `busy`, with their states and events; and when the next one is due.
pub(super) async fn due(
    db: &Db,
    tenant: &str,
    now_ms: i64,
    limit: usize,
    busy: &HashSet<QueueKey>,
) -> Result<Due> {
    let bound = queue_key(now_ms.saturating_add(1), 0).to_vec();
    let busy: Vec<&[u8]> = busy.iter().map(QueueKey::as_bytes).collect();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let client = db.client().await?;
    let (due, next) = (
        client.prepare_cached(DUE).await.map_err(pg)?,
        client.prepare_cached(NEXT_DUE).await.map_err(pg)?,
    );
    let (due_params, next_params): (&[&(dyn ToSql + Sync)], &[&(dyn ToSql + Sync)]) =
        (&[&tenant, &bound, &busy, &limit], &[&tenant, &bound]);
    let (rows, next) = futures_util::try_join!(
        client.query(&due, due_params),
        client.query_opt(&next, next_params),
    )
    .map_err(pg)?;
    let mut entries = Vec::with_capacity(rows.len());
    for row in &rows {
        let state: Option<&[u8]> = row.get(2);
        let event: Option<&[u8]> = row.get(3);
        entries.push(DueEntry {
            key: QueueKey::from_bytes(row.get(0)),
            id: DeliveryId::new(row.get::<_, String>(1)),
            state: state.map(decode).transpose()?,
            event: event.map(StoredEvent::decode).transpose()?,
        });
    }
    let next_due_ms = next.map(|row| QueueKey::from_bytes(row.get(0)).due_ms());
    Ok(Due {
        entries,
        next_due_ms,
    })
}

/// For each of `entries`, in order, whether it may be sent under `fence`
/// and how long the lease has left: one statement on the database's clock.
pub(super) async fn claim(
    db: &Db,
    tenant: &str,
    entries: &[(QueueKey, DeliveryId)],
    fence: &Fence,
) -> Result<Vec<Option<Duration>>> {
    let keys: Vec<&[u8]> = entries.iter().map(|(key, _)| key.as_bytes()).collect();
    let owner: &str = &fence.owner;
    let client = db.client().await?;
    let statement = client.prepare_cached(CLAIM).await.map_err(pg)?;
    let rows = client
        .query(&statement, &[&tenant, &keys, &owner, &fence.epoch])
        .await
        .map_err(pg)?;
    let live: HashMap<Vec<u8>, (String, i64)> = rows
        .iter()
        .map(|row| (row.get(0), (row.get(1), row.get(2))))
        .collect();
    Ok(entries
        .iter()
        .map(|(key, id)| match live.get(key.as_bytes()) {
            Some((named, left)) if named == id.as_str() => {
                Some(Duration::from_millis(u64::try_from(*left).unwrap_or(0)))
            }
            _ => None,
        })
        .collect())
}

/// Records a round of finished attempts in one transaction, each only
/// while its entry is live and its fence current (`None` when not), as
/// [`super::transitions::record`] does one; a lost race is tried again.
pub(super) async fn record(
    db: &Db,
    tenant: &str,
    round: &[FinishedAttempt],
    now_ms: i64,
) -> Result<Vec<Option<DeliveryState>>> {
    let mut seqs = Vec::with_capacity(round.len());
    for _ in round {
        seqs.push(db.sequence().await?);
    }
    retrying(|| async {
        let mut client = db.client().await?;
        let tx = client.transaction().await.map_err(pg)?;
        let mut states = lock_states(&tx, tenant, round).await?;
        let named = lock_entries(&tx, tenant, round).await?;
        let mut writes = Writes::default();
        let mut recorded = Vec::with_capacity(round.len());
        for (attempt, seq) in round.iter().zip(&seqs) {
            let (entry, id) = (attempt.entry.as_bytes(), attempt.id.as_str());
            if named.get(entry).map(String::as_str) != Some(id) {
                recorded.push(None);
                continue;
            }
            let state = states.remove(id).filter(|s| holds_entry(s, entry));
            writes.unqueue.push(entry.to_vec());
            let Some(state) = state else {
                recorded.push(None);
                continue;
            };
            let done = settled(
                state,
                &attempt.id,
                &attempt.record,
                &attempt.next,
                *seq,
                now_ms,
            );
            writes.add(id, attempt, done.requeue, (done.dead, done.done));
            states.insert(id.to_owned(), done.state.clone());
            writes.states.insert(id.to_owned(), done.state.clone());
            recorded.push(Some(done.state));
        }
        writes.apply(&tx, tenant).await?;
        tx.commit().await.map_err(pg)?;
        Ok(recorded)
    })
    .await
}

/// The states of the round's deliveries, locked.
async fn lock_states(
    tx: &Tx<'_>,
    tenant: &str,
    round: &[FinishedAttempt],
) -> Result<HashMap<String, DeliveryState>> {
    let ids: Vec<&str> = round.iter().map(|a| a.id.as_str()).collect();
    let statement = tx.prepare_cached(LOCK_STATES).await.map_err(pg)?;
    let rows = tx.query(&statement, &[&tenant, &ids]).await.map_err(pg)?;
    rows.iter()
        .map(|row| Ok((row.get(0), decode(row.get::<_, &[u8]>(1))?)))
        .collect()
}

/// The round's queue entries whose fence is current, locked: entry ->
/// the delivery it names.
async fn lock_entries(
    tx: &Tx<'_>,
    tenant: &str,
    round: &[FinishedAttempt],
) -> Result<HashMap<Vec<u8>, String>> {
    let mut fences: Vec<&Fence> = round.iter().map(|a| &a.fence).collect();
    fences.sort_by_key(|f| (f.owner.clone(), f.epoch));
    fences.dedup();
    let statement = tx.prepare_cached(LOCK_ENTRIES).await.map_err(pg)?;
    let mut named = HashMap::new();
    for fence in fences {
        let keys: Vec<&[u8]> = round
            .iter()
            .filter(|a| a.fence == *fence)
            .map(|a| a.entry.as_bytes())
            .collect();
        let owner: &str = &fence.owner;
        let rows = tx
            .query(&statement, &[&tenant, &keys, &owner, &fence.epoch])
            .await
            .map_err(pg)?;
        named.extend(rows.iter().map(|row| (row.get(0), row.get(1))));
    }
    Ok(named)
}

/// What a round writes, column by column.
#[derive(Default)]
struct Writes {
    /// Queue entries to remove: those settled, and stale ones.
    unqueue: Vec<Vec<u8>>,
    /// Retries' new entries: key, delivery.
    requeue: (Vec<Vec<u8>>, Vec<String>),
    /// Dead letters: key, record.
    dead: (Vec<Vec<u8>>, Vec<Vec<u8>>),
    /// Delivered index keys.
    done: Vec<Vec<u8>>,
    /// Each delivery's newest state.
    states: HashMap<String, DeliveryState>,
    /// Attempts: delivery, number, record.
    attempts: (Vec<String>, Vec<i64>, Vec<Vec<u8>>),
}

/// A dead letter (key and record) and a delivered index key, as settling
/// an attempt gives them.
type Ends = (
    Option<(Vec<u8>, crate::records::DeadLetter)>,
    Option<Vec<u8>>,
);

impl Writes {
    fn add(
        &mut self,
        id: &str,
        attempt: &FinishedAttempt,
        requeue: Option<[u8; 16]>,
        (dead, done): Ends,
    ) {
        if let Some(key) = requeue {
            self.requeue.0.push(key.to_vec());
            self.requeue.1.push(id.to_owned());
        }
        if let Some((key, letter)) = dead {
            self.dead.0.push(key);
            self.dead.1.push(encode(&letter));
        }
        self.done.extend(done);
        self.attempts.0.push(id.to_owned());
        self.attempts.1.push(i64::from(attempt.record.attempt));
        self.attempts.2.push(encode(&attempt.record));
    }

    /// Writes the round: one statement per table it touches.
    async fn apply(self, tx: &Tx<'_>, tenant: &str) -> Result<()> {
        let (ids, statuses, states): (Vec<String>, Vec<&str>, Vec<Vec<u8>>) = {
            let mut columns = (Vec::new(), Vec::new(), Vec::new());
            for (id, state) in &self.states {
                columns.0.push(id.clone());
                columns.1.push(state.status.as_str());
                columns.2.push(encode(state));
            }
            columns
        };
        let statements: [(&str, bool, Vec<&(dyn ToSql + Sync)>); 6] = [
            (
                "DELETE FROM hookd_queue WHERE tenant = $1 AND qkey = ANY($2)",
                self.unqueue.is_empty(),
                vec![&tenant, &self.unqueue],
            ),
            (
                "INSERT INTO hookd_queue (tenant, qkey, delivery_id) \
                 SELECT $1, * FROM unnest($2::bytea[], $3::text[])",
                self.requeue.0.is_empty(),
                vec![&tenant, &self.requeue.0, &self.requeue.1],
            ),
            (
                "INSERT INTO hookd_dead (tenant, dkey, letter) \
                 SELECT $1, * FROM unnest($2::bytea[], $3::bytea[]) \
                 ON CONFLICT (tenant, dkey) DO UPDATE SET letter = EXCLUDED.letter",
                self.dead.0.is_empty(),
                vec![&tenant, &self.dead.0, &self.dead.1],
            ),
            (
                "INSERT INTO hookd_done (tenant, dkey) SELECT $1, * FROM unnest($2::bytea[]) \
                 ON CONFLICT DO NOTHING",
                self.done.is_empty(),
                vec![&tenant, &self.done],
            ),
            (
                "INSERT INTO hookd_states (tenant, delivery_id, status, state) \
                 SELECT $1, * FROM unnest($2::text[], $3::text[], $4::bytea[]) \
                 ON CONFLICT (tenant, delivery_id) \
                 DO UPDATE SET status = EXCLUDED.status, state = EXCLUDED.state",
                ids.is_empty(),
                vec![&tenant, &ids, &statuses, &states],
            ),
            (
                "INSERT INTO hookd_attempts (tenant, delivery_id, attempt, record) \
                 SELECT $1, * FROM unnest($2::text[], $3::int8[], $4::bytea[]) \
                 ON CONFLICT (tenant, delivery_id, attempt) DO UPDATE SET record = EXCLUDED.record",
                self.attempts.0.is_empty(),
                vec![
                    &tenant,
                    &self.attempts.0,
                    &self.attempts.1,
                    &self.attempts.2,
                ],
            ),
        ];
        for (sql, empty, params) in statements {
            if empty {
                continue;
            }
            let statement = tx.prepare_cached(sql).await.map_err(pg)?;
            tx.execute(&statement, &params).await.map_err(pg)?;
        }
        Ok(())
    }
}
