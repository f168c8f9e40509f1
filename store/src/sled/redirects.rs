//! Redirects: one delivery sent once, from the dashboard, to a URL the operator
//! typed; recorded with the delivery on sled, beside its attempts.

use super::{
    deliveries,
    keyspace::Keyspace,
    records::{decode, encode, RedirectRecord},
    TenantTrees,
};
use crate::{
    error::{Error, Result},
    ids::DeliveryId,
};

/// The key prefix of a delivery's attempts and redirects.
fn delivery_prefix(delivery_id: &DeliveryId) -> Vec<u8> {
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    prefix
}

/// `delivery_id / 'r'`, the start time (big-endian) and the request id:
/// a delivery's redirects sort by when they were sent.
fn redirect_key(delivery_id: &DeliveryId, redirect: &RedirectRecord) -> Vec<u8> {
    let mut key = delivery_prefix(delivery_id);
    key.push(b'r');
    key.extend_from_slice(&(redirect.started_at_ms.max(0) as u64).to_be_bytes());
    key.extend_from_slice(redirect.request_id.as_str().as_bytes());
    key
}

/// Records a redirect beside the delivery's attempts, in one transaction
/// that first checks the delivery is still there.
///
/// Redirects: one delivery sent once, from the dashboard, to a URL the
/// operator typed instead of the tenant's destination. Each is recorded
/// with its delivery (who, when, where, what came back) and kept and
/// deleted with it; a redirect is not an attempt: it changes neither the
/// delivery's status, its attempt count nor its retry schedule.
///
/// On sled a redirect lives in the `attempts` tree beside the delivery's
/// attempts, under `delivery_id / 'r'`, the time it was sent and its
/// request id (an attempt's key is `delivery_id /` and a 4-byte attempt
/// number), so every path that removes a delivery's attempts (purge,
/// retention, a dropped tenant) removes its redirects too.
pub(super) fn record(
    trees: &TenantTrees,
    delivery_id: &DeliveryId,
    redirect: &RedirectRecord,
) -> Result<()> {
    use sled::Transactional;
    let (states, attempts, queue): (&Keyspace, &Keyspace, &Keyspace) =
        (&trees.state, &trees.attempts, &trees.queue);
    let key = redirect_key(delivery_id, redirect);
    let value = encode(redirect);
    (states.tree(), attempts.tree(), queue.tree())
        .transaction(|(state_view, attempt_view, queue_view)| {
            let (state_view, queue_view) = (states.tx(state_view), queue.tx(queue_view));
            if deliveries::tx_current(queue_view, state_view, delivery_id)?.is_none() {
                return sled::transaction::abort(Error::NotFound(format!(
                    "delivery {delivery_id}"
                )));
            }
            attempts
                .tx(attempt_view)
                .insert(key.as_slice(), value.as_slice())?;
            Ok(())
        })
        .map_err(|e| match e {
            sled::transaction::TransactionError::Abort(e) => e,
            sled::transaction::TransactionError::Storage(e) => e.into(),
        })
}

/// Every redirect of a delivery, oldest first.
pub(super) fn load(trees: &TenantTrees, delivery_id: &DeliveryId) -> Result<Vec<RedirectRecord>> {
    let mut prefix = delivery_prefix(delivery_id);
    prefix.push(b'r');
    trees
        .attempts
        .scan_prefix(prefix)
        .map(|kv| decode(&kv?.1))
        .collect()
}
