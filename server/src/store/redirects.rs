//! Redirects: one delivery sent once, from the dashboard, to a URL the
//! operator typed instead of the tenant's destination. Each is recorded
//! with its delivery (who, when, where, what came back) and kept and
//! deleted with it; a redirect is not an attempt: it changes neither the
//! delivery's status, its attempt count nor its retry schedule.
//!
//! On sled a redirect lives in the `attempts` tree beside the delivery's
//! attempts, under `delivery_id / 'r'`, the time it was sent and its
//! request id (an attempt's key is `delivery_id /` and a 4-byte attempt
//! number), so every path that removes a delivery's attempts (purge,
//! retention, a dropped tenant) removes its redirects too.

use serde::{Deserialize, Serialize};

use super::{
    keyspace::Keyspace,
    records::{decode, encode},
    TenantTrees,
};
use crate::{
    error::{Error, Result},
    ids::{DeliveryId, RequestId},
};

/// Who asked for a redirect.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RedirectedBy {
    /// The admin token.
    Admin,
    /// The tenant's own token.
    Tenant,
}

impl RedirectedBy {
    /// `admin` or `tenant`.
    pub fn as_str(self) -> &'static str {
        match self {
            RedirectedBy::Admin => "admin",
            RedirectedBy::Tenant => "tenant",
        }
    }
}

/// One redirect of a delivery and its outcome.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RedirectRecord {
    /// Who asked for it.
    pub by: RedirectedBy,
    /// When it was sent (Unix ms).
    pub started_at_ms: i64,
    /// Where it was sent, without credentials (see [`shown_url`]).
    pub url: String,
    /// The HTTP status that came back, if any.
    pub status_code: Option<u16>,
    /// Why it failed, in plain words; `None` on a 2xx answer.
    pub error: Option<String>,
    /// How long it took.
    pub duration_ms: u64,
    /// The `X-Request-Id` hookd sent with it.
    pub request_id: RequestId,
}

/// `url` as it may be kept and shown: without a user name or password, and
/// with every query value replaced by `redacted` (query strings often carry
/// tokens); the scheme, host, port, path and parameter names stay.
pub fn shown_url(url: &reqwest::Url) -> String {
    let mut shown = url.clone();
    // Both only fail for URLs that cannot have credentials.
    let _ = shown.set_username("");
    let _ = shown.set_password(None);
    shown.set_fragment(None);
    let names: Vec<String> = url
        .query_pairs()
        .map(|(name, _)| name.into_owned())
        .collect();
    if names.is_empty() {
        shown.set_query(None);
    } else {
        shown
            .query_pairs_mut()
            .clear()
            .extend_pairs(names.iter().map(|name| (name.as_str(), "redacted")));
    }
    shown.to_string()
}

/// The key prefix of a delivery's attempts and redirects.
fn delivery_prefix(delivery_id: &DeliveryId) -> Vec<u8> {
    let mut prefix = delivery_id.as_str().as_bytes().to_vec();
    prefix.push(b'/');
    prefix
}

/// Whether a key under [`delivery_prefix`] is an attempt's (a 4-byte
/// attempt number follows the prefix) rather than a redirect's.
pub(super) fn is_attempt_key(delivery_id: &DeliveryId, key: &[u8]) -> bool {
    key.len() == delivery_id.as_str().len() + 1 + 4
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
pub(super) fn record(
    trees: &TenantTrees,
    delivery_id: &DeliveryId,
    redirect: &RedirectRecord,
) -> Result<()> {
    use sled::Transactional;
    let (states, attempts): (&Keyspace, &Keyspace) = (&trees.state, &trees.attempts);
    let key = redirect_key(delivery_id, redirect);
    let value = encode(redirect);
    (states.tree(), attempts.tree())
        .transaction(|(state_view, attempt_view)| {
            if states.tx(state_view).get(delivery_id.as_str())?.is_none() {
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

#[cfg(test)]
mod tests {
    use super::shown_url;

    #[test]
    fn a_kept_url_has_no_credentials() {
        let url = reqwest::Url::parse(
            "https://bob:hunter2@test.example.com:8443/hook?token=s3cret&x=1#frag",
        )
        .unwrap();
        assert_eq!(
            shown_url(&url),
            "https://test.example.com:8443/hook?token=redacted&x=redacted"
        );
        let plain = reqwest::Url::parse("http://10.0.0.1/in").unwrap();
        assert_eq!(shown_url(&plain), "http://10.0.0.1/in");
    }
}
