//! One rule for every scheme: a signature, timestamp or id header sent on
//! more than one line, or with bytes that are not ASCII text, is
//! 401 INVALID_SIGNATURE_FORMAT; Standard Webhooks' several signatures in
//! one header stay valid.

use base64::{engine::general_purpose::STANDARD, Engine};
use hookd_sdk::signature::{
    sign_hmac, sign_message, HmacFields, HmacSpec, Message, Scheme, Secret, Signing,
};
use reqwest::StatusCode;

use crate::{
    harness::{TestServer, NOW},
    keys::{DISCORD_PRIVATE, SENDGRID_PRIVATE, SENDGRID_PUBLIC, WHSEC},
};

/// The schemes whose signature travels in headers over a `POST` body. Mailgun
/// signs inside the body, and Twilio signs the public URL, which the tenants
/// here do not have.
fn schemes() -> impl Iterator<Item = Scheme> {
    Scheme::ALL
        .into_iter()
        .filter(|scheme| !scheme.signs_url() && *scheme != Scheme::Mailgun)
}

/// One tenant per scheme, named after it; `hmac`'s signs a header
/// timestamp and the body.
fn tenants() -> String {
    schemes()
        .map(|scheme| {
            let hmac = match scheme {
                Scheme::Hmac => "event_id_field = \"event_id\"\n[tenants.hmac]\nsignature = \"header:X-Sig\"\nsigned = \"{header:X-Ts}.{body}\"\ntimestamp = \"header:X-Ts\"\n",
                _ => "",
            };
            format!(
                "[[tenants]]\nid = \"{0}\"\nscheme = \"{0}\"\n{hmac}[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"{1}\"\n",
                scheme.as_str(),
                tenant_secret(scheme)
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

/// The secret the sender signs with.
fn sender_secret(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Standard | Scheme::Svix => WHSEC,
        Scheme::Discord => DISCORD_PRIVATE,
        Scheme::Sendgrid => SENDGRID_PRIVATE,
        _ => "plain-shared-secret",
    }
}

/// What the tenant verifies with: the public half for key-pair schemes.
fn tenant_secret(scheme: Scheme) -> &'static str {
    match scheme {
        Scheme::Discord => &DISCORD_PRIVATE[64..],
        Scheme::Sendgrid => SENDGRID_PUBLIC,
        _ => sender_secret(scheme),
    }
}

/// The headers and the body to send (Linear's sender stamps the body).
fn signed(scheme: Scheme, event_id: &str, body: &[u8]) -> Signing {
    let key = Secret::from_provider(scheme, "k1", sender_secret(scheme)).unwrap();
    let message = Message {
        event_id,
        timestamp: NOW,
        body,
        method: "POST",
        url: None,
    };
    if scheme == Scheme::Hmac {
        return sign_hmac(&hmac_spec(), &key, &message, &[]).unwrap();
    }
    sign_message(scheme, &key, &message)
}

/// An event carrying `event_id` wherever `scheme` looks for it.
fn body(scheme: Scheme, event_id: &str) -> Vec<u8> {
    let event = format!(
        r#"{{"id":"{event_id}","event_id":"{event_id}","eventId":"{event_id}","sg_event_id":"{event_id}","type":"t"}}"#
    );
    match scheme {
        Scheme::Sendgrid => format!("[{event}]"),
        _ => event,
    }
    .into_bytes()
}

#[tokio::test]
async fn repeated_or_non_ascii_signature_headers_are_refused_for_every_scheme() {
    let s = TestServer::start(&tenants());
    for scheme in schemes() {
        let tenant = scheme.as_str();
        let Signing { headers, body } = signed(scheme, "evt_1", &body(scheme, "evt_1"));
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
    let Signing { mut headers, body } =
        signed(Scheme::Standard, "evt_2", &body(Scheme::Standard, "evt_2"));
    let signature = headers
        .iter_mut()
        .find(|(name, _)| name == "webhook-signature")
        .unwrap();
    signature.1 = format!("v1,{} {}", STANDARD.encode([7u8; 32]), signature.1);
    let a = s.post("standard", &headers, &body).await;
    assert_eq!(a.status, StatusCode::ACCEPTED, "{:?}", a.body);
}
