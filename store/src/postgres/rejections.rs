//! Refused requests on PostgreSQL, in `hookd_rejections`, one row each.

use super::{pg, PgStore};
use crate::{
    api::RejectionLog,
    api::{Rejection, RejectionFilter, KEPT_BODY_BYTES},
    error::{Error, Result},
    records::{decode, encode},
};

/// The refused requests of one database.
///
/// Refused requests in `hookd_rejections`, one row each, keyed by tenant and
/// `{time}/{request_id}` (16 zero-padded digits of Unix ms), so one tenant's
/// rows sort by time as on the embedded engine; page tokens have the same
/// form (`{tenant}/{key}`). Whether the signature was valid is a column as
/// well as part of the record, so a listing filters in SQL and its pages
/// are full.
pub(super) struct PgRejections {
    store: PgStore,
}

impl PgRejections {
    pub(super) fn new(store: PgStore) -> PgRejections {
        PgRejections { store }
    }
}

fn key(at_ms: i64, request_id: &str) -> String {
    format!("{:016}/{request_id}", at_ms.max(0))
}

impl RejectionLog for PgRejections {
    fn record(&self, mut rejection: Rejection) -> Result<()> {
        if rejection.signature_valid {
            rejection.body.truncate(KEPT_BODY_BYTES);
        } else {
            rejection.body.clear();
        }
        let rkey = key(rejection.at_ms, &rejection.request_id);
        self.store.run(|db| async move {
            db.client()
                .await?
                .execute(
                    "INSERT INTO hookd_rejections \
                     (tenant, rkey, at_ms, request_id, code, signature_valid, record) \
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (tenant, rkey) DO UPDATE \
                     SET record = EXCLUDED.record, signature_valid = EXCLUDED.signature_valid",
                    &[
                        &rejection.tenant_id,
                        &rkey,
                        &rejection.at_ms,
                        &rejection.request_id,
                        &rejection.code,
                        &rejection.signature_valid,
                        &encode(&rejection),
                    ],
                )
                .await
                .map_err(pg)?;
            Ok(())
        })
    }

    fn list(
        &self,
        tenant_id: &str,
        filter: &RejectionFilter,
        size: usize,
        token: Option<&str>,
    ) -> Result<(Vec<Rejection>, Option<String>)> {
        let before = match token {
            Some(t) => match t.strip_prefix(&format!("{tenant_id}/")) {
                Some(rkey) => rkey.to_owned(),
                None => return Err(Error::InvalidArgument("page_token is not valid".into())),
            },
            None => "\u{7f}".to_owned(),
        };
        let (tenant, filter) = (tenant_id.to_owned(), filter.clone());
        let limit = i64::try_from(size.saturating_add(1)).unwrap_or(i64::MAX);
        // Both filters in SQL: a page has `size` rows whenever that many
        // match, and the next page starts after the last one shown.
        let rows: Vec<(String, Rejection)> = self.store.run(|db| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT rkey, record FROM hookd_rejections WHERE tenant = $1 AND rkey < $2 \
                     AND ($3::text IS NULL OR request_id = $3) \
                     AND ($4::boolean IS NULL OR signature_valid = $4) \
                     ORDER BY rkey DESC LIMIT $5",
                    &[
                        &tenant,
                        &before,
                        &filter.request_id,
                        &filter.signature_valid,
                        &limit,
                    ],
                )
                .await
                .map_err(pg)?;
            rows.iter()
                .map(|row| Ok((row.get(0), decode(row.get::<_, &[u8]>(1))?)))
                .collect()
        })?;
        let next = (rows.len() > size).then(|| format!("{tenant_id}/{}", rows[size - 1].0));
        let items = rows.into_iter().take(size).map(|(_, r)| r).collect();
        Ok((items, next.filter(|_| size > 0)))
    }

    fn count_by_code(
        &self,
        tenant_id: &str,
        since_ms: i64,
        cap: usize,
    ) -> Result<Vec<(String, u64)>> {
        let tenant = tenant_id.to_owned();
        let cap = i64::try_from(cap).unwrap_or(i64::MAX);
        self.store.run(|db| async move {
            let rows = db
                .client()
                .await?
                .query(
                    "SELECT code, count(*) FROM (SELECT code FROM hookd_rejections \
                     WHERE tenant = $1 AND at_ms >= $2 LIMIT $3) AS recent \
                     GROUP BY code ORDER BY count(*) DESC, code",
                    &[&tenant, &since_ms, &cap],
                )
                .await
                .map_err(pg)?;
            Ok(rows
                .iter()
                .map(|r| (r.get::<_, String>(0), r.get::<_, i64>(1).max(0) as u64))
                .collect())
        })
    }

    fn drop_tenant(&self, tenant_id: &str) -> Result<usize> {
        let tenant = tenant_id.to_owned();
        self.store.run(|db| async move {
            let n = db
                .client()
                .await?
                .execute("DELETE FROM hookd_rejections WHERE tenant = $1", &[&tenant])
                .await
                .map_err(pg)?;
            Ok(n as usize)
        })
    }

    fn sweep(&self, tenant_id: &str, before_ms: i64, batch: usize) -> Result<usize> {
        let tenant = tenant_id.to_owned();
        let batch = i64::try_from(batch).unwrap_or(i64::MAX);
        self.store.run(|db| async move {
            let n = db
                .client()
                .await?
                .execute(
                    "DELETE FROM hookd_rejections WHERE tenant = $1 AND rkey IN \
                     (SELECT rkey FROM hookd_rejections WHERE tenant = $1 AND at_ms < $2 \
                     ORDER BY rkey LIMIT $3)",
                    &[&tenant, &before_ms, &batch],
                )
                .await
                .map_err(pg)?;
            Ok(n as usize)
        })
    }

    fn sweep_due(&self, tenants: &[String], before_ms: i64) -> Result<Vec<bool>> {
        let tenants = tenants.to_vec();
        self.store.run(|db| async move {
            let sql = "SELECT EXISTS (SELECT 1 FROM hookd_rejections r \
                       WHERE r.tenant = t.tenant AND r.at_ms < $2) \
                       FROM unnest($1::text[]) WITH ORDINALITY AS t(tenant, n) ORDER BY t.n";
            super::counts::per_tenant(&db, sql, &tenants, &[&before_ms], |row| row.get(0)).await
        })
    }
}
