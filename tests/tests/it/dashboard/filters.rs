//! The deliveries page filtered by event type.

use crate::{
    harness::{order, signed, tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

use super::{browser::Browser, http::Http};

/// Accepts `body` as event `event_id` of `shop`; returns its delivery id.
async fn accept(s: &TestServer, event_id: &str, body: &[u8]) -> String {
    let answer = s
        .post("shop", &signed(event_id, s.clock_secs(), body), body)
        .await;
    assert_eq!(answer.status, 202, "{:?}", answer.body);
    answer.body["delivery_id"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn deliveries_are_filtered_by_event_type() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", ""));
    let paid = accept(&s, "evt_paid", &order("evt_paid")).await;
    let refund = br#"{"type": "order.refunded", "event_id": "evt_refund", "amount": 5}"#;
    let refunded = accept(&s, "evt_refund", refund).await;
    let base = format!("http://{}", s.server().dashboard_addr().unwrap());
    let Some(b) = Browser::start("dashboard event type filter").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    b.open(&format!("{base}/t/shop/deliveries")).await;
    b.fill("#event_type", "order.refunded").await;
    b.press("Filter").await;
    let table = b.text("table").await;
    assert!(table.contains(&refunded), "{table}");
    assert!(!table.contains(&paid), "{table}");
    b.open(&format!("{base}/t/shop/deliveries?event_type=order.paid"))
        .await;
    let table = b.text("table").await;
    assert!(
        table.contains(&paid) && !table.contains(&refunded),
        "{table}"
    );
    b.open(&format!("{base}/t/shop/deliveries?event_type=order.lost"))
        .await;
    assert_eq!(b.text("p.empty").await, "No deliveries match.");
    b.open(&format!("{base}/t/shop/deliveries/{refunded}"))
        .await;
    assert_eq!(b.text("#event-type").await, "order.refunded");
    b.quit().await;
}

/// The type is kept with each delivery at ingest: a page filtered by it
/// reads no body, so 12 MiB of other events end in one page with nothing
/// left to read on (it used to stop after 8 MiB of bodies).
#[tokio::test]
async fn the_event_type_filter_is_answered_without_reading_bodies() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant(
        "shop",
        &dest.url,
        "max_body_bytes = 2097152",
        "",
        "",
    ));
    let pad = "x".repeat(1 << 20);
    let mut ids = Vec::new();
    for n in 0..12 {
        let event_id = format!("evt_big_{n}");
        let body =
            format!(r#"{{"type": "order.other", "event_id": "{event_id}", "pad": "{pad}"}}"#);
        ids.push(accept(&s, &event_id, body.as_bytes()).await);
    }
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let first = http
        .get(&session, "/t/shop/deliveries?event_type=order.paid")
        .await;
    assert_eq!(first.status(), reqwest::StatusCode::OK);
    let page = first.text().await.unwrap();
    assert!(page.contains("No deliveries match."), "none is order.paid");
    assert!(
        !page.contains("rel=\"next\""),
        "every delivery was looked at without opening a body"
    );
    let other = http
        .get(&session, "/t/shop/deliveries?event_type=order.other")
        .await;
    let page = other.text().await.unwrap();
    for id in &ids {
        assert!(page.contains(id.as_str()), "{id} is order.other");
    }
}

#[tokio::test]
async fn unrouted_deliveries_are_listed_by_their_status_with_each_route_filtered() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let never = r#"filter = { body = { type = "never" } }"#;
    let config = tenant("shop", &dest.url, never, "", "")
        + &format!("[[tenants.routes]]\nname = \"audit\"\n{never}\n");
    let s = TestServer::start(&config);
    let unrouted = accept(&s, "evt_none", &order("evt_none")).await;
    let http = Http::new(&s);
    let session = http.sign_in(ADMIN_TOKEN).await;
    let listed = http
        .get(&session, "/t/shop/deliveries?status=unrouted")
        .await;
    assert_eq!(listed.status(), reqwest::StatusCode::OK);
    let page = listed.text().await.unwrap();
    assert!(page.contains(&unrouted), "{page}");
    assert!(
        page.contains(r#"<option value="transform_failed""#),
        "{page}"
    );
    let shown = http
        .get(&session, &format!("/t/shop/deliveries/{unrouted}"))
        .await
        .text()
        .await
        .unwrap();
    assert!(shown.contains(">unrouted<"), "{shown}");
    for route in ["Route default", "Route audit"] {
        assert!(shown.contains(route), "{route} in {shown}");
    }
    let none = http
        .get(&session, "/t/shop/deliveries?status=delivered")
        .await
        .text()
        .await
        .unwrap();
    assert!(none.contains("No deliveries match."), "{none}");
}
