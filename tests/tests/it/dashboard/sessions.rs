//! Dashboard sessions over plain HTTP: a session lives only while its token
//! does and only for the tenant incarnation it signed in to, ends after an
//! absolute lifetime however busy it is, and sign-in takes only a CSRF
//! token this server issued.

use hookd_sdk::client::{proto::CreateTenantRequest, HookdClient};
use reqwest::StatusCode;

use super::http::{csrf_of, set_cookie, to_sign_in, Http};
use crate::harness::{TestServer, ADMIN_TOKEN, NOW};

async fn create(admin: &HookdClient, id: &str) {
    admin
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap();
}

#[tokio::test]
async fn a_session_ends_when_its_token_is_revoked() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "api").await;
    let token = admin.create_token("api", "dash").await.unwrap();
    let http = Http::new(&s);
    let session = http.sign_in(&token.token).await;
    let page = http.get(&session, "/t/api/deliveries").await;
    assert_eq!(page.status(), StatusCode::OK);

    admin.revoke_token(&token.token_id).await.unwrap();
    let page = http.get(&session, "/t/api/deliveries").await;
    assert!(
        to_sign_in(&page),
        "a revoked token's session still answered {}",
        page.status()
    );
}

#[tokio::test]
async fn a_session_never_reaches_a_tenant_made_anew_under_its_id() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "api").await;
    let token = admin.create_token("api", "dash").await.unwrap().token;
    let http = Http::new(&s);
    let session = http.sign_in(&token).await;
    let secrets = http.get(&session, "/t/api/secrets").await;
    assert_eq!(secrets.status(), StatusCode::OK);
    let csrf = csrf_of(&secrets.text().await.unwrap());

    admin.delete_tenant("api").await.unwrap();
    create(&admin, "api").await;
    let page = http.get(&session, "/t/api/secrets").await;
    assert!(
        to_sign_in(&page),
        "the old session opened the new tenant's secrets: {}",
        page.status()
    );
    let rotate = http
        .post_raw(
            &session.0,
            "/t/api/secrets/rotate",
            &[("csrf", &csrf), ("overlap_hours", "1")],
        )
        .await;
    assert!(to_sign_in(&rotate), "rotate answered {}", rotate.status());
    assert_eq!(
        admin.list_secrets("api").await.unwrap().len(),
        1,
        "the new tenant's secret was not rotated"
    );
}

#[tokio::test]
async fn a_session_ends_after_its_absolute_lifetime_even_while_in_use() {
    let s = TestServer::start("");
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    // Used all along (the idle timer never runs out), for just under 12 h.
    for hours in [1, 6, 11] {
        s.clock.set_secs(NOW + hours * 3600);
        let page = http.get(&session, "/tenants").await;
        assert_eq!(page.status(), StatusCode::OK, "after {hours} h");
    }
    s.clock.set_secs(NOW + 12 * 3600 + 1);
    let page = http.get(&session, "/tenants").await;
    assert!(
        to_sign_in(&page),
        "a session 12 h old still answered {}",
        page.status()
    );
}

#[tokio::test]
async fn sign_in_refuses_a_csrf_pair_the_server_did_not_issue() {
    let s = TestServer::start("");
    let http = Http::new(&s);
    // A planted cookie and a form carrying the same value.
    let planted = "a".repeat(64);
    let answer = http
        .post_raw(
            &format!("hookd_sign_in={planted}"),
            "/sign-in",
            &[("csrf", &planted), ("token", ADMIN_TOKEN)],
        )
        .await;
    assert_eq!(answer.status(), StatusCode::FORBIDDEN);
    assert!(set_cookie(&answer, "hookd_session").is_none(), "no session");
    // The form the server issued still signs in.
    http.sign_in(ADMIN_TOKEN).await;
}

#[tokio::test]
async fn sign_in_refuses_a_form_posted_from_another_site() {
    let s = TestServer::start("");
    let http = Http::new(&s);
    let client = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .unwrap();
    let page = client.get(http.url("/sign-in")).send().await.unwrap();
    let cookie = set_cookie(&page, "hookd_sign_in").unwrap();
    let csrf = csrf_of(&page.text().await.unwrap());
    for site in ["same-site", "cross-site"] {
        let answer = client
            .post(http.url("/sign-in"))
            .header("cookie", format!("hookd_sign_in={cookie}"))
            .header("sec-fetch-site", site)
            .form(&[("csrf", csrf.as_str()), ("token", ADMIN_TOKEN)])
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), StatusCode::FORBIDDEN, "{site}");
    }
}

#[tokio::test]
async fn a_live_tail_ends_when_its_token_is_revoked() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    create(&admin, "api").await;
    let token = admin.create_token("api", "tail").await.unwrap();
    let http = Http::new(&s);
    let session = http.sign_in(&token.token).await;
    let mut tail = http.get(&session, "/t/api/events").await;
    assert_eq!(tail.status(), StatusCode::OK);
    let opened = tail.chunk().await.unwrap().unwrap();
    assert!(opened.starts_with(b": watching"));

    admin.revoke_token(&token.token_id).await.unwrap();
    let ended = tokio::time::timeout(std::time::Duration::from_secs(5), async {
        while tail.chunk().await.unwrap().is_some() {}
    })
    .await;
    assert!(
        ended.is_ok(),
        "the live tail kept streaming after the revoke"
    );
}
