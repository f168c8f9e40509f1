//! A data dir written by the hookd of storage layout 8 (`tests/fixtures/
//! layout-8-sled`: tenant `shop`, its default route pulled, three events
//! accepted, each with a copy pending on route `audit`, then that hookd
//! stopped) starts under this one, whose copies that share a place are one
//! queue entry: the old copies, one entry each, are sent as before, and the
//! new ones beside them, once each.

use std::{collections::BTreeSet, path::Path, time::Duration};

use hookd_sdk::client::proto::DeliveryStatus;
use reqwest::StatusCode;

use crate::{
    harness::{put_fixture, TestServer, DEST_SECRET},
    receiver::{Receiver, Reply},
};

/// The copies on `audit` the layout-8 hookd made of `evt_l8_0` to `evt_l8_2`.
const OLD_COPIES: [&str; 3] = [
    "dlv_01M8YNC0REJ3BGFY67GPFNZWN8",
    "dlv_01M8YNC0SZMV32CK1A8A3DCHZ1",
    "dlv_01M8YNC0VGPFJTA906BF0N6RX6",
];

/// The fixture's tenant, `audit` now forwarding to `url`, every retention
/// at its longest so nothing of the fixture is swept however old it is.
fn config(url: &str) -> String {
    format!(
        "[retention]\nidempotency_secs = 315360000\ndead_secs = 315360000\n\
         [[tenants]]\nid = \"shop\"\nscheme = \"standard\"\n[[tenants.secrets]]\nkid = \"k1\"\n\
         secret = \"{DEST_SECRET}\"\n[[tenants.routes]]\nname = \"audit\"\n\
         [tenants.routes.destination]\nurl = \"{url}\"\nsecret = \"{DEST_SECRET}\"\n"
    )
}

/// Puts the fixture in place of `data`'s store.
fn fixture(data: &Path) {
    put_fixture(data, "layout-8-sled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_layout_8_data_dir_sends_its_pending_copies_and_new_ones_once_each() {
    let sink = Receiver::start(Reply::Status(204)).await;
    let mut s = TestServer::start_live(&config(&sink.url));
    s.restart_with(&config(&sink.url), fixture);
    let again = s.post_signed("shop", "k1", DEST_SECRET, "evt_l8_1").await;
    assert_eq!(
        again.status,
        StatusCode::OK,
        "a duplicate: {:?}",
        again.body
    );

    let mut new = Vec::new();
    for n in 0..4 {
        let accepted = s
            .post_signed("shop", "k1", DEST_SECRET, &format!("evt_l9_{n}"))
            .await;
        assert_eq!(accepted.status, StatusCode::ACCEPTED, "{:?}", accepted.body);
        let deliveries = accepted.body["deliveries"].as_array().unwrap();
        assert_eq!(deliveries[1]["route"], "audit");
        new.push(deliveries[1]["delivery_id"].as_str().unwrap().to_owned());
    }
    let got = sink.wait_for(7, Duration::from_secs(10)).await;
    let ids: Vec<&str> = got
        .iter()
        .map(|r| r.header("hookd-delivery-id").unwrap())
        .collect();
    let expected: BTreeSet<&str> = OLD_COPIES
        .iter()
        .copied()
        .chain(new.iter().map(String::as_str))
        .collect();
    assert_eq!(ids.len(), 7, "{ids:?}");
    assert_eq!(ids.iter().copied().collect::<BTreeSet<_>>(), expected);

    let admin = s.admin().await;
    for id in &expected {
        let delivery = admin.get_delivery("shop", *id).await.unwrap();
        assert_eq!(delivery.status(), DeliveryStatus::Delivered, "{id}");
    }
    let pending = admin
        .list_all_deliveries("shop", DeliveryStatus::Pending)
        .await
        .unwrap();
    assert_eq!(
        pending.len(),
        7,
        "the pulled default route's three and four"
    );
}
