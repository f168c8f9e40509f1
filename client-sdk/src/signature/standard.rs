//! Standard Webhooks (Svix): `webhook-id`, `webhook-timestamp` and a space-separated
//! list of `v1,<base64>` signatures over `id.timestamp.body`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec::{self, Tag, MAX_SIGNATURES};
use super::{Claims, HeaderSource, SchemeImpl, Secret};
use crate::error::VerifyError;

const ID: &str = "webhook-id";
const TIMESTAMP: &str = "webhook-timestamp";
const SIGNATURE: &str = "webhook-signature";

/// The Standard Webhooks scheme.
pub(crate) struct Standard;

impl SchemeImpl for Standard {
    fn parse<H: HeaderSource + ?Sized>(headers: &H) -> Result<Claims, VerifyError> {
        let signature = codec::required(headers, SIGNATURE)?;
        let id = codec::required(headers, ID)?;
        let raw_timestamp = codec::required(headers, TIMESTAMP)?;
        if id.is_empty() {
            return Err(codec::malformed("webhook-id is empty"));
        }
        let signatures = parse_signatures(signature)?;
        let timestamp = codec::parse_timestamp(raw_timestamp)?;
        Ok(Claims {
            signatures,
            prefix: Self::prefix(id, raw_timestamp),
            timestamp: Some(timestamp),
            header_event_id: Some(id.to_owned()),
            kid: None,
        })
    }

    fn prefix(event_id: &str, timestamp: &str) -> Vec<u8> {
        format!("{event_id}.{timestamp}.").into_bytes()
    }

    fn emit(tag: &Tag, _: &Secret, event_id: &str, timestamp: &str) -> Vec<(String, String)> {
        vec![
            (ID.to_owned(), event_id.to_owned()),
            (TIMESTAMP.to_owned(), timestamp.to_owned()),
            (SIGNATURE.to_owned(), format!("v1,{}", STANDARD.encode(tag))),
        ]
    }
}

/// Keeps the `v1` entries; other versions (`v1a`, ...) are skipped but counted.
fn parse_signatures(value: &str) -> Result<Vec<Tag>, VerifyError> {
    let entries: Vec<&str> = value.split(' ').filter(|entry| !entry.is_empty()).collect();
    if entries.len() > MAX_SIGNATURES {
        return Err(codec::malformed("too many signatures"));
    }
    let mut signatures = Vec::new();
    for entry in entries {
        let (version, signature) = entry
            .split_once(',')
            .ok_or(codec::malformed("entry is not version,signature"))?;
        if version == "v1" {
            signatures.push(codec::decode_base64(signature)?);
        }
    }
    if signatures.is_empty() {
        return Err(codec::malformed("no v1 signature"));
    }
    Ok(signatures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn skips_other_versions_and_extra_spaces() {
        let tag = STANDARD.encode([9; 32]);
        let parsed = parse_signatures(&format!("v1a,{tag}  v1,{tag} ")).unwrap();
        assert_eq!(parsed, vec![[9; 32]]);
    }

    #[test]
    fn rejects_headers_without_a_usable_v1() {
        let tag = STANDARD.encode([9; 32]);
        for bad in [
            format!("v1a,{tag}"),
            "v1,".to_owned(),
            tag.clone(),
            " ".to_owned(),
        ] {
            let err = parse_signatures(&bad).unwrap_err();
            assert_eq!(err.code(), "INVALID_SIGNATURE_FORMAT", "{bad:?}");
        }
        let many = vec![format!("v1,{tag}"); MAX_SIGNATURES + 1].join(" ");
        assert_eq!(
            parse_signatures(&many).unwrap_err().code(),
            "INVALID_SIGNATURE_FORMAT"
        );
    }
}
