//! Tenants created over the control plane, persisted in sled next to the
//! events: settings in `tenants`, secrets sealed with the master key in
//! `secrets` (see [`sealed`] for the format), tenant-scoped API tokens
//! (hashed) in `tokens`.
//!
//! Every tenant has an incarnation: a fresh id when it is created over the
//! API, [`CONFIG_INCARNATION`] when it comes from the config file. A token
//! remembers the incarnation it was made for and is honoured only while its
//! tenant's current incarnation is the same, so a later tenant with a
//! re-used id never inherits it. A delete removes the tenant record, its
//! secrets and its tokens in one transaction that also leaves a marker in
//! `tenant_drops`; the tenant's data trees are dropped after, and a marker a
//! crash left behind is finished when the catalog next opens.

mod sealed;
mod tokens;

use std::{collections::HashSet, sync::Arc};

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::Scheme;
use rand::RngCore;
use secrecy::SecretString;
use serde::{Deserialize, Serialize};
use sled::{transaction::ConflictableTransactionError, Transactional};
use zeroize::Zeroizing;

pub use tokens::TokenRecord;

use crate::{
    config::{DestinationConfig, SecretConfig, SecretState, TenantConfig},
    error::{Error, Result},
    keyring::MasterKey,
    store::records::{decode, encode},
};

/// The incarnation of every tenant declared in the config file.
pub const CONFIG_INCARNATION: &str = "config";

/// A tenant as the control plane stores it; secrets live apart, sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenantRecord {
    /// Settings, with no secret values in them.
    pub config: TenantConfig,
    /// Creation time (Unix ms).
    pub created_at_ms: i64,
    /// Fresh at each creation; tokens are bound to it. Empty only in records
    /// written before incarnations, which the catalog fills in when it opens.
    #[serde(default)]
    pub incarnation: String,
}

impl TenantRecord {
    /// A new tenant's record, with a fresh incarnation.
    pub fn new(config: TenantConfig, created_at_ms: i64) -> TenantRecord {
        TenantRecord {
            config,
            created_at_ms,
            incarnation: ulid::Ulid::new().to_string(),
        }
    }
}

/// One signing secret with its lifetime.
#[derive(Clone)]
pub struct SecretEntry {
    /// Key id.
    pub kid: String,
    /// The secret, as the sender uses it.
    pub secret: SecretString,
    /// When it was made (Unix ms).
    pub created_at_ms: i64,
    /// When it stops being accepted (previous secrets only).
    pub expires_at_ms: Option<i64>,
}

/// A tenant's secrets: the current and previous signing secret and the
/// destination secret. Stored sealed, each bound to the tenant and its kid.
#[derive(Clone)]
pub struct SecretSet {
    /// Senders sign with this one.
    pub current: SecretEntry,
    /// Still accepted until its expiry.
    pub previous: Option<SecretEntry>,
    /// hookd signs forwards with this one.
    pub destination: SecretString,
}

/// The control plane's persistent state.
#[derive(Clone)]
pub struct Catalog {
    db: sled::Db,
    tenants: sled::Tree,
    secrets: sled::Tree,
    tokens: sled::Tree,
    /// Ids of deleted tenants whose data trees are still to be dropped.
    drops: sled::Tree,
    key: MasterKey,
    /// Ids of the config file's tenants.
    config_tenants: Arc<HashSet<String>>,
}

impl Catalog {
    /// Opens the catalog's trees and tidies what an older version or a crash
    /// left: rewrites legacy sealed rows in the bound format, gives old
    /// records an incarnation, finishes interrupted deletes and revokes
    /// tokens whose tenant is gone (`config_tenants`: the config file's ids).
    pub fn open(db: &sled::Db, key: MasterKey, config_tenants: HashSet<String>) -> Result<Catalog> {
        let catalog = Catalog {
            db: db.clone(),
            tenants: db.open_tree("tenants")?,
            secrets: db.open_tree("secrets")?,
            tokens: db.open_tree("tokens")?,
            drops: db.open_tree("tenant_drops")?,
            key,
            config_tenants: Arc::new(config_tenants),
        };
        catalog.migrate()?;
        for id in catalog.drops.iter().keys() {
            catalog.drop_data(&String::from_utf8_lossy(&id?))?;
        }
        catalog.sweep_tokens()?;
        catalog.db.flush()?;
        Ok(catalog)
    }

    /// Rewrites rows of an older format: sealed secrets without their
    /// binding, records without an incarnation.
    fn migrate(&self) -> Result<()> {
        let mut rewritten = 0;
        for kv in self.secrets.iter() {
            let (id, row) = kv?;
            if sealed::is_legacy(&row) {
                let id = String::from_utf8_lossy(&id);
                let set = sealed::open_legacy(&self.key, &id, &row)?;
                self.secrets
                    .insert(id.as_bytes(), sealed::seal(&self.key, &id, &set))?;
                rewritten += 1;
            }
        }
        if rewritten > 0 {
            tracing::info!(
                tenants = rewritten,
                "sealed secrets rewritten bound to their tenant and kid"
            );
        }
        for kv in self.tenants.iter() {
            let (id, bytes) = kv?;
            let mut record: TenantRecord = decode(&bytes)?;
            if record.incarnation.is_empty() {
                record.incarnation = ulid::Ulid::new().to_string();
                self.tenants.insert(id, encode(&record))?;
            }
        }
        Ok(())
    }

    /// Every stored tenant with its secrets, in id order.
    pub fn all(&self) -> Result<Vec<(TenantRecord, SecretSet)>> {
        let mut out = Vec::new();
        for kv in self.tenants.iter() {
            let (id, record) = kv?;
            let secrets = self.secrets_of(&String::from_utf8_lossy(&id))?;
            out.push((decode(&record)?, secrets));
        }
        Ok(out)
    }

    /// One stored tenant.
    pub fn get(&self, id: &str) -> Result<Option<(TenantRecord, SecretSet)>> {
        match self.tenants.get(id)? {
            Some(record) => Ok(Some((decode(&record)?, self.secrets_of(id)?))),
            None => Ok(None),
        }
    }

    fn secrets_of(&self, id: &str) -> Result<SecretSet> {
        let row = self
            .secrets
            .get(id)?
            .ok_or_else(|| Error::Corrupt(format!("tenant {id} has no secrets")))?;
        sealed::open(&self.key, id, &row)
    }

    /// The incarnation tokens of `tenant_id` must carry now; `None` when
    /// there is no such tenant.
    fn incarnation(&self, tenant_id: &str) -> Result<Option<String>> {
        if self.config_tenants.contains(tenant_id) {
            return Ok(Some(CONFIG_INCARNATION.into()));
        }
        match self.tenants.get(tenant_id)? {
            Some(bytes) => Ok(Some(decode::<TenantRecord>(&bytes)?.incarnation)),
            None => Ok(None),
        }
    }

    /// Stores a tenant and its secrets together, durably.
    pub fn put(&self, record: &TenantRecord, secrets: &SecretSet) -> Result<()> {
        let id = record.config.id.as_str();
        if self.drops.contains_key(id)? {
            self.drop_data(id)?;
        }
        let (record, sealed) = (encode(record), sealed::seal(&self.key, id, secrets));
        (&self.tenants, &self.secrets)
            .transaction(|(tenants, secrets)| {
                tenants.insert(id, record.as_slice())?;
                secrets.insert(id, sealed.as_slice())?;
                Ok::<_, ConflictableTransactionError<()>>(())
            })
            .map_err(|e| Error::Corrupt(format!("catalog write: {e:?}")))?;
        self.db.flush()?;
        Ok(())
    }

    /// Deletes a tenant, its secrets, its tokens and every tree of its data.
    /// The first three go in one transaction, with a marker that the data
    /// trees are to be dropped; they are dropped after, and the marker
    /// removed.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let tokens = self.list_tokens(Some(id))?;
        let existed = (&self.tenants, &self.secrets, &self.tokens, &self.drops)
            .transaction(|(tenants, secrets, token_rows, drops)| {
                let existed = tenants.remove(id)?.is_some();
                secrets.remove(id)?;
                for token in &tokens {
                    token_rows.remove(tokens::id_key(&token.token_id).as_bytes())?;
                    token_rows.remove(tokens::hash_key(&token.hash).as_bytes())?;
                }
                drops.insert(id, &[])?;
                Ok::<_, ConflictableTransactionError<()>>(existed)
            })
            .map_err(|e| Error::Corrupt(format!("catalog delete: {e:?}")))?;
        self.db.flush()?;
        self.drop_data(id)?;
        Ok(existed)
    }

    /// Drops the data trees of a deleted tenant, then its marker.
    fn drop_data(&self, id: &str) -> Result<()> {
        let prefix = format!("t/{id}/");
        for name in self.db.tree_names() {
            if name.starts_with(prefix.as_bytes()) {
                self.db.drop_tree(name)?;
            }
        }
        self.drops.remove(id)?;
        self.db.flush()?;
        Ok(())
    }
}

impl SecretSet {
    /// Fresh secrets for a new tenant of `scheme`.
    pub fn generate(scheme: Scheme, now_ms: i64) -> SecretSet {
        SecretSet {
            current: SecretEntry {
                kid: "k1".into(),
                secret: new_signing_secret(scheme),
                created_at_ms: now_ms,
                expires_at_ms: None,
            },
            previous: None,
            destination: new_signing_secret(Scheme::Standard),
        }
    }

    /// Makes a new current secret `k{n+1}` after the current `k{n}`; the old
    /// one stays accepted until `now + overlap`. Returns the new entry.
    pub fn rotate(&mut self, scheme: Scheme, now_ms: i64, overlap_ms: i64) -> SecretEntry {
        let mut old = self.current.clone();
        old.expires_at_ms = Some(now_ms + overlap_ms);
        let next = old
            .kid
            .strip_prefix('k')
            .and_then(|n| n.parse::<u32>().ok())
            .map_or(1, |n| n.saturating_add(1));
        self.current = SecretEntry {
            kid: format!("k{next}"),
            secret: new_signing_secret(scheme),
            created_at_ms: now_ms,
            expires_at_ms: None,
        };
        self.previous = Some(old);
        self.current.clone()
    }

    /// Drops the previous secret when its overlap has ended.
    pub fn expire(&mut self, now_ms: i64) {
        if self
            .previous
            .as_ref()
            .is_some_and(|p| p.expires_at_ms.is_some_and(|t| t <= now_ms))
        {
            self.previous = None;
        }
    }
}

/// The config a stored tenant runs with: its settings plus its secrets.
pub fn effective_config(record: &TenantRecord, secrets: &SecretSet) -> TenantConfig {
    let entry = |e: &SecretEntry, state| SecretConfig {
        kid: e.kid.clone(),
        secret: Some(e.secret.clone()),
        secret_env: None,
        secret_file: None,
        state: Some(state),
        expires_at: e.expires_at_ms.map(|ms| ms.div_euclid(1000)),
    };
    let mut config = record.config.clone();
    config.secrets = std::iter::once(entry(&secrets.current, SecretState::Current))
        .chain(
            secrets
                .previous
                .iter()
                .map(|p| entry(p, SecretState::Previous)),
        )
        .collect();
    if let Some(dest) = &mut config.destination {
        *dest = DestinationConfig {
            secret: Some(secrets.destination.clone()),
            secret_env: None,
            secret_file: None,
            ..dest.clone()
        };
    }
    config
}

/// A new secret in the form the scheme's senders expect.
fn new_signing_secret(scheme: Scheme) -> SecretString {
    let mut raw = Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(raw.as_mut_slice());
    SecretString::from(match scheme {
        Scheme::Standard => format!("whsec_{}", STANDARD.encode(raw.as_slice())),
        Scheme::Stripe => format!("whsec_{}", hex::encode(&raw[..24])),
        Scheme::Hookd | Scheme::Github | Scheme::Shopify | Scheme::Slack => hex::encode(&raw[..]),
    })
}

#[cfg(test)]
mod tests {
    use secrecy::ExposeSecret;

    use super::*;

    fn record(id: &str) -> TenantRecord {
        let config: TenantConfig =
            serde_json::from_str(&format!(r#"{{"id":"{id}","scheme":"hookd"}}"#)).unwrap();
        TenantRecord::new(config, 1)
    }

    fn catalog() -> (tempfile::TempDir, sled::Db, Catalog) {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("sled")).unwrap();
        let catalog = Catalog::open(&db, MasterKey::from_bytes([3; 32]), HashSet::new()).unwrap();
        (dir, db, catalog)
    }

    #[test]
    fn sealed_secrets_copied_to_another_tenant_do_not_open() {
        let (_dir, db, catalog) = catalog();
        catalog
            .put(&record("alpha"), &SecretSet::generate(Scheme::Hookd, 1))
            .unwrap();
        catalog
            .put(&record("beta"), &SecretSet::generate(Scheme::Hookd, 1))
            .unwrap();
        let secrets = db.open_tree("secrets").unwrap();
        let alpha = secrets.get("alpha").unwrap().unwrap();
        secrets.insert("beta", alpha).unwrap();
        let err = match catalog.get("beta") {
            Ok(_) => panic!("alpha's sealed secrets opened as beta's"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("beta"), "{err}");
    }

    /// Seals `plaintext` the way rows were sealed before secrets were bound:
    /// `nonce || ciphertext+tag`, no associated data.
    fn legacy_seal(plaintext: &[u8]) -> Vec<u8> {
        use chacha20poly1305::{
            aead::{Aead, AeadCore, KeyInit, OsRng},
            XChaCha20Poly1305,
        };
        let cipher = XChaCha20Poly1305::new_from_slice(&[3; 32]).unwrap();
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let mut out = nonce.to_vec();
        out.extend(cipher.encrypt(&nonce, plaintext).unwrap());
        out
    }

    #[test]
    fn legacy_rows_still_open_and_are_rewritten_bound() {
        let dir = tempfile::tempdir().unwrap();
        let db = sled::open(dir.path().join("sled")).unwrap();
        let mut old_record = serde_json::to_value(record("vintage")).unwrap();
        old_record.as_object_mut().unwrap().remove("incarnation");
        old_record["created_at_ms"] = 1_000.into();
        db.open_tree("tenants")
            .unwrap()
            .insert("vintage", serde_json::to_vec(&old_record).unwrap())
            .unwrap();
        let old_set = br#"{"current":{"kid":"k2","secret":"hk-current","created_at_ms":5,"expires_at_ms":null},"previous":{"kid":"k1","secret":"hk-previous","created_at_ms":1,"expires_at_ms":99},"destination":"whsec_AQID","next_kid":3}"#;
        db.open_tree("secrets")
            .unwrap()
            .insert("vintage", legacy_seal(old_set))
            .unwrap();
        let tokens = db.open_tree("tokens").unwrap();
        for (id, hash, created) in [("tok_old", "h1", 900), ("tok_new", "h2", 2_000)] {
            let token = format!(
                r#"{{"token_id":"{id}","tenant_id":"vintage","description":"","created_at_ms":{created},"hash":"{hash}"}}"#
            );
            tokens.insert(format!("id:{id}"), token.as_bytes()).unwrap();
            tokens.insert(format!("h:{hash}"), id.as_bytes()).unwrap();
        }

        let catalog = Catalog::open(&db, MasterKey::from_bytes([3; 32]), HashSet::new()).unwrap();
        let (record, set) = catalog.get("vintage").unwrap().unwrap();
        assert!(!record.incarnation.is_empty());
        assert_eq!(set.current.kid, "k2");
        assert_eq!(set.current.secret.expose_secret(), "hk-current");
        let previous = set.previous.unwrap();
        assert_eq!(
            (previous.kid.as_str(), previous.secret.expose_secret()),
            ("k1", "hk-previous")
        );
        assert_eq!(previous.expires_at_ms, Some(99));
        assert_eq!(set.destination.expose_secret(), "whsec_AQID");
        let row = db
            .open_tree("secrets")
            .unwrap()
            .get("vintage")
            .unwrap()
            .unwrap();
        assert!(!sealed::is_legacy(&row), "the row was rewritten bound");
        let kept: Vec<_> = catalog
            .list_tokens(Some("vintage"))
            .unwrap()
            .into_iter()
            .map(|t| (t.token_id, t.tenant_incarnation))
            .collect();
        assert_eq!(
            kept,
            [("tok_new".to_owned(), record.incarnation.clone())],
            "a token older than its tenant is revoked, a newer one bound to it"
        );
    }

    #[test]
    fn delete_takes_tokens_with_it_and_an_interrupted_drop_finishes_at_open() {
        let (_dir, db, catalog) = catalog();
        catalog
            .put(&record("gone"), &SecretSet::generate(Scheme::Hookd, 1))
            .unwrap();
        let (_, token) = catalog.create_token("gone", "ci", 1).unwrap();
        assert_eq!(
            catalog.token_tenant(&token).unwrap().as_deref(),
            Some("gone")
        );
        db.open_tree("t/gone/events")
            .unwrap()
            .insert("d1", "x")
            .unwrap();
        assert!(catalog.delete("gone").unwrap());
        assert_eq!(catalog.token_tenant(&token).unwrap(), None);
        assert!(catalog.list_tokens(None).unwrap().is_empty());
        assert!(catalog.get("gone").unwrap().is_none());
        assert!(!db.tree_names().iter().any(|n| n.starts_with(b"t/gone/")));

        // A crash after the delete's transaction, before its trees went.
        db.open_tree("t/gone/queue")
            .unwrap()
            .insert("q1", "x")
            .unwrap();
        db.open_tree("tenant_drops")
            .unwrap()
            .insert("gone", "")
            .unwrap();
        let catalog = Catalog::open(&db, MasterKey::from_bytes([3; 32]), HashSet::new()).unwrap();
        assert!(!db.tree_names().iter().any(|n| n.starts_with(b"t/gone/")));
        assert!(catalog.drops.is_empty());
    }

    #[test]
    fn a_new_tenant_with_a_reused_id_does_not_inherit_tokens() {
        let (_dir, _db, catalog) = catalog();
        catalog
            .put(&record("again"), &SecretSet::generate(Scheme::Hookd, 1))
            .unwrap();
        let (_, token) = catalog.create_token("again", "ci", 1).unwrap();
        // The tenant record replaced as if deleted and created anew, its
        // token left behind.
        catalog
            .put(&record("again"), &SecretSet::generate(Scheme::Hookd, 1))
            .unwrap();
        assert_eq!(catalog.token_tenant(&token).unwrap(), None);
    }
}
