//! Twilio: `X-Twilio-Signature`, an HMAC under the auth token of the URL
//! Twilio called (and, for a form body, its parameters).

use std::collections::{BTreeMap, BTreeSet};

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec;
use super::{
    with_headers, Claims, Delivery, Hash, HeaderSource, Message, Proof, SchemeImpl, Secret, Signed,
    Signing,
};
use crate::error::VerifyError;

const SIGNATURE: &str = "X-Twilio-Signature";
const SETTINGS: &str = "X-Twilio-Webhooks-Signature-Settings";
const IDEMPOTENCY_TOKEN: &str = "I-Twilio-Idempotency-Token";
/// The query parameter that carries a JSON body's digest.
const BODY_DIGEST: &str = "bodySHA256";

/// The Twilio scheme.
///
/// Twilio: `X-Twilio-Signature: <base64>`, the HMAC-SHA1 under the auth token of
/// the full public URL Twilio called followed, for a form body, by each
/// parameter's name and value sorted by name (values of a repeated name sorted
/// too, as Twilio's library does); with `X-Twilio-Webhooks-Signature-Settings`
/// naming `algorithm=HMAC_SHA256` the HMAC is SHA-256. A JSON body is covered
/// through the URL: Twilio adds `bodySHA256=<hex SHA-256 of the body>` to the query
/// and signs the URL alone, and the body must match that digest. Like Twilio's
/// library, the URL is tried both with and without its port. No timestamp; the
/// event id is `I-Twilio-Idempotency-Token`.
pub(crate) struct Twilio;

impl SchemeImpl for Twilio {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        let headers = delivery.headers;
        let signature = codec::required(headers, SIGNATURE)?;
        let hash = algorithm(codec::optional_id(headers, SETTINGS)?.as_deref())?;
        let tag = codec::decode_base64_len(signature, hash.tag_len())?;
        let header_event_id = codec::optional_id(headers, IDEMPOTENCY_TOKEN)?;
        let url = delivery.url.ok_or(codec::malformed(
            "the public URL the signature covers is not known",
        ))?;
        let params = match body_digest(url) {
            Some(digest) if digest != codec::sha256_hex(delivery.body) => {
                return Err(VerifyError::BadSignature)
            }
            Some(_) => String::new(),
            None => sorted_params(delivery.body)?,
        };
        let (without_port, with_port) = port_variants(url);
        let alternate = if with_port == url {
            without_port
        } else {
            with_port
        };
        Ok(Claims {
            proofs: vec![Proof::Hmac(hash, tag)],
            signed: Signed::bytes(format!("{url}{params}").into_bytes()),
            header_event_id,
            alternate: Some(Signed::bytes(format!("{alternate}{params}").into_bytes())),
            ..Claims::default()
        })
    }

    /// Signs `message.url` as given (empty when unknown) with HMAC-SHA1; a JSON body
    /// is signed as Twilio does only when that URL already carries `bodySHA256`,
    /// otherwise the body is read as a form.
    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        let url = message.url.unwrap_or_default();
        let params = match body_digest(url) {
            Some(_) => String::new(),
            None => sorted_params(message.body).unwrap_or_default(),
        };
        let signed = Signed::bytes(format!("{url}{params}").into_bytes());
        let tag = codec::hmac(Hash::Sha1, secret.key(), &signed, b"");
        with_headers(
            message,
            vec![
                (SIGNATURE.to_owned(), STANDARD.encode(tag)),
                (IDEMPOTENCY_TOKEN.to_owned(), message.event_id.to_owned()),
            ],
        )
    }
}

/// The HMAC's hash: SHA-1 unless the settings header names another algorithm
/// (`key=<id>,algorithm=HMAC_SHA256`).
fn algorithm(settings: Option<&str>) -> Result<Hash, VerifyError> {
    let named = settings
        .unwrap_or_default()
        .split(',')
        .filter_map(|part| part.split_once('='))
        .find(|(name, value)| name.trim() == "algorithm" && !value.trim().is_empty())
        .map(|(_, value)| value.trim());
    match named {
        None => Ok(Hash::Sha1),
        Some(name) if name.eq_ignore_ascii_case("HMAC_SHA1") => Ok(Hash::Sha1),
        Some(name) if name.eq_ignore_ascii_case("HMAC_SHA256") => Ok(Hash::Sha256),
        Some(_) => Err(codec::malformed("the signature algorithm is not supported")),
    }
}

/// The first non-empty `bodySHA256` in the URL's query.
fn body_digest(url: &str) -> Option<String> {
    let query = url.split_once('?')?.1;
    let query = query.split_once('#').map_or(query, |(query, _)| query);
    form_urlencoded::parse(query.as_bytes())
        .find(|(name, value)| name == BODY_DIGEST && !value.is_empty())
        .map(|(_, value)| value.into_owned())
}

/// Each form parameter's name then its values, names sorted and each name's
/// distinct values sorted, all joined without separators.
fn sorted_params(body: &[u8]) -> Result<String, VerifyError> {
    let mut params: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (name, value) in form_urlencoded::parse(body) {
        if name.contains('\u{fffd}') || value.contains('\u{fffd}') {
            return Err(codec::malformed("a form parameter is not UTF-8"));
        }
        params
            .entry(name.into_owned())
            .or_default()
            .insert(value.into_owned());
    }
    let mut joined = String::new();
    for (name, values) in &params {
        for value in values {
            joined.push_str(name);
            joined.push_str(value);
        }
    }
    Ok(joined)
}

/// The URL without and with its port: an explicit port is dropped, a missing one
/// is added as the scheme's default (443 for `https`, else 80).
fn port_variants(url: &str) -> (String, String) {
    let Some(scheme_end) = url.find("://") else {
        return (url.to_owned(), url.to_owned());
    };
    let start = scheme_end + 3;
    let end = url[start..]
        .find(['/', '?', '#'])
        .map_or(url.len(), |at| start + at);
    let host_start = url[start..end]
        .rfind('@')
        .map_or(start, |at| start + at + 1);
    let host = &url[host_start..end];
    let port = host.rfind(':').filter(|&colon| {
        let digits = &host[colon + 1..];
        !digits.is_empty() && digits.bytes().all(|b| b.is_ascii_digit())
    });
    match port {
        Some(colon) => {
            let colon = host_start + colon;
            (format!("{}{}", &url[..colon], &url[end..]), url.to_owned())
        }
        None => {
            let default = if url[..scheme_end].eq_ignore_ascii_case("https") {
                443
            } else {
                80
            };
            let with = format!("{}:{default}{}", &url[..end], &url[end..]);
            (url.to_owned(), with)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_tried_with_and_without_their_port() {
        let pair = |without: &str, with: &str| (without.to_owned(), with.to_owned());
        assert_eq!(
            port_variants("https://a.example/x?y=1"),
            pair("https://a.example/x?y=1", "https://a.example:443/x?y=1")
        );
        assert_eq!(
            port_variants("http://a.example:8080/x"),
            pair("http://a.example/x", "http://a.example:8080/x")
        );
        assert_eq!(
            port_variants("https://u:p@[::1]:8443?q"),
            pair("https://u:p@[::1]?q", "https://u:p@[::1]:8443?q")
        );
        assert_eq!(
            port_variants("https://[::1]/"),
            pair("https://[::1]/", "https://[::1]:443/")
        );
    }

    #[test]
    fn form_parameters_are_sorted_by_name_then_value() {
        let joined = sorted_params(b"b=2&a=1&c=%26+x&b=1&b=2").unwrap();
        assert_eq!(joined, "a1b1b2c& x");
        assert_eq!(
            sorted_params(b"a=%ff").err(),
            Some(codec::malformed("a form parameter is not UTF-8"))
        );
    }

    #[test]
    fn the_algorithm_comes_from_the_settings_header() {
        assert_eq!(algorithm(None), Ok(Hash::Sha1));
        assert_eq!(algorithm(Some("key=k1")), Ok(Hash::Sha1));
        assert_eq!(
            algorithm(Some("key=k1, algorithm = hmac_sha256")),
            Ok(Hash::Sha256)
        );
        assert_eq!(
            algorithm(Some("algorithm=HMAC_SHA512")),
            Err(codec::malformed("the signature algorithm is not supported"))
        );
    }

    #[test]
    fn a_json_body_must_match_the_digest_in_the_url() {
        let digest = codec::sha256_hex(b"{}");
        let url = format!("https://a.example/h?x=1&{BODY_DIGEST}={digest}");
        let secret = Secret::from_bytes("k", b"token".to_vec());
        let message = Message {
            event_id: "e",
            timestamp: 0,
            body: b"{}",
            method: "POST",
            url: Some(&url),
        };
        let signing = Twilio::sign(&secret, &message);
        let delivery = |body: &'static [u8]| Delivery {
            method: "POST",
            url: Some(&url),
            headers: &signing.headers,
            body,
        };
        let claims = Twilio::parse(&delivery(b"{}")).unwrap();
        assert_eq!(claims.signed, Signed::bytes(url.clone().into_bytes()));
        assert_eq!(
            Twilio::parse(&delivery(b"{ }")).err(),
            Some(VerifyError::BadSignature)
        );
        let unknown = Delivery {
            url: None,
            ..delivery(b"{}")
        };
        assert_eq!(
            Twilio::parse(&unknown).err(),
            Some(codec::malformed(
                "the public URL the signature covers is not known"
            ))
        );
    }
}
