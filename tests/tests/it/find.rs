//! Finding deliveries among 10,000 stored, over real gRPC and REST on both
//! engines: by event id (the idempotency log), received time (a range of
//! delivery ids), event type (an index kept at ingest), status, and a
//! value in the body within a window; each finds exactly the deliveries
//! that match. PostgreSQL plans each from an index. SearchDeliveries finds
//! an id across tenants for the admin token and never shows a tenant token
//! another tenant's delivery.

use futures_util::future::join_all;
use hookd_sdk::client::{
    proto::{DeliveryStatus, ListDeliveriesRequest},
    Code, HookdClient,
};
use hookd_server::testing::test_database;
use reqwest::StatusCode;
use serde_json::Value;

use crate::harness::{now_secs, signed, TestServer, ADMIN_TOKEN};

/// Deliveries stored.
const STORED: usize = 10_000;
/// Stored per minute of the server's clock.
const PER_MINUTE: usize = 1_000;

/// A pull-mode tenant `id` with acme's secret.
fn pulled(id: &str) -> String {
    format!(
        r#"
[[tenants]]
id = "{id}"
scheme = "standard"
[[tenants.secrets]]
kid = "k2"
secret = "whsec_AQIDBAUGBwgJCgsMDQ4PEBESExQVFhcYGRobHB0eHyA="
"#
    )
}

/// Event `n`'s type: one in 7 paid, one in 100 refunded, the rest created.
fn kind(n: usize) -> &'static str {
    match n {
        n if n % 100 == 1 => "order.refunded",
        n if n % 7 == 0 => "order.paid",
        _ => "order.created",
    }
}

fn body(n: usize) -> Vec<u8> {
    format!(
        r#"{{"event_id":"evt_{n}","type":"{}","data":{{"object":{{"customer":"cus_{}"}}}}}}"#,
        kind(n),
        n % 50
    )
    .into_bytes()
}

/// Stores events `0..STORED` for acme, a minute of the clock apart every
/// [`PER_MINUTE`]; returns when the first minute began (Unix ms).
async fn store(s: &TestServer) -> i64 {
    let start = s.clock_secs() * 1000;
    for minute in 0..STORED / PER_MINUTE {
        for chunk in (0..PER_MINUTE).collect::<Vec<_>>().chunks(50) {
            let posts = chunk.iter().map(|i| {
                let n = minute * PER_MINUTE + i;
                let body = body(n);
                let headers = signed(&format!("evt_{n}"), s.clock_secs(), &body);
                async move { s.post("acme", &headers, &body).await }
            });
            for answer in join_all(posts).await {
                assert_eq!(answer.status, StatusCode::ACCEPTED, "{answer:?}");
            }
        }
        s.clock.advance_ms(60_000);
    }
    start
}

/// Every delivery of acme's default route `request` lists, page by page.
async fn every(admin: &HookdClient, request: ListDeliveriesRequest) -> Vec<String> {
    let mut ids = Vec::new();
    let mut token = String::new();
    loop {
        let page = admin
            .list_deliveries(ListDeliveriesRequest {
                tenant_id: "acme".into(),
                page_size: 1000,
                page_token: token,
                ..request.clone()
            })
            .await
            .unwrap();
        ids.extend(page.deliveries.into_iter().map(|d| d.event_id));
        if page.next_page_token.is_empty() {
            return ids;
        }
        token = page.next_page_token;
    }
}

/// The event ids of `ns`, sorted (events posted at once are accepted in
/// any order).
fn events(ns: impl Iterator<Item = usize>) -> Vec<String> {
    let mut ids: Vec<String> = ns.map(|n| format!("evt_{n}")).collect();
    ids.sort();
    ids
}

/// Asserts that `got` lists exactly the events `want` names, once each.
fn same(name: &str, mut got: Vec<String>, want: Vec<String>) {
    got.sort();
    let missing: Vec<&String> = want.iter().filter(|w| !got.contains(w)).take(5).collect();
    let extra: Vec<&String> = got.iter().filter(|g| !want.contains(g)).take(5).collect();
    assert!(
        got == want,
        "{name}: {} listed, {} wanted; missing {missing:?}, extra {extra:?}",
        got.len(),
        want.len()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_filter_finds_exactly_its_deliveries_on_sled() {
    let config = format!("{}{}", pulled("acme"), pulled("globex"));
    finds(&config, None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn each_filter_finds_exactly_its_deliveries_on_postgres() {
    let Some(database) = test_database("hookd_it_find") else {
        return;
    };
    let config = format!(
        "[storage]\nbackend = \"postgres\"\n[storage.postgres]\nurl = \"{}\"\n{}{}",
        database.url,
        pulled("acme"),
        pulled("globex")
    );
    finds(&config, Some(&database.url)).await;
}

async fn finds(config: &str, postgres: Option<&str>) {
    let s = TestServer::start_at(config, now_secs());
    let start = store(&s).await;
    let admin = s.admin().await;
    // Ten delivered: the oldest, pulled and acked.
    let pulled = admin.pull("acme", 10, 60).await.unwrap();
    let acked: Vec<String> = pulled.iter().map(|d| d.delivery_id.clone()).collect();
    admin.ack("acme", acked).await.unwrap();

    let all = every(&admin, ListDeliveriesRequest::default()).await;
    assert_eq!(all.len(), STORED);
    let one = every(
        &admin,
        ListDeliveriesRequest {
            event_id: "evt_4321".into(),
            ..Default::default()
        },
    )
    .await;
    assert_eq!(one, vec!["evt_4321".to_owned()]);
    let minute = |m: usize| start + (m * 60_000) as i64;
    let window = every(
        &admin,
        ListDeliveriesRequest {
            since_unix_ms: minute(3),
            until_unix_ms: minute(6),
            ..Default::default()
        },
    )
    .await;
    same("window", window, events(3 * PER_MINUTE..6 * PER_MINUTE));
    let paid = every(
        &admin,
        ListDeliveriesRequest {
            event_type: "order.paid".into(),
            ..Default::default()
        },
    )
    .await;
    same(
        "type",
        paid,
        events((0..STORED).filter(|n| kind(*n) == "order.paid")),
    );
    let refunded_late = every(
        &admin,
        ListDeliveriesRequest {
            event_type: "order.refunded".into(),
            since_unix_ms: minute(8),
            ..Default::default()
        },
    )
    .await;
    same(
        "type in a window",
        refunded_late,
        events((8 * PER_MINUTE..STORED).filter(|n| kind(*n) == "order.refunded")),
    );
    let delivered = every(
        &admin,
        ListDeliveriesRequest {
            status: DeliveryStatus::Delivered as i32,
            ..Default::default()
        },
    )
    .await;
    assert_eq!(delivered.len(), 10, "status: the ten acked");
    let customer = every(
        &admin,
        ListDeliveriesRequest {
            since_unix_ms: minute(2),
            until_unix_ms: minute(3),
            body_pointer: "/data/object/customer".into(),
            body_value_json: "\"cus_7\"".into(),
            ..Default::default()
        },
    )
    .await;
    same(
        "body field",
        customer,
        events((2 * PER_MINUTE..3 * PER_MINUTE).filter(|n| n % 50 == 7)),
    );
    let unbounded = admin
        .list_deliveries(ListDeliveriesRequest {
            tenant_id: "acme".into(),
            body_pointer: "/data/object/customer".into(),
            body_value_json: "\"cus_7\"".into(),
            ..Default::default()
        })
        .await
        .unwrap_err();
    assert_eq!(unbounded.code(), Code::InvalidArgument, "{unbounded}");

    search(&s, &admin).await;
    rest(&s, minute(9)).await;
    if let Some(url) = postgres {
        plans(url).await;
    }
}

/// SearchDeliveries: the admin token finds an event id in both tenants
/// and a delivery id in its own; a tenant token only in its own tenant.
async fn search(s: &TestServer, admin: &HookdClient) {
    let body = body(4321);
    let answer = s
        .post("globex", &signed("evt_4321", s.clock_secs(), &body), &body)
        .await;
    assert_eq!(answer.status, StatusCode::ACCEPTED);
    let globex_delivery = answer.body["delivery_id"].as_str().unwrap().to_owned();
    let found = admin.search_deliveries("evt_4321").await.unwrap();
    let mut tenants: Vec<&str> = found.iter().map(|d| d.tenant_id.as_str()).collect();
    tenants.sort();
    assert_eq!(tenants, ["acme", "globex"]);
    let by_id = admin.search_deliveries(&globex_delivery).await.unwrap();
    assert_eq!(by_id.len(), 1);
    assert_eq!(by_id[0].tenant_id, "globex");

    let token = admin.create_token("acme", "support").await.unwrap().token;
    let acme = s.client(&token).await;
    let own = acme.search_deliveries("evt_4321").await.unwrap();
    assert_eq!(own.len(), 1);
    assert_eq!(own[0].tenant_id, "acme");
    let other = acme.search_deliveries(&globex_delivery).await.unwrap();
    assert!(other.is_empty(), "acme's token finds nothing of globex's");
}

/// Over REST: a listing by type in a window, and a search.
async fn rest(s: &TestServer, from: i64) {
    let base = format!("http://{}", s.server().grpc_addr());
    let get = |path: String| {
        reqwest::Client::new()
            .get(format!("{base}{path}"))
            .bearer_auth(ADMIN_TOKEN)
            .send()
    };
    let listed: Value = get(format!(
        "/v1/tenants/acme/deliveries?eventType=order.refunded&sinceUnixMs={from}&pageSize=1000"
    ))
    .await
    .unwrap()
    .json()
    .await
    .unwrap();
    let want = events((9 * PER_MINUTE..STORED).filter(|n| kind(*n) == "order.refunded"));
    let got: Vec<String> = listed["deliveries"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["eventId"].as_str().unwrap().to_owned())
        .collect();
    same("over REST", got, want);
    let found: Value = get("/v1/deliveries:search?id=evt_17".into())
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(found["deliveries"].as_array().unwrap().len(), 1, "{found}");
}

/// Each filter's statement on PostgreSQL is planned from an index.
async fn plans(url: &str) {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap();
    tokio::spawn(connection);
    client.batch_execute("ANALYZE").await.unwrap();
    let plan = |sql: String| {
        let client = &client;
        async move {
            let rows = client.query(&format!("EXPLAIN {sql}"), &[]).await.unwrap();
            rows.iter()
                .map(|r| r.get::<_, String>(0))
                .collect::<Vec<_>>()
                .join("\n")
        }
    };
    let listing = |filter: &str| {
        format!(
            "SELECT delivery_id, state FROM hookd_states WHERE tenant = 'acme' {filter} \
             ORDER BY delivery_id DESC LIMIT 1001"
        )
    };
    let cases = [
        (
            "event id",
            "SELECT delivery_id FROM hookd_idem WHERE tenant = 'acme' AND key = 'evt_4321'::bytea"
                .to_owned(),
            "hookd_idem_pkey",
        ),
        (
            "window",
            listing("AND delivery_id >= 'dlv_01K' AND delivery_id < 'dlv_01L'"),
            "hookd_states_pkey",
        ),
        (
            "event type",
            listing("AND event_type = 'order.refunded'"),
            "hookd_states_type",
        ),
    ];
    for (name, sql, index) in cases {
        let plan = plan(sql).await;
        assert!(plan.contains(index), "{name}: {plan}");
    }
}
