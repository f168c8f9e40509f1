//! The rows of one delivery on PostgreSQL, as every change reads and writes
//! them.

use tokio_postgres::GenericClient;

use super::pg;
use crate::{
    error::Result,
    records::{decode, encode, DeliveryState, StoredEvent},
};

/// The delivery's state, its row locked until the transaction ends.
///
/// The rows of one delivery on PostgreSQL, as every change reads and writes
/// them: its state (read under a row lock), its queue entry and its stored
/// event.
pub(super) async fn lock_state(
    tx: &impl GenericClient,
    tenant: &str,
    id: &str,
) -> Result<Option<DeliveryState>> {
    decoded_row(
        tx,
        "SELECT state FROM hookd_states WHERE tenant = $1 AND delivery_id = $2 FOR UPDATE",
        tenant,
        id,
        decode,
    )
    .await
}

/// The record in the one column `sql` selects for a tenant's delivery,
/// decoded.
pub(super) async fn decoded_row<T>(
    client: &impl GenericClient,
    sql: &str,
    tenant: &str,
    id: &str,
    decode: impl FnOnce(&[u8]) -> Result<T>,
) -> Result<Option<T>> {
    let row = client.query_opt(sql, &[&tenant, &id]).await.map_err(pg)?;
    row.map(|r| decode(r.get::<_, &[u8]>(0))).transpose()
}

/// Writes a delivery's state.
pub(super) async fn put_state(
    tx: &impl GenericClient,
    tenant: &str,
    id: &str,
    state: &DeliveryState,
) -> Result<()> {
    tx.execute(
        "INSERT INTO hookd_states (tenant, delivery_id, status, state, event_type) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (tenant, delivery_id) DO UPDATE SET status = EXCLUDED.status, state = EXCLUDED.state",
        &[&tenant, &id, &state.status.as_str(), &encode(state), &state.event_type],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

pub(super) async fn delete_queue(tx: &impl GenericClient, tenant: &str, key: &[u8]) -> Result<()> {
    tx.execute(
        "DELETE FROM hookd_queue WHERE tenant = $1 AND qkey = $2",
        &[&tenant, &key],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

pub(super) async fn insert_queue(
    tx: &impl GenericClient,
    tenant: &str,
    (key, id): (&[u8], &str),
    waiting: bool,
) -> Result<()> {
    tx.execute(
        "INSERT INTO hookd_queue (tenant, qkey, delivery_id, waiting) VALUES ($1, $2, $3, $4)",
        &[&tenant, &key, &id, &waiting],
    )
    .await
    .map_err(pg)?;
    Ok(())
}

/// The stored event of a delivery.
pub(super) async fn load_event(
    client: &impl GenericClient,
    tenant: &str,
    id: &str,
) -> Result<Option<StoredEvent>> {
    decoded_row(
        client,
        "SELECT event FROM hookd_events WHERE tenant = $1 AND delivery_id = $2",
        tenant,
        id,
        StoredEvent::decode,
    )
    .await
}
