//! Retention on PostgreSQL: bounded steps that delete what is past its
//! retention.

use std::collections::HashMap;

use tokio_postgres::GenericClient;

use super::{counts::per_tenant, pg, Db};
use crate::{
    api::SweepRequest,
    error::Result,
    ids::DeliveryId,
    lifecycle::{goes_with_redelivery, Swept},
    records::{decode, DeadLetter, DeliveryState},
};

/// One bounded step of retention from the idempotency scan position
/// `from`; returns what it removed and the scan's next position (empty:
/// it reached the end; `from` itself when the step scans none).
///
/// Retention on PostgreSQL: one bounded step deletes delivered events and
/// dead letters past their retention (each with its attempts and
/// redirects, and the originals it was redelivered from) and forgets old
/// idempotency records, and says whether more may be due. Each kind is one
/// transaction that locks the delivery's state row before its dead letter,
/// the order every other change of a delivery takes.
pub(super) async fn sweep(
    db: &Db,
    tenant: &str,
    request: &SweepRequest,
    from: Vec<u8>,
) -> Result<(Swept, Vec<u8>)> {
    let batch = i64::try_from(request.batch).unwrap_or(i64::MAX);
    let mut client = db.client().await?;
    let mut swept = Swept::default();
    let delivered_full = sweep_delivered(&mut client, tenant, request, batch, &mut swept).await?;
    let dead_full = sweep_dead(&mut client, tenant, request, batch, &mut swept).await?;
    if request.idem_scan == 0 {
        swept.more = delivered_full || dead_full;
        return Ok((swept, from));
    }
    let scan = i64::try_from(request.idem_scan).unwrap_or(i64::MAX);
    let next = sweep_idempotency(&**client, tenant, request, scan, from, &mut swept).await?;
    swept.more = delivered_full || dead_full || !next.is_empty();
    Ok((swept, next))
}

/// Which of `tenants` have delivered events or dead letters past
/// `request`'s cut-offs, in order: one statement per thousand tenants, each
/// the first key of an index range of its tenant.
pub(super) async fn sweep_due(
    db: &Db,
    tenants: &[String],
    request: &SweepRequest,
) -> Result<Vec<bool>> {
    let (delivered, dead) = (request.delivered_cutoff(), request.dead_cutoff());
    let sql =
        "SELECT EXISTS (SELECT 1 FROM hookd_done d WHERE d.tenant = t.tenant AND d.dkey < $2) \
               OR EXISTS (SELECT 1 FROM hookd_dead x WHERE x.tenant = t.tenant AND x.dkey < $3) \
               FROM unnest($1::text[]) WITH ORDINALITY AS t(tenant, n) ORDER BY t.n";
    let (delivered, dead) = (delivered.as_slice(), dead.as_slice());
    per_tenant(db, sql, tenants, &[&delivered, &dead], |row| row.get(0)).await
}

/// The delivered events finished before the cut-off, oldest first (rows
/// another process is sweeping are skipped); true when the batch was full.
async fn sweep_delivered(
    client: &mut deadpool_postgres::Client,
    tenant: &str,
    request: &SweepRequest,
    batch: i64,
    swept: &mut Swept,
) -> Result<bool> {
    let cutoff = request.delivered_cutoff().to_vec();
    let tx = client.transaction().await.map_err(pg)?;
    let done = tx
        .query(
            "DELETE FROM hookd_done WHERE (tenant, dkey) IN (SELECT tenant, dkey FROM hookd_done \
             WHERE tenant = $1 AND dkey < $2 ORDER BY dkey LIMIT $3 FOR UPDATE SKIP LOCKED) \
             RETURNING dkey",
            &[&tenant, &cutoff, &batch],
        )
        .await
        .map_err(pg)?;
    let ids: Vec<String> = done
        .iter()
        .map(|row| {
            let key: &[u8] = row.get(0);
            String::from_utf8_lossy(&key[8.min(key.len())..]).into_owned()
        })
        .collect();
    let states = lock_states(&*tx, tenant, &ids).await?;
    let originals = originals_of(&*tx, tenant, &states).await?;
    delete_deliveries(&*tx, tenant, &ids).await?;
    delete_deliveries(&*tx, tenant, &originals).await?;
    tx.commit().await.map_err(pg)?;
    swept.delivered += ids.len();
    swept.originals += originals.len();
    Ok(done.len() as i64 >= batch)
}

/// The dead letters dead before the cut-off, oldest first, each removed
/// only if its delivery is still dead once its state row is locked (a
/// concurrent redelivery wins); a key whose delivery is not dead is
/// dropped. True when the batch was full.
async fn sweep_dead(
    client: &mut deadpool_postgres::Client,
    tenant: &str,
    request: &SweepRequest,
    batch: i64,
    swept: &mut Swept,
) -> Result<bool> {
    let cutoff = request.dead_cutoff().to_vec();
    let tx = client.transaction().await.map_err(pg)?;
    let rows = tx
        .query(
            "SELECT dkey, letter FROM hookd_dead WHERE tenant = $1 AND dkey < $2 \
             ORDER BY dkey LIMIT $3",
            &[&tenant, &cutoff, &batch],
        )
        .await
        .map_err(pg)?;
    let mut keys = Vec::with_capacity(rows.len());
    let mut ids = Vec::with_capacity(rows.len());
    for row in &rows {
        keys.push(row.get::<_, Vec<u8>>(0));
        ids.push(decode::<DeadLetter>(row.get(1))?.delivery_id.to_string());
    }
    let mut states = lock_states(&*tx, tenant, &ids).await?;
    states.retain(|_, state| state.status.is_dead_letter());
    if !keys.is_empty() {
        tx.execute(
            "DELETE FROM hookd_dead WHERE tenant = $1 AND dkey = ANY($2)",
            &[&tenant, &keys],
        )
        .await
        .map_err(pg)?;
    }
    let dead: Vec<String> = states.keys().cloned().collect();
    let originals = originals_of(&*tx, tenant, &states).await?;
    delete_deliveries(&*tx, tenant, &dead).await?;
    delete_deliveries(&*tx, tenant, &originals).await?;
    tx.commit().await.map_err(pg)?;
    swept.dead += dead.len();
    swept.originals += originals.len();
    Ok(rows.len() as i64 >= batch)
}

/// The states of `ids` that exist, their rows locked in id order.
async fn lock_states(
    tx: &impl GenericClient,
    tenant: &str,
    ids: &[String],
) -> Result<HashMap<String, DeliveryState>> {
    if ids.is_empty() {
        return Ok(HashMap::new());
    }
    let rows = tx
        .query(
            "SELECT delivery_id, state FROM hookd_states WHERE tenant = $1 \
             AND delivery_id = ANY($2) ORDER BY delivery_id FOR UPDATE",
            &[&tenant, &ids],
        )
        .await
        .map_err(pg)?;
    rows.iter()
        .map(|row| Ok((row.get::<_, String>(0), decode(row.get(1))?)))
        .collect()
}

/// The originals the deliveries in `removed` were redelivered from, back
/// along each chain while each goes with its redelivery.
async fn originals_of(
    tx: &impl GenericClient,
    tenant: &str,
    removed: &HashMap<String, DeliveryState>,
) -> Result<Vec<String>> {
    let mut links: Vec<(DeliveryId, DeliveryId)> = removed
        .iter()
        .filter_map(|(id, state)| {
            let original = state.redelivery_of.clone()?;
            Some((DeliveryId::new(id.clone()), original))
        })
        .collect();
    let mut originals = Vec::new();
    while !links.is_empty() {
        let ids: Vec<String> = links.iter().map(|(_, o)| o.to_string()).collect();
        let states = lock_states(tx, tenant, &ids).await?;
        let mut next = Vec::new();
        for (redelivery, original) in links {
            let Some(state) = states.get(original.as_str()) else {
                continue;
            };
            if goes_with_redelivery(state, &redelivery) {
                originals.push(original.to_string());
                if let Some(earlier) = &state.redelivery_of {
                    next.push((original, earlier.clone()));
                }
            }
        }
        links = next;
    }
    Ok(originals)
}

/// Deletes deliveries' events, states (their redirects with them) and
/// attempts.
async fn delete_deliveries(tx: &impl GenericClient, tenant: &str, ids: &[String]) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    for table in ["hookd_events", "hookd_attempts", "hookd_states"] {
        tx.execute(
            &format!("DELETE FROM {table} WHERE tenant = $1 AND delivery_id = ANY($2)"),
            &[&tenant, &ids],
        )
        .await
        .map_err(pg)?;
    }
    Ok(())
}

/// Scans up to `batch` idempotency records (the request's `idem_scan`)
/// from `from`, forgetting those received before the cut-off; returns the
/// next position (empty: the scan reached the end).
async fn sweep_idempotency(
    client: &impl GenericClient,
    tenant: &str,
    request: &SweepRequest,
    batch: i64,
    from: Vec<u8>,
    swept: &mut Swept,
) -> Result<Vec<u8>> {
    let scanned = client
        .query(
            "SELECT key, received_at_ms FROM hookd_idem WHERE tenant = $1 AND key >= $2 \
             ORDER BY key LIMIT $3",
            &[&tenant, &from, &batch],
        )
        .await
        .map_err(pg)?;
    let old: Vec<Vec<u8>> = scanned
        .iter()
        .filter(|r| r.get::<_, i64>(1) < request.idem_before_ms)
        .map(|r| r.get(0))
        .collect();
    if !old.is_empty() {
        client
            .execute(
                "DELETE FROM hookd_idem WHERE tenant = $1 AND key = ANY($2)",
                &[&tenant, &old],
            )
            .await
            .map_err(pg)?;
    }
    swept.idempotency += old.len();
    Ok(match scanned.last() {
        Some(last) if scanned.len() as i64 >= batch => {
            let mut next: Vec<u8> = last.get(0);
            next.push(0);
            next
        }
        _ => Vec::new(),
    })
}
