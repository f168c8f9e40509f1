//! `Secret`: one tenant key and its id, built from the string the provider
//! hands out, never printed and wiped from memory when dropped.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use subtle::ConstantTimeEq;
use zeroize::Zeroizing;

use super::{pair, Scheme};
use crate::error::InvalidSecret;

const STANDARD_PREFIX: &str = "whsec_";
/// Standard Webhooks `v1a`: an Ed25519 public key (verifying) or private key (signing).
const STANDARD_PUBLIC_PREFIX: &str = "whpk_";
const STANDARD_PRIVATE_PREFIX: &str = "whsk_";

/// What a key's bytes are, and so which signatures it can check or make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyKind {
    /// A shared secret: HMAC key or header token.
    Shared,
    /// An Ed25519 public key (32 bytes): verifies.
    Ed25519Public,
    /// An Ed25519 private key's 32-byte seed: signs.
    Ed25519Seed,
    /// A P-256 public key as its uncompressed point (65 bytes): verifies.
    P256Public,
    /// A P-256 private key in PKCS#8 DER: signs.
    P256Pkcs8,
}

impl KeyKind {
    /// The kind that signs what this kind verifies (itself for shared secrets).
    pub fn signing(self) -> KeyKind {
        match self {
            KeyKind::Ed25519Public => KeyKind::Ed25519Seed,
            KeyKind::P256Public => KeyKind::P256Pkcs8,
            other => other,
        }
    }
}

/// One signing key as the provider hands it out, tagged with the id the caller
/// rotates it under so `Verified` can say which key matched. The key bytes
/// are zeroed when the last copy is dropped.
///
/// `Secret`: one tenant key and its id, built from the string the provider hands
/// out (a shared HMAC secret, or one half of a key pair), never printed and wiped
/// from memory when dropped.
#[derive(Clone)]
pub struct Secret {
    kid: String,
    kind: KeyKind,
    key: Zeroizing<Vec<u8>>,
}

impl Secret {
    /// Turns a provider's secret string into key bytes the way that provider's own
    /// library does: Standard Webhooks (and Svix) base64-decodes what follows `whsec_` (bare base64
    /// is accepted too), and reads `whpk_`/`whsk_` as an Ed25519 public/private key;
    /// Discord's application public key is 64 hex digits (its private key, for
    /// signing, the 128 hex digits of libsodium's seed and public key); SendGrid's
    /// verification key is base64 DER `SubjectPublicKeyInfo` (its private key, for
    /// signing, base64 PKCS#8); every other
    /// scheme, Stripe's `whsec_...` included, uses the string's bytes literally.
    pub fn from_provider(
        scheme: Scheme,
        kid: impl Into<String>,
        secret: &str,
    ) -> Result<Secret, InvalidSecret> {
        let (kind, key) = match scheme {
            Scheme::Standard | Scheme::Svix => standard_key(secret)?,
            Scheme::Discord => discord_key(secret)?,
            Scheme::Sendgrid => sendgrid_key(secret)?,
            Scheme::Hookd
            | Scheme::Stripe
            | Scheme::Github
            | Scheme::Shopify
            | Scheme::Slack
            | Scheme::Gitlab
            | Scheme::Okta
            | Scheme::Mailgun
            | Scheme::Twilio
            | Scheme::Meta
            | Scheme::Intercom
            | Scheme::Paddle
            | Scheme::Zoom
            | Scheme::Twitch
            | Scheme::Linear
            | Scheme::Square
            | Scheme::Hubspot
            | Scheme::Hmac => (KeyKind::Shared, secret.as_bytes().to_vec()),
        };
        Secret::of_kind(kid, kind, key)
    }

    /// A key of `kind` from its raw bytes, checked to be usable as one.
    pub fn of_kind(
        kid: impl Into<String>,
        kind: KeyKind,
        key: Vec<u8>,
    ) -> Result<Secret, InvalidSecret> {
        if key.is_empty() {
            return Err(InvalidSecret::Empty);
        }
        let ed25519 = key.len() == pair::ED25519_KEY_LEN;
        let key = match kind {
            KeyKind::Shared => key,
            KeyKind::Ed25519Public if ed25519 => key,
            KeyKind::Ed25519Seed if ed25519 && pair::valid_ed25519_seed(&key) => key,
            KeyKind::P256Public => pair::p256_point(&key).ok_or(InvalidSecret::NotAKey)?,
            KeyKind::P256Pkcs8 if pair::valid_p256_pkcs8(&key) => key,
            _ => return Err(InvalidSecret::NotAKey),
        };
        Ok(Secret {
            kid: kid.into(),
            kind,
            key: Zeroizing::new(key),
        })
    }

    /// For keys hookd generates itself, which are already raw shared-secret bytes.
    pub fn from_bytes(kid: impl Into<String>, key: Vec<u8>) -> Secret {
        Secret {
            kid: kid.into(),
            kind: KeyKind::Shared,
            key: Zeroizing::new(key),
        }
    }

    /// What this key is.
    pub fn kind(&self) -> KeyKind {
        self.kind
    }

    /// A new random key of `kind`: 32 random bytes for a shared secret, a new
    /// key pair's private half for the signing kinds, that private half's
    /// public key for the verifying kinds.
    pub fn generate(kid: impl Into<String>, kind: KeyKind) -> Secret {
        let private = |kind| match kind {
            KeyKind::P256Public | KeyKind::P256Pkcs8 => (KeyKind::P256Pkcs8, pair::generate_p256()),
            _ => (KeyKind::Ed25519Seed, pair::generate_ed25519()),
        };
        let (made, key) = match kind {
            KeyKind::Shared => (KeyKind::Shared, pair::generate_ed25519()),
            other => private(other),
        };
        let secret = Secret {
            kid: kid.into(),
            kind: made,
            key: Zeroizing::new(key),
        };
        if kind == made {
            secret
        } else {
            secret.verifying()
        }
    }

    /// The public key that verifies what this private key signs (itself for
    /// shared secrets and public keys).
    pub fn verifying(&self) -> Secret {
        let public = |kind, key| Secret {
            kid: self.kid.clone(),
            kind,
            key: Zeroizing::new(key),
        };
        match self.kind {
            KeyKind::Ed25519Seed => public(KeyKind::Ed25519Public, pair::ed25519_public(&self.key)),
            KeyKind::P256Pkcs8 => public(KeyKind::P256Public, pair::p256_public(&self.key)),
            KeyKind::Shared | KeyKind::Ed25519Public | KeyKind::P256Public => self.clone(),
        }
    }

    /// The id the caller gave this key, echoed in `Verified::kid` and the hookd header.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }

    /// The key as the text a token scheme sends in its header.
    pub(crate) fn text(&self) -> String {
        String::from_utf8_lossy(&self.key).into_owned()
    }
}

/// A Standard Webhooks key: `whsec_` (or bare) base64 shared secret, `whpk_`
/// base64 Ed25519 public key, `whsk_` base64 Ed25519 private key (its 32-byte
/// seed, or the 64-byte seed and public key libsodium writes).
fn standard_key(secret: &str) -> Result<(KeyKind, Vec<u8>), InvalidSecret> {
    let decode = |encoded: &str| {
        STANDARD
            .decode(encoded)
            .map_err(|_| InvalidSecret::NotBase64)
    };
    if let Some(public) = secret.strip_prefix(STANDARD_PUBLIC_PREFIX) {
        return Ok((KeyKind::Ed25519Public, decode(public)?));
    }
    if let Some(private) = secret.strip_prefix(STANDARD_PRIVATE_PREFIX) {
        let mut key = decode(private)?;
        if key.len() == 2 * pair::ED25519_KEY_LEN {
            let public = key.split_off(pair::ED25519_KEY_LEN);
            if pair::valid_ed25519_seed(&key) && pair::ed25519_public(&key) != public {
                return Err(InvalidSecret::NotAKey);
            }
        }
        return Ok((KeyKind::Ed25519Seed, key));
    }
    let encoded = secret.strip_prefix(STANDARD_PREFIX).unwrap_or(secret);
    Ok((KeyKind::Shared, decode(encoded)?))
}

/// A SendGrid key: the verification key as base64 DER `SubjectPublicKeyInfo`, or
/// for signing a P-256 private key as base64 PKCS#8.
fn sendgrid_key(secret: &str) -> Result<(KeyKind, Vec<u8>), InvalidSecret> {
    let key = STANDARD
        .decode(secret)
        .map_err(|_| InvalidSecret::NotBase64)?;
    match pair::p256_point(&key) {
        Some(_) => Ok((KeyKind::P256Public, key)),
        None => Ok((KeyKind::P256Pkcs8, key)),
    }
}

/// A Discord key: the application's Ed25519 public key as hex, or for signing the
/// hex of libsodium's 64-byte secret key (seed, then the public key it makes).
fn discord_key(secret: &str) -> Result<(KeyKind, Vec<u8>), InvalidSecret> {
    let mut key = hex::decode(secret).map_err(|_| InvalidSecret::NotAKey)?;
    if key.len() != 2 * pair::ED25519_KEY_LEN {
        return Ok((KeyKind::Ed25519Public, key));
    }
    let public = key.split_off(pair::ED25519_KEY_LEN);
    if !pair::valid_ed25519_seed(&key) || pair::ed25519_public(&key) != public {
        return Err(InvalidSecret::NotAKey);
    }
    Ok((KeyKind::Ed25519Seed, key))
}

/// Two secrets are the same when their kid, kind and key bytes are; the
/// key bytes are compared in constant time.
impl PartialEq for Secret {
    fn eq(&self, other: &Secret) -> bool {
        self.kid == other.kid
            && self.kind == other.kind
            && bool::from(self.key().ct_eq(other.key()))
    }
}

impl Eq for Secret {}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("kid", &self.kid)
            .field("kind", &self.kind)
            .field("key", &format_args!("<redacted>"))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_secret_is_base64_decoded_with_or_without_prefix() {
        let prefixed = Secret::from_provider(Scheme::Standard, "k", "whsec_AQID").unwrap();
        let bare = Secret::from_provider(Scheme::Standard, "k", "AQID").unwrap();
        assert_eq!(prefixed.key(), [1, 2, 3]);
        assert_eq!(bare.key(), [1, 2, 3]);
    }

    #[test]
    fn other_schemes_use_the_secret_literally() {
        let stripe = Secret::from_provider(Scheme::Stripe, "k", "whsec_AQID").unwrap();
        assert_eq!(stripe.key(), b"whsec_AQID");
    }

    #[test]
    fn discord_keys_are_hex() {
        let seed = [7u8; 32];
        let public = hex::encode(pair::ed25519_public(&seed));
        let verifying = Secret::from_provider(Scheme::Discord, "k", &public).unwrap();
        assert_eq!(verifying.kind(), KeyKind::Ed25519Public);
        let private = format!("{}{public}", hex::encode(seed));
        let signing = Secret::from_provider(Scheme::Discord, "k", &private).unwrap();
        assert_eq!(signing.kind(), KeyKind::Ed25519Seed);
        assert_eq!(signing.verifying().key(), verifying.key());
        let mismatched = format!("{}{public}", hex::encode([8u8; 32]));
        for bad in [&mismatched, "zz", &public[..62]] {
            let err = Secret::from_provider(Scheme::Discord, "k", bad).unwrap_err();
            assert_eq!(err, InvalidSecret::NotAKey, "{bad}");
        }
    }

    #[test]
    fn sendgrid_keys_are_base64_der() {
        let pkcs8 = pair::generate_p256();
        let signing =
            Secret::from_provider(Scheme::Sendgrid, "k", &STANDARD.encode(&pkcs8)).unwrap();
        assert_eq!(signing.kind(), KeyKind::P256Pkcs8);
        let point = signing.verifying().key().to_vec();
        let spki = [&pair::P256_SPKI_PREFIX[..], &point].concat();
        let verifying =
            Secret::from_provider(Scheme::Sendgrid, "k", &STANDARD.encode(spki)).unwrap();
        assert_eq!(verifying.kind(), KeyKind::P256Public);
        assert_eq!(verifying.key(), point);
        let err = Secret::from_provider(Scheme::Sendgrid, "k", "@@").unwrap_err();
        assert_eq!(err, InvalidSecret::NotBase64);
        let err = Secret::from_provider(Scheme::Sendgrid, "k", "AAAA").unwrap_err();
        assert_eq!(err, InvalidSecret::NotAKey);
    }

    #[test]
    fn rejects_unusable_secrets() {
        let not_b64 = Secret::from_provider(Scheme::Standard, "k", "whsec_@@");
        assert_eq!(not_b64.unwrap_err(), InvalidSecret::NotBase64);
        let empty = Secret::from_provider(Scheme::Standard, "k", "whsec_");
        assert_eq!(empty.unwrap_err(), InvalidSecret::Empty);
        let empty = Secret::from_provider(Scheme::Github, "k", "");
        assert_eq!(empty.unwrap_err(), InvalidSecret::Empty);
    }

    #[test]
    fn generated_pairs_sign_what_their_public_half_verifies() {
        for kind in [KeyKind::Ed25519Public, KeyKind::P256Public] {
            let private = Secret::generate("k", kind.signing());
            assert_eq!(private.kind(), kind.signing());
            assert_eq!(private.verifying().kind(), kind);
            assert_eq!(Secret::generate("k", kind).kind(), kind);
        }
        let shared = Secret::generate("k", KeyKind::Shared);
        assert_eq!((shared.kind(), shared.key().len()), (KeyKind::Shared, 32));
        assert_ne!(shared.key(), Secret::generate("k", KeyKind::Shared).key());
    }

    #[test]
    fn standard_reads_key_pairs_by_prefix() {
        let seed = Secret::generate("k", KeyKind::Ed25519Seed);
        let public = seed.verifying();
        let encoded = |key: &Secret| STANDARD.encode(key.key());
        let read_public =
            Secret::from_provider(Scheme::Standard, "k", &format!("whpk_{}", encoded(&public)))
                .unwrap();
        assert_eq!(read_public.kind(), KeyKind::Ed25519Public);
        assert_eq!(read_public.key(), public.key());
        let libsodium = [seed.key(), public.key()].concat();
        let read_private = Secret::from_provider(
            Scheme::Standard,
            "k",
            &format!("whsk_{}", STANDARD.encode(&libsodium)),
        )
        .unwrap();
        assert_eq!(read_private.kind(), KeyKind::Ed25519Seed);
        assert_eq!(read_private.key(), seed.key());
        let short = Secret::from_provider(Scheme::Standard, "k", "whpk_AQID");
        assert_eq!(short.unwrap_err(), InvalidSecret::NotAKey);
    }

    #[test]
    fn debug_does_not_print_the_key() {
        let secret = Secret::from_provider(Scheme::Github, "k7", "hunter2-very-secret").unwrap();
        let text = format!("{secret:?}");
        assert!(text.contains("k7"), "{text}");
        assert!(text.contains("<redacted>"), "{text}");
        assert!(!text.contains("hunter2"), "{text}");
        let raw = Secret::from_bytes("k8", vec![0xAB; 4]);
        let text = format!("{raw:?} {raw:#?}");
        assert!(!text.contains("171"), "{text}");
    }
}
