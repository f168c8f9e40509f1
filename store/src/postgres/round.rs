//! A forwarding pass on PostgreSQL in a fixed number of round trips: the due
//! deliveries and the lease read at once, a round of finished attempts
//! recorded in one transaction.

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

/// The due entries with their states and events, in one statement: the
/// queue read in key order, each row's state and event looked up by key
/// after the limit (so no plan, custom or generic, scans the events).
pub(super) const DUE: &str = "SELECT q.qkey, q.delivery_id, \
     (SELECT s.state FROM hookd_states s \
      WHERE s.tenant = q.tenant AND s.delivery_id = q.delivery_id), \
     (SELECT e.event FROM hookd_events e \
      WHERE e.tenant = q.tenant AND e.delivery_id = q.delivery_id) \
     FROM hookd_queue q \
     WHERE q.tenant = $1 AND q.qkey >= $5 AND q.qkey < $2 AND NOT (q.qkey = ANY($3)) \
     ORDER BY q.qkey LIMIT $4";

/// The first entry not yet due.
const NEXT_DUE: &str =
    "SELECT qkey FROM hookd_queue WHERE tenant = $1 AND qkey >= $2 ORDER BY qkey LIMIT 1";

/// How long the lease has left while it is still the fence's (whole ms).
const LEASE_LEFT: &str = "SELECT floor(extract(epoch FROM expires_at - now()) * 1000)::bigint \
     FROM hookd_forward_leases \
     WHERE tenant = $1 AND owner = $2 AND epoch = $3 AND expires_at > now()";

/// The round's states, locked in delivery id order (the one order of every
/// writer that locks several).
const LOCK_STATES: &str = "SELECT delivery_id, state FROM hookd_states \
     WHERE tenant = $1 AND delivery_id = ANY($2) ORDER BY delivery_id FOR UPDATE";

/// Takes the round's queue entries that still name their deliveries,
/// under one fence, while the lease is still that fence (its row
/// share-locked, so no takeover commits first): the entries taken.
pub(super) const TAKE_ENTRIES: &str = "WITH l AS (SELECT tenant FROM hookd_forward_leases \
     WHERE tenant = $1 AND owner = $4 AND epoch = $5 AND expires_at > now() FOR SHARE) \
     DELETE FROM hookd_queue q USING l \
     WHERE q.tenant = l.tenant AND q.qkey = ANY($2) \
     AND q.delivery_id = ($3::text[])[array_position($2::bytea[], q.qkey)] \
     RETURNING q.qkey";

/// The due deliveries of `tenant` at `now_ms` from the key `from` on: at
/// most `limit`, leaving out `busy`, with their states, events and how
/// long `fence` lets them be sent; and when the next one is due. Three
/// statements, one round trip.
pub(super) async fn due(
    db: &Db,
    (tenant, from): (&str, &[u8]),
    (now_ms, limit, busy): (i64, usize, &HashSet<QueueKey>),
    fence: &Fence,
) -> Result<Due> {
    let bound = queue_key(now_ms.saturating_add(1), 0).to_vec();
    let busy: Vec<&[u8]> = busy.iter().map(QueueKey::as_bytes).collect();
    let limit = i64::try_from(limit).unwrap_or(i64::MAX);
    let owner: &str = &fence.owner;
    let client = db.client().await?;
    let (due, next, lease) = (
        client.prepare_cached(DUE).await.map_err(pg)?,
        client.prepare_cached(NEXT_DUE).await.map_err(pg)?,
        client.prepare_cached(LEASE_LEFT).await.map_err(pg)?,
    );
    let params: [&[&(dyn ToSql + Sync)]; 3] = [
        &[&tenant, &bound, &busy, &limit, &from],
        &[&tenant, &bound],
        &[&tenant, &owner, &fence.epoch],
    ];
    let (rows, next, lease) = futures_util::try_join!(
        client.query(&due, params[0]),
        client.query_opt(&next, params[1]),
        client.query_opt(&lease, params[2]),
    )
    .map_err(pg)?;
    let send_for = if fence.is_shared() {
        lease.map(|row| Duration::from_millis(u64::try_from(row.get::<_, i64>(0)).unwrap_or(0)))
    } else {
        Some(Duration::MAX)
    };
    let mut entries = Vec::with_capacity(rows.len());
    for row in &rows {
        let state: Option<&[u8]> = row.get(2);
        let event: Option<&[u8]> = row.get(3);
        entries.push(DueEntry {
            key: QueueKey::from_bytes(row.get(0)),
            id: DeliveryId::new(row.get::<_, String>(1)),
            state: state.map(decode).transpose()?,
            event: event.map(StoredEvent::decode).transpose()?,
            send_for,
        });
    }
    let next_due_ms = next.map(|row| QueueKey::from_bytes(row.get(0)).due_ms());
    Ok(Due {
        entries,
        next_due_ms,
    })
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
        let taken = take_entries(&tx, tenant, round).await?;
        let mut writes = Writes::default();
        let mut recorded = Vec::with_capacity(round.len());
        for (attempt, seq) in round.iter().zip(&seqs) {
            let (entry, id) = (attempt.entry.as_bytes(), attempt.id.as_str());
            if !taken.contains(entry) {
                recorded.push(None);
                continue;
            }
            let Some(state) = states.remove(id).filter(|s| holds_entry(s, entry)) else {
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

/// Takes (deletes) the round's queue entries that still name their
/// deliveries, while their fence is current: the entries taken. An entry
/// taken whose delivery no longer holds it was stale, and goes too.
async fn take_entries(
    tx: &Tx<'_>,
    tenant: &str,
    round: &[FinishedAttempt],
) -> Result<HashSet<Vec<u8>>> {
    let mut fences: Vec<&Fence> = round.iter().map(|a| &a.fence).collect();
    fences.sort_by_key(|f| (f.owner.clone(), f.epoch));
    fences.dedup();
    let statement = tx.prepare_cached(TAKE_ENTRIES).await.map_err(pg)?;
    let mut taken = HashSet::new();
    for fence in fences {
        let under: Vec<&FinishedAttempt> = round.iter().filter(|a| a.fence == *fence).collect();
        let keys: Vec<&[u8]> = under.iter().map(|a| a.entry.as_bytes()).collect();
        let ids: Vec<&str> = under.iter().map(|a| a.id.as_str()).collect();
        let owner: &str = &fence.owner;
        let rows = tx
            .query(&statement, &[&tenant, &keys, &ids, &owner, &fence.epoch])
            .await
            .map_err(pg)?;
        taken.extend(rows.iter().map(|row| row.get::<_, Vec<u8>>(0)));
    }
    Ok(taken)
}

/// What a round writes, column by column.
#[derive(Default)]
struct Writes {
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

    /// Writes the round: one statement per table it touches, all sent at
    /// once.
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
        let statements: [(&str, bool, Vec<&(dyn ToSql + Sync)>); 5] = [
            (
                "INSERT INTO hookd_queue (tenant, qkey, delivery_id, waiting) \
                 SELECT $1, *, true FROM unnest($2::bytea[], $3::text[])",
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
        let mut prepared = Vec::new();
        for (sql, empty, params) in statements {
            if !empty {
                prepared.push((tx.prepare_cached(sql).await.map_err(pg)?, params));
            }
        }
        // Sent at once: one round trip for every table the round writes.
        let writes = prepared
            .iter()
            .map(|(statement, params)| tx.execute(statement, params));
        futures_util::future::try_join_all(writes)
            .await
            .map_err(pg)?;
        Ok(())
    }
}
