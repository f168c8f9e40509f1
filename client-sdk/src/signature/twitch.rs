//! Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=<hex>` over
//! message id, timestamp and body.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

use super::codec;
use super::{
    tag_sha256, with_headers, Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret,
    Signed, Signing,
};
use crate::error::VerifyError;

const ID: &str = "Twitch-Eventsub-Message-Id";
const TIMESTAMP: &str = "Twitch-Eventsub-Message-Timestamp";
const SIGNATURE: &str = "Twitch-Eventsub-Message-Signature";

/// The Twitch EventSub scheme.
///
/// Twitch EventSub: `Twitch-Eventsub-Message-Signature: sha256=<hex>`, HMAC-SHA256 of
/// message id + timestamp + body (no separators) keyed with the subscription's
/// secret as written. The timestamp is RFC 3339 with a fraction; the message id,
/// unchanged across retries, is the event id.
pub(crate) struct Twitch;

impl SchemeImpl for Twitch {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        let id = codec::required(headers, ID)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        if id.is_empty() {
            return Err(codec::malformed("Twitch-Eventsub-Message-Id is empty"));
        }
        let hex = value
            .strip_prefix("sha256=")
            .ok_or(codec::malformed("no sha256= prefix"))?;
        let proofs = vec![Proof::sha256(codec::decode_hex(hex)?)];
        Ok(Claims {
            proofs,
            signed: Signed::around_body(format!("{id}{raw_timestamp}").into_bytes()),
            timestamp: Some(parse_rfc3339(raw_timestamp)?),
            header_event_id: Some(id.to_owned()),
            ..Claims::default()
        })
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let timestamp = rfc3339(message.timestamp);
        let prefix = format!("{}{timestamp}", message.event_id).into_bytes();
        let tag = tag_sha256(secret, prefix, message.body);
        with_headers(
            message,
            vec![
                (ID.to_owned(), message.event_id.to_owned()),
                (TIMESTAMP.to_owned(), timestamp),
                (SIGNATURE.to_owned(), format!("sha256={}", hex::encode(tag))),
            ],
        )
    }
}

/// Unix seconds (the fraction dropped) of an RFC 3339 date-time.
fn parse_rfc3339(text: &str) -> Result<i64, VerifyError> {
    OffsetDateTime::parse(text, &Rfc3339)
        .map(OffsetDateTime::unix_timestamp)
        .map_err(|_| VerifyError::InvalidTimestamp)
}

/// `timestamp` as Twitch writes it, UTC with nanoseconds; a time outside the years
/// 0000-9999 is written as the epoch.
fn rfc3339(timestamp: i64) -> String {
    let at = OffsetDateTime::from_unix_timestamp(timestamp).unwrap_or(OffsetDateTime::UNIX_EPOCH);
    format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}.{:09}Z",
        at.year(),
        u8::from(at.month()),
        at.day(),
        at.hour(),
        at.minute(),
        at.second(),
        at.nanosecond()
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_rfc3339_with_any_fraction_and_offset() {
        assert_eq!(
            parse_rfc3339("2025-11-30T05:20:00.634234626Z"),
            Ok(1_764_480_000)
        );
        assert_eq!(parse_rfc3339("2025-11-30T05:20:00Z"), Ok(1_764_480_000));
        assert_eq!(
            parse_rfc3339("2025-11-30T06:20:00.5+01:00"),
            Ok(1_764_480_000)
        );
        for bad in ["1764480000", "2025-11-30T05:20Z", "2025-11-30T05:20:00", ""] {
            assert_eq!(
                parse_rfc3339(bad),
                Err(VerifyError::InvalidTimestamp),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn writes_what_it_reads() {
        assert_eq!(rfc3339(1_764_480_000), "2025-11-30T05:20:00.000000000Z");
        assert_eq!(parse_rfc3339(&rfc3339(4_102_444_800)), Ok(4_102_444_800));
    }

    #[test]
    fn signs_id_then_timestamp_then_body() {
        let headers = [
            (SIGNATURE, "sha256=".to_owned() + &"ab".repeat(32)),
            (ID, "m1".to_owned()),
            (TIMESTAMP, "2025-11-30T05:20:00.1Z".to_owned()),
        ];
        let claims = Twitch::parse(&Delivery::post(&headers, b"{}")).unwrap();
        assert_eq!(claims.signed.before, b"m12025-11-30T05:20:00.1Z");
        assert_eq!(claims.header_event_id.as_deref(), Some("m1"));
        let mut no_id = headers.clone();
        no_id[1].1.clear();
        let err = Twitch::parse(&Delivery::post(&no_id, b"{}")).err();
        assert_eq!(
            err,
            Some(codec::malformed("Twitch-Eventsub-Message-Id is empty"))
        );
    }
}
