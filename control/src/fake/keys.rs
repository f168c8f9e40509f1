//! The fake's signing secrets and tenant tokens, kept as hookd keeps them.

use std::{collections::BTreeMap, sync::Mutex};

use crate::{
    error::{Error, Result},
    model::{CreatedToken, SecretInfo, SecretState, TokenInfo},
};

/// When the fake makes every secret and token: its clock never moves.
const MADE_AT_MS: i64 = 1_700_000_000_000;

/// Secrets and tokens of every tenant.
///
/// The fake's signing secrets and tenant tokens, kept as hookd keeps them: a
/// current secret per tenant and the previous one a rotation keeps until it
/// is revoked; tokens listed until revoked, forgotten with their tenant.
#[derive(Default)]
pub(super) struct FakeKeys {
    /// A tenant's rotations so far and its previous secret; a tenant
    /// missing here has only its first secret, `k1`.
    secrets: Mutex<BTreeMap<String, Rotated>>,
    tokens: Mutex<Vec<TokenInfo>>,
    issued: Mutex<u32>,
}

/// A tenant's secrets after `rotations` rotations.
#[derive(Clone, Default)]
struct Rotated {
    rotations: u32,
    previous: Option<SecretInfo>,
}

impl Rotated {
    fn current(&self) -> SecretInfo {
        SecretInfo {
            kid: format!("k{}", self.rotations + 1),
            state: SecretState::Current,
            created_at_ms: MADE_AT_MS,
            expires_at_ms: None,
        }
    }
}

impl FakeKeys {
    /// Forgets a tenant's secrets and tokens (it was deleted or made anew).
    pub(super) fn forget(&self, tenant_id: &str) {
        self.secrets.lock().unwrap().remove(tenant_id);
        self.tokens
            .lock()
            .unwrap()
            .retain(|t| t.tenant_id != tenant_id);
    }

    /// The current secret, then the previous one if a rotation kept it.
    pub(super) fn secrets(&self, tenant_id: &str) -> Vec<SecretInfo> {
        let rotated = self.rotated(tenant_id);
        std::iter::once(rotated.current())
            .chain(rotated.previous)
            .collect()
    }

    /// Makes a new current secret; the current one stays accepted for
    /// `overlap_secs`. Returns the new kid, the previous one and when that
    /// expires.
    pub(super) fn rotate(&self, tenant_id: &str, overlap_secs: u64) -> (String, String, i64) {
        let mut secrets = self.secrets.lock().unwrap();
        let rotated = secrets.entry(tenant_id.to_owned()).or_default();
        let expires_at_ms = MADE_AT_MS + overlap_secs as i64 * 1000;
        let previous = SecretInfo {
            state: SecretState::Previous,
            expires_at_ms: Some(expires_at_ms),
            ..rotated.current()
        };
        rotated.rotations += 1;
        let previous_kid = previous.kid.clone();
        rotated.previous = Some(previous);
        (rotated.current().kid, previous_kid, expires_at_ms)
    }

    /// Stops accepting the previous secret `kid`; the current one cannot go.
    pub(super) fn revoke(&self, tenant_id: &str, kid: &str) -> Result<()> {
        let mut secrets = self.secrets.lock().unwrap();
        let rotated = secrets.entry(tenant_id.to_owned()).or_default();
        if rotated.current().kid == kid {
            return Err(Error::FailedPrecondition(format!(
                "{kid} is the current secret; rotate first"
            )));
        }
        match &rotated.previous {
            Some(previous) if previous.kid == kid => {
                rotated.previous = None;
                Ok(())
            }
            _ => Err(Error::NotFound(format!("tenant has no secret \"{kid}\""))),
        }
    }

    /// A new token of `tenant_id`: `tok_1`, `tok_2`, ...
    pub(super) fn issue(&self, tenant_id: &str, description: &str) -> CreatedToken {
        let mut issued = self.issued.lock().unwrap();
        *issued += 1;
        let token_id = format!("tok_{issued}");
        self.tokens.lock().unwrap().push(TokenInfo {
            token_id: token_id.clone(),
            tenant_id: tenant_id.into(),
            description: description.into(),
            created_at_ms: MADE_AT_MS,
        });
        CreatedToken {
            token_id,
            token: "hkt_new".into(),
        }
    }

    /// Live tokens of `tenant_id` (of every tenant without one), oldest first.
    pub(super) fn tokens(&self, tenant_id: Option<&str>) -> Vec<TokenInfo> {
        let tokens = self.tokens.lock().unwrap();
        let of = |t: &&TokenInfo| tenant_id.is_none_or(|id| t.tenant_id == id);
        tokens.iter().filter(of).cloned().collect()
    }

    /// Revokes a token, or `NotFound`.
    pub(super) fn revoke_token(&self, token_id: &str) -> Result<()> {
        let mut tokens = self.tokens.lock().unwrap();
        let before = tokens.len();
        tokens.retain(|t| t.token_id != token_id);
        match tokens.len() < before {
            true => Ok(()),
            false => Err(Error::NotFound(format!(
                "no token has the id \"{token_id}\""
            ))),
        }
    }

    fn rotated(&self, tenant_id: &str) -> Rotated {
        let secrets = self.secrets.lock().unwrap();
        secrets.get(tenant_id).cloned().unwrap_or_default()
    }
}
