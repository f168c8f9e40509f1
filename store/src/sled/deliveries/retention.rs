//! Retention on sled: one bounded step of deletes, and whether more may be
//! due.

use super::{delete_delivery, load_state, purge_dead_letter};
use crate::{
    api::SweepRequest,
    error::Result,
    ids::DeliveryId,
    lifecycle::{goes_with_redelivery, Swept},
    records::{decode, DeadLetter, IdempotencyRecord},
    sled::{gauges::Tally, TenantTrees},
};

/// One bounded step of retention: up to `batch` delivered events and
/// `batch` dead letters past their retention, and `idem_scan` idempotency
/// records scanned from `idem_cursor` (left where the scan stopped; empty
/// once it reached the end; untouched when `idem_scan` is 0).
///
/// Retention on sled: one bounded step deletes delivered events and dead
/// letters past their retention (each with its attempts and redirects, and
/// the originals it was redelivered from) and forgets old idempotency
/// records, and says whether more may be due.
pub fn sweep(
    trees: &TenantTrees,
    request: &SweepRequest,
    idem_cursor: &mut Vec<u8>,
) -> Result<Swept> {
    let mut swept = Swept::default();
    let delivered_full = sweep_delivered(trees, request, &mut swept)?;
    let dead_full = sweep_dead(trees, request, &mut swept)?;
    let scanning = request.idem_scan > 0;
    if scanning {
        sweep_idempotency(trees, request, idem_cursor, &mut swept)?;
    }
    swept.more = delivered_full || dead_full || (scanning && !idem_cursor.is_empty());
    Ok(swept)
}

/// Whether a step would find delivered events or dead letters past their
/// cut-offs: the first key of each range, no more.
pub fn sweep_due(trees: &TenantTrees, request: &SweepRequest) -> Result<bool> {
    let (delivered, dead) = (request.delivered_cutoff(), request.dead_cutoff());
    Ok(trees
        .done
        .range(None, Some(&delivered))
        .next()
        .transpose()?
        .is_some()
        || trees
            .dead
            .range(None, Some(&dead))
            .next()
            .transpose()?
            .is_some())
}

/// The delivered events finished before the cut-off, oldest first; true
/// when the batch was full.
fn sweep_delivered(trees: &TenantTrees, request: &SweepRequest, swept: &mut Swept) -> Result<bool> {
    let cutoff = request.delivered_cutoff();
    let keys = trees
        .done
        .range(None, Some(&cutoff))
        .take(request.batch)
        .map(|kv| kv.map(|(key, _)| key))
        .collect::<std::result::Result<Vec<_>, _>>()?;
    for key in &keys {
        let id = DeliveryId::new(String::from_utf8_lossy(&key[8..]).into_owned());
        let original = load_state(trees, &id)?.and_then(|s| s.redelivery_of);
        delete_delivery(trees, &id)?;
        trees.done.remove(key)?;
        swept.delivered += 1;
        swept.originals += delete_originals(trees, &id, original)?;
    }
    Ok(keys.len() >= request.batch)
}

/// The dead letters dead before the cut-off, oldest first, each removed
/// only if it is still dead (a concurrent redelivery wins); true when the
/// batch was full.
fn sweep_dead(trees: &TenantTrees, request: &SweepRequest, swept: &mut Swept) -> Result<bool> {
    let cutoff = request.dead_cutoff();
    let entries = trees
        .dead
        .range(None, Some(&cutoff))
        .take(request.batch)
        .collect::<std::result::Result<Vec<_>, _>>()?;
    for (key, value) in &entries {
        let letter: DeadLetter = decode(value)?;
        let id = &letter.delivery_id;
        let state = load_state(trees, id)?;
        if purge_dead_letter(trees, key, &letter)? {
            swept.dead += 1;
            let original = state.and_then(|s| s.redelivery_of);
            swept.originals += delete_originals(trees, id, original)?;
        } else if state.is_none_or(|s| !s.status.is_dead_letter()) {
            drop_stale_dead_key(trees, key)?;
        }
    }
    Ok(entries.len() >= request.batch)
}

/// Removes a dead-letter key whose delivery is not dead (a dead delivery
/// never lives again, so the key can never be valid again).
fn drop_stale_dead_key(trees: &TenantTrees, key: &[u8]) -> Result<()> {
    let tally = Tally::default();
    tally.dead_removed(trees.dead.remove(key)?);
    trees.gauges.apply(tally.delta());
    Ok(())
}

/// Deletes the chain of originals `removed` was redelivered from, starting
/// at `original`, while each goes with its redelivery; returns how many.
fn delete_originals(
    trees: &TenantTrees,
    removed: &DeliveryId,
    original: Option<DeliveryId>,
) -> Result<usize> {
    let (mut redelivery, mut next, mut deleted) = (removed.clone(), original, 0);
    while let Some(id) = next {
        match load_state(trees, &id)? {
            Some(state) if goes_with_redelivery(&state, &redelivery) => {
                next = state.redelivery_of;
                delete_delivery(trees, &id)?;
                deleted += 1;
                redelivery = id;
            }
            _ => break,
        }
    }
    Ok(deleted)
}

/// Scans up to `idem_scan` idempotency records from `cursor`, forgetting those
/// received before the cut-off; the cursor is left after the last one
/// scanned, or empty once the scan reached the end.
fn sweep_idempotency(
    trees: &TenantTrees,
    request: &SweepRequest,
    cursor: &mut Vec<u8>,
    swept: &mut Swept,
) -> Result<()> {
    let mut scanned = 0;
    let mut last = None;
    for kv in trees.idem.range(Some(cursor), None) {
        let (key, value) = kv?;
        scanned += 1;
        let record: IdempotencyRecord = decode(&value)?;
        if record.received_at_ms < request.idem_before_ms {
            trees.idem.remove(&key)?;
            swept.idempotency += 1;
        }
        last = Some(key);
        if scanned >= request.idem_scan {
            break;
        }
    }
    *cursor = match last {
        Some(key) if scanned >= request.idem_scan => {
            let mut next = key.to_vec();
            next.push(0);
            next
        }
        _ => Vec::new(),
    };
    Ok(())
}
