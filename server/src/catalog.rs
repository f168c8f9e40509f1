//! Tenants created over the control plane, persisted in sled next to the
//! events: settings in `tenants`, secrets sealed with the master key in
//! `secrets`, tenant-scoped API tokens (hashed) in `tokens`.

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::Scheme;
use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use sled::Transactional;

use crate::{
    config::{DestinationConfig, SecretConfig, SecretState, TenantConfig},
    error::{Error, Result},
    keyring::MasterKey,
    store::records::{decode, encode},
};

/// A tenant as the control plane stores it; secrets live apart, sealed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TenantRecord {
    /// Settings, with no secret values in them.
    pub config: TenantConfig,
    /// Creation time (Unix ms).
    pub created_at_ms: i64,
}

/// One signing secret with its lifetime.
#[derive(Clone, Serialize, Deserialize)]
pub struct SecretEntry {
    /// Key id.
    pub kid: String,
    /// The secret, as the sender uses it.
    pub secret: String,
    /// When it was made (Unix ms).
    pub created_at_ms: i64,
    /// When it stops being accepted (previous secrets only).
    pub expires_at_ms: Option<i64>,
}

/// A tenant's secrets: the current and previous signing secret and the
/// destination secret. Stored sealed.
#[derive(Clone, Serialize, Deserialize)]
pub struct SecretSet {
    /// Senders sign with this one.
    pub current: SecretEntry,
    /// Still accepted until its expiry.
    pub previous: Option<SecretEntry>,
    /// hookd signs forwards with this one.
    pub destination: String,
    /// Number of the next kid (`k{n}`).
    pub next_kid: u32,
}

/// A tenant-scoped API token, without its value.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokenRecord {
    /// Public id (`tok_…`).
    pub token_id: String,
    /// The only tenant it may touch.
    pub tenant_id: String,
    /// What it is for.
    pub description: String,
    /// Creation time (Unix ms).
    pub created_at_ms: i64,
    /// SHA-256 of the token, hex.
    pub hash: String,
}

/// The control plane's persistent state. Writes are applied in memory;
/// callers make them durable with [`crate::store::Store::durable_barrier`]
/// before they answer.
#[derive(Clone)]
pub struct Catalog {
    tenants: sled::Tree,
    secrets: sled::Tree,
    tokens: sled::Tree,
    key: MasterKey,
}

impl Catalog {
    /// Opens the catalog's trees.
    pub fn open(db: &sled::Db, key: MasterKey) -> Result<Catalog> {
        Ok(Catalog {
            tenants: db.open_tree("tenants")?,
            secrets: db.open_tree("secrets")?,
            tokens: db.open_tree("tokens")?,
            key,
        })
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
        let sealed = self
            .secrets
            .get(id)?
            .ok_or_else(|| Error::Corrupt(format!("tenant {id} has no secrets")))?;
        decode(&self.key.open(&sealed)?)
    }

    /// Stores a tenant and its secrets together (one transaction).
    pub fn put(&self, record: &TenantRecord, secrets: &SecretSet) -> Result<()> {
        let id = record.config.id.as_str();
        let (record, sealed) = (encode(record), self.key.seal(&encode(secrets)));
        (&self.tenants, &self.secrets)
            .transaction(|(tenants, secrets)| {
                tenants.insert(id, record.as_slice())?;
                secrets.insert(id, sealed.as_slice())?;
                Ok::<_, sled::transaction::ConflictableTransactionError<()>>(())
            })
            .map_err(|e| Error::Corrupt(format!("catalog write: {e:?}")))?;
        Ok(())
    }

    /// Deletes a tenant, its secrets and its tokens; its data trees are
    /// dropped by [`crate::store::Store::drop_tenant_trees`].
    pub fn delete(&self, id: &str) -> Result<bool> {
        let existed = self.tenants.remove(id)?.is_some();
        self.secrets.remove(id)?;
        for token in self.list_tokens(Some(id))? {
            self.revoke_token(&token.token_id)?;
        }
        Ok(existed)
    }

    /// Creates a token for `tenant_id`; the value is returned once and only
    /// its hash is kept.
    pub fn create_token(
        &self,
        tenant_id: &str,
        description: &str,
        now_ms: i64,
    ) -> Result<(TokenRecord, String)> {
        let token = format!("hkt_{}", random_hex(24));
        let record = TokenRecord {
            token_id: format!("tok_{}", ulid::Ulid::new()),
            tenant_id: tenant_id.to_owned(),
            description: description.to_owned(),
            created_at_ms: now_ms,
            hash: token_hash(&token),
        };
        self.tokens
            .insert(format!("id:{}", record.token_id), encode(&record))?;
        self.tokens
            .insert(format!("h:{}", record.hash), record.token_id.as_bytes())?;
        Ok((record, token))
    }

    /// Tokens, of one tenant or all.
    pub fn list_tokens(&self, tenant_id: Option<&str>) -> Result<Vec<TokenRecord>> {
        let mut out = Vec::new();
        for kv in self.tokens.scan_prefix("id:") {
            let record: TokenRecord = decode(&kv?.1)?;
            if tenant_id.is_none_or(|t| t == record.tenant_id) {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// Revokes a token; false if it did not exist.
    pub fn revoke_token(&self, token_id: &str) -> Result<bool> {
        let Some(record) = self.tokens.remove(format!("id:{token_id}"))? else {
            return Ok(false);
        };
        let record: TokenRecord = decode(&record)?;
        self.tokens.remove(format!("h:{}", record.hash))?;
        Ok(true)
    }

    /// The tenant a bearer token is scoped to, if it is a live token.
    pub fn token_tenant(&self, token: &str) -> Result<Option<String>> {
        let Some(token_id) = self.tokens.get(format!("h:{}", token_hash(token)))? else {
            return Ok(None);
        };
        let Some(record) = self.tokens.get([b"id:".as_slice(), &token_id].concat())? else {
            return Ok(None);
        };
        Ok(Some(decode::<TokenRecord>(&record)?.tenant_id))
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
            next_kid: 2,
        }
    }

    /// Makes a new current secret; the old one stays accepted until
    /// `now + overlap`. Returns the new entry.
    pub fn rotate(&mut self, scheme: Scheme, now_ms: i64, overlap_ms: i64) -> SecretEntry {
        let mut old = self.current.clone();
        old.expires_at_ms = Some(now_ms + overlap_ms);
        self.current = SecretEntry {
            kid: format!("k{}", self.next_kid),
            secret: new_signing_secret(scheme),
            created_at_ms: now_ms,
            expires_at_ms: None,
        };
        self.next_kid += 1;
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
fn new_signing_secret(scheme: Scheme) -> String {
    match scheme {
        Scheme::Standard => {
            let mut key = [0u8; 32];
            rand::rng().fill_bytes(&mut key);
            format!("whsec_{}", STANDARD.encode(key))
        }
        Scheme::Stripe => format!("whsec_{}", random_hex(24)),
        Scheme::Hookd | Scheme::Github | Scheme::Shopify | Scheme::Slack => random_hex(32),
    }
}

fn random_hex(bytes: usize) -> String {
    let mut raw = vec![0u8; bytes];
    rand::rng().fill_bytes(&mut raw);
    hex::encode(raw)
}

fn token_hash(token: &str) -> String {
    hex::encode(Sha256::digest(token.as_bytes()))
}
