//! Okta event hooks: the secret configured on the hook, sent as is in
//! `Authorization` and compared in constant time.

use super::codec;
use super::{
    with_headers, Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signed, Signing,
};
use crate::error::VerifyError;

const AUTHORIZATION: &str = "Authorization";

/// The Okta event hook scheme.
///
/// Okta event hooks: the secret configured on the hook sent as is in
/// `Authorization` (Okta's default header; Basic credentials included with their
/// `Basic ` prefix), compared in constant time. Nothing is signed, so there is no
/// timestamp and the body is not covered; the event id is the body's `eventId`.
/// The one-time `GET` verification request is answered by the handshake, not here.
pub(crate) struct Okta;

impl SchemeImpl for Okta {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        Ok(Claims {
            proofs: vec![codec::token(delivery.headers, AUTHORIZATION)?],
            signed: Signed::around_body(Vec::new()),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        with_headers(message, vec![(AUTHORIZATION.to_owned(), secret.text())])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_value_is_the_whole_token() {
        let headers = [(AUTHORIZATION, "Basic YWRtaW46c3VwZXJzZWNyZXQ=")];
        let claims = Okta::parse(&Delivery::post(&headers, b"{}")).unwrap();
        assert_eq!(
            claims.proofs,
            vec![super::super::Proof::Token(
                b"Basic YWRtaW46c3VwZXJzZWNyZXQ=".to_vec()
            )]
        );
        assert_eq!(claims.header_event_id, None);
        let missing = Okta::parse(&Delivery::post(&[("X-Other", "1")], b"{}"));
        assert_eq!(
            missing.err(),
            Some(VerifyError::MissingSignature {
                header: AUTHORIZATION
            })
        );
    }
}
