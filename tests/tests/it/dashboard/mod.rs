//! The delivery dashboard in a real headless Chromium: sign-in, a dead
//! letter opened and redelivered to a live sink, Redirect to a second sink,
//! tenant scoping and CSRF refusal. `docs/img/` screenshots come from the
//! ignored `screenshots_for_the_docs`.

mod browser;
mod caps;
mod filters;
mod history;
pub(crate) mod http;
mod redirect;
mod replays;
mod routes;
mod sessions;
mod tail;
mod tenant_page;

use std::time::Duration;

use hookd_server::testing::DeliveryEventKind;

use crate::{
    forward::{send, wait_event},
    harness::{tenant, TestServer, ADMIN_TOKEN},
    receiver::{Receiver, Reply},
    rejections::refuse_two,
};
use browser::{Browser, WAIT};

/// Destinations on 127.0.0.1 may be reached by Redirect.
const LOOPBACK: &str = "[forward]\nallow_networks = [\"127.0.0.0/8\"]\n";

/// A live hookd with tenants `shop` (forwarding to `dest`) and `other`, a
/// dead letter of `shop` and its dashboard's base URL.
struct Setup {
    s: TestServer,
    base: String,
    dead_id: String,
}

async fn setup(dest: &Receiver) -> Setup {
    let toml = format!(
        "{LOOPBACK}{}{}",
        tenant("shop", &dest.url, "", "", ""),
        tenant("other", &dest.url, "", "", "")
    );
    let s = TestServer::start_live(&toml);
    let mut feed = s.server().services().feed.subscribe();
    let dead_id = send(&s, "shop", "evt_dash").await;
    wait_event(&mut feed, &dead_id, DeliveryEventKind::DeadLettered).await;
    let base = format!("http://{}", s.server().dashboard_addr().unwrap());
    Setup { s, base, dead_id }
}

#[tokio::test]
async fn a_dead_letter_is_opened_redelivered_and_redirected_from_the_browser() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup {
        s: _s,
        base,
        dead_id,
    } = setup(&dest).await;
    let Some(b) = Browser::start("dashboard redeliver").await else {
        return;
    };
    assert_eq!(b.sign_in(&base, ADMIN_TOKEN).await, "Tenants");
    assert!(b.text("table").await.contains("shop"));

    // The dead letter, and on its page the failed attempt.
    b.open(&format!("{base}/t/shop/dead-letters")).await;
    b.click(&format!("a[href$='/deliveries/{dead_id}']")).await;
    assert_eq!(b.text("#delivery-id").await, dead_id);
    assert_eq!(b.text("#delivery-status").await, "dead");
    assert_eq!(b.text(".attempt-status").await, "400");
    assert!(b
        .text("pre.body")
        .await
        .contains("\"event_id\": \"evt_dash\""));

    // Filters: by event id, and by a time range it is not in.
    b.open(&format!("{base}/t/shop/deliveries?event_id=evt_dash"))
        .await;
    assert!(b.text("table").await.contains(&dead_id));
    b.open(&format!(
        "{base}/t/shop/deliveries?until=2020-01-01T00:00:00Z"
    ))
    .await;
    assert_eq!(b.text("p.empty").await, "No deliveries match.");

    // Fixed destination: redeliver the ticked dead letter.
    dest.set_default(Reply::Status(204));
    b.open(&format!("{base}/t/shop/dead-letters")).await;
    b.click(&format!("input[name=ids][value='{dead_id}']"))
        .await;
    b.press("Redeliver selected").await;
    assert_eq!(b.text("h1").await, "Redelivered");
    let new_id = b.text("ul.redelivered a").await;
    assert_ne!(new_id, dead_id);
    let got = dest.wait_for(2, WAIT).await;
    assert_eq!(got[1].header("hookd-delivery-id"), Some(new_id.as_str()));
    let new_page = format!("{base}/t/shop/deliveries/{new_id}");
    b.wait_text(&new_page, "#delivery-status", "delivered")
        .await;

    // Redirect the original to a second sink: it arrives there only.
    let second = Receiver::start(Reply::Status(202)).await;
    b.open(&format!("{base}/t/shop/deliveries/{dead_id}")).await;
    b.fill("#redirect-url", &second.url).await;
    b.press("Redirect").await;
    assert_eq!(b.text("#redirect-result").await, "Redirect result");
    assert_eq!(b.text(".outcome .attempt-status").await, "202");
    let arrived = second.wait_for(1, WAIT).await;
    assert_eq!(
        arrived[0].header("hookd-delivery-id"),
        Some(dead_id.as_str())
    );
    tokio::time::sleep(Duration::from_millis(200)).await;
    assert_eq!(second.received().len(), 1, "sent once");
    assert_eq!(
        dest.received().len(),
        2,
        "the tenant's destination got nothing more"
    );
    assert_eq!(b.text("#delivery-status").await, "redelivered");

    // A denied address is refused with the policy's reason, nothing sent.
    b.fill("#redirect-url", "http://169.254.169.254/latest")
        .await;
    b.press("Redirect").await;
    assert!(b.text("[role=alert]").await.contains("allow_networks"));
    b.quit().await;
}

#[tokio::test]
async fn a_tenant_token_sees_only_its_own_tenant() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, dead_id } = setup(&dest).await;
    let token = s
        .admin()
        .await
        .create_token("other", "dash")
        .await
        .unwrap()
        .token;
    let Some(b) = Browser::start("dashboard tenant scope").await else {
        return;
    };
    assert_eq!(b.sign_in(&base, "not-a-token").await, "Sign in");
    assert!(b.text("[role=alert]").await.contains("not valid"));
    assert_eq!(b.sign_in(&base, &token).await, "Deliveries");
    for page in [
        "/t/shop/deliveries".to_owned(),
        format!("/t/shop/deliveries/{dead_id}"),
        "/t/shop/dead-letters".into(),
        "/t/shop/secrets".into(),
        "/t/shop/tail".into(),
    ] {
        assert_eq!(
            b.open(&format!("{base}{page}")).await,
            "Forbidden",
            "{page}"
        );
        assert!(b
            .text("[role=alert]")
            .await
            .contains("may not see tenant \"shop\""));
    }
    b.open(&format!("{base}/tenants")).await;
    let table = b.text("table").await;
    assert!(
        table.contains("other") && !table.contains("shop"),
        "{table}"
    );
    assert_eq!(
        b.open(&format!("{base}/t/other/dead-letters")).await,
        "Dead letters"
    );
    b.quit().await;
}

#[tokio::test]
async fn a_form_posted_without_its_csrf_token_is_refused_and_changes_nothing() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup {
        s: _s,
        base,
        dead_id,
    } = setup(&dest).await;
    let Some(b) = Browser::start("dashboard csrf").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    b.open(&format!("{base}/t/shop/dead-letters")).await;
    b.click(&format!("input[name=ids][value='{dead_id}']"))
        .await;
    b.client
        .execute(
            "document.querySelectorAll('input[name=csrf]').forEach(e => e.remove())",
            vec![],
        )
        .await
        .unwrap();
    b.press("Redeliver selected").await;
    assert_eq!(b.text("h1").await, "Forbidden");
    assert!(b.text("[role=alert]").await.contains("CSRF"));
    let page = format!("{base}/t/shop/deliveries/{dead_id}");
    assert_eq!(b.open(&page).await, "Delivery");
    assert_eq!(
        b.text("#delivery-status").await,
        "dead",
        "nothing redelivered"
    );
    assert_eq!(dest.received().len(), 1);

    // Signed out, the session is gone.
    b.press("Sign out").await;
    assert_eq!(b.open(&page).await, "Sign in");
    b.quit().await;
}

#[tokio::test]
async fn a_refused_payload_is_found_by_its_request_id() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, .. } = setup(&dest).await;
    let (content, signature) = refuse_two(&s, "shop").await;
    let request_id = content.body["request_id"].as_str().unwrap();
    let Some(b) = Browser::start("dashboard refused payload").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    // The overview counts them, beside the dead letter.
    let cell = |n: usize| format!("//tr[th/a[text()='shop']]/td[{n}]");
    let shop = [5, 8, 9, 13, 14].map(cell);
    let mut got = Vec::new();
    for xpath in &shop {
        let td = b
            .client
            .find(fantoccini::Locator::XPath(xpath))
            .await
            .unwrap();
        got.push(td.text().await.unwrap());
    }
    assert_eq!(
        got,
        [
            "closed",
            "1",
            "1 / 0",
            "2",
            "2: BAD_SIGNATURE 1, INVALID_JSON 1"
        ]
    );
    b.open(&format!("{base}/t/shop/rejections")).await;
    b.fill("#request_id", request_id).await;
    b.press("Find").await;
    assert_eq!(b.text(".rejections .request-id").await, request_id);
    assert_eq!(b.text(".rejections .code").await, "INVALID_JSON");
    assert!(b
        .text("pre.body")
        .await
        .starts_with("{\"type\": \"order.paid\""));
    let elements = b
        .client
        .find_all(fantoccini::Locator::Css(".rejections > li"))
        .await
        .unwrap();
    assert_eq!(elements.len(), 1, "only the one asked for");

    // The bad signature is listed, without a body.
    let bad = signature.body["request_id"].as_str().unwrap();
    b.open(&format!("{base}/t/shop/rejections?request_id={bad}"))
        .await;
    assert_eq!(b.text(".rejections .code").await, "BAD_SIGNATURE");
    let bodies = b
        .client
        .find_all(fantoccini::Locator::Css("pre.body"))
        .await
        .unwrap();
    assert!(bodies.is_empty(), "no body kept for a bad signature");
    b.quit().await;
}

#[tokio::test]
async fn the_live_tail_shows_deliveries_as_they_happen_under_the_strict_csp() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, .. } = setup(&dest).await;
    let Some(b) = Browser::start("dashboard live tail").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    b.open(&format!("{base}/t/shop/tail")).await;
    let deadline = std::time::Instant::now() + WAIT;
    while !b.text("#tail-state").await.starts_with("Watching") {
        assert!(
            std::time::Instant::now() < deadline,
            "the tail never connected"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let id = send(&s, "shop", "evt_tail").await;
    let row = b
        .client
        .wait()
        .at_most(WAIT)
        .for_element(fantoccini::Locator::Css(&format!(
            "#tail li.dead-lettered a[href$='{id}']"
        )))
        .await
        .expect("the dead-lettered event appears in the tail");
    assert_eq!(row.text().await.unwrap(), id);
    b.quit().await;
}

#[tokio::test]
async fn rotate_shows_the_new_secret_once_and_it_becomes_current() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, .. } = setup(&dest).await;
    let admin = s.admin().await;
    admin
        .create_tenant(hookd_sdk::client::proto::CreateTenantRequest {
            tenant_id: "api".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let Some(b) = Browser::start("dashboard rotate").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    assert_eq!(b.open(&format!("{base}/t/api/secrets")).await, "Secrets");
    b.press("Rotate secret").await;
    assert_eq!(b.text("h1").await, "Secret rotated");
    let shown = b.text("#new-secret").await;
    assert!(shown.starts_with("whsec_"), "{shown}");
    let secrets = admin.list_secrets("api").await.unwrap();
    assert_eq!(secrets.len(), 2, "the new current and the previous one");
    b.open(&format!("{base}/t/api/secrets")).await;
    let table = b.text("table").await;
    assert!(table.contains(&secrets[0].kid) && !table.contains(&shown));

    // A config-file tenant's secrets live in the file: the page says so.
    assert_eq!(b.open(&format!("{base}/t/shop/secrets")).await, "Conflict");
    assert!(b
        .text("[role=alert]")
        .await
        .contains("declared in the config file"));
    b.quit().await;
}

/// Writes docs/img/dashboard-*.png (desktop and phone width):
/// `cargo test -p hookd-tests --test it -- --ignored screenshots_for_the_docs`.
#[tokio::test]
#[ignore = "writes the documentation's screenshots"]
async fn screenshots_for_the_docs() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, dead_id } = setup(&dest).await;
    dest.set_default(Reply::Status(204));
    for n in 0..3 {
        send(&s, "shop", &format!("evt_order_{n}")).await;
    }
    dest.wait_for(4, WAIT).await;
    refuse_two(&s, "shop").await;
    let Some(b) = Browser::start("dashboard screenshots").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/img");
    std::fs::create_dir_all(&dir).unwrap();
    let pages = [
        ("tenants", "/tenants".to_owned()),
        ("dead-letters", "/t/shop/dead-letters".into()),
        ("delivery", format!("/t/shop/deliveries/{dead_id}")),
        ("refused", "/t/shop/rejections".into()),
    ];
    for (name, path) in pages {
        for (form, width, height) in [("desktop", 1280, 900), ("phone", 390, 844)] {
            b.client.set_window_size(width, height).await.unwrap();
            b.open(&format!("{base}{path}")).await;
            let png = b.screenshot(width, height).await;
            std::fs::write(dir.join(format!("dashboard-{name}-{form}.png")), png).unwrap();
        }
    }
    b.quit().await;
}
