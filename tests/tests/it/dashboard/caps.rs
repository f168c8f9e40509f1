//! What one dashboard session may hold: a few live tails of its own, all
//! sessions together fewer than the listener's connections, so another
//! session (the admin's among them) still gets its pages.

use std::time::Duration;

use reqwest::{Response, StatusCode};

use super::http::{Http, Session};
use crate::{
    harness::{tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

/// Opens the live tail of `shop` in `session`, keeping it open.
async fn tail(http: &Http, session: &Session) -> Response {
    http.get(session, "/t/shop/events").await
}

/// The admin's tenants page answers, and quickly.
async fn admin_is_answered(http: &Http) {
    let admin = http.sign_in(ADMIN_TOKEN).await;
    let page = tokio::time::timeout(Duration::from_secs(5), http.get(&admin, "/tenants"))
        .await
        .expect("the admin got no answer");
    assert_eq!(page.status(), StatusCode::OK);
}

#[tokio::test]
async fn one_session_holds_at_most_four_live_tails() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", ""));
    let token = s.admin().await.create_token("shop", "tail").await.unwrap();
    let http = Http::new(&s);
    let session = http.sign_in(&token.token).await;
    let mut open = Vec::new();
    for _ in 0..4 {
        let stream = tail(&http, &session).await;
        assert_eq!(stream.status(), StatusCode::OK);
        open.push(stream);
    }
    let fifth = tail(&http, &session).await;
    assert_eq!(fifth.status(), StatusCode::TOO_MANY_REQUESTS);
    assert!(fifth.text().await.unwrap().contains("live tails"));
    admin_is_answered(&http).await;
}

#[tokio::test]
async fn live_tails_of_all_sessions_leave_room_for_other_requests() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", ""));
    let http = Http::new(&s);
    let mut open = Vec::new();
    for _ in 0..16 {
        let session = http.sign_in(ADMIN_TOKEN).await;
        for _ in 0..4 {
            let stream = tail(&http, &session).await;
            assert_eq!(stream.status(), StatusCode::OK);
            open.push(stream);
        }
    }
    let another = http.sign_in(ADMIN_TOKEN).await;
    let refused = tail(&http, &another).await;
    assert_eq!(refused.status(), StatusCode::TOO_MANY_REQUESTS);
    admin_is_answered(&http).await;
}
