//! How the committer applies a batch to sled: one transaction over every
//! tenant in it, and one per tenant when a tenant's trees have been dropped
//! meanwhile, so a deleted tenant fails only its own writes.

use sled::{transaction::TransactionError, Transactional};

use super::{
    committer::{CommitOutcome, NewDelivery},
    gauges::Tally,
    records::{decode, encode, queue_key, DeliveryState, IdempotencyRecord, StoredEvent},
    TenantTrees,
};
use crate::error::{Error, Result};

/// Applies `items`; the inner results are per item (a deleted tenant's
/// writes fail with [`Error::TenantDeleted`]), the outer error is a storage
/// failure of the whole batch.
pub(super) fn apply_isolated(
    db: &sled::Db,
    items: &[&NewDelivery],
) -> Result<Vec<Result<CommitOutcome>>> {
    #[cfg(any(test, feature = "fault-injection"))]
    if items
        .iter()
        .any(|item| crate::faults::take_write_failure(&tenant_of(&item.trees)))
    {
        return Err(Error::Io(std::io::Error::other("injected write failure")));
    }
    match apply_batch(db, items) {
        Ok(outcomes) => return Ok(outcomes.into_iter().map(Ok).collect()),
        Err(e) if !is_dropped(&e) => return Err(e),
        Err(_) => {}
    }
    // A tenant's trees were dropped: nothing was applied, since tree drops
    // run on the committer thread between batches and the dropped tree
    // fails its first read inside the transaction. Apply tenant by tenant.
    let mut results: Vec<Option<Result<CommitOutcome>>> = items.iter().map(|_| None).collect();
    let mut done = vec![false; items.len()];
    for first in 0..items.len() {
        if done[first] {
            continue;
        }
        let name = items[first].trees.idem.name();
        let group: Vec<usize> = (first..items.len())
            .filter(|&i| !done[i] && items[i].trees.idem.name() == name)
            .collect();
        let group_items: Vec<&NewDelivery> = group.iter().map(|&i| items[i]).collect();
        let outcomes: Vec<Result<CommitOutcome>> = match apply_batch(db, &group_items) {
            Ok(outcomes) => outcomes.into_iter().map(Ok).collect(),
            Err(e) if is_dropped(&e) => group
                .iter()
                .map(|_| Err(Error::TenantDeleted(tenant_of(&items[first].trees))))
                .collect(),
            Err(e) => return Err(e),
        };
        for (&i, outcome) in group.iter().zip(outcomes) {
            done[i] = true;
            results[i] = Some(outcome);
        }
    }
    Ok(results
        .into_iter()
        .map(|r| r.expect("every item is in one group"))
        .collect())
}

/// Drops every tree whose name starts with `prefix`.
pub(super) fn drop_trees(db: &sled::Db, prefix: &str) -> Result<()> {
    for name in db.tree_names() {
        if name.starts_with(prefix.as_bytes()) {
            db.drop_tree(name)?;
        }
    }
    Ok(())
}

fn is_dropped(e: &Error) -> bool {
    matches!(e, Error::Storage(sled::Error::CollectionNotFound(_)))
}

/// The tenant id in a tree name `t/{tenant}/idem`.
pub(super) fn tenant_of(trees: &TenantTrees) -> String {
    let name = String::from_utf8_lossy(&trees.idem.name()).into_owned();
    name.strip_prefix("t/")
        .and_then(|rest| rest.strip_suffix("/idem"))
        .unwrap_or(&name)
        .to_owned()
}

/// One write, encoded ahead of its transaction.
struct Encoded<'a> {
    /// Index of the item's tenant in the transaction's tree list.
    tenant: usize,
    event_id: &'a str,
    delivery_id: &'a str,
    queue_key: [u8; 16],
    idem: Vec<u8>,
    /// Content key and its record, naming the event id.
    content: Option<(&'a [u8], Vec<u8>)>,
    event: Vec<u8>,
    state: Vec<u8>,
}

/// Applies a whole batch as ONE sled transaction over the trees of the
/// tenants it touches: for each item, its idempotency record, stored event,
/// state and queue entry are inserted unless the event id is already known
/// (in storage or earlier in the same batch), which makes it a duplicate.
/// One transaction per batch instead of one per write: sled's transaction
/// overhead is paid once. The queue entries it made are counted in their
/// tenants' gauges once it committed.
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
                event_id: None,
            }),
            content: item.content_key.as_deref().map(|key| {
                let record = IdempotencyRecord {
                    delivery_id: item.meta.delivery_id.clone(),
                    received_at_ms: item.meta.received_at_ms,
                    event_id: Some(item.event_id.clone()),
                };
                (key, encode(&record))
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
        let tallies: Vec<Tally> = tenants.iter().map(|_| Tally::default()).collect();
        let mut existing = Vec::with_capacity(encoded.len());
        for e in &encoded {
            let [idem, events, states, queue] = &views[e.tenant * 4..e.tenant * 4 + 4] else {
                unreachable!("four trees per tenant")
            };
            if let Some(first) = idem.get(e.event_id)? {
                existing.push(Some(first));
                continue;
            }
            if let Some((key, record)) = &e.content {
                if let Some(first) = idem.get(key)? {
                    existing.push(Some(first));
                    continue;
                }
                idem.insert(*key, record.as_slice())?;
            }
            idem.insert(e.event_id, e.idem.as_slice())?;
            events.insert(e.delivery_id, e.event.as_slice())?;
            states.insert(e.delivery_id, e.state.as_slice())?;
            tallies[e.tenant].queue_inserted(queue.insert(&e.queue_key[..], e.delivery_id)?);
            existing.push(None);
        }
        Ok((
            existing,
            tallies.iter().map(Tally::delta).collect::<Vec<_>>(),
        ))
    });
    let existing = match result {
        Ok((existing, deltas)) => {
            for (tenant, delta) in tenants.iter().zip(deltas) {
                tenant.gauges.apply(delta);
            }
            existing
        }
        Err(TransactionError::Storage(e)) => return Err(e.into()),
        Err(TransactionError::Abort(())) => {
            return Err(Error::Corrupt("transaction aborted".into()))
        }
    };
    existing
        .into_iter()
        .map(|first| match first {
            None => Ok(CommitOutcome::Accepted),
            Some(record) => {
                let first = decode::<IdempotencyRecord>(&record)?;
                Ok(match first.event_id {
                    Some(event_id) => CommitOutcome::DuplicateOf(first.delivery_id, event_id),
                    None => CommitOutcome::Duplicate(first.delivery_id),
                })
            }
        })
        .collect()
}
