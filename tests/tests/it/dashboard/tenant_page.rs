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
