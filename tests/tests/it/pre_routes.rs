//! A data dir and a database written by hookd before routes existed
//! (`tests/fixtures/pre-routes-sled`, `pre-routes-postgres.sql`: tenant
//! `shop` with three deliveries pending a retry in an hour, tenant `dead`
//! with two dead letters, each made by that build) start under this one
//! with their tenants, queues and dead letters where they were: they are
//! the tenants' `default` routes. A route added afterwards gets the new
//! events only.

use std::path::Path;

use hookd_sdk::client::{
    proto::{DeliveryStatus, ListDeadLettersRequest},
    HookdClient,
};
use reqwest::StatusCode;

use crate::{
    harness::{put_fixture, TestServer, ADMIN_TOKEN, DEST_SECRET},
    postgres::{Cluster, MASTER_KEY},
};

/// The fixture's tenants, with what keeps the fixture's state where it is
/// whenever the test runs: `shop` pulled (its pending deliveries, made with
/// a retry due an hour after the fixture, are never attempted) and every
/// retention at its longest (the dead letters and the idempotency records
/// are never swept, however old the fixture is).
fn config(extra: &str) -> String {
    let tenant = |id: &str, destination: &str| {
        format!(
            "[[tenants]]\nid = \"{id}\"\nscheme = \"standard\"\n[[tenants.secrets]]\nkid = \"k1\"\n\
             secret = \"{DEST_SECRET}\"\n{destination}"
        )
    };
    let refused = format!(
        "[tenants.destination]\nurl = \"http://127.0.0.1:9/refuses\"\nsecret = \"{DEST_SECRET}\"\n"
    );
    "[retention]\nidempotency_secs = 315360000\ndead_secs = 315360000\n".to_owned()
        + &tenant("shop", "")
        + extra
        + &tenant("dead", &refused)
}

/// Puts the fixture in place of `data`'s store.
fn fixture(data: &Path) {
    put_fixture(data, "pre-routes-sled");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_data_dir_from_before_routes_keeps_its_queues_and_dead_letters() {
    let mut s = TestServer::start(&config(""));
    s.restart_with(&config(""), fixture);
    let admin = s.admin().await;
    let pending = admin
        .list_all_deliveries("shop", DeliveryStatus::Pending)
        .await
        .unwrap();
    assert_eq!(pending.len(), 3, "shop's queue is intact");
    let first = admin
        .get_delivery("shop", "dlv_01M8RX0JJ8PQGSBJWKCYTDQ7JC")
        .await
        .unwrap();
    assert_eq!(first.attempts.len(), 1, "with the attempt it had");
    let dead = admin
        .list_dead_letters(ListDeadLettersRequest {
            tenant_id: "dead".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(dead.dead_letters.len(), 2, "dead's dead letters are intact");
    let again = s
        .post_signed("shop", "k1", DEST_SECRET, "evt_pending_1")
        .await;
    assert_eq!(again.status, StatusCode::OK, "{:?}", again.body);
    assert_eq!(again.body["delivery_id"], "dlv_01M8RX0JJ8PQGSBJWKCYTDQ7JC");

    let with_route = config(
        "[[tenants.routes]]\nname = \"audit\"\n[tenants.routes.destination]\n\
         url = \"http://127.0.0.1:9/audit\"\nsecret = \"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw\"\n",
    );
    s.restart(&with_route);
    let admin = s.admin().await;
    let fresh = s
        .post_signed("shop", "k1", DEST_SECRET, "evt_after_routes")
        .await;
    assert_eq!(fresh.status, StatusCode::ACCEPTED, "{:?}", fresh.body);
    assert_eq!(fresh.body["deliveries"].as_array().unwrap().len(), 2);
    let pending = admin
        .list_all_deliveries("shop", DeliveryStatus::Pending)
        .await
        .unwrap();
    assert_eq!(
        pending.len(),
        4,
        "the old three and the new default delivery"
    );
}

/// Lists what a hookd serving the fixture's tenants over gRPC at `grpc`
/// holds: shop's pending deliveries and dead's dead letters.
async fn held(grpc: &str) -> (usize, usize) {
    let admin = HookdClient::connect(grpc.to_owned(), ADMIN_TOKEN)
        .await
        .unwrap();
    let pending = admin
        .list_all_deliveries("shop", DeliveryStatus::Pending)
        .await
        .unwrap();
    let dead = admin
        .list_dead_letters(ListDeadLettersRequest {
            tenant_id: "dead".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    (pending.len(), dead.dead_letters.len())
}

#[tokio::test(flavor = "multi_thread")]
async fn a_database_from_before_routes_keeps_its_queues_and_dead_letters() {
    let Some(cluster) = Cluster::with_tenants("pre_routes", &config("")) else {
        return;
    };
    let dump = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/pre-routes-postgres.sql"),
    )
    .unwrap();
    let (client, connection) = tokio_postgres::connect(cluster.url(), tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute(&dump).await.unwrap();
    drop(client);
    let hookd = cluster.start(0, MASTER_KEY);
    assert_eq!(
        held(&hookd.grpc).await,
        (3, 2),
        "queue and dead letters intact"
    );
    let admin = hookd.admin().await;
    let first = admin
        .get_delivery("shop", "dlv_01M8RX46QB7V67WH2KYAMRSS4T")
        .await
        .unwrap();
    assert_eq!(first.attempts.len(), 1, "with the attempt it had");
}
