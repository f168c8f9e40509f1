//! Dead letters and redelivery per route over real gRPC, on sled and on
//! PostgreSQL (skipped without `HOOKD_TEST_POSTGRES_URL` unless
//! `HOOKD_REQUIRE_POSTGRES=1`): a route whose sink fails dead-letters its
//! deliveries on its own route only; a dry run by event type answers the
//! count and changes nothing; the real call then redelivers exactly those;
//! an unknown route is NOT_FOUND; and `hookctl dead-letters redeliver
//! --route --event-type --dry-run` prints the count.

use std::time::{Duration, Instant};

use hookd_sdk::{
    client::{
        proto::{
            DeadLetter, ListDeadLettersRequest, ListDeliveriesRequest, PurgeDeadLettersRequest,
            RedeliverRequest,
        },
        Code, HookdClient,
    },
    signature::{sign, Scheme},
};
use hookd_server::testing::test_database;
use reqwest::StatusCode;

use crate::{
    cli::hookctl,
    harness::{acme_secret, tenant, TestServer, DEST_SECRET},
    receiver::{Receiver, Reply},
};

const WAIT: Duration = Duration::from_secs(10);

/// Tenant `shop` forwarding to `ok`, with route `audit` forwarding to
/// `failing` after one attempt only (the retry, 60 s away, lies past its
/// 30 s window), so its failed deliveries dead-letter at once.
fn config(storage: &str, ok: &str, failing: &str) -> String {
    format!(
        "{storage}{}[[tenants.routes]]\nname = \"audit\"\n[tenants.routes.destination]\n\
         url = \"{failing}\"\nsecret = \"{DEST_SECRET}\"\n[tenants.routes.retry]\n\
         schedule_secs = [60]\nwindow_secs = 30\njitter = 0.0\n",
        tenant("shop", ok, "", "", "")
    )
}

/// Posts event `id` of `event_type` to `shop`, signed at the server's clock.
async fn post(s: &TestServer, id: &str, event_type: &str) {
    let body = format!(r#"{{"event_id":"{id}","type":"{event_type}","data":{{}}}}"#);
    let mut headers = sign(
        Scheme::Standard,
        &acme_secret(),
        id,
        s.clock_secs(),
        body.as_bytes(),
    );
    headers.push(("content-type".into(), "application/json".into()));
    let answer = s.post("shop", &headers, body.as_bytes()).await;
    assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
}

/// `route`'s dead letters of `shop`, newest first.
async fn dead_letters(admin: &HookdClient, route: &str) -> Vec<DeadLetter> {
    admin
        .list_dead_letters(ListDeadLettersRequest {
            tenant_id: "shop".into(),
            route: route.into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .dead_letters
}

/// Polls until `route` has `n` dead letters.
async fn wait_dead(admin: &HookdClient, route: &str, n: usize) -> Vec<DeadLetter> {
    let deadline = Instant::now() + WAIT;
    loop {
        let dead = dead_letters(admin, route).await;
        if dead.len() >= n {
            return dead;
        }
        assert!(
            Instant::now() < deadline,
            "{route}: {} dead letters",
            dead.len()
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// A redelivery of `shop`'s `audit` dead letters of type `order.paid`.
fn paid_on_audit(dry_run: bool) -> RedeliverRequest {
    RedeliverRequest {
        tenant_id: "shop".into(),
        all_matching: true,
        route: "audit".into(),
        event_type: "order.paid".into(),
        dry_run,
        ..Default::default()
    }
}

/// The whole story on one engine (`storage`: config tables before the
/// tenants, empty for sled).
async fn dead_letters_and_redelivery_by_filter_per_route(storage: &str) {
    let ok = Receiver::start(Reply::Status(200)).await;
    let failing = Receiver::start(Reply::Status(500)).await;
    let s = TestServer::start(&config(storage, &ok.url, &failing.url));
    let admin = s.admin().await;
    post(&s, "evt_paid_1", "order.paid").await;
    post(&s, "evt_refund", "order.refunded").await;
    post(&s, "evt_paid_2", "order.paid").await;

    let dead = wait_dead(&admin, "audit", 3).await;
    assert!(dead.iter().all(|d| d.route == "audit"), "{dead:?}");
    ok.wait_for(3, WAIT).await;
    assert!(
        dead_letters(&admin, "default").await.is_empty(),
        "the default route's deliveries were delivered"
    );
    assert!(
        dead_letters(&admin, "").await.is_empty(),
        "empty is default"
    );
    let paid: Vec<String> = dead
        .iter()
        .rev()
        .filter(|d| d.event_id.starts_with("evt_paid"))
        .map(|d| d.delivery_id.clone())
        .collect();
    assert_eq!(failing.received().len(), 3);

    let dry = admin.redeliver_answer(paid_on_audit(true)).await.unwrap();
    assert_eq!(dry.matched, 2, "{dry:?}");
    assert_eq!(dry.matched_ids, paid, "oldest first");
    assert!(dry.delivery_ids.is_empty() && !dry.more, "{dry:?}");
    assert_eq!(
        dead_letters(&admin, "audit").await,
        dead,
        "a dry run changes nothing"
    );
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert_eq!(failing.received().len(), 3, "a dry run sends nothing");

    failing.set_default(Reply::Status(200));
    let done = admin.redeliver_answer(paid_on_audit(false)).await.unwrap();
    assert_eq!(done.matched, 2, "{done:?}");
    assert_eq!(done.matched_ids, paid);
    assert_eq!(done.delivery_ids.len(), 2);
    let got = failing.wait_for(5, WAIT).await;
    let sent: Vec<&str> = got[3..]
        .iter()
        .filter_map(|r| r.header("hookd-delivery-id"))
        .collect();
    assert_eq!(sent.len(), 2);
    assert!(
        sent.iter()
            .all(|id| done.delivery_ids.iter().any(|n| n == id)),
        "{sent:?}"
    );
    let left = dead_letters(&admin, "audit").await;
    assert_eq!(left.len(), 1);
    assert_eq!(left[0].event_id, "evt_refund");
    let again = admin.redeliver_answer(paid_on_audit(false)).await.unwrap();
    assert_eq!(again.matched, 0, "each dead letter is redelivered once");

    let audit = admin
        .list_deliveries(ListDeliveriesRequest {
            tenant_id: "shop".into(),
            route: "audit".into(),
            ..Default::default()
        })
        .await
        .unwrap()
        .deliveries;
    assert_eq!(audit.len(), 5, "three originals and two redeliveries");
    assert!(audit.iter().all(|d| d.route == "audit"));
    let one = admin
        .get_delivery("shop", &done.delivery_ids[0])
        .await
        .unwrap();
    assert_eq!(
        (one.route.as_str(), one.redelivery_of.as_str()),
        ("audit", paid[0].as_str())
    );

    by_id_and_purge_on_a_route(&admin, &left[0].delivery_id, &failing).await;
    unknown_route_is_not_found(&admin).await;
}

/// A route's delivery is redelivered by id whether or not the call names
/// its route (not when it names another), and a route's dead letters are
/// purged on that route only.
async fn by_id_and_purge_on_a_route(admin: &HookdClient, refund: &str, sink: &Receiver) {
    let by_id = |route: &str| RedeliverRequest {
        tenant_id: "shop".into(),
        delivery_ids: vec![refund.to_owned()],
        route: route.into(),
        ..Default::default()
    };
    let elsewhere = admin.redeliver_answer(by_id("default")).await.unwrap_err();
    assert_eq!(elsewhere.code(), Code::NotFound, "{elsewhere}");
    let purge = |route: &str| PurgeDeadLettersRequest {
        tenant_id: "shop".into(),
        all: true,
        route: route.into(),
        ..Default::default()
    };
    assert_eq!(admin.purge_dead_letters(purge("")).await.unwrap(), 0);
    let new_ids = admin.redeliver(by_id("")).await.unwrap();
    let got = sink.wait_for(6, WAIT).await;
    assert_eq!(
        got[5].header("hookd-delivery-id"),
        Some(new_ids[0].as_str())
    );
    let again = admin.redeliver_answer(by_id("audit")).await.unwrap_err();
    assert_eq!(again.code(), Code::FailedPrecondition, "{again}");
    assert!(dead_letters(admin, "audit").await.is_empty());
}

/// Every call naming a route the tenant lacks is NOT_FOUND naming it.
async fn unknown_route_is_not_found(admin: &HookdClient) {
    let errors = [
        admin
            .list_deliveries(ListDeliveriesRequest {
                tenant_id: "shop".into(),
                route: "nope".into(),
                ..Default::default()
            })
            .await
            .unwrap_err(),
        admin
            .list_dead_letters(ListDeadLettersRequest {
                tenant_id: "shop".into(),
                route: "nope".into(),
                ..Default::default()
            })
            .await
            .unwrap_err(),
        admin
            .redeliver_answer(RedeliverRequest {
                route: "nope".into(),
                ..paid_on_audit(true)
            })
            .await
            .unwrap_err(),
        admin
            .purge_dead_letters(PurgeDeadLettersRequest {
                tenant_id: "shop".into(),
                all: true,
                route: "nope".into(),
                ..Default::default()
            })
            .await
            .unwrap_err(),
    ];
    for error in errors {
        assert_eq!(error.code(), Code::NotFound, "{error:?}");
        assert!(error.to_string().contains("nope"), "{error}");
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_routes_dead_letters_are_listed_counted_dry_and_redelivered_by_filter_on_sled() {
    dead_letters_and_redelivery_by_filter_per_route("").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_routes_dead_letters_are_listed_counted_dry_and_redelivered_by_filter_on_postgres() {
    let Some(database) = test_database("hookd_it_redeliver_routes") else {
        return;
    };
    let storage = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n",
        database.url
    );
    dead_letters_and_redelivery_by_filter_per_route(&storage).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn hookctl_counts_a_routes_dead_letters_by_event_type_in_a_dry_run() {
    let ok = Receiver::start(Reply::Status(200)).await;
    let failing = Receiver::start(Reply::Status(500)).await;
    let s = TestServer::start(&config("", &ok.url, &failing.url));
    let admin = s.admin().await;
    post(&s, "evt_paid_1", "order.paid").await;
    post(&s, "evt_refund", "order.refunded").await;
    wait_dead(&admin, "audit", 2).await;

    let (code, out) = hookctl(&s, &["dead-letters", "list", "shop", "--route", "audit"]).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(out.matches("dlv_").count(), 2, "{out}");
    let (code, out) = hookctl(
        &s,
        &["--json", "dead-letters", "list", "shop", "--route", "audit"],
    )
    .await;
    let listed: serde_json::Value = serde_json::from_str(&out).unwrap();
    let dead = listed["dead_letters"].as_array().unwrap();
    assert!(
        code == 0 && dead.iter().all(|d| d["route"] == "audit"),
        "{out}"
    );
    let args = [
        "dead-letters",
        "redeliver",
        "shop",
        "--all-matching",
        "--route",
        "audit",
        "--event-type",
        "order.paid",
        "--dry-run",
    ];
    let (code, out) = hookctl(&s, &args).await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("would redeliver 1 "), "{out}");
    assert_eq!(
        dead_letters(&admin, "audit").await.len(),
        2,
        "nothing changed"
    );
    failing.set_default(Reply::Status(200));
    let (code, out) = hookctl(&s, &args[..args.len() - 1]).await;
    assert_eq!(code, 0, "{out}");
    assert_eq!(
        out.matches("dlv_").count(),
        2,
        "the old id beside the new: {out}"
    );
    assert_eq!(dead_letters(&admin, "audit").await.len(), 1, "{out}");
    let got = failing.wait_for(3, WAIT).await;
    assert_eq!(got[2].header("webhook-id"), Some("evt_paid_1"));
    let purge = ["dead-letters", "purge", "shop", "--all", "--yes", "--route"];
    let (code, out) = hookctl(&s, &[&purge[..], &["default"]].concat()).await;
    assert_eq!(
        (code, out.trim()),
        (0, "purged 0 dead letters of tenant shop")
    );
    let (code, out) = hookctl(&s, &[&purge[..], &["audit"]].concat()).await;
    assert_eq!(
        (code, out.trim()),
        (0, "purged 1 dead letters of tenant shop")
    );
    assert!(dead_letters(&admin, "audit").await.is_empty());
}
