//! GitLab: the webhook's secret token sent as is in `X-Gitlab-Token`, compared
//! in constant time.

use super::codec;
use super::{
    with_headers, Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signed, Signing,
};
use crate::error::VerifyError;

const TOKEN: &str = "X-Gitlab-Token";
const IDEMPOTENCY_KEY: &str = "Idempotency-Key";
const EVENT_UUID: &str = "X-Gitlab-Event-UUID";

/// The GitLab scheme.
///
/// GitLab: the webhook's secret token sent as is in `X-Gitlab-Token`, compared in
/// constant time. Nothing is signed, so there is no timestamp and the body is not
/// covered. The event id is `Idempotency-Key` (GitLab 17.4 and later, the same on
/// every retry), else `X-Gitlab-Event-UUID` from older GitLab.
pub(crate) struct Gitlab;

impl SchemeImpl for Gitlab {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let proof = codec::token(headers, TOKEN)?;
        let idempotency_key = codec::optional_id(headers, IDEMPOTENCY_KEY)?;
        let event_uuid = codec::optional_id(headers, EVENT_UUID)?;
        Ok(Claims {
            proofs: vec![proof],
            signed: Signed::around_body(Vec::new()),
            header_event_id: idempotency_key.or(event_uuid),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        with_headers(
            message,
            vec![
                (TOKEN.to_owned(), secret.text()),
                (IDEMPOTENCY_KEY.to_owned(), message.event_id.to_owned()),
                (EVENT_UUID.to_owned(), message.event_id.to_owned()),
            ],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(headers: &[(&str, &str)]) -> Result<Claims, VerifyError> {
        Gitlab::parse(&Delivery::post(headers, b"{}"))
    }

    #[test]
    fn the_idempotency_key_wins_over_the_event_uuid() {
        let both = [
            (TOKEN, "t"),
            (EVENT_UUID, "uuid-1"),
            (IDEMPOTENCY_KEY, "key-1"),
        ];
        assert_eq!(
            parse(&both).unwrap().header_event_id.as_deref(),
            Some("key-1")
        );
        let old = [(TOKEN, "t"), (EVENT_UUID, "uuid-1")];
        assert_eq!(
            parse(&old).unwrap().header_event_id.as_deref(),
            Some("uuid-1")
        );
        assert_eq!(parse(&[(TOKEN, "t")]).unwrap().header_event_id, None);
    }

    #[test]
    fn a_missing_or_empty_token_is_refused_before_any_compare() {
        assert_eq!(
            parse(&[(EVENT_UUID, "u")]).err(),
            Some(VerifyError::MissingSignature { header: TOKEN })
        );
        assert_eq!(
            parse(&[(TOKEN, "")]).err(),
            Some(codec::malformed("the token is empty"))
        );
    }
}
