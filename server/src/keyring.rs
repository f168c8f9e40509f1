//! The master key that encrypts tenant secrets at rest, and the admin token.
//! Both come from the environment or a file; on a first start without them
//! hookd generates them into the data dir (mode 0600) and says so.

use std::{
    fs::OpenOptions,
    io::Write,
    os::unix::fs::OpenOptionsExt,
    path::{Path, PathBuf},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use chacha20poly1305::{
    aead::{Aead, AeadCore, KeyInit, OsRng},
    XChaCha20Poly1305, XNonce,
};
use rand::RngCore;

use crate::error::{Error, Result};

/// Where the key material comes from, besides the data dir.
#[derive(Debug, Clone, Default)]
pub struct KeySources {
    /// `HOOKD_MASTER_KEY`: base64 of 32 bytes.
    pub master_key: Option<String>,
    /// `HOOKD_MASTER_KEY_FILE`: a file holding the same.
    pub master_key_file: Option<PathBuf>,
    /// `HOOKD_ADMIN_TOKEN`.
    pub admin_token: Option<String>,
}

/// Encrypts and decrypts small records (tenant secrets) with XChaCha20-Poly1305.
#[derive(Clone)]
pub struct MasterKey(XChaCha20Poly1305);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

const NONCE_LEN: usize = 24;

impl MasterKey {
    /// Loads the key from `sources`, else from `data_dir/master.key`,
    /// generating that file on first start.
    pub fn load(sources: &KeySources, data_dir: &Path) -> Result<MasterKey> {
        let encoded = match (&sources.master_key, &sources.master_key_file) {
            (Some(value), _) => value.trim().to_owned(),
            (None, Some(path)) => read_trimmed(path, "HOOKD_MASTER_KEY_FILE")?,
            (None, None) => {
                let path = data_dir.join("master.key");
                if path.exists() {
                    read_trimmed(&path, "the data dir's master.key")?
                } else {
                    let mut key = [0u8; 32];
                    rand::rng().fill_bytes(&mut key);
                    let encoded = STANDARD.encode(key);
                    write_private(&path, &encoded)?;
                    tracing::warn!(
                        path = %path.display(),
                        "no HOOKD_MASTER_KEY given: generated a master key for secrets at rest; back it up or supply HOOKD_MASTER_KEY"
                    );
                    encoded
                }
            }
        };
        let key = STANDARD
            .decode(&encoded)
            .ok()
            .filter(|k| k.len() == 32)
            .ok_or_else(|| {
                Error::Config("master key: must be the base64 encoding of exactly 32 bytes".into())
            })?;
        Ok(MasterKey(
            XChaCha20Poly1305::new_from_slice(&key).expect("32-byte key"),
        ))
    }

    /// A key from raw bytes (tests).
    pub fn from_bytes(key: [u8; 32]) -> MasterKey {
        MasterKey(XChaCha20Poly1305::new_from_slice(&key).expect("32-byte key"))
    }

    /// `nonce || ciphertext+tag`.
    pub fn seal(&self, plaintext: &[u8]) -> Vec<u8> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let mut out = nonce.to_vec();
        out.extend(
            self.0
                .encrypt(&nonce, plaintext)
                .expect("encryption cannot fail"),
        );
        out
    }

    /// Decrypts what [`MasterKey::seal`] wrote; fails on a wrong key or tampering.
    pub fn open(&self, sealed: &[u8]) -> Result<Vec<u8>> {
        if sealed.len() < NONCE_LEN {
            return Err(Error::Corrupt("sealed record too short".into()));
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        self.0
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .map_err(|_| {
                Error::Config("stored secrets cannot be decrypted: wrong HOOKD_MASTER_KEY?".into())
            })
    }
}

/// The admin token from `sources`, else `data_dir/admin-token`, generated on
/// first start. Its value is never logged, only where it is kept.
pub fn load_admin_token(sources: &KeySources, data_dir: &Path) -> Result<String> {
    if let Some(token) = &sources.admin_token {
        if token.trim().len() < 16 {
            return Err(Error::Config(
                "HOOKD_ADMIN_TOKEN: must be at least 16 characters".into(),
            ));
        }
        return Ok(token.trim().to_owned());
    }
    let path = data_dir.join("admin-token");
    if path.exists() {
        return read_trimmed(&path, "the data dir's admin-token");
    }
    let mut raw = [0u8; 24];
    rand::rng().fill_bytes(&mut raw);
    let token = format!("hka_{}", hex::encode(raw));
    write_private(&path, &token)?;
    tracing::warn!(
        path = %path.display(),
        "no HOOKD_ADMIN_TOKEN given: generated an admin token for the gRPC control plane and stored it there (mode 0600)"
    );
    Ok(token)
}

fn read_trimmed(path: &Path, what: &str) -> Result<String> {
    std::fs::read_to_string(path)
        .map(|s| s.trim().to_owned())
        .map_err(|e| Error::Config(format!("{what} ({}): {e}", path.display())))
}

fn write_private(path: &Path, contents: &str) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir)?;
    }
    let mut file = OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_bytes())?;
    file.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn generated_key_is_private_stable_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::load(&KeySources::default(), dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let sealed = key.seal(b"whsec_topsecret");
        assert!(!sealed.windows(6).any(|w| w == b"whsec_"));
        let again = MasterKey::load(&KeySources::default(), dir.path()).unwrap();
        assert_eq!(again.open(&sealed).unwrap(), b"whsec_topsecret");
        let other = MasterKey::from_bytes([7; 32]);
        assert!(other.open(&sealed).is_err());
    }

    #[test]
    fn bad_master_key_is_refused_by_name() {
        let dir = tempfile::tempdir().unwrap();
        let sources = KeySources {
            master_key: Some("short".into()),
            ..Default::default()
        };
        let e = MasterKey::load(&sources, dir.path())
            .unwrap_err()
            .to_string();
        assert!(e.contains("master key"), "{e}");
    }

    #[test]
    fn admin_token_is_generated_once() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_admin_token(&KeySources::default(), dir.path()).unwrap();
        let b = load_admin_token(&KeySources::default(), dir.path()).unwrap();
        assert_eq!(a, b);
        assert!(a.starts_with("hka_"));
    }
}
