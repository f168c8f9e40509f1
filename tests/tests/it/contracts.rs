//! Event contracts end to end: a config-file contract and the unknown-type
//! policy refuse over real HTTP; contracts saved, revised and deleted over
//! real gRPC apply to the next delivery and survive a restart; refused
//! deliveries are never stored; the sender's clock skew shows in /metrics.

mod cost;

use hookd_sdk::client::{
    proto::{Contract, DeliveryStatus},
    Code, HookdClient,
};
use reqwest::StatusCode;
use serde_json::json;

use crate::{
    harness::{order, signed, TestServer, ACME, NOW},
    telemetry::scrape,
};

/// acme refusing types without a contract, with one config-file contract:
/// `order.paid` needs an integer `data.amount`.
fn config() -> String {
    let schema = r#"{"type":"object","required":["data"],"properties":{"data":{"type":"object","required":["amount"],"properties":{"amount":{"type":"integer"}}}}}"#;
    let example = r#"{"event_id":"evt_1","type":"order.paid","data":{"amount":1}}"#;
    format!(
        "{}\n[[tenants.contracts]]\ntype = \"order.paid\"\nschema = '''{schema}'''\nexample = '''{example}'''\n",
        ACME.replace(
            "max_body_bytes = 65536\n",
            "max_body_bytes = 65536\nunknown_event_types = \"reject\"\n"
        )
    )
}

/// `order.refunded`, requiring `reason` when `strict`.
fn refunded(strict: bool) -> Contract {
    let required = if strict { r#"["reason"]"# } else { "[]" };
    Contract {
        r#type: "order.refunded".into(),
        version: String::new(),
        schema: format!(r#"{{"type":"object","required":{required}}}"#),
        example: r#"{"event_id":"evt_1","type":"order.refunded","reason":"damaged"}"#.into(),
    }
}

async fn post(s: &TestServer, body: serde_json::Value) -> crate::harness::Answer {
    let id = body["event_id"].as_str().unwrap().to_owned();
    let bytes = body.to_string().into_bytes();
    s.post("acme", &signed(&id, s.clock_secs(), &bytes), &bytes)
        .await
}

async fn stored(client: &HookdClient) -> usize {
    client
        .list_all_deliveries("acme", DeliveryStatus::Unspecified)
        .await
        .unwrap()
        .len()
}

#[tokio::test(flavor = "multi_thread")]
async fn contracts_refuse_over_http_and_grpc_changes_survive_restart() {
    let mut s = TestServer::start(&config());
    let paid = |id: &str, data: serde_json::Value| json!({"event_id": id, "type": "order.paid", "data": data});
    assert_eq!(
        post(&s, paid("e1", json!({"amount": 5, "extra": true})))
            .await
            .status,
        StatusCode::ACCEPTED
    );
    let refused = post(&s, paid("e2", json!({"amount": "5"}))).await;
    assert_eq!(
        (refused.status, refused.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "CONTRACT_VIOLATION")
    );
    assert_eq!(
        refused.body["details"]["violations"][0]["pointer"],
        "/data/amount"
    );
    let refund = |id: &str, reason: Option<&str>| {
        let mut body = json!({"event_id": id, "type": "order.refunded"});
        if let Some(reason) = reason {
            body["reason"] = json!(reason);
        }
        body
    };
    let unknown = post(&s, refund("e3", None)).await;
    assert_eq!(
        (unknown.status, unknown.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "UNKNOWN_EVENT_TYPE")
    );

    let admin = s.admin().await;
    let e = admin
        .put_contract(
            "acme",
            Contract {
                r#type: "order.paid".into(),
                ..refunded(false)
            },
        )
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition, "{e}");
    let bad = Contract {
        example: r#"{"event_id":"x","type":"order.refunded"}"#.into(),
        ..refunded(true)
    };
    let e = admin.put_contract("acme", bad).await.unwrap_err();
    assert_eq!(e.code(), Code::InvalidArgument);
    assert!(e.to_string().contains("contract.example"), "{e}");
    assert_eq!(
        admin
            .put_contract("acme", refunded(false))
            .await
            .unwrap()
            .revision,
        1
    );
    assert_eq!(
        post(&s, refund("e4", None)).await.status,
        StatusCode::ACCEPTED
    );
    assert_eq!(
        admin
            .put_contract("acme", refunded(true))
            .await
            .unwrap()
            .revision,
        2
    );
    let check = admin
        .validate_payload("acme", refund("x", None).to_string())
        .await
        .unwrap();
    assert_eq!(
        (check.valid, check.code.as_str()),
        (false, "CONTRACT_VIOLATION")
    );
    assert_eq!(check.violations[0].pointer, "/reason");
    assert_eq!(
        stored(&admin).await,
        2,
        "validate stores nothing; refusals are never stored"
    );

    s.restart(&config());
    let admin = s.admin().await;
    let list = admin.list_contracts("acme").await.unwrap();
    let kept: Vec<(String, u64, bool)> = list
        .contracts
        .iter()
        .map(|c| {
            (
                c.contract.as_ref().unwrap().r#type.clone(),
                c.revision,
                c.from_config,
            )
        })
        .collect();
    assert_eq!(
        kept,
        [
            ("order.paid".into(), 0, true),
            ("order.refunded".into(), 2, false)
        ]
    );
    assert_eq!(list.unknown_event_types, "reject");
    let still = post(&s, refund("e5", None)).await;
    assert_eq!(
        (still.status, still.code()),
        (StatusCode::UNPROCESSABLE_ENTITY, "CONTRACT_VIOLATION")
    );
    assert_eq!(
        post(&s, refund("e6", Some("late"))).await.status,
        StatusCode::ACCEPTED
    );

    admin
        .delete_contract("acme", "order.refunded", "")
        .await
        .unwrap();
    let e = admin
        .delete_contract("acme", "order.paid", "")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::FailedPrecondition);
    s.restart(&config());
    let admin = s.admin().await;
    let e = admin
        .get_contract("acme", "order.refunded", "")
        .await
        .unwrap_err();
    assert_eq!(e.code(), Code::NotFound);
    assert_eq!(
        post(&s, refund("e7", Some("late"))).await.code(),
        "UNKNOWN_EVENT_TYPE"
    );
    assert_eq!(stored(&admin).await, 3, "e1, e4 and e6");
    let metrics = scrape(&s.base).await;
    assert!(
        metrics.contains(r#"hookd_event_type_deliveries_total{tenant="acme",event_type="order.refunded",outcome="unknown_event_type"} 1"#),
        "{metrics}"
    );
}

/// The skew histogram's count of deliveries whose sender clock is
/// `direction` (behind or ahead) by at most `le` seconds, and the median
/// gauge (negative: ahead).
fn skew(metrics: &str, direction: &str, le: &str) -> (u64, Option<f64>) {
    let bound = |text: &str| match text {
        "+Inf" => f64::INFINITY,
        n => n.parse::<f64>().unwrap(),
    };
    let bucket = metrics.lines().find_map(|line| {
        let rest = line.strip_prefix("hookd_sender_clock_skew_seconds_bucket{")?;
        let (labels, value) = rest.split_once("} ")?;
        let labels: Vec<&str> = labels.split(',').collect();
        let le_here = labels
            .iter()
            .find_map(|l| l.strip_prefix("le=\""))?
            .trim_end_matches('"');
        let wanted = format!("sender_clock=\"{direction}\"");
        (labels.contains(&"tenant=\"acme\"")
            && labels.contains(&wanted.as_str())
            && bound(le_here) == bound(le))
        .then(|| value.trim().parse::<f64>().unwrap())
    });
    let median = metrics.lines().find_map(|l| {
        l.strip_prefix("hookd_sender_clock_skew_median_seconds{tenant=\"acme\"} ")
            .map(|v| v.trim().parse::<f64>().unwrap())
    });
    (bucket.unwrap_or(0.0) as u64, median)
}

#[tokio::test(flavor = "multi_thread")]
async fn clock_skew_metrics_move_when_the_sender_is_behind_or_ahead() {
    let s = TestServer::start(ACME);
    let before = scrape(&s.base).await;
    assert_eq!(skew(&before, "behind", "+Inf"), (0, None));
    let send = |id: &'static str, ts: i64| {
        let body = order(id);
        let headers = signed(id, ts, &body);
        let s = &s;
        async move { s.post("acme", &headers, &body).await.status }
    };
    s.clock.set_secs(NOW + 1000);
    assert_eq!(send("behind", NOW + 1000 - 200).await, StatusCode::ACCEPTED);
    let behind = scrape(&s.base).await;
    assert_eq!(
        skew(&behind, "behind", "120"),
        (0, Some(200.0)),
        "200 s behind"
    );
    assert_eq!(skew(&behind, "behind", "300").0, 1);
    assert_eq!(skew(&behind, "ahead", "+Inf").0, 0);
    assert_eq!(send("ahead", NOW + 1000 + 250).await, StatusCode::ACCEPTED);
    let ahead = scrape(&s.base).await;
    assert_eq!(
        skew(&ahead, "ahead", "300"),
        (1, Some(-25.0)),
        "250 s ahead, median of the two"
    );
    assert_eq!(skew(&ahead, "ahead", "120").0, 0);
    assert_eq!(skew(&ahead, "behind", "+Inf").0, 1);
}

#[tokio::test(flavor = "multi_thread")]
async fn a_stricter_contract_never_turns_a_resend_of_an_accepted_event_into_a_refusal() {
    let mut s = TestServer::start(&config());
    let admin = s.admin().await;
    admin.put_contract("acme", refunded(false)).await.unwrap();
    let first = json!({"event_id": "r1", "type": "order.refunded"});
    let accepted = post(&s, first.clone()).await;
    assert_eq!(accepted.status, StatusCode::ACCEPTED);
    admin.put_contract("acme", refunded(true)).await.unwrap();
    // A restart empties the replay cache: only the durable log knows r1.
    s.restart(&config());
    let resent = post(&s, first).await;
    assert_eq!(
        (resent.status, resent.body["duplicate"].as_bool()),
        (StatusCode::OK, Some(true)),
        "{:?}",
        resent.body
    );
    assert_eq!(resent.body["delivery_id"], accepted.body["delivery_id"]);
    let fresh = post(&s, json!({"event_id": "r2", "type": "order.refunded"})).await;
    assert_eq!(fresh.code(), "CONTRACT_VIOLATION", "a new event is checked");
}
