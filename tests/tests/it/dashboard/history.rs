//! What the dashboard remembers: a Redirect recorded with its delivery and
//! still shown after a restart, and the overview's counts over the last
//! hour and day on hookd's clock.

use crate::{
    forward::send,
    harness::{tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
};

use super::{
    browser::{Browser, WAIT},
    setup, Setup, LOOPBACK,
};

#[tokio::test]
async fn a_redirect_is_recorded_with_the_delivery_and_shown_after_a_restart() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup {
        mut s,
        base,
        dead_id,
    } = setup(&dest).await;
    let Some(b) = Browser::start("dashboard redirect record").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    let second = Receiver::start(Reply::Status(202)).await;
    let page = format!("{base}/t/shop/deliveries/{dead_id}");
    b.open(&page).await;
    b.fill("#redirect-url", &format!("{}?token=s3cret", second.url))
        .await;
    b.press("Redirect").await;
    second.wait_for(1, WAIT).await;

    let toml = format!(
        "{LOOPBACK}{}{}",
        tenant("shop", &dest.url, "", "", ""),
        tenant("other", &dest.url, "", "", "")
    );
    s.restart(&toml);
    let base = format!("http://{}", s.server().dashboard_addr().unwrap());
    b.sign_in(&base, ADMIN_TOKEN).await;
    b.open(&format!("{base}/t/shop/deliveries/{dead_id}")).await;
    let recorded = b.text("#redirects").await;
    assert!(
        recorded.contains(&format!("{}?token=redacted", second.url)),
        "{recorded}"
    );
    assert!(!recorded.contains("s3cret"), "{recorded}");
    assert_eq!(b.text("#redirects .redirect-by").await, "admin");
    assert_eq!(b.text("#redirects .attempt-status").await, "202");
    assert_eq!(b.text("#delivery-status").await, "dead", "status kept");
    let attempts = b
        .client
        .find_all(fantoccini::Locator::Css("#attempts > li"))
        .await
        .unwrap();
    assert_eq!(attempts.len(), 1, "a redirect is not an attempt");
    b.quit().await;

    // GetDelivery carries it too, beside the one attempt.
    let got = s
        .admin()
        .await
        .get_delivery("shop", &dead_id)
        .await
        .unwrap();
    assert_eq!(got.attempts.len(), 1);
    let r = &got.redirects[0];
    assert_eq!((r.by.as_str(), r.status_code), ("admin", 202));
    assert_eq!(r.url, format!("{}?token=redacted", second.url));
}

/// The text of `tenant`'s overview cell of class `class`.
async fn cell(b: &Browser, tenant: &str, class: &str) -> String {
    let xpath = format!("//tr[th/a[text()='{tenant}']]/td[contains(@class,'{class}')]");
    let td = b
        .client
        .find(fantoccini::Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("no {class} cell of {tenant}: {e}"));
    td.text().await.unwrap()
}

#[tokio::test]
async fn the_overview_counts_the_last_hour_and_day_on_hookds_clock() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let s = TestServer::start(&tenant("shop", &dest.url, "", "", ""));
    send(&s, "shop", "evt_1").await;
    let body = crate::harness::order("evt_1");
    let again = crate::harness::signed("evt_1", s.clock_secs(), &body);
    assert_eq!(s.post("shop", &again, &body).await.status, 200);
    let unsigned = s.post("shop", &[], &body).await;
    assert_eq!(unsigned.status, 401);
    let base = format!("http://{}", s.server().dashboard_addr().unwrap());
    let Some(b) = Browser::start("dashboard windows").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    assert_eq!(cell(&b, "shop", "ingest-hour").await, "1 / 1");
    assert_eq!(cell(&b, "shop", "ingest-day").await, "1 / 1");
    let code = unsigned.code().to_owned();
    assert_eq!(
        cell(&b, "shop", "rejected-hour").await,
        format!("1: {code} 1")
    );

    // 61 minutes on: out of the hour, still in the day.
    s.clock.advance_ms(61 * 60_000);
    b.open(&format!("{base}/tenants")).await;
    assert_eq!(cell(&b, "shop", "ingest-hour").await, "0 / 0");
    assert_eq!(cell(&b, "shop", "rejected-hour").await, "0");
    assert_eq!(cell(&b, "shop", "ingest-day").await, "1 / 1");
    assert_eq!(
        cell(&b, "shop", "rejected-day").await,
        format!("1: {code} 1")
    );

    // A day on, nothing is left. The session outlived its absolute
    // lifetime on hookd's clock: sign in again.
    s.clock.advance_ms(23 * 3_600_000);
    b.sign_in(&base, ADMIN_TOKEN).await;
    b.open(&format!("{base}/tenants")).await;
    assert_eq!(cell(&b, "shop", "ingest-day").await, "0 / 0");
    b.quit().await;
}

#[tokio::test]
async fn accepted_counts_of_the_day_before_a_restart_are_kept() {
    let dest = Receiver::start(Reply::Status(204)).await;
    let toml = tenant("shop", &dest.url, "", "", "");
    let mut s = TestServer::start(&toml);
    send(&s, "shop", "evt_1").await;
    send(&s, "shop", "evt_2").await;
    s.clock.advance_ms(2 * 60_000);
    s.restart(&toml);
    let base = format!("http://{}", s.server().dashboard_addr().unwrap());
    let Some(b) = Browser::start("dashboard windows restart").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    assert_eq!(cell(&b, "shop", "ingest-hour").await, "2 / 0");
    s.clock.advance_ms(60 * 60_000);
    b.open(&format!("{base}/tenants")).await;
    assert_eq!(cell(&b, "shop", "ingest-hour").await, "0 / 0");
    assert_eq!(cell(&b, "shop", "ingest-day").await, "2 / 0");
    b.quit().await;
}
