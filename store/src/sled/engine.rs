//! The storage API ([`super::api`]) on sled: [`TenantTrees`] is a tenant's
//! [`TenantData`], [`SledStore`] the [`Storage`].

use std::sync::Arc;

use futures_util::{future::BoxFuture, FutureExt};
use sled::{transaction::ConflictableTransactionError, Transactional};

use super::{
    api::{
        CatalogRows, CommitFigures, DeadKey, Fence, FinishedAttempt, Listing, PullRequest,
        QueueCounts, QueueKey, RejectionLog, RowChange, Storage, SweepRequest, Table, TenantData,
        TenantStore,
    },
    deliveries::{self, RoundAttempt},
    lifecycle::{Next, Resend, Swept},
    records::RedirectRecord,
    records::{
        decode, queue_key_due_ms, AttemptRecord, DeadLetter, DeliveryState, DeliveryStatus,
        IdempotencyRecord, StoredEvent,
    },
    redirects,
    rejections::Rejections,
    CommitOutcome, NewDelivery, SledStore, TenantTrees,
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, TenantId},
};

/// The catalog's tables are four sled trees.
impl TenantData for TenantTrees {
    fn tenant(&self) -> &TenantId {
        TenantTrees::tenant(self)
    }

    fn is_healthy(&self) -> bool {
        !self.committer.is_poisoned()
    }

    fn commit(&self, item: NewDelivery) -> BoxFuture<'static, Result<CommitOutcome>> {
        let (committer, trees) = (self.committer.clone(), self.clone());
        let copies = item
            .copies
            .iter()
            .map(|copy| self.route_trees(&copy.scope))
            .collect::<Result<Vec<_>>>();
        async move { committer.commit(trees, copies?, item).await }.boxed()
    }

    fn counts(&self) -> Result<QueueCounts> {
        let oldest_due_ms = match self.queue.first()? {
            Some((key, _)) => queue_key_due_ms(&key),
            None => None,
        };
        let pending = |id: &str| {
            let state = deliveries::load_state(self, &DeliveryId::new(id))?;
            Ok(state.is_some_and(|s| s.status == DeliveryStatus::Pending))
        };
        let moved = self
            .gauges
            .oldest_moved(pending)?
            .and_then(|id| DeliveryId::made_at_ms(&id));
        let oldest_pending_ms = QueueCounts::oldest_pending(oldest_due_ms, moved);
        Ok(QueueCounts {
            depth: self.gauges.queue_depth(),
            dead: self.gauges.dead_letters(),
            oldest_due_ms,
            oldest_pending_ms,
        })
    }

    fn event(&self, id: &DeliveryId) -> Result<Option<StoredEvent>> {
        deliveries::load_event(self, id)
    }

    fn state(&self, id: &DeliveryId) -> Result<Option<DeliveryState>> {
        #[cfg(any(test, feature = "fault-injection"))]
        if super::inject::take_read_failure(self.tenant().as_str()) {
            return Err(crate::error::Error::Io(std::io::Error::other(
                "injected read failure",
            )));
        }
        deliveries::load_state(self, id)
    }

    fn attempts(&self, id: &DeliveryId) -> Result<Vec<AttemptRecord>> {
        deliveries::load_attempts(self, id)
    }

    fn record_redirect(&self, id: &DeliveryId, redirect: &RedirectRecord) -> Result<()> {
        self.direct(redirects::record(self, id, redirect))
    }

    fn redirects(&self, id: &DeliveryId) -> Result<Vec<RedirectRecord>> {
        redirects::load(self, id)
    }

    fn idempotency(&self, key: &[u8]) -> Result<Option<IdempotencyRecord>> {
        self.idem
            .get(key)?
            .map(|bytes| IdempotencyRecord::decode(&bytes))
            .transpose()
    }

    fn deliveries_in(
        &self,
        filter: &Listing,
        (before, since): (Option<&DeliveryId>, Option<&DeliveryId>),
        limit: usize,
    ) -> Result<Vec<(DeliveryId, DeliveryState)>> {
        let floor = since.cloned();
        let first = newest_first(
            self.state_records(floor.clone(), before),
            deliveries::receipt::newest_first(self, before),
        )
        .take_while(|entry| match (entry, &floor) {
            (Ok((id, _)), Some(floor)) => id >= floor,
            _ => true,
        });
        let rescan = |from: Option<DeliveryId>| self.state_records(from.max(floor.clone()), before);
        listed(first, rescan, |s| filter.passes(s), limit)
    }

    fn dead_letters(
        &self,
        before: Option<&[u8]>,
        limit: usize,
        keep: &dyn Fn(&DeadLetter) -> bool,
    ) -> Result<Vec<(DeadKey, DeadLetter)>> {
        let mut out = Vec::new();
        for entry in self.dead.range(None, before).rev() {
            if out.len() >= limit {
                break;
            }
            let (key, value) = entry?;
            let letter: DeadLetter = decode(&value)?;
            if keep(&letter) {
                out.push((key.to_vec(), letter));
            }
        }
        Ok(out)
    }

    fn queue(&self, after: Option<&QueueKey>, limit: usize) -> Result<Vec<(QueueKey, DeliveryId)>> {
        let mut out = Vec::new();
        let after = after.map(QueueKey::as_bytes);
        let from = after.map(deliveries::receipt::place);
        let after_it = |(entry, _): &(Vec<u8>, DeliveryId)| after.is_none_or(|a| entry[..] > *a);
        for entry in self.queue.range(from, None) {
            let (key, value) = entry?;
            let listed = deliveries::receipt::listed(&key, &value).into_iter();
            for listed in listed.filter(after_it) {
                if out.len() >= limit {
                    return Ok(out);
                }
                let (entry, id) = listed;
                out.push((QueueKey::from_bytes(entry), id));
            }
        }
        Ok(out)
    }

    fn record_attempt(
        &self,
        entry: &QueueKey,
        id: &DeliveryId,
        attempt: &AttemptRecord,
        next: &Next,
        now_ms: i64,
    ) -> Result<Option<DeliveryState>> {
        self.direct(deliveries::record_attempt(
            self,
            entry.as_bytes(),
            id,
            attempt,
            next,
            now_ms,
        ))
    }

    fn record_attempts(
        self: Arc<Self>,
        round: Vec<FinishedAttempt>,
        now_ms: i64,
    ) -> BoxFuture<'static, Result<Vec<Result<Option<DeliveryState>>>>> {
        let round = round
            .into_iter()
            .map(|a| RoundAttempt {
                trees: (*self).clone(),
                entry: a.entry.as_bytes().to_vec(),
                id: a.id,
                record: a.record,
                next: a.next,
                now_ms,
            })
            .collect();
        let committer = self.committer.clone();
        async move { committer.record_round(round).await }.boxed()
    }

    fn drop_queue_entry(&self, entry: &QueueKey) -> Result<()> {
        self.direct(deliveries::drop_queue_entry(self, entry.as_bytes()))
    }

    fn redeliver(&self, id: &DeliveryId, now_ms: i64, resend: Resend) -> Result<DeliveryId> {
        self.direct(deliveries::redeliver(self, id, now_ms, resend))
    }

    fn purge_dead_letter(&self, key: &[u8], letter: &DeadLetter) -> Result<bool> {
        self.direct(deliveries::purge_dead_letter(self, key, letter))
    }

    fn pull(&self, request: PullRequest) -> Result<Vec<(StoredEvent, u32)>> {
        let pulled = deliveries::pull(self, &request);
        if pulled.as_ref().is_ok_and(Vec::is_empty) {
            return pulled;
        }
        self.direct(pulled)
    }

    fn ack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        self.direct(deliveries::ack(self, ids, now_ms))
    }

    fn nack(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        self.direct(deliveries::make_due(self, ids, now_ms))
    }

    fn retry_now(&self, ids: &[DeliveryId], now_ms: i64) -> Result<u32> {
        self.direct(deliveries::make_due(self, ids, now_ms))
    }

    fn sweep(&self, request: &SweepRequest, cursor: &mut Vec<u8>) -> Result<Swept> {
        let swept = deliveries::sweep(self, request, cursor)?;
        if swept.delivered + swept.dead + swept.originals > 0 {
            self.committer.made_direct_write();
        }
        Ok(swept)
    }

    fn sweep_due(&self, request: &SweepRequest) -> Result<bool> {
        deliveries::sweep_due(self, request)
    }
}

impl TenantTrees {
    /// This tenant's state records with ids from `from` (inclusive) to
    /// `before`, newest first.
    fn state_records(
        &self,
        from: Option<DeliveryId>,
        before: Option<&DeliveryId>,
    ) -> impl Iterator<Item = Result<(DeliveryId, DeliveryState)>> + '_ {
        let from = from.map(|id| id.as_str().as_bytes().to_vec());
        self.state
            .range(from.as_deref(), before.map(|b| b.as_str().as_bytes()))
            .rev()
            .map(|entry| {
                let (key, value) = entry?;
                let id = DeliveryId::new(String::from_utf8_lossy(&key).into_owned());
                Ok((id, decode::<DeliveryState>(&value)?))
            })
    }

    /// What a change made to sled directly returned, once it is counted
    /// as one a round of attempts may have read before it is checkpointed
    /// (counted even when it failed: it may have changed something).
    fn direct<T>(&self, changed: Result<T>) -> Result<T> {
        self.committer.made_direct_write();
        changed
    }
}

impl Storage for SledStore {
    fn tenant(&self, id: &TenantId) -> Result<TenantStore> {
        Ok(Arc::new(self.tenant_trees(id)?))
    }

    fn is_healthy(&self) -> bool {
        SledStore::is_healthy(self)
    }

    fn needs_restart(&self) -> bool {
        !SledStore::is_healthy(self)
    }

    fn durable_barrier(&self) -> BoxFuture<'static, Result<()>> {
        let committer = self.committer.clone();
        async move { committer.barrier().await }.boxed()
    }

    fn drop_tenant_trees(&self, id: &TenantId) -> BoxFuture<'static, Result<()>> {
        let (store, id) = (self.clone(), id.clone());
        async move { SledStore::drop_tenant_trees(&store, &id).await }.boxed()
    }

    fn clear_tenant(&self, id: &TenantId) -> Result<()> {
        SledStore::clear_tenant(self, id)
    }

    fn catalog_rows(&self) -> Result<Arc<dyn CatalogRows>> {
        Ok(Arc::new(SledRows::open(&self.db)?))
    }

    fn rejections(&self) -> Result<Arc<dyn RejectionLog>> {
        Ok(Arc::new(Rejections::new(
            self.db.open_tree(super::rejections::TREE)?,
        )))
    }

    fn commit_figures(&self) -> CommitFigures {
        let stats = self.committer.stats();
        CommitFigures {
            batches: stats.batches(),
            writes: stats.writes(),
        }
    }

    fn flush(&self) -> Result<()> {
        SledStore::flush(self)
    }

    fn claim_forwarding(
        &self,
        _tenant: &TenantId,
        owner: &str,
        _lease_ms: i64,
    ) -> Result<Option<Fence>> {
        Ok(Some(Fence {
            owner: owner.into(),
            epoch: 0,
        }))
    }

    fn release_forwarding(&self, _tenant: &TenantId, _owner: &str) -> Result<()> {
        Ok(())
    }

    fn catalog_version(&self) -> Result<u64> {
        Ok(0)
    }
}

/// The catalog's tables as sled trees.
struct SledRows {
    tenants: sled::Tree,
    secrets: sled::Tree,
    tokens: sled::Tree,
    drops: sled::Tree,
    contracts: sled::Tree,
    revisions: sled::Tree,
    alert_settings: sled::Tree,
    alerts: sled::Tree,
    holds: sled::Tree,
    replays: sled::Tree,
    replay_progress: sled::Tree,
}

impl SledRows {
    fn open(db: &sled::Db) -> Result<SledRows> {
        Ok(SledRows {
            tenants: db.open_tree("tenants")?,
            secrets: db.open_tree("secrets")?,
            tokens: db.open_tree("tokens")?,
            drops: db.open_tree("tenant_drops")?,
            contracts: db.open_tree("contracts")?,
            revisions: db.open_tree("contract_revisions")?,
            alert_settings: db.open_tree("alert_settings")?,
            alerts: db.open_tree("alerts")?,
            holds: db.open_tree("route_holds")?,
            replays: db.open_tree("replays")?,
            replay_progress: db.open_tree("replay_progress")?,
        })
    }

    fn tree(&self, table: Table) -> &sled::Tree {
        match table {
            Table::Tenants => &self.tenants,
            Table::Secrets => &self.secrets,
            Table::Tokens => &self.tokens,
            Table::Drops => &self.drops,
            Table::Contracts => &self.contracts,
            Table::ContractRevisions => &self.revisions,
            Table::AlertSettings => &self.alert_settings,
            Table::Alerts => &self.alerts,
            Table::Holds => &self.holds,
            Table::Replays => &self.replays,
            Table::ReplayProgress => &self.replay_progress,
        }
    }
}

impl CatalogRows for SledRows {
    fn get(&self, table: Table, key: &str) -> Result<Option<Vec<u8>>> {
        Ok(self.tree(table).get(key)?.map(|v| v.to_vec()))
    }

    fn scan(&self, table: Table, prefix: &str) -> Result<Vec<(String, Vec<u8>)>> {
        self.tree(table)
            .scan_prefix(prefix)
            .map(|entry| {
                let (key, value) = entry?;
                Ok((String::from_utf8_lossy(&key).into_owned(), value.to_vec()))
            })
            .collect()
    }

    fn apply(&self, changes: &[RowChange]) -> Result<()> {
        let trees = [
            &self.tenants,
            &self.secrets,
            &self.tokens,
            &self.drops,
            &self.contracts,
            &self.revisions,
            &self.alert_settings,
            &self.alerts,
            &self.holds,
            &self.replays,
            &self.replay_progress,
        ];
        trees
            .as_slice()
            .transaction(|views| {
                for change in changes {
                    let (table, key) = match change {
                        RowChange::Put(table, key, _)
                        | RowChange::Create(table, key, _)
                        | RowChange::Remove(table, key) => (table, key),
                    };
                    let tree = &views[*table as usize];
                    match change {
                        RowChange::Create(..) if tree.get(key.as_bytes())?.is_some() => {
                            return Err(ConflictableTransactionError::Abort(key.clone()));
                        }
                        RowChange::Put(_, _, value) | RowChange::Create(_, _, value) => {
                            tree.insert(key.as_bytes(), value.as_slice())?
                        }
                        RowChange::Remove(..) => tree.remove(key.as_bytes())?,
                    };
                }
                Ok::<_, ConflictableTransactionError<String>>(())
            })
            .map_err(|e| match e {
                sled::transaction::TransactionError::Storage(e) => Error::from(e),
                sled::transaction::TransactionError::Abort(key) => Error::AlreadyExists(key),
            })
    }
}

/// A page of at most `limit` deliveries newest first, those `wanted` of
/// `first` (state records and receipts merged), read twice where needed.
/// A delivery's first change turns its receipt into its state record in
/// one transaction, so a listing that reads both while it happens can see
/// it twice (kept once, as its state record says) or miss it: the state
/// records were read past it before, the queue after. So the state records
/// the page spans are read again once it is made (`rescan`, from its
/// oldest id when it is full, else from the start): a delivery missed was
/// changed while the page was read, and its record is there now. Records
/// found then that the page holds replace them; a page grown past `limit`
/// loses its oldest, which the next page lists.
fn listed<F, R>(
    first: impl Iterator<Item = Result<(DeliveryId, DeliveryState)>>,
    rescan: F,
    wanted: impl Fn(&DeliveryState) -> bool,
    limit: usize,
) -> Result<Vec<(DeliveryId, DeliveryState)>>
where
    F: FnOnce(Option<DeliveryId>) -> R,
    R: Iterator<Item = Result<(DeliveryId, DeliveryState)>>,
{
    let mut page = std::collections::BTreeMap::new();
    for entry in first {
        if page.len() >= limit {
            break;
        }
        let (id, state) = entry?;
        if wanted(&state) {
            page.insert(id, state);
        }
    }
    let from = match page.len() >= limit {
        true => page.keys().next().cloned(),
        false => None,
    };
    for entry in rescan(from) {
        let (id, state) = entry?;
        if wanted(&state) {
            page.insert(id, state);
        }
    }
    Ok(page.into_iter().rev().take(limit).collect())
}

/// Two lists of deliveries, each newest first (ids descending), as one.
/// An error ends the list after it.
fn newest_first<I, J>(a: I, b: J) -> impl Iterator<Item = Result<(DeliveryId, DeliveryState)>>
where
    I: Iterator<Item = Result<(DeliveryId, DeliveryState)>>,
    J: Iterator<Item = Result<(DeliveryId, DeliveryState)>>,
{
    let (mut a, mut b) = (a.peekable(), b.peekable());
    std::iter::from_fn(move || {
        let take_a = match (a.peek(), b.peek()) {
            (None, None) => return None,
            (Some(_), None) | (Some(Err(_)), _) => true,
            (None, Some(_)) | (_, Some(Err(_))) => false,
            (Some(Ok((x, _))), Some(Ok((y, _)))) => x > y,
        };
        match take_a {
            true => a.next(),
            false => b.next(),
        }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::EventId;

    type Listed = Result<(DeliveryId, DeliveryState)>;

    fn delivery(n: u32, status: DeliveryStatus) -> (DeliveryId, DeliveryState) {
        let mut state = DeliveryState::pending(EventId::new(format!("evt_{n}")), 1_000);
        state.status = status;
        (DeliveryId::new(format!("dlv_{n:02}")), state)
    }

    fn ids(page: &[(DeliveryId, DeliveryState)]) -> Vec<&str> {
        page.iter().map(|(id, _)| id.as_str()).collect()
    }

    /// Delivery 5 changed while the page was read: its receipt went before
    /// the queue was read there, its state record came after the records
    /// were read past it. The second read of the records finds it.
    #[test]
    fn a_delivery_changed_while_a_page_is_read_is_listed_from_the_second_read() {
        use DeliveryStatus::{Delivered, Pending};
        let first: Vec<Listed> = [9, 7, 6, 3, 2].map(|n| Ok(delivery(n, Pending))).into();
        let records =
            [9, 7, 6, 5, 3, 2].map(|n| delivery(n, if n == 5 { Delivered } else { Pending }));
        let mut asked = None;
        let rescan = |from: Option<DeliveryId>| {
            asked = Some(from.clone());
            records
                .clone()
                .into_iter()
                .filter(move |(id, _)| from.as_ref().is_none_or(|f| id >= f))
                .map(Ok)
        };
        let page = listed(first.into_iter(), rescan, |_| true, 4).unwrap();
        // A full page of four is read again from its oldest, delivery 3;
        // delivery 5 joins it and pushes delivery 3 to the next page.
        assert_eq!(asked, Some(Some(DeliveryId::new("dlv_03"))));
        assert_eq!(ids(&page), ["dlv_09", "dlv_07", "dlv_06", "dlv_05"]);
        assert_eq!(page[3].1.status, Delivered);
    }

    /// Delivery 5 read from its receipt and then from its state record is
    /// listed once, as its record says; a page that is not full is read
    /// again from the start, and what the filter refuses stays out.
    #[test]
    fn a_delivery_read_twice_is_listed_once_as_its_state_record_says() {
        use DeliveryStatus::{Dead, Delivered, Pending};
        let first: Vec<Listed> = vec![
            Ok(delivery(7, Pending)),
            Ok(delivery(5, Pending)),
            Ok(delivery(5, Delivered)),
            Ok(delivery(4, Dead)),
        ];
        let rescan = |from: Option<DeliveryId>| {
            assert_eq!(from, None);
            [
                delivery(7, Pending),
                delivery(5, Delivered),
                delivery(4, Dead),
            ]
            .into_iter()
            .map(Ok)
        };
        let wanted = |s: &DeliveryState| s.status != Dead;
        let page = listed(first.into_iter(), rescan, wanted, 10).unwrap();
        assert_eq!(ids(&page), ["dlv_07", "dlv_05"]);
        assert_eq!(page[1].1.status, Delivered);
    }

    #[test]
    fn an_error_ends_the_listing() {
        let first: Vec<Listed> = vec![Err(Error::Corrupt("torn".into()))];
        let rescan = |_: Option<DeliveryId>| std::iter::empty();
        assert!(listed(first.into_iter(), rescan, |_| true, 10).is_err());
    }
}
