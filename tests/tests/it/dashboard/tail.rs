//! The admin's live tail of every tenant, each line naming its tenant, and
//! the same page for a tenant token: its own tenant only.

use fantoccini::Locator;

use crate::{
    forward::send,
    harness::ADMIN_TOKEN,
    receiver::{Receiver, Reply},
};

use super::{
    browser::{Browser, WAIT},
    setup, Setup,
};

/// Waits until the page's event source is connected.
async fn watching(b: &Browser) {
    let deadline = std::time::Instant::now() + WAIT;
    while !b.text("#tail-state").await.starts_with("Watching") {
        assert!(
            std::time::Instant::now() < deadline,
            "the tail never connected"
        );
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

/// The tail's line of `id`, once it appears.
async fn line(b: &Browser, tenant: &str, id: &str) -> fantoccini::elements::Element {
    let xpath = format!("//ol[@id='tail']/li[a[@href='/t/{tenant}/deliveries/{id}']]");
    b.client
        .wait()
        .at_most(WAIT)
        .for_element(Locator::XPath(&xpath))
        .await
        .unwrap_or_else(|e| panic!("no tail line of {tenant}'s {id}: {e}"))
}

#[tokio::test]
async fn the_admin_tails_every_tenant_and_a_tenant_token_only_its_own() {
    let dest = Receiver::start(Reply::Status(400)).await;
    let Setup { s, base, .. } = setup(&dest).await;
    let token = s
        .admin()
        .await
        .create_token("other", "tail")
        .await
        .unwrap()
        .token;
    let Some(b) = Browser::start("dashboard all tenants tail").await else {
        return;
    };
    b.sign_in(&base, ADMIN_TOKEN).await;
    assert_eq!(b.open(&format!("{base}/tail")).await, "Live tail");
    watching(&b).await;
    let shop = send(&s, "shop", "evt_all_shop").await;
    let other = send(&s, "other", "evt_all_other").await;
    for (tenant, id) in [("shop", &shop), ("other", &other)] {
        let li = line(&b, tenant, id).await;
        let named = li.find(Locator::Css(".tenant")).await.unwrap();
        assert_eq!(named.text().await.unwrap(), tenant);
    }

    // A tenant token's tail is its own tenant's, whatever it opens.
    b.press("Sign out").await;
    b.sign_in(&base, &token).await;
    assert_eq!(b.open(&format!("{base}/tail")).await, "Live tail");
    watching(&b).await;
    let shop = send(&s, "shop", "evt_own_shop").await;
    let other = send(&s, "other", "evt_own_other").await;
    line(&b, "other", &other).await;
    let leaked = b
        .client
        .find_all(Locator::XPath(&format!(
            "//ol[@id='tail']/li[a[contains(@href,'{shop}')]]"
        )))
        .await
        .unwrap();
    assert!(
        leaked.is_empty(),
        "a tenant token saw another tenant's delivery"
    );
    b.quit().await;
}
