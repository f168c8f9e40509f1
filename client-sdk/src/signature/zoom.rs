//! Zoom: `x-zm-signature: v0=<hex>`, Slack's format under Zoom's names, keyed
//! with the app's webhook secret token as written.

use super::v0::V0;
use super::{Claims, Delivery, HeaderSource, Message, SchemeImpl, Secret, Signing};
use crate::error::VerifyError;

const V0: V0 = V0 {
    signature: "x-zm-signature",
    timestamp: "x-zm-request-timestamp",
};

/// The Zoom scheme.
///
/// Zoom: `x-zm-signature: v0=<hex>` over `v0:<x-zm-request-timestamp>:body` (Slack's
/// format under Zoom's names), keyed with the app's webhook secret token as written.
/// Zoom sends no event id, so the server keys the event by the signed content's
/// digest.
pub(crate) struct Zoom;

impl SchemeImpl for Zoom {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        V0.claims(delivery.headers)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        V0.sign(secret, message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::signature::{sign, verify, Scheme};

    #[test]
    fn slack_names_do_not_stand_in_for_zoom_names() {
        let key = Secret::from_provider(Scheme::Zoom, "k1", "zoom-secret-token").unwrap();
        let slack = sign(Scheme::Slack, &key, "e", 1_000, b"{}");
        let err = verify(
            Scheme::Zoom,
            &slack,
            b"{}",
            std::slice::from_ref(&key),
            1_000,
            300,
        )
        .unwrap_err();
        assert_eq!(err.code(), "MISSING_SIGNATURE");
        let zoom = sign(Scheme::Zoom, &key, "e", 1_000, b"{}");
        let verified = verify(Scheme::Zoom, &zoom, b"{}", &[key], 1_000, 300).unwrap();
        assert_eq!(
            (verified.timestamp, verified.header_event_id),
            (Some(1_000), None)
        );
    }
}
