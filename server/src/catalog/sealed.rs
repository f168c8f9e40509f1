//! How a tenant's secrets are kept in the `secrets` tree.

use base64::{engine::general_purpose::STANDARD, Engine};
use secrecy::{ExposeSecret, SecretString};
use serde::{Deserialize, Serialize};
use zeroize::Zeroizing;

use super::{SecretEntry, SecretSet};
use crate::{
    error::{Error, Result},
    keyring::{Binding, MasterKey},
};

/// First bytes of a row in the current format.
const MAGIC: &[u8] = b"hks2";
/// The kid the destination secret is sealed under (signing kids are `k{n}`).
pub const DESTINATION_KID: &str = "destination";
/// The kid a `meta` tenant's verify token is sealed under.
const VERIFY_TOKEN_KID: &str = "verify_token";

/// A row in the current format: only kids and sealed values.
#[derive(Serialize, Deserialize)]
struct StoredSet {
    current: SealedEntry,
    previous: Option<SealedEntry>,
    /// Base64 of the sealed destination secret.
    destination: String,
    /// Base64 of the sealed verify token, for the tenants that hold one
    /// (absent in older rows).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    verify_token: Option<String>,
}

#[derive(Serialize, Deserialize)]
struct SealedEntry {
    kid: String,
    /// Base64 of the sealed [`EntryPlain`].
    sealed: String,
}

/// What one signing secret's sealed value holds.
#[derive(Serialize)]
struct EntryPlain<'a> {
    secret: &'a str,
    created_at_ms: i64,
    expires_at_ms: Option<i64>,
}

#[derive(Deserialize)]
struct EntryOpened {
    secret: SecretString,
    created_at_ms: i64,
    expires_at_ms: Option<i64>,
}

/// A row in the legacy format, once opened.
#[derive(Deserialize)]
struct LegacySet {
    current: LegacyEntry,
    previous: Option<LegacyEntry>,
    destination: SecretString,
}

#[derive(Deserialize)]
struct LegacyEntry {
    kid: String,
    secret: SecretString,
    created_at_ms: i64,
    expires_at_ms: Option<i64>,
}

/// Seals `set` as the row of `tenant`.
///
/// Current format: `hks2` then JSON naming each secret's kid beside its
/// sealed value. Every value is sealed on its own with the tenant id and its
/// kid as associated data (the destination secret under the kid
/// [`DESTINATION_KID`]), and its metadata (creation, expiry) is sealed with
/// it. A value moved to another tenant or kid does not open.
///
/// Legacy format (before secrets were bound): `nonce || ciphertext+tag` of
/// the whole set's JSON, without associated data. The catalog rewrites such
/// rows in the current format when it opens, and reads nothing else after.
pub fn seal(key: &MasterKey, tenant: &str, set: &SecretSet) -> Vec<u8> {
    let entry = |e: &SecretEntry| {
        let mut plain = Zeroizing::new(Vec::with_capacity(128 + e.secret.expose_secret().len()));
        serde_json::to_writer(
            &mut *plain,
            &EntryPlain {
                secret: e.secret.expose_secret(),
                created_at_ms: e.created_at_ms,
                expires_at_ms: e.expires_at_ms,
            },
        )
        .expect("entry serializes");
        let binding = Binding {
            tenant,
            kid: &e.kid,
        };
        SealedEntry {
            kid: e.kid.clone(),
            sealed: STANDARD.encode(key.seal(&plain, binding)),
        }
    };
    let destination = key.seal(
        set.destination.expose_secret().as_bytes(),
        Binding {
            tenant,
            kid: DESTINATION_KID,
        },
    );
    let verify_token = set.verify_token.as_ref().map(|token| {
        let binding = Binding {
            tenant,
            kid: VERIFY_TOKEN_KID,
        };
        STANDARD.encode(key.seal(token.expose_secret().as_bytes(), binding))
    });
    let stored = StoredSet {
        current: entry(&set.current),
        previous: set.previous.as_ref().map(entry),
        destination: STANDARD.encode(destination),
        verify_token,
    };
    let mut row = MAGIC.to_vec();
    serde_json::to_writer(&mut row, &stored).expect("row serializes");
    row
}

/// Opens the row of `tenant`; a value sealed for another tenant or kid, or
/// a row in the legacy format, is refused.
pub fn open(key: &MasterKey, tenant: &str, row: &[u8]) -> Result<SecretSet> {
    let stored = parse(row).ok_or_else(|| {
        Error::Corrupt(format!(
            "secrets of tenant {tenant} are not in the bound sealed format"
        ))
    })?;
    let unsealed = |kid: &str, sealed: &str| {
        let bytes = STANDARD.decode(sealed).map_err(|_| {
            Error::Corrupt(format!(
                "sealed secret {kid} of tenant {tenant}: not base64"
            ))
        })?;
        key.open(&bytes, Binding { tenant, kid })
    };
    let entry = |e: &SealedEntry| -> Result<SecretEntry> {
        let plain = unsealed(&e.kid, &e.sealed)?;
        let opened: EntryOpened = serde_json::from_slice(&plain).map_err(|_| {
            Error::Corrupt(format!(
                "sealed secret {} of tenant {tenant}: bad entry",
                e.kid
            ))
        })?;
        Ok(SecretEntry {
            kid: e.kid.clone(),
            secret: opened.secret,
            created_at_ms: opened.created_at_ms,
            expires_at_ms: opened.expires_at_ms,
        })
    };
    let destination = unsealed(DESTINATION_KID, &stored.destination)?;
    let destination = std::str::from_utf8(&destination).map_err(|_| {
        Error::Corrupt(format!(
            "destination secret of tenant {tenant} is not UTF-8"
        ))
    })?;
    let verify_token = match &stored.verify_token {
        Some(sealed) => {
            let token = unsealed(VERIFY_TOKEN_KID, sealed)?;
            let token = String::from_utf8(token.to_vec()).map_err(|_| {
                Error::Corrupt(format!("verify token of tenant {tenant} is not UTF-8"))
            })?;
            Some(SecretString::from(token))
        }
        None => None,
    };
    Ok(SecretSet {
        current: entry(&stored.current)?,
        previous: stored.previous.as_ref().map(entry).transpose()?,
        destination: SecretString::from(destination),
        verify_token,
    })
}

/// Whether `row` is in the legacy format (anything not in the current one).
pub fn is_legacy(row: &[u8]) -> bool {
    parse(row).is_none()
}

/// Opens a legacy row.
pub fn open_legacy(key: &MasterKey, tenant: &str, row: &[u8]) -> Result<SecretSet> {
    let plain = key.open_legacy(row)?;
    let legacy: LegacySet = serde_json::from_slice(&plain)
        .map_err(|e| Error::Corrupt(format!("legacy secrets of tenant {tenant}: {e}")))?;
    let entry = |e: LegacyEntry| SecretEntry {
        kid: e.kid,
        secret: e.secret,
        created_at_ms: e.created_at_ms,
        expires_at_ms: e.expires_at_ms,
    };
    Ok(SecretSet {
        current: entry(legacy.current),
        previous: legacy.previous.map(entry),
        destination: legacy.destination,
        verify_token: None,
    })
}

fn parse(row: &[u8]) -> Option<StoredSet> {
    serde_json::from_slice(row.strip_prefix(MAGIC)?).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(kid: &str, secret: &str) -> SecretEntry {
        SecretEntry {
            kid: kid.into(),
            secret: secret.into(),
            created_at_ms: 1,
            expires_at_ms: None,
        }
    }

    #[test]
    fn a_verify_token_is_sealed_bound_and_opens_back() {
        let key = MasterKey::from_bytes([1; 32]);
        let set = SecretSet {
            current: entry("k1", "app-secret"),
            previous: None,
            destination: "whsec_AQID".into(),
            verify_token: Some("meatyhamhock".into()),
        };
        let row = seal(&key, "fb", &set);
        assert!(!row.windows(12).any(|w| w == b"meatyhamhock"), "sealed");
        let opened = open(&key, "fb", &row).unwrap();
        let token = opened
            .verify_token
            .as_ref()
            .map(|t| t.expose_secret().to_owned());
        assert_eq!(token.as_deref(), Some("meatyhamhock"));
        assert!(open(&key, "other", &row).is_err(), "bound to its tenant");
        let without = SecretSet {
            verify_token: None,
            ..set
        };
        let opened = open(&key, "fb", &seal(&key, "fb", &without)).unwrap();
        assert!(opened.verify_token.is_none());
    }

    #[test]
    fn values_swapped_between_kids_do_not_open() {
        let key = MasterKey::from_bytes([1; 32]);
        let set = SecretSet {
            current: entry("k2", "new-secret"),
            previous: Some(entry("k1", "old-secret")),
            destination: "whsec_AQID".into(),
            verify_token: None,
        };
        let row = seal(&key, "acme", &set);
        assert!(!row.windows(6).any(|w| w == b"secret"), "values are sealed");
        let opened = open(&key, "acme", &row).unwrap();
        assert_eq!(opened.current.secret.expose_secret(), "new-secret");

        let mut stored: serde_json::Value = serde_json::from_slice(&row[MAGIC.len()..]).unwrap();
        let k1 = stored["previous"]["sealed"].take();
        stored["previous"]["sealed"] = stored["current"]["sealed"].take();
        stored["current"]["sealed"] = k1;
        let mut swapped = MAGIC.to_vec();
        swapped.extend(serde_json::to_vec(&stored).unwrap());
        let err = open(&key, "acme", &swapped).err().unwrap().to_string();
        assert!(
            err.contains("another tenant or kid") && err.contains("acme"),
            "{err}"
        );

        let err = open(&key, "globex", &row).err().unwrap().to_string();
        assert!(err.contains("globex"), "{err}");
    }
}
