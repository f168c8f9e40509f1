//! Tenant-scoped API tokens: only a hash of each is kept, with the tenant and
//! the incarnation of it the token was made for.

use rand::RngCore;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::{Catalog, CONFIG_INCARNATION};
use crate::{
    error::{Error, Result},
    store::{
        api::{RowChange, Table},
        records::{decode, encode},
    },
};

/// A tenant-scoped API token, without its value.
///
/// Tenant-scoped API tokens: only a hash of each is kept, with the tenant
/// and the incarnation of it the token was made for. Rows: `id:{token_id}`
/// holds the [`TokenRecord`], `h:{hash}` the token id.
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
    /// The incarnation of the tenant it was made for. Empty only in tokens
    /// made before incarnations, which the catalog binds when it opens.
    #[serde(default)]
    pub tenant_incarnation: String,
}

/// Key of a token's record.
pub(super) fn id_key(token_id: &str) -> String {
    format!("id:{token_id}")
}

/// Key of a token's hash, pointing at its id.
pub(super) fn hash_key(hash: &str) -> String {
    format!("h:{hash}")
}

impl Catalog {
    /// Creates a token for the current incarnation of `tenant_id`; the value
    /// is returned once and only its hash is kept.
    pub fn create_token(
        &self,
        tenant_id: &str,
        description: &str,
        now_ms: i64,
    ) -> Result<(TokenRecord, String)> {
        let tenant_incarnation = self
            .incarnation(tenant_id)?
            .ok_or_else(|| Error::NotFound(format!("tenant {tenant_id}")))?;
        let token = format!("hkt_{}", random_hex(24));
        let record = TokenRecord {
            token_id: format!("tok_{}", ulid::Ulid::new()),
            tenant_id: tenant_id.to_owned(),
            description: description.to_owned(),
            created_at_ms: now_ms,
            hash: token_hash(&token),
            tenant_incarnation,
        };
        self.rows.apply(&[
            RowChange::Put(Table::Tokens, id_key(&record.token_id), encode(&record)),
            RowChange::Put(
                Table::Tokens,
                hash_key(&record.hash),
                record.token_id.as_bytes().to_vec(),
            ),
        ])?;
        Ok((record, token))
    }

    /// Tokens, of one tenant or all.
    pub fn list_tokens(&self, tenant_id: Option<&str>) -> Result<Vec<TokenRecord>> {
        let mut out = Vec::new();
        for (_, row) in self.rows.scan(Table::Tokens, "id:")? {
            let record: TokenRecord = decode(&row)?;
            if tenant_id.is_none_or(|t| t == record.tenant_id) {
                out.push(record);
            }
        }
        Ok(out)
    }

    /// Revokes a token; false if it did not exist.
    pub fn revoke_token(&self, token_id: &str) -> Result<bool> {
        let Some(record) = self.rows.get(Table::Tokens, &id_key(token_id))? else {
            return Ok(false);
        };
        let record: TokenRecord = decode(&record)?;
        self.rows.apply(&[
            RowChange::Remove(Table::Tokens, id_key(token_id)),
            RowChange::Remove(Table::Tokens, hash_key(&record.hash)),
        ])?;
        Ok(true)
    }

    /// The record of a bearer token, if it is a live token of its tenant's
    /// current incarnation.
    pub fn token_record(&self, token: &str) -> Result<Option<TokenRecord>> {
        let Some(token_id) = self
            .rows
            .get(Table::Tokens, &hash_key(&token_hash(token)))?
        else {
            return Ok(None);
        };
        let token_id = String::from_utf8_lossy(&token_id).into_owned();
        let Some(record) = self.rows.get(Table::Tokens, &id_key(&token_id))? else {
            return Ok(None);
        };
        let record: TokenRecord = decode(&record)?;
        let live = self.tenant_incarnation(&record.tenant_id)?.as_deref()
            == Some(record.tenant_incarnation.as_str());
        Ok(live.then_some(record))
    }

    /// Whether token `token_id`, made for incarnation `incarnation` of its
    /// tenant, is still live: not revoked, and its tenant neither deleted
    /// nor made anew since.
    pub fn token_live(&self, token_id: &str, incarnation: &str) -> Result<bool> {
        let Some(record) = self.rows.get(Table::Tokens, &id_key(token_id))? else {
            return Ok(false);
        };
        let record: TokenRecord = decode(&record)?;
        Ok(record.tenant_incarnation == incarnation
            && self.tenant_incarnation(&record.tenant_id)?.as_deref() == Some(incarnation))
    }

    /// The current incarnation of `tenant_id`; `None` when there is no such
    /// tenant.
    pub fn tenant_incarnation(&self, tenant_id: &str) -> Result<Option<String>> {
        self.incarnation(tenant_id)
    }

    /// At start: revokes every token whose tenant is gone or was made anew
    /// since, and binds tokens made before incarnations to their tenant's
    /// current one (unless the tenant is younger than the token's record says).
    pub(super) fn sweep_tokens(&self) -> Result<()> {
        let (mut revoked, mut bound) = (0, 0);
        for mut token in self.list_tokens(None)? {
            let current = match self.incarnation(&token.tenant_id) {
                Ok(current) => current,
                Err(e) => {
                    tracing::error!(tenant = %token.tenant_id, error = %e, "tenant record cannot be read; its tokens are left as they are");
                    continue;
                }
            };
            let Some(current) = current else {
                self.revoke_token(&token.token_id)?;
                revoked += 1;
                continue;
            };
            if token.tenant_incarnation == current {
                continue;
            }
            if token.tenant_incarnation.is_empty() && self.predates(&token, &current)? {
                token.tenant_incarnation = current;
                self.rows.apply(&[RowChange::Put(
                    Table::Tokens,
                    id_key(&token.token_id),
                    encode(&token),
                )])?;
                bound += 1;
            } else {
                self.revoke_token(&token.token_id)?;
                revoked += 1;
            }
        }
        if revoked + bound > 0 {
            tracing::info!(
                revoked,
                bound,
                "tokens of deleted or re-created tenants revoked; older tokens bound to their tenant"
            );
        }
        Ok(())
    }

    /// Whether the tenant's `current` incarnation existed when `token` was made.
    fn predates(&self, token: &TokenRecord, current: &str) -> Result<bool> {
        if current == CONFIG_INCARNATION {
            return Ok(true);
        }
        Ok(match self.rows.get(Table::Tenants, &token.tenant_id)? {
            Some(bytes) => {
                super::TenantRecord::decode(&bytes)?.0.created_at_ms <= token.created_at_ms
            }
            None => false,
        })
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
