//! Refused requests of each tenant, for the dashboard and `ListRejections`:
//! the embedded engine's [`RejectionLog`], one sled tree.

use super::{
    api::{Rejection, RejectionFilter, RejectionLog, KEPT_BODY_BYTES},
    records::{decode, encode},
};
use crate::error::{Error, Result};

/// The tree's name.
pub(super) const TREE: &str = "rejections";

/// The `rejections` tree.
///
/// Refused requests of each tenant, for the dashboard and `ListRejections`
/// (the [`RejectionLog`] of the embedded engine):
/// content refused after a valid signature, kept with its first
/// [`KEPT_BODY_BYTES`] bytes of body, and requests whose signature was bad
/// or missing, kept without any body. One sled tree, `rejections`, keyed
/// `{tenant}/{time}/{request_id}` with the time as 16 zero-padded digits of
/// Unix ms, so one tenant's keys sort by time; kept for
/// `retention.delivered_secs`. A record is durable once the committer's
/// next group commit syncs the log ([`super::api::Storage::durable_barrier`]),
/// which the ingress waits for before answering the refusal.
#[derive(Clone)]
pub struct Rejections {
    tree: sled::Tree,
}

fn prefix(tenant_id: &str) -> String {
    format!("{tenant_id}/")
}

fn key(r: &Rejection) -> String {
    format!(
        "{}{:016}/{}",
        prefix(&r.tenant_id),
        r.at_ms.max(0),
        r.request_id
    )
}

impl Rejections {
    pub(super) fn new(tree: sled::Tree) -> Rejections {
        Rejections { tree }
    }
}

impl RejectionLog for Rejections {
    /// Stores `rejection`, its body cut to [`KEPT_BODY_BYTES`] (and dropped
    /// when the signature was not valid).
    fn record(&self, mut rejection: Rejection) -> Result<()> {
        if rejection.signature_valid {
            rejection.body.truncate(KEPT_BODY_BYTES);
        } else {
            rejection.body.clear();
        }
        self.tree.insert(key(&rejection), encode(&rejection))?;
        Ok(())
    }

    /// Up to `size` of the tenant's rejections passing `filter`, newest
    /// first, from before `token` (the previous page's next token) and the
    /// token of the next page; a token this did not issue is an error.
    fn list(
        &self,
        tenant_id: &str,
        filter: &RejectionFilter,
        size: usize,
        token: Option<&str>,
    ) -> Result<(Vec<Rejection>, Option<String>)> {
        let start = prefix(tenant_id);
        let end = match token {
            Some(t) if t.starts_with(&start) => t.to_owned(),
            Some(_) => return Err(Error::InvalidArgument("page_token is not valid".into())),
            None => format!("{tenant_id}0"),
        };
        let mut items: Vec<Rejection> = Vec::new();
        for kv in self.tree.range(start.as_bytes()..end.as_bytes()).rev() {
            let (_, v) = kv?;
            let rejection: Rejection = decode(&v)?;
            let wanted = filter
                .request_id
                .as_ref()
                .is_none_or(|id| *id == rejection.request_id)
                && filter
                    .signature_valid
                    .is_none_or(|valid| valid == rejection.signature_valid);
            if !wanted {
                continue;
            }
            if items.len() == size {
                let last = items.last().map(key);
                return Ok((items, last));
            }
            items.push(rejection);
        }
        Ok((items, None))
    }

    /// The tenant's rejections at or after `since_ms` by code, most
    /// frequent first; at most `cap` records are counted.
    fn count_by_code(
        &self,
        tenant_id: &str,
        since_ms: i64,
        cap: usize,
    ) -> Result<Vec<(String, u64)>> {
        let start = format!("{}{:016}", prefix(tenant_id), since_ms.max(0));
        let end = format!("{tenant_id}0");
        let mut counts: std::collections::HashMap<String, u64> = Default::default();
        for kv in self.tree.range(start.as_bytes()..end.as_bytes()).take(cap) {
            let (_, v) = kv?;
            let rejection: Rejection = decode(&v)?;
            *counts.entry(rejection.code).or_default() += 1;
        }
        let mut counts: Vec<_> = counts.into_iter().collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
        Ok(counts)
    }

    /// Deletes every rejection of a deleted tenant; returns how many went.
    fn drop_tenant(&self, tenant_id: &str) -> Result<usize> {
        let mut dropped = 0;
        for kv in self.tree.scan_prefix(prefix(tenant_id).as_bytes()) {
            let (k, _) = kv?;
            self.tree.remove(k)?;
            dropped += 1;
        }
        Ok(dropped)
    }

    /// Deletes up to `batch` of the tenant's rejections older than
    /// `before_ms`; returns how many went.
    fn sweep(&self, tenant_id: &str, before_ms: i64, batch: usize) -> Result<usize> {
        let start = prefix(tenant_id);
        let end = format!("{start}{:016}", before_ms.max(0));
        let mut swept = 0;
        for kv in self
            .tree
            .range(start.as_bytes()..end.as_bytes())
            .take(batch)
        {
            let (k, _) = kv?;
            self.tree.remove(k)?;
            swept += 1;
        }
        Ok(swept)
    }

    fn sweep_due(&self, tenants: &[String], before_ms: i64) -> Result<Vec<bool>> {
        tenants
            .iter()
            .map(|tenant_id| {
                let start = prefix(tenant_id);
                let end = format!("{start}{:016}", before_ms.max(0));
                let first = self.tree.range(start.as_bytes()..end.as_bytes()).next();
                Ok(first.transpose()?.is_some())
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rejection(tenant: &str, at_ms: i64, id: &str, valid: bool) -> Rejection {
        Rejection {
            tenant_id: tenant.into(),
            at_ms,
            request_id: id.into(),
            code: if valid {
                "INVALID_JSON"
            } else {
                "BAD_SIGNATURE"
            }
            .into(),
            reason: "refused".into(),
            signature_valid: valid,
            body_bytes: 5000,
            body: vec![b'x'; 5000],
        }
    }

    fn tree() -> Rejections {
        let db = sled::Config::new().temporary(true).open().unwrap();
        Rejections::new(db.open_tree(TREE).unwrap())
    }

    #[test]
    fn lists_one_tenant_newest_first_in_pages_with_bodies_only_for_content() {
        let r = tree();
        for (i, valid) in [true, false, true].into_iter().enumerate() {
            r.record(rejection(
                "acme",
                1000 + i as i64,
                &format!("req_{i}"),
                valid,
            ))
            .unwrap();
        }
        r.record(rejection("acme2", 5000, "req_other", true))
            .unwrap();
        let all = RejectionFilter::default();
        let (page, next) = r.list("acme", &all, 2, None).unwrap();
        let ids: Vec<_> = page.iter().map(|x| x.request_id.as_str()).collect();
        assert_eq!(ids, ["req_2", "req_1"]);
        assert_eq!(page[0].body.len(), KEPT_BODY_BYTES);
        assert!(page[1].body.is_empty(), "no body without a valid signature");
        let (rest, next) = r.list("acme", &all, 2, next.as_deref()).unwrap();
        assert_eq!(rest.len(), 1);
        assert_eq!(rest[0].request_id, "req_0");
        assert_eq!(next, None);
        let by_id = RejectionFilter {
            request_id: Some("req_1".into()),
            ..RejectionFilter::default()
        };
        assert_eq!(r.list("acme", &by_id, 10, None).unwrap().0.len(), 1);
        assert!(r.list("acme", &all, 2, Some("acme2/9")).is_err());
        assert_eq!(r.sweep("acme", 1002, 10).unwrap(), 2);
        assert_eq!(r.list("acme", &all, 10, None).unwrap().0.len(), 1);
        assert_eq!(r.list("acme2", &all, 10, None).unwrap().0.len(), 1);
        assert_eq!(
            r.count_by_code("acme", 0, 10).unwrap(),
            [("INVALID_JSON".to_owned(), 1)]
        );
        assert_eq!(r.count_by_code("acme", 1003, 10).unwrap(), []);
        assert_eq!(r.drop_tenant("acme").unwrap(), 1);
        assert!(r.list("acme", &all, 10, None).unwrap().0.is_empty());
        assert_eq!(r.list("acme2", &all, 10, None).unwrap().0.len(), 1);
    }
}
