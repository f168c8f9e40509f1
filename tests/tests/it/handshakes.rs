//! Provider handshakes through real HTTP: each answered as its provider
//! expects for a tenant of its scheme (once signed, where the provider signs
//! it), refused for a tenant of another scheme, counted, never stored.

use hmac::{Hmac, KeyInit, Mac};
use hookd_sdk::signature::{sign_message, KeyKind, Message, Scheme, Secret};
use reqwest::StatusCode;
use serde_json::{json, Value};
use sha2::Sha256;

use crate::{
    harness::{TestServer, NOW},
    keys::DISCORD_PRIVATE,
};

const SHARED: &str = "handshake-shared-secret";
const VERIFY_TOKEN: &str = "meatyhamhock";

const DISCORD_SEED: [u8; 32] = [
    1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26,
    27, 28, 29, 30, 31, 32,
];

fn discord_key() -> Secret {
    Secret::of_kind("k1", KeyKind::Ed25519Seed, DISCORD_SEED.to_vec()).unwrap()
}

fn tenants() -> String {
    let tenant = |scheme: &str, secret: &str, extra: &str| {
        format!(
            "[[tenants]]\nid = \"{scheme}\"\nscheme = \"{scheme}\"\n{extra}\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"{secret}\"\n"
        )
    };
    [
        tenant("slack", SHARED, ""),
        tenant("zoom", SHARED, ""),
        tenant(
            "meta",
            SHARED,
            &format!("verify_token = \"{VERIFY_TOKEN}\""),
        ),
        tenant("twitch", SHARED, ""),
        tenant("discord", &DISCORD_PRIVATE[64..], ""),
        tenant("okta", SHARED, ""),
        tenant("stripe", SHARED, ""),
    ]
    .concat()
}

fn shared() -> Secret {
    Secret::from_bytes("k1", SHARED.as_bytes().to_vec())
}

/// `body` signed as `scheme`'s sender signs it, plus `extra` headers.
fn signed(
    scheme: Scheme,
    key: &Secret,
    body: &Value,
    extra: &[(&str, &str)],
) -> (Vec<(String, String)>, Vec<u8>) {
    let body = body.to_string();
    let message = Message {
        event_id: "evt_1",
        timestamp: NOW,
        body: body.as_bytes(),
        method: "POST",
        url: None,
    };
    let mut signing = sign_message(scheme, key, &message);
    signing
        .headers
        .push(("content-type".into(), "application/json".into()));
    for (name, value) in extra {
        signing
            .headers
            .push(((*name).to_owned(), (*value).to_owned()));
    }
    (signing.headers, signing.body)
}

/// The raw answer: status, content type and body text.
async fn raw(
    s: &TestServer,
    method: reqwest::Method,
    path: &str,
    headers: &[(String, String)],
    body: Vec<u8>,
) -> (StatusCode, String, String) {
    let mut req = reqwest::Client::new().request(method, format!("{}{path}", s.base));
    for (name, value) in headers {
        req = req.header(name.as_str(), value.as_str());
    }
    let res = req.body(body).send().await.unwrap();
    let status = res.status();
    let content_type = res
        .headers()
        .get("content-type")
        .map(|v| v.to_str().unwrap().to_owned())
        .unwrap_or_default();
    (status, content_type, res.text().await.unwrap())
}

async fn post(
    s: &TestServer,
    tenant: &str,
    (headers, body): (Vec<(String, String)>, Vec<u8>),
) -> (StatusCode, String, String) {
    raw(
        s,
        reqwest::Method::POST,
        &format!("/hooks/{tenant}"),
        &headers,
        body,
    )
    .await
}

/// `hookd_handshakes_total` and `hookd_deliveries_accepted_total` of `tenant`.
async fn counted(s: &TestServer, tenant: &str, handshake: &str) -> (String, String) {
    let text = s.get("/metrics").await.text().await.unwrap();
    let find = |prefix: &str| {
        text.lines()
            .filter(|line| line.starts_with(prefix))
            .map(|line| line.rsplit(' ').next().unwrap().to_owned())
            .collect::<Vec<_>>()
            .join(",")
    };
    (
        find(&format!(
            "hookd_handshakes_total{{tenant=\"{tenant}\",handshake=\"{handshake}\",outcome=\"answered\"}}"
        )),
        find(&format!("hookd_deliveries_accepted_total{{tenant=\"{tenant}\"}}")),
    )
}

#[tokio::test]
async fn slack_url_verification_is_answered_once_signed_and_never_stored() {
    let s = TestServer::start(&tenants());
    let body = json!({"token": "Jhj5dZrVaK7ZwHHjRyZWjbDl", "challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P", "type": "url_verification"});
    let (status, content_type, text) =
        post(&s, "slack", signed(Scheme::Slack, &shared(), &body, &[])).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert!(
        content_type.starts_with("application/json"),
        "{content_type}"
    );
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer,
        json!({"challenge": "3eZbrw1aBm2rZgRNFdxV2595E9CY3gmdALWMmHkvFXO7tYXAYM8P"})
    );
    assert_eq!(
        counted(&s, "slack", "slack.url_verification").await,
        ("1".into(), "0".into())
    );

    let stranger = Secret::from_bytes("k1", b"not-the-tenant-secret".to_vec());
    let (status, _, text) = post(&s, "slack", signed(Scheme::Slack, &stranger, &body, &[])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert!(text.contains("BAD_SIGNATURE"), "{text}");
    assert!(
        !text.contains("3eZbrw1aBm"),
        "a refused handshake echoes nothing: {text}"
    );
}

#[tokio::test]
async fn a_handshake_sent_to_a_tenant_of_another_scheme_is_not_answered() {
    let s = TestServer::start(&tenants());
    let body = json!({"challenge": "c-123", "type": "url_verification"});
    // Signed as Stripe signs: verified, then taken as a Stripe event (with no id).
    let (status, _, text) = post(&s, "stripe", signed(Scheme::Stripe, &shared(), &body, &[])).await;
    assert_eq!(status, StatusCode::BAD_REQUEST, "{text}");
    assert!(
        text.contains("MISSING_REQUIRED_FIELD") && !text.contains("\"challenge\""),
        "{text}"
    );
    // Signed as Slack signs: the Stripe tenant finds no Stripe signature.
    let (status, _, text) = post(&s, "stripe", signed(Scheme::Slack, &shared(), &body, &[])).await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    // Meta's and Okta's GETs mean nothing to a tenant of another scheme.
    let query =
        format!("/hooks/slack?hub.mode=subscribe&hub.challenge=42&hub.verify_token={VERIFY_TOKEN}");
    let (status, _, text) = raw(&s, reqwest::Method::GET, &query, &[], Vec::new()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED, "{text}");
    let okta = [
        ("X-Okta-Verification-Challenge".to_owned(), "v-1".to_owned()),
        ("Authorization".to_owned(), SHARED.to_owned()),
    ];
    let (status, _, _) = raw(&s, reqwest::Method::GET, "/hooks/zoom", &okta, Vec::new()).await;
    assert_eq!(status, StatusCode::METHOD_NOT_ALLOWED);
}

#[tokio::test]
async fn zoom_url_validation_answers_the_token_and_its_hmac() {
    let s = TestServer::start(&tenants());
    let body = json!({"payload": {"plainToken": "qgg8vlvZRS6UYooatFL8Aw"}, "event_ts": 1654503849680_u64, "event": "endpoint.url_validation"});
    let (status, _, text) = post(&s, "zoom", signed(Scheme::Zoom, &shared(), &body, &[])).await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let mut mac = <Hmac<Sha256> as KeyInit>::new_from_slice(SHARED.as_bytes()).unwrap();
    mac.update(b"qgg8vlvZRS6UYooatFL8Aw");
    let expected = hex::encode(mac.finalize().into_bytes());
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer,
        json!({"plainToken": "qgg8vlvZRS6UYooatFL8Aw", "encryptedToken": expected})
    );
    assert_eq!(
        counted(&s, "zoom", "zoom.endpoint.url_validation").await,
        ("1".into(), "0".into())
    );
}

#[tokio::test]
async fn meta_subscription_is_answered_with_the_challenge_for_the_right_token() {
    let s = TestServer::start(&tenants());
    let path = |token: &str| {
        format!("/hooks/meta?hub.mode=subscribe&hub.challenge=1158201444&hub.verify_token={token}")
    };
    let (status, content_type, text) = raw(
        &s,
        reqwest::Method::GET,
        &path(VERIFY_TOKEN),
        &[],
        Vec::new(),
    )
    .await;
    assert_eq!((status, text.as_str()), (StatusCode::OK, "1158201444"));
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    let (status, _, text) = raw(&s, reqwest::Method::GET, &path("guess"), &[], Vec::new()).await;
    assert_eq!(status, StatusCode::FORBIDDEN, "{text}");
    assert!(
        text.contains("BAD_VERIFY_TOKEN") && !text.contains("1158201444"),
        "{text}"
    );
    let (status, _, _) = raw(&s, reqwest::Method::GET, "/hooks/meta", &[], Vec::new()).await;
    assert_eq!(
        status,
        StatusCode::METHOD_NOT_ALLOWED,
        "a GET that is no handshake"
    );
    assert_eq!(
        counted(&s, "meta", "meta.hub.challenge").await,
        ("1".into(), "0".into())
    );
}

#[tokio::test]
async fn twitch_callback_verification_answers_the_challenge_as_text() {
    let s = TestServer::start(&tenants());
    let body = json!({"challenge": "pogchamp-kappa-360noscope-vohiyo", "subscription": {"id": "f1c2a387", "type": "channel.follow"}});
    let verification = [(
        "Twitch-Eventsub-Message-Type",
        "webhook_callback_verification",
    )];
    let (status, content_type, text) = post(
        &s,
        "twitch",
        signed(Scheme::Twitch, &shared(), &body, &verification),
    )
    .await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::OK, "pogchamp-kappa-360noscope-vohiyo")
    );
    assert!(content_type.starts_with("text/plain"), "{content_type}");
    assert_eq!(
        counted(&s, "twitch", "twitch.webhook_callback_verification").await,
        ("1".into(), "0".into())
    );
}

#[tokio::test]
async fn discord_ping_is_answered_with_a_pong_once_signed() {
    let s = TestServer::start(&tenants());
    let ping = json!({"type": 1, "id": "1128", "application_id": "7"});
    let (status, _, text) = post(
        &s,
        "discord",
        signed(Scheme::Discord, &discord_key(), &ping, &[]),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    assert_eq!(
        serde_json::from_str::<Value>(&text).unwrap(),
        json!({"type": 1})
    );
    let forged = Secret::generate("k1", KeyKind::Ed25519Seed);
    let (status, _, text) = post(&s, "discord", signed(Scheme::Discord, &forged, &ping, &[])).await;
    assert_eq!(
        status,
        StatusCode::UNAUTHORIZED,
        "Discord sends forged PINGs to check this: {text}"
    );
    assert_eq!(
        counted(&s, "discord", "discord.ping").await,
        ("1".into(), "0".into())
    );
}

#[tokio::test]
async fn okta_one_time_verification_needs_the_hook_secret() {
    let s = TestServer::start(&tenants());
    let headers = |auth: &str| {
        vec![
            (
                "X-Okta-Verification-Challenge".to_owned(),
                "dPm8ccLaSk8h-ZXdAK4ss5eUrf5Z0Yq-f_SdD7zD".to_owned(),
            ),
            ("Authorization".to_owned(), auth.to_owned()),
        ]
    };
    let (status, _, text) = raw(
        &s,
        reqwest::Method::GET,
        "/hooks/okta",
        &headers(SHARED),
        Vec::new(),
    )
    .await;
    assert_eq!(status, StatusCode::OK, "{text}");
    let answer: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        answer,
        json!({"verification": "dPm8ccLaSk8h-ZXdAK4ss5eUrf5Z0Yq-f_SdD7zD"})
    );
    let (status, _, text) = raw(
        &s,
        reqwest::Method::GET,
        "/hooks/okta",
        &headers("Basic guess"),
        Vec::new(),
    )
    .await;
    assert_eq!(status, StatusCode::UNAUTHORIZED, "{text}");
    assert_eq!(
        counted(&s, "okta", "okta.verification").await,
        ("1".into(), "0".into())
    );
}

#[tokio::test]
async fn a_meta_tenant_made_over_the_api_keeps_its_sealed_verify_token() {
    use hookd_sdk::client::proto::{CreateTenantRequest, UpdateTenantRequest};

    let mut s = TestServer::start("");
    let admin = s.admin().await;
    let create = |id: &str, scheme: &str| CreateTenantRequest {
        tenant_id: id.into(),
        scheme: scheme.into(),
        verify_token: VERIFY_TOKEN.into(),
        ..Default::default()
    };
    let refused = admin
        .create_tenant(create("pay", "stripe"))
        .await
        .unwrap_err();
    assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    let text = format!("{refused:?}");
    assert!(text.contains("verify_token"), "{text}");
    assert!(!text.contains(VERIFY_TOKEN), "never shown: {text}");
    let created = admin.create_tenant(create("fb", "meta")).await.unwrap();
    assert!(created.tenant.unwrap().has_verify_token);

    let path =
        format!("/hooks/fb?hub.mode=subscribe&hub.challenge=77&hub.verify_token={VERIFY_TOKEN}");
    assert_eq!(meta_get(&s, &path).await.0, StatusCode::OK);
    s.restart("");
    let (status, _, text) = meta_get(&s, &path).await;
    assert_eq!(
        (status, text.as_str()),
        (StatusCode::OK, "77"),
        "the sealed token opens after a restart"
    );

    let admin = s.admin().await;
    let update = UpdateTenantRequest {
        tenant_id: "fb".into(),
        verify_token: Some(String::new()),
        ..Default::default()
    };
    let updated = admin.update_tenant(update).await.unwrap();
    assert!(!updated.has_verify_token, "\"\" removes it");
    assert_eq!(meta_get(&s, &path).await.0, StatusCode::FORBIDDEN);
    assert!(!admin.get_tenant("fb").await.unwrap().has_verify_token);
}

async fn meta_get(s: &TestServer, path: &str) -> (StatusCode, String, String) {
    raw(s, reqwest::Method::GET, path, &[], Vec::new()).await
}

/// Every answer of the ingress says `X-Content-Type-Options: nosniff`: a
/// browser sent to hookd never takes an echoed challenge (or an error's
/// message) for HTML or script.
#[tokio::test]
async fn every_ingress_answer_says_nosniff() {
    let s = TestServer::start(&tenants());
    let client = reqwest::Client::new();
    let send =
        |method: reqwest::Method, path: &str, (headers, body): (Vec<(String, String)>, Vec<u8>)| {
            let mut req = client.request(method, format!("{}{path}", s.base));
            for (name, value) in headers {
                req = req.header(name, value);
            }
            req.body(body).send()
        };
    let meta = |token: &str| {
        format!("/hooks/meta?hub.mode=subscribe&hub.challenge=%3Cscript%3E1%3C/script%3E&hub.verify_token={token}")
    };
    let event = json!({"id": "evt_nosniff", "type": "charge.succeeded", "data": {}});
    let get = reqwest::Method::GET;
    let post = reqwest::Method::POST;
    let cases = [
        (
            "the Meta challenge",
            get.clone(),
            meta(VERIFY_TOKEN),
            (Vec::new(), Vec::new()),
            StatusCode::OK,
        ),
        (
            "a refused Meta token",
            get.clone(),
            meta("guess"),
            (Vec::new(), Vec::new()),
            StatusCode::FORBIDDEN,
        ),
        (
            "a GET that is no handshake",
            get.clone(),
            "/hooks/stripe".to_owned(),
            (Vec::new(), Vec::new()),
            StatusCode::METHOD_NOT_ALLOWED,
        ),
        (
            "an accepted event",
            post.clone(),
            "/hooks/stripe".to_owned(),
            signed(Scheme::Stripe, &shared(), &event, &[]),
            StatusCode::ACCEPTED,
        ),
        (
            "a duplicate",
            post.clone(),
            "/hooks/stripe".to_owned(),
            signed(Scheme::Stripe, &shared(), &event, &[]),
            StatusCode::OK,
        ),
        (
            "an unsigned event",
            post.clone(),
            "/hooks/stripe".to_owned(),
            (Vec::new(), b"{}".to_vec()),
            StatusCode::UNAUTHORIZED,
        ),
        (
            "an unknown tenant",
            post.clone(),
            "/hooks/nobody".to_owned(),
            (Vec::new(), b"{}".to_vec()),
            StatusCode::NOT_FOUND,
        ),
        (
            "a head too large",
            post.clone(),
            "/hooks/stripe".to_owned(),
            (
                vec![("x-pad".to_owned(), "p".repeat(20_000))],
                b"{}".to_vec(),
            ),
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
        ),
        (
            "no route",
            get.clone(),
            "/elsewhere".to_owned(),
            (Vec::new(), Vec::new()),
            StatusCode::NOT_FOUND,
        ),
        (
            "/healthz",
            get.clone(),
            "/healthz".to_owned(),
            (Vec::new(), Vec::new()),
            StatusCode::OK,
        ),
        (
            "/readyz",
            get.clone(),
            "/readyz".to_owned(),
            (Vec::new(), Vec::new()),
            StatusCode::OK,
        ),
    ];
    for (what, method, path, request, status) in cases {
        let res = send(method, &path, request).await.unwrap();
        assert_eq!(res.status(), status, "{what}");
        assert_eq!(
            res.headers()
                .get_all("x-content-type-options")
                .iter()
                .collect::<Vec<_>>(),
            ["nosniff"],
            "{what}"
        );
        if status == StatusCode::OK && what == "the Meta challenge" {
            let content_type = res.headers()["content-type"].to_str().unwrap().to_owned();
            assert!(content_type.starts_with("text/plain"), "{content_type}");
            assert_eq!(res.text().await.unwrap(), "<script>1</script>");
        }
    }
}
