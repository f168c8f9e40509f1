//! Each stored tenant's rows as this process last wrote or applied them, as
//! hashes, and each tenant's saved contracts' hashes.

use std::{
    collections::HashMap,
    hash::{DefaultHasher, Hash, Hasher},
    sync::{Arc, Mutex},
};

/// A stored tenant's record and secrets, as hashes of their rows.
pub(crate) type Fingerprint = (u64, u64);

/// Each stored tenant's rows as this process last wrote or applied them;
/// shared by the [`super::Catalog`] (its own writes) and the follower.
pub(crate) type Known = Arc<Mutex<HashMap<String, Fingerprint>>>;

/// The fingerprint of a tenant's record row and sealed secrets row.
///
/// Each stored tenant's rows as this process last wrote or applied them,
/// as hashes: the catalog records its own writes here, and the follower
/// of other processes' changes ([`crate::run`]) compares against it; it
/// also hashes each tenant's saved contracts, to recompile them when
/// another process changed them.
pub(crate) fn fingerprint(record: &[u8], secrets: Option<&[u8]>) -> Fingerprint {
    (hash(Some(record)), hash(secrets))
}

/// Each tenant's saved contracts (the `contracts` rows, keyed
/// `{tenant}/…`) as one hash per tenant that has any.
pub(crate) fn contract_prints(rows: &[(String, Vec<u8>)]) -> HashMap<String, u64> {
    let mut hashers: HashMap<&str, DefaultHasher> = HashMap::new();
    for (key, value) in rows {
        let tenant = key.split('/').next().unwrap_or_default();
        (key, value).hash(hashers.entry(tenant).or_default());
    }
    hashers
        .into_iter()
        .map(|(tenant, hasher)| (tenant.to_owned(), hasher.finish()))
        .collect()
}

fn hash(bytes: Option<&[u8]>) -> u64 {
    let mut hasher = DefaultHasher::new();
    bytes.hash(&mut hasher);
    hasher.finish()
}

#[cfg(test)]
mod tests {
    use super::contract_prints;

    fn rows(pairs: &[(&str, &str)]) -> Vec<(String, Vec<u8>)> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.as_bytes().to_vec()))
            .collect()
    }

    #[test]
    fn a_contract_change_moves_only_its_tenants_print() {
        let before = contract_prints(&rows(&[
            ("acme/order.paid\u{1f}", "v1"),
            ("acme/order.refunded\u{1f}", "v1"),
            ("zeta/order.paid\u{1f}", "v1"),
        ]));
        let after = contract_prints(&rows(&[
            ("acme/order.paid\u{1f}", "v2"),
            ("acme/order.refunded\u{1f}", "v1"),
        ]));
        assert_ne!(before["acme"], after["acme"]);
        assert!(!after.contains_key("zeta"), "no rows, no print");
        let same = contract_prints(&rows(&[("zeta/order.paid\u{1f}", "v1")]));
        assert_eq!(before["zeta"], same["zeta"]);
    }
}
