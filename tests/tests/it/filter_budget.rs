//! A route filter's cost is bounded and kept off the threads others wait
//! on: a tenant whose filters would make hundreds of millions of
//! comparisons per body gets its events answered (the routes that ran out
//! of steps do not get them), another tenant's deliveries are answered
//! meanwhile within their usual time, and a route test of such a filter
//! leaves the control plane answering.

use std::time::{Duration, Instant};

use hookd_sdk::client::proto::{
    test_route_request::{Event, Route as RouteChoice},
    InlineRoute, PastedEvent, TestRouteRequest,
};
use reqwest::StatusCode;
use serde_json::json;

use crate::{
    harness::{order, signed, tenant, TestServer, DEST_SECRET},
    receiver::{Receiver, Reply},
};

/// Four `$in` lists of 1,000 numbers (the most a list may hold) under
/// `$or`, none of them in the body: 4,000 comparisons per body item.
fn costly_filter() -> serde_json::Value {
    let lists: Vec<serde_json::Value> = (0..4u64)
        .map(|n| json!({ "$in": (1 + n * 1_000..=(n + 1) * 1_000).collect::<Vec<_>>() }))
        .collect();
    json!({ "body": { "n": { "$or": lists } } })
}

/// A body of 200,000 zeros: 800 million comparisons for the costly filter.
fn huge_body(id: &str) -> Vec<u8> {
    serde_json::to_vec(&json!({ "event_id": id, "n": vec![0; 200_000] })).unwrap()
}

/// A route of the last tenant forwarding to `url` with `filter`.
fn route(name: &str, url: &str, filter: &serde_json::Value) -> String {
    let filter = inline_toml(filter);
    format!(
        "[[tenants.routes]]\nname = \"{name}\"\nfilter = {filter}\n[tenants.routes.destination]\nurl = \"{url}\"\nsecret = \"{DEST_SECRET}\"\n"
    )
}

/// `value` (objects, arrays, numbers) as a TOML inline value.
fn inline_toml(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Object(fields) => {
            let fields: Vec<String> = fields
                .iter()
                .map(|(key, value)| format!("\"{key}\" = {}", inline_toml(value)))
                .collect();
            format!("{{ {} }}", fields.join(", "))
        }
        serde_json::Value::Array(items) => {
            let items: Vec<String> = items.iter().map(inline_toml).collect();
            format!("[{}]", items.join(", "))
        }
        other => other.to_string(),
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn costly_filters_stop_at_their_budget_off_the_workers_others_wait_on() {
    let sink = Receiver::start(Reply::Status(200)).await;
    let filter = costly_filter();
    let config = tenant("hostile", &sink.url, "max_body_bytes = 4194304", "", "")
        + &route("costly-a", &sink.url, &filter)
        + &route("costly-b", &sink.url, &filter)
        + &tenant("calm", &sink.url, "", "", "");
    let s = std::sync::Arc::new(TestServer::start_live(&config));

    let hostile: Vec<_> = (0..8)
        .map(|n| {
            let s = s.clone();
            tokio::spawn(async move {
                let id = format!("evt_h{n}");
                let body = huge_body(&id);
                s.post("hostile", &signed(&id, s.clock_secs(), &body), &body)
                    .await
            })
        })
        .collect();
    let mut calm = Vec::new();
    for n in 0..20 {
        let id = format!("evt_c{n}");
        let body = order(&id);
        let started = Instant::now();
        let answer = s
            .post("calm", &signed(&id, s.clock_secs(), &body), &body)
            .await;
        calm.push(started.elapsed());
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
    }
    for answer in hostile {
        let answer = answer.await.unwrap();
        assert_eq!(answer.status, StatusCode::ACCEPTED, "{:?}", answer.body);
        assert_eq!(
            answer.body["filtered"],
            json!(["costly-a", "costly-b"]),
            "routes out of steps do not get the event: {:?}",
            answer.body
        );
    }
    let slowest = calm.iter().max().unwrap();
    assert!(
        *slowest < Duration::from_secs(1),
        "the calm tenant's slowest answer took {slowest:?}: {calm:?}"
    );

    // A route test of the costly filter, and the control plane meanwhile.
    let admin = std::sync::Arc::new(s.admin().await);
    let test = {
        let admin = admin.clone();
        tokio::spawn(async move {
            admin
                .test_route(TestRouteRequest {
                    tenant_id: "hostile".into(),
                    route: Some(RouteChoice::Inline(InlineRoute {
                        filter_json: costly_filter().to_string(),
                        transform: String::new(),
                        destination_url: String::new(),
                    })),
                    event: Some(Event::Pasted(PastedEvent {
                        body: huge_body("evt_t"),
                        ..Default::default()
                    })),
                })
                .await
        })
    };
    for _ in 0..5 {
        let started = Instant::now();
        admin.list_tenants(Default::default()).await.unwrap();
        let took = started.elapsed();
        assert!(took < Duration::from_secs(1), "ListTenants took {took:?}");
    }
    let shown = test.await.unwrap().unwrap();
    assert!(!shown.matched, "{shown:?}");
    assert!(
        shown.filter_result.contains("ran out of its budget"),
        "{shown:?}"
    );
}
