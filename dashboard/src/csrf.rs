//! The sign-in form's CSRF token, which only this server can make.

use hmac::{Hmac, KeyInit, Mac};
use rand::RngCore;
use sha2::Sha256;

/// The form field every POST carries its CSRF token in.
pub(super) const CSRF_FIELD: &str = "csrf";

/// How long a sign-in form stays usable: one hour.
pub(super) const SIGN_IN_TOKEN_MS: i64 = 3_600_000;

/// The key sign-in tokens are made with; a restart makes a new one, so
/// forms shown before it must be reloaded.
///
/// The sign-in form's CSRF token, which only this server can make: a random
/// nonce and the time it was issued, with an HMAC-SHA256 of both under a key
/// made at start. Sign-in takes it from both the cookie and the form, and
/// only while it is younger than [`SIGN_IN_TOKEN_MS`]; an equal pair the
/// server did not issue (a planted cookie) is rejected.
pub(super) struct SignInKey([u8; 32]);

impl SignInKey {
    /// A new random key.
    pub(super) fn random() -> SignInKey {
        let mut key = [0u8; 32];
        rand::rng().fill_bytes(&mut key);
        SignInKey(key)
    }

    /// A token issued at `now_ms`: `{nonce}.{now_ms}.{mac}`, hex.
    pub(super) fn issue(&self, now_ms: i64) -> String {
        let mut nonce = [0u8; 16];
        rand::rng().fill_bytes(&mut nonce);
        let signed = format!("{}.{now_ms}", hex::encode(nonce));
        let tag = hex::encode(self.mac(&signed).finalize().into_bytes());
        format!("{signed}.{tag}")
    }

    /// Whether `token` was issued by this key and is not older than
    /// [`SIGN_IN_TOKEN_MS`] at `now_ms`; the tag is compared in constant time.
    pub(super) fn verify(&self, token: &str, now_ms: i64) -> bool {
        let Some((signed, tag)) = token.rsplit_once('.') else {
            return false;
        };
        let Some(issued) = signed
            .split_once('.')
            .and_then(|(_, at)| at.parse::<i64>().ok())
        else {
            return false;
        };
        let Ok(tag) = hex::decode(tag) else {
            return false;
        };
        let fresh = (0..=SIGN_IN_TOKEN_MS).contains(&(now_ms - issued));
        fresh && self.mac(signed).verify_slice(&tag).is_ok()
    }

    fn mac(&self, signed: &str) -> Hmac<Sha256> {
        let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(&self.0)
            .expect("HMAC-SHA256 accepts keys of any length");
        mac.update(signed.as_bytes());
        mac
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_fresh_tokens_of_this_key_pass() {
        let key = SignInKey::random();
        let token = key.issue(1_000);
        assert!(key.verify(&token, 1_000));
        assert!(key.verify(&token, 1_000 + SIGN_IN_TOKEN_MS));
        assert!(!key.verify(&token, 1_001 + SIGN_IN_TOKEN_MS), "stale");
        assert!(!key.verify(&token, 999), "from the future");
        assert!(!SignInKey::random().verify(&token, 1_000), "another key");
        let (signed, _) = token.rsplit_once('.').unwrap();
        let forged = format!("{signed}.{}", "0".repeat(64));
        assert!(!key.verify(&forged, 1_000));
        for bad in ["", "a".repeat(64).as_str(), "x.y.z", "a.1.zz"] {
            assert!(!key.verify(bad, 1_000), "{bad}");
        }
    }
}
