//! One rule for every scheme: a signature, timestamp or id header sent on
//! more than one line, or with bytes that are not ASCII text, is
//! 401 INVALID_SIGNATURE_FORMAT; Standard Webhooks' several signatures in
//! one header stay valid.

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::{sign, sign_hmac, HmacFields, HmacSpec, Message, Scheme, Secret};
use reqwest::StatusCode;

use crate::harness::{TestServer, NOW};

const WHSEC: &str = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA=";

/// One tenant per scheme, named after it; `hmac`'s signs a header
/// timestamp and the body.
fn tenants() -> String {
    Scheme::ALL
        .iter()
        .map(|scheme| {
            let hmac = match scheme {
                Scheme::Hmac => "event_id_field = \"event_id\"\n[tenants.hmac]\nsignature = \"header:X-Sig\"\nsigned = \"{header:X-Ts}.{body}\"\ntimestamp = \"header:X-Ts\"\n",
                _ => "",
            };
            format!(
                "[[tenants]]\nid = \"{0}\"\nscheme = \"{0}\"\n{hmac}[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"{1}\"\n",
                scheme.as_str(),
                secret_text(*scheme)
            )
        })
        .collect()
}

/// The `hmac` tenant's spec, as its table above says.
fn hmac_spec() -> HmacSpec {
    HmacSpec::new(HmacFields {
        signature: "header:X-Sig".into(),
        signed: Some("{header:X-Ts}.{body}".into()),
        timestamp: Some("header:X-Ts".into()),
        ..HmacFields::default()
    })
    .unwrap()
}

fn secret_text(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Standard => WHSEC,
        _ => "plain-shared-secret",
    }
}

fn signed(scheme: Scheme, event_id: &str, body: &[u8]) -> Vec<(String, String)> {
    let key = Secret::from_provider(scheme, "k1", secret_text(scheme)).unwrap();
    if scheme == Scheme::Hmac {
        let message = Message {
            event_id,
            timestamp: NOW,
            body,
            method: "POST",
            url: None,
        };
        return sign_hmac(&hmac_spec(), &key, &message, &[])
            .unwrap()
            .headers;
    }
    sign(scheme, &key, event_id, NOW, body)
}

fn body(event_id: &str) -> Vec<u8> {
    format!(r#"{{"id":"{event_id}","event_id":"{event_id}","type":"t"}}"#).into_bytes()
}

#[tokio::test]
async fn repeated_or_non_ascii_signature_headers_are_refused_for_every_scheme() {
    let s = TestServer::start(&tenants());
    for scheme in Scheme::ALL {
        let tenant = scheme.as_str();
        let body = body("evt_1");
        let headers = signed(scheme, "evt_1", &body);
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
        let a = s.post(tenant, &headers, &body).await;
        assert_eq!(a.status, StatusCode::ACCEPTED, "{tenant}: {:?}", a.body);
    }
}

#[tokio::test]
async fn several_standard_signatures_in_one_header_stay_valid() {
    let s = TestServer::start(&tenants());
    let body = body("evt_2");
    let mut headers = signed(Scheme::Standard, "evt_2", &body);
    let signature = headers
        .iter_mut()
        .find(|(name, _)| name == "webhook-signature")
        .unwrap();
    signature.1 = format!("v1,{} {}", STANDARD.encode([7u8; 32]), signature.1);
    let a = s.post("standard", &headers, &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
