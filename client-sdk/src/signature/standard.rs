//! Standard Webhooks (Svix): `webhook-id`, `webhook-timestamp` and `v1`
//! HMAC-SHA256 or `v1a` Ed25519 signatures over `id.timestamp.body`.

use base64::engine::general_purpose::STANDARD;
use base64::Engine;

use super::codec::{self, MAX_SIGNATURES};
use super::{
    pair, tag_sha256, with_headers, Claims, Delivery, HeaderSource, KeyKind, Message, Proof,
    SchemeImpl, Secret, Signed, Signing,
};
use crate::error::VerifyError;

/// The three header names of a Standard Webhooks delivery.
pub(crate) struct Names {
    pub(crate) id: &'static str,
    pub(crate) timestamp: &'static str,
    pub(crate) signature: &'static str,
    /// The format error for an empty id, naming the header.
    pub(crate) empty_id: &'static str,
}

const NAMES: Names = Names {
    id: "webhook-id",
    timestamp: "webhook-timestamp",
    signature: "webhook-signature",
    empty_id: "webhook-id is empty",
};

/// The Standard Webhooks scheme.
///
/// Standard Webhooks (Svix): `webhook-id`, `webhook-timestamp` and a space-separated
/// list of `v1,<base64>` HMAC-SHA256 signatures and `v1a,<base64>` Ed25519
/// signatures over `id.timestamp.body`. A `whsec_` secret checks `v1`, a `whpk_`
/// public key checks `v1a`. Svix sends the same format under `svix-` header names,
/// so both read it through [`Names`].
pub(crate) struct Standard;

impl SchemeImpl for Standard {
    fn parse<H: HeaderSource + ?Sized>(delivery: &Delivery<'_, H>) -> Result<Claims, VerifyError> {
        parse_named(delivery, &NAMES)
    }

    fn sign(secret: &Secret, message: &Message<'_>) -> Signing {
        sign_named(secret, message, &NAMES)
    }
}

/// Claims of a Standard Webhooks delivery whose headers are called `names`.
pub(crate) fn parse_named<H: HeaderSource + ?Sized>(
    delivery: &Delivery<'_, H>,
    names: &Names,
) -> Result<Claims, VerifyError> {
    let headers = delivery.headers;
    let signature = codec::required(headers, names.signature)?;
    let id = codec::required(headers, names.id)?;
    let raw_timestamp = codec::required(headers, names.timestamp)?;
    if id.is_empty() {
        return Err(codec::malformed(names.empty_id));
    }
    let proofs = parse_signatures(signature)?;
    let timestamp = codec::parse_timestamp(raw_timestamp)?;
    Ok(Claims {
        proofs,
        signed: Signed::around_body(signed_prefix(id, raw_timestamp)),
        timestamp: Some(timestamp),
        header_event_id: Some(id.to_owned()),
        ..Claims::default()
    })
}

/// Signs `message` as a Standard Webhooks sender whose headers are called `names`.
pub(crate) fn sign_named(secret: &Secret, message: &Message<'_>, names: &Names) -> Signing {
    let timestamp = message.timestamp.to_string();
    let prefix = signed_prefix(message.event_id, &timestamp);
    let signature = match secret.kind() {
        KeyKind::Ed25519Seed => {
            let signed = Signed::around_body(prefix).joined(message.body);
            format!(
                "v1a,{}",
                STANDARD.encode(pair::sign_ed25519(secret.key(), &signed))
            )
        }
        _ => format!(
            "v1,{}",
            STANDARD.encode(tag_sha256(secret, prefix, message.body))
        ),
    };
    with_headers(
        message,
        vec![
            (names.id.to_owned(), message.event_id.to_owned()),
            (names.timestamp.to_owned(), timestamp),
            (names.signature.to_owned(), signature),
        ],
    )
}

/// The bytes before the body: `id.timestamp.`.
fn signed_prefix(event_id: &str, timestamp: &str) -> Vec<u8> {
    format!("{event_id}.{timestamp}.").into_bytes()
}

/// Keeps the `v1` (HMAC) and `v1a` (Ed25519) entries; other versions are skipped
/// but counted.
fn parse_signatures(value: &str) -> Result<Vec<Proof>, VerifyError> {
    let entries: Vec<&str> = value.split(' ').filter(|entry| !entry.is_empty()).collect();
    if entries.len() > MAX_SIGNATURES {
        return Err(codec::malformed("too many signatures"));
    }
    let mut proofs = Vec::new();
    for entry in entries {
        let (version, signature) = entry
            .split_once(',')
            .ok_or(codec::malformed("entry is not version,signature"))?;
        match version {
            "v1" => proofs.push(Proof::sha256(codec::decode_base64(signature)?)),
            "v1a" => proofs.push(Proof::Ed25519(codec::decode_base64_len(
                signature,
                pair::ED25519_SIGNATURE_LEN,
            )?)),
            _ => {}
        }
    }
    if proofs.is_empty() {
        return Err(codec::malformed("no v1 or v1a signature"));
    }
    Ok(proofs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_v1_and_v1a_skips_others_and_extra_spaces() {
        let tag = STANDARD.encode([9; 32]);
        let ed = STANDARD.encode([8; 64]);
        let parsed = parse_signatures(&format!("v2,{tag}  v1,{tag} v1a,{ed} ")).unwrap();
        assert_eq!(
            parsed,
            vec![Proof::sha256([9; 32]), Proof::Ed25519(vec![8; 64])]
        );
    }

    #[test]
    fn rejects_headers_without_a_usable_v1() {
        let tag = STANDARD.encode([9; 32]);
        for bad in [
            format!("v1a,{tag}"),
            format!("v2,{tag}"),
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
