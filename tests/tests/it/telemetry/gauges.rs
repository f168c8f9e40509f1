//! `/metrics` on its own address, and the storage gauges kept as entries
//! come and go: accept, deliver, dead-letter, redeliver, purge, restart.

use hookd_sdk::{
    client::proto::{CreateTenantRequest, PurgeDeadLettersRequest},
    signature::{sign, Scheme, Secret},
};
use hookd_server::{ids::DeliveryId, testing::DeliveryEventKind};
use reqwest::StatusCode;
use serde_json::Value;

use super::{parse_metrics, scrape};
use crate::{
    forward::{send, wait_event},
    harness::{order, tenant, TestServer, ACME},
    receiver::{Receiver, Reply},
};

const OWN_ADDRESS: &str = "[metrics]\naddr = \"127.0.0.1:0\"\n";

fn metrics_base(s: &TestServer) -> String {
    let addr = s
        .server()
        .metrics_addr()
        .expect("metrics.addr is set: metrics have an address of their own");
    format!("http://{addr}")
}

#[tokio::test]
async fn metrics_move_to_their_own_address_and_leave_the_public_port() {
    let s = TestServer::start(&format!("{OWN_ADDRESS}{ACME}"));
    let public = s.get("/metrics").await;
    assert_eq!(public.status(), StatusCode::NOT_FOUND);
    let body: Value = public.json().await.unwrap();
    assert_eq!(body["code"], "ROUTE_NOT_FOUND", "{body}");

    let base = metrics_base(&s);
    let text = scrape(&base).await;
    assert!(
        text.contains("hookd_queue_depth{tenant=\"acme\",route=\"default\"} 0"),
        "{text}"
    );
    let other = reqwest::get(format!("{base}/hooks/acme")).await.unwrap();
    assert_eq!(
        other.status(),
        StatusCode::NOT_FOUND,
        "only /metrics is served on the metrics address"
    );
    assert!(other.headers().contains_key("x-request-id"));
}

#[tokio::test]
async fn without_an_address_of_their_own_metrics_stay_on_the_public_port() {
    let s = TestServer::start(ACME);
    assert!(s.server().metrics_addr().is_none());
    assert_eq!(s.get("/metrics").await.status(), StatusCode::OK);
}

/// (sink queue depth, sink dead letters, acme queue depth) as scraped.
async fn gauges(s: &TestServer) -> (f64, f64, f64) {
    let text = scrape(&metrics_base(s)).await;
    let m = parse_metrics(&text);
    let get = |series: &str| {
        *m.get(series)
            .unwrap_or_else(|| panic!("{series} missing in\n{text}"))
    };
    (
        get("hookd_queue_depth{tenant=\"sink\",route=\"default\"}"),
        get("hookd_dead_letters{tenant=\"sink\",route=\"default\"}"),
        get("hookd_queue_depth{tenant=\"acme\",route=\"default\"}"),
    )
}

#[tokio::test]
async fn gauges_follow_deliveries_through_redelivery_purge_and_restart() {
    let dest = Receiver::start(Reply::Status(200)).await;
    let config = format!(
        "{OWN_ADDRESS}{ACME}{}",
        tenant("sink", &dest.url, "", "", "")
    );
    let mut s = TestServer::start_live(&config);
    let mut feed = s.server().services().feed.subscribe();

    let delivered = send(&s, "sink", "evt_g0").await;
    wait_event(&mut feed, &delivered, DeliveryEventKind::Delivered).await;
    assert_eq!(
        gauges(&s).await,
        (0.0, 0.0, 0.0),
        "accepted, then delivered"
    );

    dest.set_default(Reply::Status(400));
    let dead = send(&s, "sink", "evt_g1").await;
    wait_event(&mut feed, &dead, DeliveryEventKind::DeadLettered).await;
    assert_eq!(gauges(&s).await, (0.0, 1.0, 0.0), "dead-lettered");

    dest.set_default(Reply::Status(200));
    let again = s
        .server()
        .registry()
        .redeliver("sink", &DeliveryId::new(dead))
        .unwrap();
    wait_event(&mut feed, again.as_str(), DeliveryEventKind::Delivered).await;
    assert_eq!(gauges(&s).await, (0.0, 0.0, 0.0), "redelivered");

    dest.set_default(Reply::Status(400));
    let dead = send(&s, "sink", "evt_g2").await;
    wait_event(&mut feed, &dead, DeliveryEventKind::DeadLettered).await;
    assert_eq!(gauges(&s).await, (0.0, 1.0, 0.0));
    let purged = s
        .admin()
        .await
        .purge_dead_letters(PurgeDeadLettersRequest {
            tenant_id: "sink".into(),
            all: true,
            ..Default::default()
        })
        .await
        .unwrap();
    assert_eq!(purged, 1);
    assert_eq!(gauges(&s).await, (0.0, 0.0, 0.0), "purged");

    for id in ["evt_p1", "evt_p2"] {
        send(&s, "acme", id).await;
    }
    let dead = send(&s, "sink", "evt_g3").await;
    wait_event(&mut feed, &dead, DeliveryEventKind::DeadLettered).await;
    assert_eq!(
        gauges(&s).await,
        (0.0, 1.0, 2.0),
        "two pulled-mode events queued"
    );

    drop(feed);
    s.restart(&config);
    assert_eq!(
        gauges(&s).await,
        (0.0, 1.0, 2.0),
        "counted again from storage at boot"
    );
}

/// Creates the pull-mode tenant `id` over gRPC and queues `events` for it.
async fn create_and_queue(s: &TestServer, id: &str, events: &[&str]) {
    let created = s
        .admin()
        .await
        .create_tenant(CreateTenantRequest {
            tenant_id: id.into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let key = Secret::from_provider(Scheme::Standard, &created.kid, &created.secret).unwrap();
    for event_id in events {
        let body = order(event_id);
        let headers = sign(Scheme::Standard, &key, event_id, s.clock_secs(), &body);
        let answer = s.post(id, &headers, &body).await;
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
    }
}

#[tokio::test]
async fn a_tenant_created_again_after_a_delete_starts_from_an_empty_queue() {
    let s = TestServer::start(OWN_ADDRESS);
    let depth = |text: &str| {
        parse_metrics(text)
            .get("hookd_queue_depth{tenant=\"reused\",route=\"default\"}")
            .copied()
    };
    create_and_queue(&s, "reused", &["evt_r1", "evt_r2"]).await;
    assert_eq!(depth(&scrape(&metrics_base(&s)).await), Some(2.0));

    s.admin().await.delete_tenant("reused").await.unwrap();
    create_and_queue(&s, "reused", &["evt_r3"]).await;
    assert_eq!(
        depth(&scrape(&metrics_base(&s)).await),
        Some(1.0),
        "the deleted tenant's queue was counted for the new one"
    );
}
