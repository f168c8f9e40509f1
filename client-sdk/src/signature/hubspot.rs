//! HubSpot (signature v3): `X-HubSpot-Signature-v3`, an HMAC-SHA256 of method,
//! URI, body and timestamp under the app's client secret.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec;
use super::{Claims, Delivery, HeaderSource, Message, Proof, SchemeImpl, Secret, Signed, Signing};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-HubSpot-Signature-v3";
const TIMESTAMP: &str = "X-HubSpot-Request-Timestamp";

/// The escapes HubSpot decodes before signing; every other one stays as sent.
const DECODED: [(&str, char); 12] = [
    ("3A", ':'),
    ("2F", '/'),
    ("3F", '?'),
    ("40", '@'),
    ("21", '!'),
    ("24", '$'),
    ("27", '\''),
    ("28", '('),
    ("29", ')'),
    ("2A", '*'),
    ("2C", ','),
    ("3B", ';'),
];

/// The HubSpot scheme.
///
/// HubSpot (signature v3): `X-HubSpot-Signature-v3: <base64>`, HMAC-SHA256 of method +
/// URI + body + `X-HubSpot-Request-Timestamp` (unix ms, as sent), keyed with the
/// app's client secret as written. The URI is the public URL as called with the
/// escapes HubSpot's docs list decoded. The body is a JSON array of events; the
/// first one's `eventId` is the event id. The older v1/v2 headers are not accepted.
pub(crate) struct Hubspot;

impl SchemeImpl for Hubspot {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let value = codec::required(headers, SIGNATURE)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        let proofs = vec![Proof::sha256(codec::decode_base64(value)?)];
        let url = codec::public_url(delivery.url)?;
        let millis = codec::parse_timestamp(raw_timestamp)?;
        Ok(Claims {
            proofs,
            signed: signed(delivery.method, url, raw_timestamp),
            timestamp: Some(millis / 1000),
            ..Claims::default()
        })
    }

    /// Signs over `message.url` (the body alone when there is none, which no
    /// receiver will accept), dated `message.timestamp` seconds in milliseconds.
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let millis = message.timestamp.saturating_mul(1000).to_string();
        let signed = signed(message.method, message.url.unwrap_or_default(), &millis);
        let tag = codec::hmac(codec::Hash::Sha256, secret.key(), &signed, message.body);
        Signing {
            headers: vec![
                (SIGNATURE.to_owned(), STANDARD.encode(tag)),
                (TIMESTAMP.to_owned(), millis),
            ],
            body: message.body.to_vec(),
        }
    }
}

/// `method uri` before the body, the timestamp after it.
fn signed(method: &str, url: &str, raw_timestamp: &str) -> Signed {
    Signed {
        before: format!("{method}{}", signed_uri(url)).into_bytes(),
        body: true,
        after: raw_timestamp.as_bytes().to_vec(),
    }
}

/// `url` with HubSpot's listed escapes decoded, in either letter case, in one pass
/// (a decoded `%` never starts a new escape).
fn signed_uri(url: &str) -> String {
    let mut out = String::with_capacity(url.len());
    let mut rest = url;
    while let Some(at) = rest.find('%') {
        out.push_str(&rest[..at]);
        let escape = &rest[at..];
        let decoded = escape.get(1..3).and_then(|hex| {
            DECODED
                .iter()
                .find(|(code, _)| code.eq_ignore_ascii_case(hex))
                .map(|(_, c)| *c)
        });
        match decoded {
            Some(c) => {
                out.push(c);
                rest = &escape[3..];
            }
            None => {
                out.push('%');
                rest = &escape[1..];
            }
        }
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn decodes_only_the_listed_escapes() {
        assert_eq!(
            signed_uri("https://h/x?a=%3A%3a%2F%40%20%25%2540%e2%82%ac%"),
            "https://h/x?a=::/@%20%25%2540%e2%82%ac%"
        );
        assert_eq!(
            signed_uri("https://h/%28%29%2A%2C%3B%21%24%27%3F"),
            "https://h/()*,;!$'?"
        );
        assert_eq!(signed_uri("%4"), "%4");
    }

    #[test]
    fn signs_method_uri_body_then_millis() {
        let signed = signed("POST", "https://h/x?t=%40", "1764480000412");
        assert_eq!(signed.joined(b"[]"), b"POSThttps://h/x?t=@[]1764480000412");
    }

    #[test]
    fn the_timestamp_is_milliseconds() {
        let headers = [
            (SIGNATURE, STANDARD.encode([1; 32])),
            (TIMESTAMP, "1764480000999".to_owned()),
        ];
        let delivery = Delivery {
            method: "POST",
            url: Some("https://h/x"),
            headers: &headers,
            body: b"[]",
        };
        assert_eq!(
            Hubspot::parse(&delivery).unwrap().timestamp,
            Some(1_764_480_000)
        );
    }
}
