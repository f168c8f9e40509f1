//! The tenants page shows each tenant's public URL (the one schemes that
//! sign the URL verify against), over plain HTTP.

use reqwest::StatusCode;

use super::http::Http;
use crate::harness::{TestServer, ADMIN_TOKEN};

#[tokio::test]
async fn the_tenants_page_shows_each_public_url() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    for (id, public_url) in [
        ("edge", "https://hooks.example.com/hooks/edge"),
        ("bare", ""),
    ] {
        let request = hookd_sdk::client::proto::CreateTenantRequest {
            tenant_id: id.into(),
            public_url: public_url.into(),
            ..Default::default()
        };
        admin.create_tenant(request).await.unwrap();
    }
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let page = http.get(&session, "/tenants").await;
    assert_eq!(page.status(), StatusCode::OK);
    let html = page.text().await.unwrap();
    assert!(html.contains("Public URL"), "{html}");
    assert!(
        html.contains(r#"<td class="public-url">https://hooks.example.com/hooks/edge</td>"#),
        "{html}"
    );
    assert!(html.contains(r#"<td class="public-url">-</td>"#), "{html}");
}

#[tokio::test]
async fn the_tenants_page_shows_each_scheme_and_its_handshakes() {
    use hookd_sdk::signature::{sign_message, Message, Scheme, Secret};

    let s = TestServer::start(
        "[[tenants]]\nid = \"chat\"\nscheme = \"slack\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"slack-secret\"\n\
         [[tenants]]\nid = \"pay\"\nscheme = \"stripe\"\n[[tenants.secrets]]\nkid = \"k1\"\nsecret = \"whsec_x\"\n",
    );
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let html = http.get(&session, "/tenants").await.text().await.unwrap();
    assert!(html.contains(r#"<td class="scheme">slack</td>"#), "{html}");
    assert!(
        html.contains("slack.url_verification: never seen since hookd started"),
        "{html}"
    );
    assert!(
        html.contains(r#"<td class="handshake">-</td>"#),
        "stripe has none: {html}"
    );

    let body = br#"{"type":"url_verification","challenge":"abc"}"#;
    let key = Secret::from_bytes("k1", b"slack-secret".to_vec());
    let message = Message {
        event_id: "",
        timestamp: crate::harness::NOW,
        body,
        method: "POST",
        url: None,
    };
    let signed = sign_message(Scheme::Slack, &key, &message);
    assert_eq!(
        s.post("chat", &signed.headers, body).await.status,
        StatusCode::OK
    );
    let forged = sign_message(
        Scheme::Slack,
        &Secret::from_bytes("k1", b"guess".to_vec()),
        &message,
    );
    assert_eq!(
        s.post("chat", &forged.headers, body).await.status,
        StatusCode::UNAUTHORIZED
    );

    let html = http.get(&session, "/tenants").await.text().await.unwrap();
    assert!(
        html.contains("slack.url_verification: 1 answered"),
        "{html}"
    );
    assert!(html.contains("1 refused"), "{html}");
    assert!(html.contains("BAD_SIGNATURE)"), "{html}");
}
