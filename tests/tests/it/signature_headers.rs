//! One rule for every scheme: a signature, timestamp or id header sent on
//! more than one line, or with bytes that are not ASCII text, is
//! 401 INVALID_SIGNATURE_FORMAT; Standard Webhooks' several signatures in
//! one header stay valid.

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::{sign_message, Message, Scheme, Secret, Signing};
use reqwest::StatusCode;

use crate::harness::{TestServer, NOW};

const WHSEC: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

/// One tenant per scheme, named after it.
fn tenants() -> String {
    Scheme::ALL
        .iter()
        .map(|scheme| {
            format!(
                "[[tenants]]\nid = \"{0}\"\nscheme = \"{0}\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"{1}\"\n",
                scheme.as_str(),
                secret_text(*scheme)
            )
        })
        .collect()
}

fn secret_text(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Standard | Scheme::Svix => WHSEC,
        _ => "plain-shared-secret",
    }
}

/// The headers and the body to send (Linear's sender stamps the body).
fn signed(scheme: Scheme, event_id: &str, body: &[u8]) -> Signing {
    let key = Secret::from_provider(scheme, "k1", secret_text(scheme)).unwrap();
    let message = Message {
        event_id,
        timestamp: NOW,
        body,
        method: "POST",
        url: None,
    };
    sign_message(scheme, &key, &message)
}

fn body(event_id: &str) -> Vec<u8> {
    format!(r#"{{"id":"{event_id}","event_id":"{event_id}","type":"t"}}"#).into_bytes()
}

#[tokio::test]
async fn repeated_or_non_ascii_signature_headers_are_refused_for_every_scheme() {
    let s = TestServer::start(&tenants());
    // The schemes that sign the URL need the tenant's public URL, which these
    // tenants do not have.
    for scheme in Scheme::ALL.into_iter().filter(|s| !s.signs_url()) {
        let tenant = scheme.as_str();
        let Signing { headers, body } = signed(scheme, "evt_1", &body("evt_1"));
        for (i, (name, value)) in headers.iter().enumerate() {
            let mut repeated = headers.clone();
            repeated.push((name.clone(), value.clone()));
            let mut non_ascii = headers.clone();
            non_ascii[i].1 = format!("{value}\u{e9}");
            for (what, sent) in [("repeated", repeated), ("non-ASCII", non_ascii)] {
                let a = s.post(tenant, &sent, &body).await;
                assert_eq!(
                    (a.status, a.code()),
                    (StatusCode::UNAUTHORIZED, "INVALID_SIGNATURE_FORMAT"),
                    "{tenant}: {what} {name}: {:?}",
                    a.body
                );
            }
        }
        // Schemes with no event id of their own (Meta, Zoom) are answered
        // MISSING_REQUIRED_FIELD until ingest keys them by their content digest.
        let has_event_id =
            scheme.body_event_id_field().is_some() || scheme.event_id_header().is_some();
        if has_event_id {
            let a = s.post(tenant, &headers, &body).await;
            assert_eq!(a.status, StatusCode::ACCEPTED, "{tenant}: {:?}", a.body);
        }
    }
}

#[tokio::test]
async fn several_standard_signatures_in_one_header_stay_valid() {
    let s = TestServer::start(&tenants());
    let Signing { mut headers, body } = signed(Scheme::Standard, "evt_2", &body("evt_2"));
    let signature = headers
        .iter_mut()
        .find(|(name, _)| name == "webhook-signature")
        .unwrap();
    signature.1 = format!("v1,{} {}", STANDARD.encode([7u8; 32]), signature.1);
    let a = s.post("standard", &headers, &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
