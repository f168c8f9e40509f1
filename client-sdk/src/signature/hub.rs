//! The `X-Hub-Signature` family (GitHub, Meta, Intercom): one header holding
//! `<algorithm>=<hex>`, an HMAC of the raw body.

use super::codec::{self, Hash};
use super::{with_headers, Claims, HeaderSource, Message, Proof, Secret, Signed, Signing};
use crate::error::VerifyError;

/// One member of the family: where its signature lives and how it is made.
///
/// The `X-Hub-Signature` family (GitHub, Meta, Intercom): one header holding
/// `<algorithm>=<hex>`, an HMAC of the raw body, no timestamp; some senders add a
/// delivery-id header.
pub(crate) struct Hub {
    /// The signature header.
    pub(crate) header: &'static str,
    /// What precedes the hex digest, `sha256=` or `sha1=`.
    pub(crate) prefix: &'static str,
    /// The format error when the prefix is absent.
    pub(crate) no_prefix: &'static str,
    pub(crate) hash: Hash,
    /// The header carrying the delivery id, for senders that send one.
    pub(crate) delivery: Option<&'static str>,
}

impl Hub {
    /// Claims of a delivery signed this way.
    pub(crate) fn claims<H: HeaderSource + ?Sized>(
        &self,
        headers: &H,
    ) -> Result<Claims, VerifyError> {
        let value = codec::required(headers, self.header)?;
        let hex = value
            .strip_prefix(self.prefix)
            .ok_or(codec::malformed(self.no_prefix))?;
        let tag = codec::decode_hex_len(hex, self.hash.tag_len())?;
        let header_event_id = match self.delivery {
            Some(name) => codec::optional_id(headers, name)?,
            None => None,
        };
        Ok(Claims {
            proofs: vec![Proof::Hmac(self.hash, tag)],
            signed: Signed::around_body(Vec::new()),
            header_event_id,
            ..Claims::default()
        })
    }

    /// Signs `message` as such a sender does.
    pub(crate) fn sign(&self, secret: &Secret, message: &Message<'_>) -> Signing {
        let signed = Signed::around_body(Vec::new());
        let tag = codec::hmac(self.hash, secret.key(), &signed, message.body);
        let mut headers = vec![(
            self.header.to_owned(),
            format!("{}{}", self.prefix, hex::encode(tag)),
        )];
        if let Some(name) = self.delivery {
            headers.push((name.to_owned(), message.event_id.to_owned()));
        }
        with_headers(message, headers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA1: Hub = Hub {
        header: "X-Hub-Signature",
        prefix: "sha1=",
        no_prefix: "no sha1= prefix",
        hash: Hash::Sha1,
        delivery: None,
    };

    fn reason(value: &str) -> &'static str {
        match SHA1.claims(&[("X-Hub-Signature", value)]) {
            Err(VerifyError::InvalidSignatureFormat { reason }) => reason,
            Err(other) => panic!("{value:?}: unexpected {other:?}"),
            Ok(_) => panic!("{value:?}: unexpectedly parsed"),
        }
    }

    #[test]
    fn reads_a_tag_of_the_hash_length() {
        let claims = SHA1
            .claims(&[("x-hub-signature", format!("sha1={}", "ab".repeat(20)))])
            .unwrap();
        assert_eq!(claims.proofs, vec![Proof::Hmac(Hash::Sha1, vec![0xAB; 20])]);
        assert_eq!(claims.header_event_id, None);
    }

    #[test]
    fn refuses_other_prefixes_and_lengths() {
        assert_eq!(reason(&"ab".repeat(20)), "no sha1= prefix");
        assert_eq!(
            reason(&format!("sha256={}", "ab".repeat(32))),
            "no sha1= prefix"
        );
        assert_eq!(
            reason(&format!("sha1={}", "ab".repeat(32))),
            "signature has the wrong length"
        );
        assert_eq!(reason("sha1="), "signature is empty");
        assert_eq!(reason("sha1=zz"), "signature is not hex");
    }
}
