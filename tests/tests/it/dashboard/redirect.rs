//! What a Redirect refused by the destination address policy tells the
//! person who typed it: that it is not allowed, never what a name resolves
//! to inside hookd's network.

use reqwest::StatusCode;

use super::http::Http;
use crate::{
    harness::{order, signed, tenant, TestServer, ADMIN_TOKEN, NOW},
    receiver::{Receiver, Reply},
};

#[tokio::test]
async fn a_redirect_to_an_internal_name_says_not_allowed_without_the_address() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", ""));
    let body = order("evt_inside");
    let answer = s
        .post("shop", &signed("evt_inside", NOW, &body), &body)
        .await;
    let id = answer.body["delivery_id"].as_str().unwrap().to_owned();
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let page = format!("/t/shop/deliveries/{id}");
    let shown = http
        .submit(
            &session,
            &page,
            &format!("{page}/redirect"),
            &[("url", "http://localhost:9/hook")],
        )
        .await;
    assert_eq!(shown.status(), StatusCode::OK);
    let text = shown.text().await.unwrap();
    let outcome = &text[text.find("redirect-result").expect("an outcome")..];
    let outcome = &outcome[..outcome.find("</section>").unwrap()];
    assert!(outcome.contains("not allowed"), "{outcome}");
    for inside in ["127.0.0.1", "::1", "loopback"] {
        assert!(!outcome.contains(inside), "{inside} shown: {outcome}");
    }
}
