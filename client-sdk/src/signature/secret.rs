//! `Secret`: one tenant signing key and its id, built from the string the provider
//! hands out, never printed and wiped from memory when dropped.

use std::fmt;

use base64::engine::general_purpose::STANDARD;
use base64::Engine;
use zeroize::Zeroizing;

use super::Scheme;
use crate::error::InvalidSecret;

const STANDARD_PREFIX: &str = "whsec_";

/// One signing key as the provider hands it out, tagged with the id the caller
/// rotates it under so `Verified` can say which key matched. The key bytes
/// are zeroed when the last copy is dropped.
#[derive(Clone)]
pub struct Secret {
    kid: String,
    key: Zeroizing<Vec<u8>>,
}

impl Secret {
    /// Turns a provider's secret string into key bytes the way that provider's own
    /// library does: Standard Webhooks base64-decodes what follows `whsec_` (bare base64
    /// is accepted too); every other scheme, Stripe's `whsec_...` included, uses the
    /// string's bytes literally.
    pub fn from_provider(
        scheme: Scheme,
        kid: impl Into<String>,
        secret: &str,
    ) -> Result<Secret, InvalidSecret> {
        let key = match scheme {
            Scheme::Standard => {
                let encoded = secret.strip_prefix(STANDARD_PREFIX).unwrap_or(secret);
                STANDARD
                    .decode(encoded)
                    .map_err(|_| InvalidSecret::NotBase64)?
            }
            Scheme::Hookd | Scheme::Stripe | Scheme::Github | Scheme::Shopify | Scheme::Slack => {
                secret.as_bytes().to_vec()
            }
        };
        if key.is_empty() {
            return Err(InvalidSecret::Empty);
        }
        Ok(Secret::from_bytes(kid, key))
    }

    /// For keys hookd generates itself, which are already raw bytes.
    pub fn from_bytes(kid: impl Into<String>, key: Vec<u8>) -> Secret {
        Secret {
            kid: kid.into(),
            key: Zeroizing::new(key),
        }
    }

    /// The id the caller gave this key, echoed in `Verified::kid` and the hookd header.
    pub fn kid(&self) -> &str {
        &self.kid
    }

    pub(crate) fn key(&self) -> &[u8] {
        &self.key
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Secret")
            .field("kid", &self.kid)
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
    fn rejects_unusable_secrets() {
        let not_b64 = Secret::from_provider(Scheme::Standard, "k", "whsec_@@");
        assert_eq!(not_b64.unwrap_err(), InvalidSecret::NotBase64);
        let empty = Secret::from_provider(Scheme::Standard, "k", "whsec_");
        assert_eq!(empty.unwrap_err(), InvalidSecret::Empty);
        let empty = Secret::from_provider(Scheme::Github, "k", "");
        assert_eq!(empty.unwrap_err(), InvalidSecret::Empty);
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
