//! One group commit's transaction on PostgreSQL, in a fixed number of round
//! trips whatever the batch's size.

use std::collections::{HashMap, HashSet};

use futures_util::future::{try_join_all, BoxFuture, FutureExt};
use tokio_postgres::types::ToSql;

use super::{pg, Db};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, EventId},
    records::{encode, queue_key, DeliveryState, EventMeta, StoredEvent},
    CommitOutcome, NewDelivery,
};

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// A new delivery of one batch.
pub(super) struct Item<'a> {
    /// Its tenant's id.
    pub(super) tenant: &'a str,
    /// Written only while its tenant's catalog row is there.
    pub(super) stored: bool,
    pub(super) delivery: &'a NewDelivery,
}

impl Item<'_> {
    /// The idempotency keys it claims: its event id, and its content key.
    pub(super) fn keys(&self) -> impl Iterator<Item = &[u8]> {
        let content = self.delivery.content_key.as_deref();
        std::iter::once(self.delivery.event_id.as_str().as_bytes()).chain(content)
    }
}

/// An idempotency key of a tenant.
type Key = (String, Vec<u8>);

/// One transaction for `items`, no two of which share an idempotency key
/// (the caller splits a batch so): the outcomes in their order, `None` for
/// an item of a stored tenant no longer stored (deleted by any process),
/// of which nothing is written.
///
/// One group commit's transaction on PostgreSQL in a fixed number of round
/// trips, whatever the batch's size: the catalog check of its tenants, ONE
/// multi-row `INSERT .. SELECT FROM unnest(..) ON CONFLICT DO NOTHING
/// RETURNING` of every idempotency key (event ids and content keys), then,
/// pipelined on the connection, the first deliveries of the keys that were
/// known, the release of the keys of writes that turned out duplicates, and
/// one multi-row insert each of the new events, states, queue entries and
/// delivered-index keys; then `COMMIT`. The statements are prepared once
/// per connection.
pub(super) async fn commit(db: &Db, items: &[Item<'_>]) -> Result<Vec<Option<CommitOutcome>>> {
    let mut client = db.client().await?;
    let tx = client.transaction().await.map_err(pg)?;
    let stored = still_stored(&tx, items).await?;
    let writing: Vec<usize> = (0..items.len())
        .filter(|&i| !items[i].stored || stored.contains(items[i].tenant))
        .collect();
    let mut outcomes = vec![None; items.len()];
    if writing.is_empty() {
        return Ok(outcomes);
    }
    let won = claim(&tx, items, &writing).await?;
    let mut settled = Settled::default();
    for &i in &writing {
        settled.add(i, &items[i], &won);
    }
    let mut rows = Rows::default();
    for &i in &settled.accepted {
        rows.add(
            items[i].tenant,
            items[i].delivery,
            db.sequence_in(&*tx).await?,
        );
        outcomes[i] = Some(CommitOutcome::Accepted);
    }
    let (firsts, ()) = futures_util::try_join!(
        firsts(&tx, &settled.lookups),
        rows.write(&tx, &settled.released)
    )?;
    for (i, key) in settled.duplicates {
        let first = firsts.get(&key).cloned().ok_or_else(|| {
            Error::storage("storage: postgres: an idempotency record vanished", None)
        })?;
        outcomes[i] = Some(first);
    }
    tx.commit().await.map_err(pg)?;
    Ok(outcomes)
}

/// Which of the batch's stored tenants are still stored, their catalog
/// rows locked `FOR KEY SHARE` (in id order) until the batch commits: a
/// delete of one waits for the batch, and its drop then finds the batch's
/// rows; a batch after the delete finds no row and writes nothing for it.
async fn still_stored(tx: &Tx<'_>, items: &[Item<'_>]) -> Result<HashSet<String>> {
    let mut ids: Vec<&str> = items
        .iter()
        .filter(|w| w.stored)
        .map(|w| w.tenant)
        .collect();
    if ids.is_empty() {
        return Ok(HashSet::new());
    }
    ids.sort_unstable();
    ids.dedup();
    let statement = tx
        .prepare_cached(
            "SELECT key FROM hookd_catalog WHERE tbl = 'tenants' AND key = ANY($1) \
             ORDER BY key FOR KEY SHARE",
        )
        .await
        .map_err(pg)?;
    let rows = tx.query(&statement, &[&ids]).await.map_err(pg)?;
    Ok(rows.iter().map(|r| r.get(0)).collect())
}

/// Inserts every idempotency key of the written items in one statement,
/// in (tenant, key) order, the one lock order of every process (so that
/// concurrent batches with the same keys wait for each other instead of
/// deadlocking); the keys it inserted (the others were known).
async fn claim(tx: &Tx<'_>, items: &[Item<'_>], writing: &[usize]) -> Result<HashSet<Key>> {
    let mut columns = (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for &i in writing {
        let (item, meta) = (&items[i], &items[i].delivery.meta);
        for (n, key) in item.keys().enumerate() {
            columns.0.push(item.tenant);
            columns.1.push(key);
            columns.2.push(meta.delivery_id.as_str());
            columns.3.push(meta.received_at_ms);
            // A content key names the event id it was first seen with.
            columns
                .4
                .push((n > 0).then(|| item.delivery.event_id.as_str()));
        }
    }
    let statement = tx
        .prepare_cached(
            "INSERT INTO hookd_idem (tenant, key, delivery_id, received_at_ms, event_id) \
             SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[], $4::int8[], $5::text[]) \
             ORDER BY 1, 2 \
             ON CONFLICT DO NOTHING RETURNING tenant, key",
        )
        .await
        .map_err(pg)?;
    let params: [&(dyn ToSql + Sync); 5] =
        [&columns.0, &columns.1, &columns.2, &columns.3, &columns.4];
    let rows = tx.query(&statement, &params).await.map_err(pg)?;
    Ok(rows.iter().map(|r| (r.get(0), r.get(1))).collect())
}

/// What the claim made of each written item.
#[derive(Default)]
struct Settled {
    /// New deliveries, to be written.
    accepted: Vec<usize>,
    /// Duplicates, each answered with the first delivery of this key.
    duplicates: Vec<(usize, Key)>,
    /// The keys whose first deliveries are read.
    lookups: Vec<Key>,
    /// Keys a duplicate inserted: deleted again, as if never claimed.
    released: Vec<Key>,
}

impl Settled {
    /// An item is new when every key of it was; a known event id makes it
    /// a duplicate of that id's first delivery, else a known content key
    /// one of the content's.
    fn add(&mut self, i: usize, item: &Item<'_>, won: &HashSet<Key>) {
        let keys: Vec<Key> = item
            .keys()
            .map(|key| (item.tenant.to_string(), key.to_vec()))
            .collect();
        let Some(known) = keys.iter().find(|key| !won.contains(*key)).cloned() else {
            self.accepted.push(i);
            return;
        };
        self.released
            .extend(keys.into_iter().filter(|key| won.contains(key)));
        self.lookups.push(known.clone());
        self.duplicates.push((i, known));
    }
}

/// The first delivery recorded under each of `keys`.
async fn firsts(tx: &Tx<'_>, keys: &[Key]) -> Result<HashMap<Key, CommitOutcome>> {
    if keys.is_empty() {
        return Ok(HashMap::new());
    }
    let (tenants, ids) = unzip_keys(keys);
    let statement = tx
        .prepare_cached(
            "SELECT i.tenant, i.key, i.delivery_id, i.event_id FROM hookd_idem i \
             JOIN unnest($1::text[], $2::bytea[]) AS k(tenant, key) \
             ON i.tenant = k.tenant COLLATE \"C\" AND i.key = k.key",
        )
        .await
        .map_err(pg)?;
    let rows = tx.query(&statement, &[&tenants, &ids]).await.map_err(pg)?;
    Ok(rows
        .iter()
        .map(|r| {
            let delivery_id = DeliveryId::new(r.get::<_, String>(2));
            let outcome = match r.get::<_, Option<String>>(3) {
                Some(event_id) => CommitOutcome::DuplicateOf(delivery_id, EventId::new(event_id)),
                None => CommitOutcome::Duplicate(delivery_id),
            };
            ((r.get(0), r.get(1)), outcome)
        })
        .collect())
}

fn unzip_keys(keys: &[Key]) -> (Vec<&str>, Vec<&[u8]>) {
    keys.iter().map(|(t, k)| (t.as_str(), k.as_slice())).unzip()
}

/// A `text[]` column of a multi-row insert.
type Texts = Vec<String>;
/// A `bytea[]` column of a multi-row insert.
type Blobs = Vec<Vec<u8>>;

/// The rows of the batch's new deliveries (each default route's and its
/// copies'), by table.
#[derive(Default)]
struct Rows {
    /// `hookd_events`: scope, delivery id, stored event.
    events: (Texts, Texts, Blobs),
    /// `hookd_states`: scope, delivery id, status, state, event type.
    states: (Texts, Texts, Vec<&'static str>, Blobs, Vec<Option<String>>),
    /// `hookd_queue`: scope, queue key, delivery id.
    queue: (Texts, Blobs, Texts),
    /// `hookd_done`: scope, delivered-index key.
    done: (Texts, Blobs),
}

impl Rows {
    /// A new delivery of `tenant`, queued under `sequence` (or final at
    /// receipt), and a copy in each other route's scope.
    fn add(&mut self, tenant: &str, d: &NewDelivery, sequence: u64) {
        let key = queue_key(d.due_ms, sequence);
        let (state, done) = d.received(&key);
        self.delivery(tenant, &d.meta, d, &state);
        match done {
            Some(done) => {
                self.done.0.push(tenant.to_string());
                self.done.1.push(done);
            }
            None => self.queued(tenant, &key, &d.meta.delivery_id),
        }
        for copy in &d.copies {
            let mut meta = d.meta.clone();
            meta.delivery_id = copy.delivery_id.clone();
            let key = queue_key(copy.due_ms, sequence);
            let mut pending = DeliveryState::pending(d.event_id.clone(), meta.received_at_ms);
            pending.next_attempt_at_ms = Some(copy.due_ms.max(meta.received_at_ms));
            pending.queue_key = Some(hex::encode(key));
            pending.event_type = d.event_type.clone();
            let scope = copy.scope.as_str();
            self.delivery(scope, &meta, d, &pending);
            self.queued(scope, &key, &meta.delivery_id);
        }
    }

    /// The stored event and the state of the delivery `meta` names.
    fn delivery(&mut self, scope: &str, meta: &EventMeta, d: &NewDelivery, state: &DeliveryState) {
        let id = meta.delivery_id.as_str();
        self.events.0.push(scope.to_string());
        self.events.1.push(id.to_string());
        self.events.2.push(StoredEvent::encode(meta, &d.body));
        self.states.0.push(scope.to_string());
        self.states.1.push(id.to_string());
        self.states.2.push(state.status.as_str());
        self.states.3.push(encode(state));
        self.states.4.push(state.event_type.clone());
    }

    fn queued(&mut self, scope: &str, key: &[u8; 16], id: &DeliveryId) {
        self.queue.0.push(scope.to_string());
        self.queue.1.push(key.to_vec());
        self.queue.2.push(id.to_string());
    }

    /// Inserts the rows, one statement per table, pipelined with the
    /// release of `released` keys.
    async fn write(&self, tx: &Tx<'_>, released: &[Key]) -> Result<()> {
        let (tenants, keys) = unzip_keys(released);
        let mut work: Vec<(&'static str, Vec<&(dyn ToSql + Sync)>)> = Vec::new();
        if !released.is_empty() {
            work.push((
                "DELETE FROM hookd_idem i USING unnest($1::text[], $2::bytea[]) AS k(tenant, key) \
                 WHERE i.tenant = k.tenant COLLATE \"C\" AND i.key = k.key",
                vec![&tenants, &keys],
            ));
        }
        if !self.events.0.is_empty() {
            let (e, s) = (&self.events, &self.states);
            work.push((
                "INSERT INTO hookd_events (tenant, delivery_id, event) \
                 SELECT * FROM unnest($1::text[], $2::text[], $3::bytea[])",
                vec![&e.0, &e.1, &e.2],
            ));
            work.push((
                "INSERT INTO hookd_states (tenant, delivery_id, status, state, event_type) \
                 SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bytea[], $5::text[])",
                vec![&s.0, &s.1, &s.2, &s.3, &s.4],
            ));
        }
        if !self.queue.0.is_empty() {
            let q = &self.queue;
            work.push((
                "INSERT INTO hookd_queue (tenant, qkey, delivery_id) \
                 SELECT * FROM unnest($1::text[], $2::bytea[], $3::text[])",
                vec![&q.0, &q.1, &q.2],
            ));
        }
        if !self.done.0.is_empty() {
            let d = &self.done;
            work.push((
                "INSERT INTO hookd_done (tenant, dkey) SELECT * FROM unnest($1::text[], $2::bytea[])",
                vec![&d.0, &d.1],
            ));
        }
        let runs: Vec<BoxFuture<'_, Result<u64>>> = work
            .into_iter()
            .map(|(sql, params)| execute(tx, sql, params).boxed())
            .collect();
        try_join_all(runs).await.map(drop)
    }
}

/// Runs `sql` (prepared once per connection) with `params`.
async fn execute(tx: &Tx<'_>, sql: &str, params: Vec<&(dyn ToSql + Sync)>) -> Result<u64> {
    let statement = tx.prepare_cached(sql).await.map_err(pg)?;
    tx.execute(&statement, &params).await.map_err(pg)
}
