//! Svix: the Standard Webhooks format under the names `svix-id`,
//! `svix-timestamp` and `svix-signature`.

use super::standard::{self, Names};
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const NAMES: Names = Names {
    id: "svix-id",
    timestamp: "svix-timestamp",
    signature: "svix-signature",
    empty_id: "svix-id is empty",
};

/// The Svix scheme.
///
/// Svix: the Standard Webhooks format under the names `svix-id`, `svix-timestamp`
/// and `svix-signature` (`v1,<base64>` entries over `id.timestamp.body`), keyed
/// with the base64 after `whsec_`.
pub(crate) struct Svix;

impl SchemeImpl for Svix {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        standard::parse_named(delivery, &NAMES)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        standard::sign_named(secret, message, &NAMES)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{verify, Scheme};

    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

    #[test]
    fn reads_svix_names_not_webhook_names() {
        let key = Secret::from_provider(Scheme::Svix, "k1", SECRET).unwrap();
        let headers = crate::signature::sign(Scheme::Svix, &key, "msg_1", 1_000, b"{}");
        let names: Vec<&str> = headers.iter().map(|(name, _)| name.as_str()).collect();
        assert_eq!(names, ["svix-id", "svix-timestamp", "svix-signature"]);
        assert!(verify(
            Scheme::Svix,
            &headers,
            b"{}",
            std::slice::from_ref(&key),
            1_000,
            300
        )
        .is_ok());
        let renamed: Vec<(String, String)> = headers
            .iter()
            .map(|(name, value)| (name.replace("svix-", "webhook-"), value.clone()))
            .collect();
        let err = verify(Scheme::Svix, &renamed, b"{}", &[key], 1_000, 300).unwrap_err();
        assert_eq!(err.code(), "MISSING_SIGNATURE");
    }

    #[test]
    fn an_empty_svix_id_is_malformed() {
        let key = Secret::from_provider(Scheme::Svix, "k1", SECRET).unwrap();
        let headers = crate::signature::sign(Scheme::Svix, &key, "", 1_000, b"{}");
        let err = verify(Scheme::Svix, &headers, b"{}", &[key], 1_000, 300).unwrap_err();
        assert_eq!(err, crate::signature::codec::malformed("svix-id is empty"));
    }
}
