//! Signatures made with a key pair: Ed25519 (Discord, Standard Webhooks `v1a`)
//! and ECDSA P-256 over SHA-256 (SendGrid).

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, Ed25519KeyPair, UnparsedPublicKey};

/// Length of an Ed25519 public key, seed and signature.
pub(crate) const ED25519_KEY_LEN: usize = 32;
pub(crate) const ED25519_SIGNATURE_LEN: usize = 64;

/// The DER prefix of a P-256 `SubjectPublicKeyInfo` before its 65-byte point.
pub(crate) const P256_SPKI_PREFIX: [u8; 26] = [
    0x30, 0x59, 0x30, 0x13, 0x06, 0x07, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01, 0x06, 0x08, 0x2a,
    0x86, 0x48, 0xce, 0x3d, 0x03, 0x01, 0x07, 0x03, 0x42, 0x00,
];

/// Whether `signature` is `public_key`'s Ed25519 signature of `message`.
///
/// Signatures made with a key pair: Ed25519 (Discord, Standard Webhooks `v1a`)
/// and ECDSA P-256 over SHA-256 (SendGrid). Verification needs only the public
/// key; signing, for `hookctl send` and tests, the private one.
pub(crate) fn verify_ed25519(public_key: &[u8], message: &[u8], signature: &[u8]) -> bool {
    UnparsedPublicKey::new(&signature::ED25519, public_key)
        .verify(message, signature)
        .is_ok()
}

/// Whether `signature` (DER) is the P-256 key `point`'s ECDSA signature of `message`.
pub(crate) fn verify_p256(point: &[u8], message: &[u8], signature: &[u8]) -> bool {
    UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_ASN1, point)
        .verify(message, signature)
        .is_ok()
}

/// The uncompressed point of a P-256 public key given as DER `SubjectPublicKeyInfo`
/// (what SendGrid shows as the verification key, base64) or as the bare point.
pub(crate) fn p256_point(key: &[u8]) -> Option<Vec<u8>> {
    let point = key.strip_prefix(&P256_SPKI_PREFIX[..]).unwrap_or(key);
    (point.len() == 65 && point[0] == 0x04).then(|| point.to_vec())
}

/// Whether `signature` has the shape of a DER ECDSA P-256 signature: a SEQUENCE
/// of two INTEGERs of at most 33 bytes each, and nothing after it. A truncated or
/// padded signature is malformed rather than merely wrong.
pub(crate) fn is_der_ecdsa_p256(signature: &[u8]) -> bool {
    let Some((&0x30, rest)) = signature.split_first() else {
        return false;
    };
    let Some((&len, mut rest)) = rest.split_first() else {
        return false;
    };
    if usize::from(len) != rest.len() {
        return false;
    }
    for _ in 0..2 {
        let [0x02, len, tail @ ..] = rest else {
            return false;
        };
        let len = usize::from(*len);
        if !(1..=33).contains(&len) || tail.len() < len {
            return false;
        }
        rest = &tail[len..];
    }
    rest.is_empty()
}

/// Whether `seed` can sign as an Ed25519 private key.
pub(crate) fn valid_ed25519_seed(seed: &[u8]) -> bool {
    Ed25519KeyPair::from_seed_unchecked(seed).is_ok()
}

/// Whether `pkcs8` is a P-256 private key.
pub(crate) fn valid_p256_pkcs8(pkcs8: &[u8]) -> bool {
    EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        pkcs8,
        &SystemRandom::new(),
    )
    .is_ok()
}

/// The Ed25519 signature of `message` under the private key `seed`.
pub(crate) fn sign_ed25519(seed: &[u8], message: &[u8]) -> Vec<u8> {
    let pair =
        Ed25519KeyPair::from_seed_unchecked(seed).expect("seed checked when the key was made");
    pair.sign(message).as_ref().to_vec()
}

/// The public key of the Ed25519 private key `seed`.
pub(crate) fn ed25519_public(seed: &[u8]) -> Vec<u8> {
    use ring::signature::KeyPair;
    let pair =
        Ed25519KeyPair::from_seed_unchecked(seed).expect("seed checked when the key was made");
    pair.public_key().as_ref().to_vec()
}

/// The uncompressed point of the P-256 private key `pkcs8`'s public key.
pub(crate) fn p256_public(pkcs8: &[u8]) -> Vec<u8> {
    use ring::signature::KeyPair;
    let pair = EcdsaKeyPair::from_pkcs8(
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        pkcs8,
        &SystemRandom::new(),
    )
    .expect("key checked when it was made");
    pair.public_key().as_ref().to_vec()
}

/// A new random P-256 private key, PKCS#8 DER.
pub(crate) fn generate_p256() -> Vec<u8> {
    EcdsaKeyPair::generate_pkcs8(
        &signature::ECDSA_P256_SHA256_ASN1_SIGNING,
        &SystemRandom::new(),
    )
    .expect("the system random source works")
    .as_ref()
    .to_vec()
}

/// A new random Ed25519 seed.
pub(crate) fn generate_ed25519() -> Vec<u8> {
    use ring::rand::SecureRandom;
    let mut seed = vec![0u8; ED25519_KEY_LEN];
    SystemRandom::new()
        .fill(&mut seed)
        .expect("the system random source works");
    seed
}

/// The DER ECDSA signature of `message` under the P-256 private key `pkcs8`.
pub(crate) fn sign_p256(pkcs8: &[u8], message: &[u8]) -> Vec<u8> {
    let rng = SystemRandom::new();
    let pair = EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_ASN1_SIGNING, pkcs8, &rng)
        .expect("key checked when it was made");
    pair.sign(&rng, message)
        .expect("signing with a valid key succeeds")
        .as_ref()
        .to_vec()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ed25519_round_trip_and_tamper() {
        let seed = [7u8; ED25519_KEY_LEN];
        let public = ed25519_public(&seed);
        let signature = sign_ed25519(&seed, b"message");
        assert_eq!(signature.len(), ED25519_SIGNATURE_LEN);
        assert!(verify_ed25519(&public, b"message", &signature));
        assert!(!verify_ed25519(&public, b"messagf", &signature));
        assert!(!verify_ed25519(&[8u8; 32], b"message", &signature));
    }

    #[test]
    fn p256_round_trip_and_der_shape() {
        let pkcs8 = generate_p256();
        let point = p256_public(&pkcs8);
        let signature = sign_p256(&pkcs8, b"message");
        assert!(is_der_ecdsa_p256(&signature));
        assert!(verify_p256(&point, b"message", &signature));
        assert!(!verify_p256(&point, b"messagf", &signature));
        assert!(!is_der_ecdsa_p256(&signature[..signature.len() - 1]));
        assert!(!is_der_ecdsa_p256(&[&signature[..], &[0]].concat()));
        assert!(!is_der_ecdsa_p256(&[0x30, 0x00]));
        assert!(is_der_ecdsa_p256(&[
            0x30, 0x06, 0x02, 0x01, 0x01, 0x02, 0x01, 0x01
        ]));
    }

    #[test]
    fn p256_keys_are_read_from_spki_or_as_points() {
        let mut point = vec![0x04];
        point.extend_from_slice(&[1u8; 64]);
        let mut spki = P256_SPKI_PREFIX.to_vec();
        spki.extend_from_slice(&point);
        assert_eq!(p256_point(&spki), Some(point.clone()));
        assert_eq!(p256_point(&point), Some(point));
        assert_eq!(p256_point(&[4u8; 10]), None);
    }

    #[test]
    fn p256_round_trip_and_tamper() {
        let private = generate_p256();
        let public = p256_public(&private);
        let signature = sign_p256(&private, b"message");
        assert!(verify_p256(&public, b"message", &signature));
        assert!(!verify_p256(&public, b"messagf", &signature));
        let other = p256_public(&generate_p256());
        assert!(!verify_p256(&other, b"message", &signature));
    }
}
