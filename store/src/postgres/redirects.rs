//! Redirects of a delivery in `hookd_redirects`, one row each.

use tokio_postgres::GenericClient;

use super::pg;
use crate::{
    error::{Error, Result},
    records::RedirectRecord,
    records::{decode, encode},
};

/// Inserts `redirect` if the delivery is there; `NotFound` if it is not.
///
/// Redirects of a delivery in `hookd_redirects`, one row each, keyed by
/// tenant, delivery and the redirect's request id, read in the order they
/// were sent. A foreign key on the delivery's state row deletes them with
/// it.
pub(super) async fn record(
    client: &impl GenericClient,
    tenant: &str,
    delivery_id: &str,
    redirect: &RedirectRecord,
) -> Result<()> {
    let inserted = client
        .execute(
            "INSERT INTO hookd_redirects (tenant, delivery_id, request_id, started_at_ms, record) \
             SELECT $1, $2, $3, $4, $5 WHERE EXISTS \
             (SELECT 1 FROM hookd_states WHERE tenant = $1 AND delivery_id = $2)",
            &[
                &tenant,
                &delivery_id,
                &redirect.request_id.as_str(),
                &redirect.started_at_ms,
                &encode(redirect),
            ],
        )
        .await
        .map_err(pg)?;
    match inserted {
        0 => Err(Error::NotFound(format!("delivery {delivery_id}"))),
        _ => Ok(()),
    }
}

/// Every redirect of a delivery, oldest first.
pub(super) async fn load(
    client: &impl GenericClient,
    tenant: &str,
    delivery_id: &str,
) -> Result<Vec<RedirectRecord>> {
    let rows = client
        .query(
            "SELECT record FROM hookd_redirects WHERE tenant = $1 AND delivery_id = $2 \
             ORDER BY started_at_ms, request_id",
            &[&tenant, &delivery_id],
        )
        .await
        .map_err(pg)?;
    rows.iter().map(|r| decode(r.get::<_, &[u8]>(0))).collect()
}
