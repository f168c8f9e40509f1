//! `hookctl`, the real binary, against a running hookd: the README's
//! walk-through as a test — create a tenant, send a signed webhook, see it
//! dead-lettered, fix the destination, redeliver, see it delivered.

use std::time::Duration;

use serde_json::Value;

use crate::{
    harness::{now_secs, order, signed, tenant, TestServer, ADMIN_TOKEN},
    process::hookctl_bin,
    receiver::{Receiver, Reply},
};

/// Runs hookctl with `args`; returns (exit code, stdout).
pub(crate) async fn hookctl(s: &TestServer, args: &[&str]) -> (i32, String) {
    let out = tokio::process::Command::new(hookctl_bin())
        .args(args)
        .env(
            "HOOKCTL_ENDPOINT",
            format!("http://{}", s.server().grpc_addr()),
        )
        .env("HOOKD_ADMIN_TOKEN", ADMIN_TOKEN)
        .env_remove("HOOKCTL_TOKEN")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.code().unwrap_or(-1), stdout)
}

async fn json(s: &TestServer, args: &[&str]) -> Value {
    let mut all = vec!["--json"];
    all.extend_from_slice(args);
    let (code, out) = hookctl(s, &all).await;
    assert_eq!(code, 0, "hookctl {args:?}: {out}");
    serde_json::from_str(&out)
        .unwrap_or_else(|e| panic!("hookctl {args:?} printed no JSON ({e}): {out}"))
}

/// Polls `deliveries list` until one delivery has `status`.
async fn wait_status(s: &TestServer, tenant: &str, status: &str) -> Value {
    for _ in 0..200 {
        let list = json(s, &["deliveries", "list", tenant, "--status", status]).await;
        if let Some(d) = list["deliveries"].as_array().and_then(|d| d.first()) {
            return d.clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no {status} delivery for {tenant}");
}

#[tokio::test]
async fn the_walkthrough_works_with_hookctl() {
    let dest = Receiver::start(Reply::Status(400)).await;
    // The README starts hookd with HOOKD_FORWARD__ALLOW_NETWORKS set to
    // this, the one setting that lets an API-created destination be local.
    let s = TestServer::start_live("[forward]\nallow_networks = [\"127.0.0.1/32\"]\n");
    let created = json(
        &s,
        &[
            "tenants",
            "create",
            "acme",
            "--destination-url",
            &dest.url,
            "--required-field",
            "type",
        ],
    )
    .await;
    let secret = created["secret"].as_str().unwrap().to_owned();
    assert_eq!(created["tenant"]["ingest_path"], "/hooks/acme");

    let url = format!("{}/hooks/acme", s.base);
    let (code, out) = hookctl(
        &s,
        &[
            "send",
            "--url",
            &url,
            "--secret",
            &secret,
            "--event-id",
            "evt_walk",
        ],
    )
    .await;
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("202"), "{out}");

    let dead = wait_status(&s, "acme", "dead").await;
    assert_eq!(dead["event_id"], "evt_walk");
    let letters = json(&s, &["dead-letters", "list", "acme"]).await;
    let letter = &letters["dead_letters"][0];
    assert!(
        letter["reason"].as_str().unwrap().contains("400"),
        "{letter}"
    );

    dest.set_default(Reply::Status(200));
    let dead_id = dead["delivery_id"].as_str().unwrap();
    let (code, out) = hookctl(&s, &["dead-letters", "redeliver", "acme", dead_id]).await;
    assert_eq!(code, 0, "{out}");
    let delivered = wait_status(&s, "acme", "delivered").await;
    assert_eq!(delivered["event_id"], "evt_walk");
    assert_ne!(delivered["delivery_id"], dead["delivery_id"]);
    assert_eq!(
        dest.received().last().unwrap().header("webhook-id"),
        Some("evt_walk")
    );

    let (code, _) = hookctl(
        &s,
        &[
            "tenants",
            "create",
            "internal",
            "--destination-url",
            "http://10.0.0.1/hooks",
        ],
    )
    .await;
    assert_eq!(code, 5, "a destination outside allow_networks is refused");

    let (code, _) = hookctl(&s, &["tenants", "get", "nobody"]).await;
    assert_eq!(code, 3, "NOT_FOUND exits 3");
    let (code, table) = hookctl(&s, &["tenants", "list"]).await;
    assert_eq!(code, 0);
    assert!(
        table.lines().next().unwrap().contains("TENANT_ID") && table.contains("acme"),
        "{table}"
    );
    assert!(!table.contains(&secret), "list never shows a secret");
}

#[tokio::test]
async fn redeliver_all_matching_names_each_dead_letter_beside_its_new_delivery() {
    // Built (blocking) before the receiver has to answer on this runtime.
    hookctl_bin();
    let dest = Receiver::start(Reply::Status(400)).await;
    let s = TestServer::start_live(&tenant("shop", &dest.url, "", "", ""));
    let mut dead = Vec::new();
    for event_id in ["evt_dead_1", "evt_dead_2"] {
        let body = order(event_id);
        let a = s
            .post("shop", &signed(event_id, now_secs(), &body), &body)
            .await;
        assert_eq!(a.status, reqwest::StatusCode::ACCEPTED, "{:?}", a.body);
        dead.push(a.body["delivery_id"].as_str().unwrap().to_owned());
    }
    let mut listed = 0;
    for _ in 0..200 {
        let letters = json(&s, &["dead-letters", "list", "shop"]).await;
        listed = letters["dead_letters"].as_array().unwrap().len();
        if listed == 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let all = json(&s, &["deliveries", "list", "shop"]).await;
    assert_eq!(listed, 2, "both events are dead letters: {all}");
    let (code, table) = hookctl(&s, &["dead-letters", "redeliver", "shop", "--all-matching"]).await;
    assert_eq!(code, 0, "{table}");
    let rows: Vec<Vec<&str>> = table
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().collect())
        .collect();
    let mut old: Vec<&str> = rows.iter().map(|r| r[0]).collect();
    old.sort_unstable();
    let mut expected: Vec<&str> = dead.iter().map(String::as_str).collect();
    expected.sort_unstable();
    assert_eq!(
        old, expected,
        "the DELIVERY_ID column names the dead letters:\n{table}"
    );
    for row in &rows {
        let shown = json(&s, &["deliveries", "get", "shop", row[1]]).await;
        assert_eq!(shown["redelivery_of"], row[0], "{table}");
    }
}

#[tokio::test]
async fn hookctl_manages_contracts_checks_payloads_and_prints_the_sheet() {
    let s = TestServer::start(crate::harness::ACME);
    let schema = r#"{"type":"object","required":["data"],"properties":{"data":{"type":"object","required":["amount"]}}}"#;
    let example = r#"{"event_id":"evt_1","type":"order.paid","data":{"amount":1}}"#;
    let put = [
        "contracts",
        "put",
        "acme",
        "--type",
        "order.paid",
        "--schema",
        schema,
        "--example",
        example,
    ];
    let saved = json(&s, &put).await;
    assert_eq!(
        (saved["type"].as_str(), saved["revision"].as_u64()),
        (Some("order.paid"), Some(1))
    );
    let list = json(&s, &["contracts", "list", "acme"]).await;
    assert_eq!(
        list["contracts"][0]["required_fields"],
        serde_json::json!(["data"])
    );
    let ok = json(&s, &["contracts", "validate", "acme", "--payload", example]).await;
    assert_eq!(ok["valid"], true);
    let broken = r#"{"event_id":"e","type":"order.paid","data":{}}"#;
    let (code, out) = hookctl(
        &s,
        &[
            "--json",
            "contracts",
            "validate",
            "acme",
            "--payload",
            broken,
        ],
    )
    .await;
    assert_eq!(code, 5, "ingest would refuse it: {out}");
    let verdict: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(verdict["violations"][0]["pointer"], "/data/amount");
    let (code, sheet) = hookctl(&s, &["contracts", "doc", "acme"]).await;
    assert_eq!(code, 0);
    for expected in [
        "`standard`",
        "300 s either way",
        "### `order.paid`",
        "Required fields: `data`",
        "\"amount\": 1",
    ] {
        assert!(
            sheet.contains(expected),
            "{expected:?} missing from:\n{sheet}"
        );
    }
    let (code, _) = hookctl(&s, &["contracts", "delete", "acme", "order.paid"]).await;
    assert_eq!(code, 0);
    let (code, _) = hookctl(&s, &["contracts", "get", "acme", "order.paid"]).await;
    assert_eq!(code, 3, "deleted");
}

#[tokio::test]
async fn hookctl_manages_routes_with_filter_and_transform_files_and_tests_them() {
    let s = TestServer::start("");
    let admin = s.admin().await;
    admin
        .create_tenant(hookd_sdk::client::proto::CreateTenantRequest {
            tenant_id: "shop".into(),
            ..Default::default()
        })
        .await
        .unwrap();
    let filter = s.dir.path().join("filter.json");
    std::fs::write(&filter, r#"{"body":{"type":"order.paid"}}"#).unwrap();
    let code = s.dir.path().join("transform.js");
    std::fs::write(
        &code,
        r#"addHandler("transform", (request) => { request.path = "/paid/" + request.body.data.amount; return request; });"#,
    )
    .unwrap();
    let (filter, code) = (filter.to_str().unwrap(), code.to_str().unwrap());
    let created = json(
        &s,
        &[
            "routes",
            "create",
            "shop",
            "billing",
            "--destination-url",
            "https://billing.example.com/in",
            "--filter-file",
            filter,
            "--transform-file",
            code,
        ],
    )
    .await;
    assert_eq!(created["name"], "billing");
    assert_eq!(created["filter_json"], r#"{"body":{"type":"order.paid"}}"#);
    assert_eq!(created["transform_version"].as_str().map(str::len), Some(8));
    let list = json(&s, &["routes", "list", "shop"]).await;
    let names: Vec<&str> = list["routes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["default", "billing"]);

    let body = r#"{"event_id":"evt_1","type":"order.paid","data":{"amount":100}}"#;
    let tested = json(&s, &["routes", "test", "shop", "billing", "--body", body]).await;
    assert_eq!(tested["matched"], true, "{tested}");
    assert_eq!(tested["request"]["path"], "/paid/100", "{tested}");
    let other = r#"{"event_id":"evt_2","type":"refund","data":{"amount":1}}"#;
    let missed = json(&s, &["routes", "test", "shop", "billing", "--body", other]).await;
    assert_eq!(missed["matched"], false, "{missed}");

    let (exit, out) = hookctl(
        &s,
        &[
            "routes",
            "update",
            "shop",
            "billing",
            "--filter",
            "{\"body\":{\"$gte\":[]}}",
        ],
    )
    .await;
    assert_eq!(exit, 5, "a bad filter is refused: {out}");
    let updated = json(&s, &["routes", "update", "shop", "billing", "--no-filter"]).await;
    assert_eq!(updated["filter_json"], "");
    let (exit, table) = hookctl(&s, &["routes", "delete", "shop", "billing", "--yes"]).await;
    assert_eq!(exit, 0, "{table}");
    let (exit, _) = hookctl(&s, &["routes", "get", "shop", "billing"]).await;
    assert_eq!(exit, 3, "deleted");
}
