//! Tenants created over the control plane: their settings, sealed secrets and
//! hashed API tokens, persisted through the storage engine's catalog rows.

pub mod contracts;
pub mod follow;
mod in_force;
pub(crate) mod known;
mod record;
mod resolve;
mod sealed;
mod tokens;

use std::{collections::HashSet, sync::Arc};

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::Scheme;
use rand::RngCore;
use secrecy::SecretString;
use zeroize::Zeroizing;

pub use in_force::assemble;
pub use record::{StoredRoute, StoredTenant, TenantRecord};
pub use resolve::Resolver;

use crate::{
    config::{DestinationConfig, SecretConfig, SecretState, TenantConfig},
    error::{Error, Result},
    ids::TenantId,
    keyring::MasterKey,
    store::{
        api::{CatalogRows, RowChange, Store, Table},
        records::{decode, encode},
    },
};

/// The incarnation of every tenant declared in the config file.
pub const CONFIG_INCARNATION: &str = "config";

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
    /// Scheme `meta`: the verify token its subscription handshake presents.
    pub verify_token: Option<SecretString>,
}

/// The control plane's persistent state. Writes are applied in memory;
/// callers make them durable with [`crate::store::api::Storage::durable_barrier`]
/// before they answer.
///
/// Tenants created over the control plane, persisted through the storage
/// engine's catalog rows ([`crate::store::api::CatalogRows`]): settings in
/// `tenants`, secrets sealed with the master key in `secrets` (see
/// [`sealed`] for the format), tenant-scoped API tokens (hashed) in
/// `tokens`.
///
/// Every tenant has an incarnation: a fresh id when it is created over the
/// API, [`CONFIG_INCARNATION`] when it comes from the config file. A token
/// remembers the incarnation it was made for and is honoured only while its
/// tenant's current incarnation is the same, so a later tenant with a
/// re-used id never inherits it. A delete removes the tenant record, its
/// secrets and its tokens in one transaction that also leaves a marker in
/// `tenant_drops`; the tenant's data trees are dropped after, and a marker a
/// crash left behind is finished when the catalog next opens. A tenant
/// created under a used id starts with no data of the one before.
#[derive(Clone)]
pub struct Catalog {
    store: Store,
    rows: Arc<dyn CatalogRows>,
    key: MasterKey,
    /// Ids of the config file's tenants.
    config_tenants: Arc<HashSet<String>>,
    /// The rows of each stored tenant as this process last wrote or applied
    /// them, so the follower of other processes' changes skips its own.
    known: known::Known,
}

impl Catalog {
    /// Opens the catalog's trees and tidies what an older version or a crash
    /// left: rewrites legacy sealed rows in the bound format, gives old
    /// records an incarnation, finishes interrupted deletes and revokes
    /// tokens whose tenant is gone (`config_tenants`: the config file's ids).
    pub fn open(store: Store, key: MasterKey, config_tenants: HashSet<String>) -> Result<Catalog> {
        let catalog = Catalog {
            rows: store.catalog_rows()?,
            store,
            key,
            config_tenants: Arc::new(config_tenants),
            known: known::Known::default(),
        };
        catalog.migrate()?;
        for (id, _) in catalog.rows.scan(Table::Drops, "")? {
            catalog.drop_data(&id)?;
        }
        catalog.sweep_tokens()?;
        catalog.store.flush()?;
        Ok(catalog)
    }

    /// The config file's tenant ids.
    pub(crate) fn config_ids(&self) -> Arc<HashSet<String>> {
        self.config_tenants.clone()
    }

    /// The rows this process last wrote or applied, by tenant.
    pub(crate) fn known(&self) -> &known::Known {
        &self.known
    }

    /// Rewrites rows of an older format: sealed secrets without their
    /// binding, records of the config file's schema.
    fn migrate(&self) -> Result<()> {
        let mut rewritten = 0;
        for (id, row) in self.rows.scan(Table::Secrets, "")? {
            if sealed::is_legacy(&row) {
                match sealed::open_legacy(&self.key, &id, &row) {
                    Ok(set) => {
                        let sealed = sealed::seal(&self.key, &id, &set);
                        self.rows
                            .apply(&[RowChange::Put(Table::Secrets, id.clone(), sealed)])?;
                        rewritten += 1;
                    }
                    Err(e) => {
                        tracing::error!(tenant = %id, error = %e, "legacy sealed secrets cannot be opened; left as they are");
                    }
                }
            }
        }
        if rewritten > 0 {
            tracing::info!(
                tenants = rewritten,
                "sealed secrets rewritten bound to their tenant and kid"
            );
        }
        for (id, bytes) in self.rows.scan(Table::Tenants, "")? {
            match TenantRecord::decode(&bytes) {
                Ok((record, true)) => {
                    self.rows
                        .apply(&[RowChange::Put(Table::Tenants, id, record.encode())])?;
                }
                Ok((_, false)) => {}
                Err(e) => {
                    tracing::error!(tenant = %id, error = %e, "stored tenant record cannot be read; left as it is");
                }
            }
        }
        Ok(())
    }

    /// The ids of every stored tenant, in order, without decoding them, so
    /// one unreadable record cannot hide the others.
    pub fn ids(&self) -> Result<Vec<String>> {
        Ok(self
            .rows
            .scan(Table::Tenants, "")?
            .into_iter()
            .map(|(id, _)| id)
            .collect())
    }

    /// One stored tenant.
    pub fn get(&self, id: &str) -> Result<Option<(TenantRecord, SecretSet)>> {
        match self.rows.get(Table::Tenants, id)? {
            Some(record) => Ok(Some((
                TenantRecord::decode(&record)?.0,
                self.secrets_of(id)?,
            ))),
            None => Ok(None),
        }
    }

    /// Whether a tenant of that id is stored, without opening its secrets.
    pub fn contains(&self, id: &str) -> Result<bool> {
        Ok(self.rows.get(Table::Tenants, id)?.is_some())
    }

    fn secrets_of(&self, id: &str) -> Result<SecretSet> {
        let row = self
            .rows
            .get(Table::Secrets, id)?
            .ok_or_else(|| Error::Corrupt(format!("tenant {id} has no secrets")))?;
        sealed::open(&self.key, id, &row)
    }

    /// The incarnation tokens of `tenant_id` must carry now; `None` when
    /// there is no such tenant.
    fn incarnation(&self, tenant_id: &str) -> Result<Option<String>> {
        if self.config_tenants.contains(tenant_id) {
            return Ok(Some(CONFIG_INCARNATION.into()));
        }
        match self.rows.get(Table::Tenants, tenant_id)? {
            Some(bytes) => Ok(Some(TenantRecord::decode(&bytes)?.0.incarnation)),
            None => Ok(None),
        }
    }

    /// Stores a tenant and its secrets together (one transaction; the caller
    /// makes it durable). A tenant stored
    /// for the first time starts without data: whatever an earlier tenant
    /// of its id left (deleted, or removed from the config file) is dropped.
    pub fn put(&self, record: &TenantRecord, secrets: &SecretSet) -> Result<()> {
        let id = record.tenant.id.as_str();
        if !self.contains(id)? {
            self.drop_data(id)?;
        }
        let (record, sealed) = (record.encode(), sealed::seal(&self.key, id, secrets));
        let print = known::fingerprint(&record, Some(&sealed));
        self.rows.apply(&[
            RowChange::Put(Table::Tenants, id.to_owned(), record),
            RowChange::Put(Table::Secrets, id.to_owned(), sealed),
        ])?;
        self.known
            .lock()
            .expect("known lock")
            .insert(id.to_owned(), print);
        Ok(())
    }

    /// Stores a new tenant and its secrets in one transaction that fails
    /// with [`Error::AlreadyExists`] and changes nothing when a tenant of
    /// its id is stored, whichever process stored it (the caller makes it
    /// durable). Whatever an earlier tenant of its id left (deleted, or
    /// removed from the config file) is dropped first, and only while no
    /// tenant of the id is stored, so a loser never drops a winner's data.
    pub fn create(&self, record: &TenantRecord, secrets: &SecretSet) -> Result<()> {
        let id = record.tenant.id.as_str();
        let taken = || Error::AlreadyExists(format!("tenant {id} already exists"));
        if self.contains(id)? {
            return Err(taken());
        }
        self.drop_data(id)?;
        let (record, sealed) = (record.encode(), sealed::seal(&self.key, id, secrets));
        let print = known::fingerprint(&record, Some(&sealed));
        self.rows
            .apply(&[
                RowChange::Create(Table::Tenants, id.to_owned(), record),
                RowChange::Put(Table::Secrets, id.to_owned(), sealed),
            ])
            .map_err(|e| match e {
                Error::AlreadyExists(_) => taken(),
                other => other,
            })?;
        self.known
            .lock()
            .expect("known lock")
            .insert(id.to_owned(), print);
        Ok(())
    }

    /// Deletes a tenant's record, secrets and tokens in one transaction,
    /// with a marker that its data trees are still to be dropped. The caller
    /// drops them through the committer
    /// ([`crate::store::api::Storage::drop_tenant_trees`]) and then calls
    /// [`Catalog::data_dropped`]; a crash in between is finished at the next
    /// start.
    pub fn delete(&self, id: &str) -> Result<bool> {
        let existed = self.contains(id)?;
        let routes = encode(&self.route_names(id)?);
        let mut changes = vec![
            RowChange::Remove(Table::Tenants, id.to_owned()),
            RowChange::Remove(Table::Secrets, id.to_owned()),
            RowChange::Put(Table::Drops, id.to_owned(), routes),
        ];
        for token in self.list_tokens(Some(id))? {
            changes.push(RowChange::Remove(
                Table::Tokens,
                tokens::id_key(&token.token_id),
            ));
            changes.push(RowChange::Remove(
                Table::Tokens,
                tokens::hash_key(&token.hash),
            ));
        }
        changes.extend(contracts::rows_of(&*self.rows, id)?);
        self.rows.apply(&changes)?;
        self.known.lock().expect("known lock").remove(id);
        Ok(existed)
    }

    /// Forgets the delete marker of `id` once its data trees are dropped.
    pub fn data_dropped(&self, id: &str) -> Result<()> {
        self.rows
            .apply(&[RowChange::Remove(Table::Drops, id.to_owned())])
    }

    /// The names of a stored tenant's routes besides `default` (none when
    /// it is not stored or its record cannot be read), read without opening
    /// its secrets.
    pub fn route_names(&self, id: &str) -> Result<Vec<String>> {
        let Some(bytes) = self.rows.get(Table::Tenants, id)? else {
            return Ok(Vec::new());
        };
        Ok(TenantRecord::decode(&bytes).map_or_else(
            |_| Vec::new(),
            |(record, _)| record.tenant.routes.into_iter().map(|r| r.name).collect(),
        ))
    }

    /// Removes every record of `id`'s data (its routes' too, as its delete
    /// marker names them; a marker written before routes names none), then
    /// its delete marker if any.
    fn drop_data(&self, id: &str) -> Result<()> {
        let marker = self.rows.get(Table::Drops, id)?.unwrap_or_default();
        let routes: Vec<String> = decode(&marker).unwrap_or_default();
        match TenantId::try_from(id) {
            Ok(tenant) => {
                for route in routes.iter().filter(|r| TenantId::is_valid(r)) {
                    self.store.clear_tenant(&tenant.route_scope(route))?;
                }
                self.store.clear_tenant(&tenant)?
            }
            Err(_) => {
                tracing::error!(tenant = %id, "delete marker of an invalid tenant id; nothing to drop")
            }
        }
        self.data_dropped(id)
    }
}

impl SecretSet {
    /// Secrets for a new tenant of `scheme` whose signing secret is
    /// `provided` (issued by the provider), else generated; `None` when none
    /// is provided and hookd cannot make the scheme's key (it verifies with
    /// the provider's public key).
    pub fn starting_with(
        scheme: Scheme,
        now_ms: i64,
        provided: Option<SecretString>,
    ) -> Option<SecretSet> {
        Some(SecretSet {
            current: SecretEntry {
                kid: "k1".into(),
                secret: provided.or_else(|| new_signing_secret(scheme))?,
                created_at_ms: now_ms,
                expires_at_ms: None,
            },
            previous: None,
            destination: new_signing_secret(Scheme::Standard)?,
            verify_token: None,
        })
    }

    /// Makes a new current secret `k{n+1}` after the current `k{n}` (the
    /// `provided` one, else generated); the old one stays accepted until
    /// `now + overlap`. Returns the new entry, or `None` (changing nothing)
    /// when none is provided and hookd cannot make the scheme's key.
    pub fn rotate(
        &mut self,
        scheme: Scheme,
        now_ms: i64,
        overlap_ms: i64,
        provided: Option<SecretString>,
    ) -> Option<SecretEntry> {
        let secret = provided.or_else(|| new_signing_secret(scheme))?;
        let mut old = self.current.clone();
        old.expires_at_ms = Some(now_ms + overlap_ms);
        let next = old
            .kid
            .strip_prefix('k')
            .and_then(|n| n.parse::<u32>().ok())
            .map_or(1, |n| n.saturating_add(1));
        self.current = SecretEntry {
            kid: format!("k{next}"),
            secret,
            created_at_ms: now_ms,
            expires_at_ms: None,
        };
        self.previous = Some(old);
        Some(self.current.clone())
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
    let mut config = record.tenant.to_config();
    config.secrets = std::iter::once(entry(&secrets.current, SecretState::Current))
        .chain(
            secrets
                .previous
                .iter()
                .map(|p| entry(p, SecretState::Previous)),
        )
        .collect();
    let destinations = config.destination.iter_mut().chain(
        config
            .routes
            .iter_mut()
            .filter_map(|r| r.destination.as_mut()),
    );
    for dest in destinations {
        *dest = DestinationConfig {
            secret: Some(secrets.destination.clone()),
            secret_env: None,
            secret_file: None,
            ..dest.clone()
        };
    }
    config.verify_token = secrets.verify_token.clone();
    config
}

/// A new secret in the form the scheme's senders expect; `None` for the schemes
/// that verify with the provider's public key, whose private half only the
/// provider holds.
fn new_signing_secret(scheme: Scheme) -> Option<SecretString> {
    let mut raw = Zeroizing::new([0u8; 32]);
    rand::rng().fill_bytes(raw.as_mut_slice());
    Some(SecretString::from(match scheme {
        Scheme::Standard | Scheme::Svix => format!("whsec_{}", STANDARD.encode(raw.as_slice())),
        Scheme::Stripe => format!("whsec_{}", hex::encode(&raw[..24])),
        Scheme::Hookd
        | Scheme::Github
        | Scheme::Shopify
        | Scheme::Slack
        | Scheme::Gitlab
        | Scheme::Okta
        | Scheme::Mailgun
        | Scheme::Paddle
        | Scheme::Intercom
        | Scheme::Zoom
        | Scheme::Twitch
        | Scheme::Linear
        | Scheme::Square
        | Scheme::Hubspot
        | Scheme::Hmac => hex::encode(&raw[..]),
        Scheme::Twilio | Scheme::Meta => hex::encode(&raw[..16]),
        Scheme::Discord | Scheme::Sendgrid => return None,
    }))
}

#[cfg(test)]
mod tests;
