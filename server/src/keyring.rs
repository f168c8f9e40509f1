//! The master key that encrypts tenant secrets at rest, and the admin token,
//! and where they come from.

use std::{
    fs::{File, Permissions},
    io::Write,
    os::unix::fs::PermissionsExt,
    path::{Path, PathBuf},
};

use base64::{engine::general_purpose::STANDARD, Engine};
use chacha20poly1305::{
    aead::{Aead, AeadCore, KeyInit, OsRng, Payload},
    XChaCha20Poly1305, XNonce,
};
use rand::RngCore;
use secrecy::{ExposeSecret, SecretString};
use zeroize::Zeroizing;

use crate::error::{Error, Result};

/// Where the key material comes from, besides the data dir. `{:?}` shows
/// whether a value is set, never the value.
///
/// Both the master key and the admin token come from the environment or a
/// file; on a first start without them hookd generates them into the data
/// dir (mode 0600, written atomically) and says so.
#[derive(Debug, Clone, Default)]
pub struct KeySources {
    /// `HOOKD_MASTER_KEY`: base64 of 32 bytes.
    pub master_key: Option<SecretString>,
    /// `HOOKD_MASTER_KEY_FILE`: a file holding the same.
    pub master_key_file: Option<PathBuf>,
    /// `HOOKD_ADMIN_TOKEN`.
    pub admin_token: Option<SecretString>,
}

/// Encrypts and decrypts small records (tenant secrets) with XChaCha20-Poly1305.
/// The cipher zeroes its key when dropped.
///
/// A sealed secret is `2 || nonce || ciphertext+tag` (XChaCha20-Poly1305)
/// with its tenant id and kid as associated data, so a sealed value copied
/// to another tenant or kid does not open. Rows written before that format
/// (`nonce || ciphertext+tag`, no associated data) open only through
/// [`MasterKey::open_legacy`], which the catalog uses once at start to
/// rewrite them in the bound format.
#[derive(Clone)]
pub struct MasterKey(XChaCha20Poly1305);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

const NONCE_LEN: usize = 24;
/// First byte of a sealed secret bound to its tenant and kid.
const BOUND_FORMAT: u8 = 2;
/// Domain of the associated data, so it never matches another use of the key.
const AD_DOMAIN: &[u8] = b"hookd/sealed-secret/v2";

/// What a sealed secret belongs to; sealed as AEAD associated data.
#[derive(Debug, Clone, Copy)]
pub struct Binding<'a> {
    /// The tenant the secret is for.
    pub tenant: &'a str,
    /// Its key id within the tenant.
    pub kid: &'a str,
}

impl Binding<'_> {
    /// Length-prefixed, so no two bindings share associated data.
    fn associated_data(&self) -> Vec<u8> {
        let mut ad = AD_DOMAIN.to_vec();
        for part in [self.tenant, self.kid] {
            ad.extend_from_slice(&(part.len() as u32).to_be_bytes());
            ad.extend_from_slice(part.as_bytes());
        }
        ad
    }
}

impl MasterKey {
    /// Loads the key from `sources`, else from `data_dir/master.key`,
    /// generating that file on first start.
    pub fn load(sources: &KeySources, data_dir: &Path) -> Result<MasterKey> {
        let encoded = match (&sources.master_key, &sources.master_key_file) {
            (Some(value), _) => SecretString::from(value.expose_secret().trim()),
            (None, Some(path)) => read_trimmed(path, "HOOKD_MASTER_KEY_FILE")?,
            (None, None) => {
                let path = data_dir.join("master.key");
                if path.exists() {
                    read_trimmed(&path, "the data dir's master.key")?
                } else {
                    let mut key = Zeroizing::new([0u8; 32]);
                    rand::rng().fill_bytes(key.as_mut_slice());
                    let encoded = SecretString::from(STANDARD.encode(key.as_slice()));
                    write_private(&path, encoded.expose_secret())?;
                    tracing::warn!(
                        path = %path.display(),
                        "no HOOKD_MASTER_KEY given: generated a master key for secrets at rest; back it up or supply HOOKD_MASTER_KEY"
                    );
                    encoded
                }
            }
        };
        let key = STANDARD
            .decode(encoded.expose_secret())
            .map(Zeroizing::new)
            .ok()
            .filter(|k| k.len() == 32)
            .ok_or_else(|| {
                Error::config(
                    "master key",
                    "must be the base64 encoding of exactly 32 bytes",
                )
            })?;
        Ok(MasterKey(
            XChaCha20Poly1305::new_from_slice(&key).expect("32-byte key"),
        ))
    }

    /// A key from raw bytes (tests).
    #[cfg(test)]
    pub fn from_bytes(key: [u8; 32]) -> MasterKey {
        MasterKey(XChaCha20Poly1305::new_from_slice(&key).expect("32-byte key"))
    }

    /// Seals `plaintext` for `binding`: `2 || nonce || ciphertext+tag`.
    pub fn seal(&self, plaintext: &[u8], binding: Binding<'_>) -> Vec<u8> {
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let aad = binding.associated_data();
        let mut out = vec![BOUND_FORMAT];
        out.extend_from_slice(&nonce);
        out.extend(
            self.0
                .encrypt(
                    &nonce,
                    Payload {
                        msg: plaintext,
                        aad: &aad,
                    },
                )
                .expect("encryption cannot fail"),
        );
        out
    }

    /// Opens what [`MasterKey::seal`] sealed for the same `binding`; fails
    /// on another tenant's or kid's value, tampering or a wrong key.
    pub fn open(&self, sealed: &[u8], binding: Binding<'_>) -> Result<Zeroizing<Vec<u8>>> {
        let refused = || {
            Error::Corrupt(format!(
                "sealed secret {} of tenant {} does not open: it was sealed for another tenant or kid, was altered, or HOOKD_MASTER_KEY is wrong",
                binding.kid, binding.tenant
            ))
        };
        let Some((&BOUND_FORMAT, rest)) = sealed.split_first() else {
            return Err(refused());
        };
        if rest.len() < NONCE_LEN {
            return Err(refused());
        }
        let (nonce, ciphertext) = rest.split_at(NONCE_LEN);
        let aad = binding.associated_data();
        self.0
            .decrypt(
                XNonce::from_slice(nonce),
                Payload {
                    msg: ciphertext,
                    aad: &aad,
                },
            )
            .map(Zeroizing::new)
            .map_err(|_| refused())
    }

    /// Opens a row sealed before secrets were bound to their tenant and kid
    /// (`nonce || ciphertext+tag`, no associated data). Only for rewriting
    /// such rows in the bound format.
    pub fn open_legacy(&self, sealed: &[u8]) -> Result<Zeroizing<Vec<u8>>> {
        if sealed.len() < NONCE_LEN {
            return Err(Error::Corrupt("sealed record too short".into()));
        }
        let (nonce, ciphertext) = sealed.split_at(NONCE_LEN);
        self.0
            .decrypt(XNonce::from_slice(nonce), ciphertext)
            .map(Zeroizing::new)
            .map_err(|_| {
                Error::config(
                    "master key",
                    "stored secrets cannot be decrypted: wrong HOOKD_MASTER_KEY?",
                )
            })
    }
}

/// What the master key seals for the shared database's key check.
const KEY_CHECK: Binding<'static> = Binding {
    tenant: "hookd",
    kid: "key-check",
};

impl crate::store::postgres::KeyCheck for MasterKey {
    fn sealed_check(&self) -> Vec<u8> {
        self.seal(b"hookd master key check", KEY_CHECK)
    }

    fn opens_check(&self, sealed: &[u8]) -> bool {
        self.open(sealed, KEY_CHECK).is_ok()
    }
}

/// The admin token from `sources`, else `data_dir/admin-token`, generated on
/// first start. Its value is never logged, only where it is kept.
pub fn load_admin_token(sources: &KeySources, data_dir: &Path) -> Result<SecretString> {
    if let Some(token) = &sources.admin_token {
        let token = token.expose_secret().trim();
        if token.len() < 16 {
            return Err(Error::config(
                "HOOKD_ADMIN_TOKEN",
                "must be at least 16 characters",
            ));
        }
        return Ok(SecretString::from(token));
    }
    let path = data_dir.join("admin-token");
    if path.exists() {
        return read_trimmed(&path, "the data dir's admin-token");
    }
    let mut raw = Zeroizing::new([0u8; 24]);
    rand::rng().fill_bytes(raw.as_mut_slice());
    let token = SecretString::from(format!("hka_{}", hex::encode(raw.as_slice())));
    write_private(&path, token.expose_secret())?;
    tracing::warn!(
        path = %path.display(),
        "no HOOKD_ADMIN_TOKEN given: generated an admin token for the gRPC control plane and stored it there (mode 0600)"
    );
    Ok(token)
}

fn read_trimmed(path: &Path, what: &str) -> Result<SecretString> {
    std::fs::read_to_string(path)
        .map(|s| SecretString::from(Zeroizing::new(s).trim()))
        .map_err(|e| Error::config(format!("{what} ({})", path.display()), e))
}

/// Creates `path` (mode 0600) holding `contents`, all or nothing: written to
/// a temp file in the same directory, synced, linked into place without
/// replacing an existing file, then the directory is synced so the new
/// entry survives a crash too.
fn write_private(path: &Path, contents: &str) -> Result<()> {
    let dir = match path.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(dir)?;
    let mut file = tempfile::Builder::new()
        .prefix(".hookd-key-")
        .permissions(Permissions::from_mode(0o600))
        .tempfile_in(dir)?;
    file.write_all(contents.as_bytes())?;
    file.as_file().sync_all()?;
    file.persist_noclobber(path).map_err(|e| e.error)?;
    File::open(dir)?.sync_all()?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    const ACME_K1: Binding<'static> = Binding {
        tenant: "acme",
        kid: "k1",
    };

    #[test]
    fn generated_key_is_private_stable_and_round_trips() {
        let dir = tempfile::tempdir().unwrap();
        let key = MasterKey::load(&KeySources::default(), dir.path()).unwrap();
        let mode = std::fs::metadata(dir.path().join("master.key"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        assert_eq!(names, ["master.key"], "no temp file is left behind");
        let sealed = key.seal(b"whsec_topsecret", ACME_K1);
        assert!(!sealed.windows(6).any(|w| w == b"whsec_"));
        let again = MasterKey::load(&KeySources::default(), dir.path()).unwrap();
        assert_eq!(
            again.open(&sealed, ACME_K1).unwrap().as_slice(),
            b"whsec_topsecret"
        );
        let other = MasterKey::from_bytes([7; 32]);
        assert!(other.open(&sealed, ACME_K1).is_err());
    }

    #[test]
    fn sealed_secret_opens_only_for_its_tenant_and_kid() {
        let key = MasterKey::from_bytes([9; 32]);
        let sealed = key.seal(b"s3cret", ACME_K1);
        for other in [
            Binding {
                tenant: "globex",
                kid: "k1",
            },
            Binding {
                tenant: "acme",
                kid: "k2",
            },
            Binding {
                tenant: "acmek",
                kid: "1",
            },
        ] {
            let err = key.open(&sealed, other).unwrap_err().to_string();
            assert!(
                err.contains(other.tenant)
                    && err.contains(other.kid)
                    && err.contains("another tenant or kid"),
                "{err}"
            );
        }
        assert!(
            key.open_legacy(&sealed).is_err(),
            "the bound format is not legacy"
        );
    }

    #[test]
    fn legacy_rows_without_associated_data_open_only_as_legacy() {
        let raw = [5u8; 32];
        let cipher = XChaCha20Poly1305::new_from_slice(&raw).unwrap();
        let nonce = XChaCha20Poly1305::generate_nonce(&mut OsRng);
        let mut legacy = nonce.to_vec();
        legacy.extend(cipher.encrypt(&nonce, b"old".as_slice()).unwrap());
        let key = MasterKey::from_bytes(raw);
        assert_eq!(key.open_legacy(&legacy).unwrap().as_slice(), b"old");
        assert!(key.open(&legacy, ACME_K1).is_err());
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
    fn admin_token_is_generated_once_and_private() {
        let dir = tempfile::tempdir().unwrap();
        let a = load_admin_token(&KeySources::default(), dir.path()).unwrap();
        let b = load_admin_token(&KeySources::default(), dir.path()).unwrap();
        assert_eq!(a.expose_secret(), b.expose_secret());
        assert!(a.expose_secret().starts_with("hka_"));
        let mode = std::fs::metadata(dir.path().join("admin-token"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
        assert!(!format!("{a:?}").contains(a.expose_secret()));
    }
}
