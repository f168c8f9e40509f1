//! Alerts and alert settings in the catalog's rows, the same on both
//! storage engines.

use hookd_store::testing::Engine;

use super::{AlertRecord, AlertRows, StoredSettings, StoredSink, StoredState};
use crate::config::SinkFormat;

hookd_store::engines!(
    alerts_are_kept_per_tenant_newest_first,
    resolved_alerts_expire_and_open_ones_stay,
    an_alert_written_leaves_the_catalog_version,
);

fn alert(tenant: &str, n: u64) -> AlertRecord {
    AlertRecord {
        delivery_ids: vec![format!("dlv_{n}")],
        id: format!("alr_{}", ulid::Ulid::from_parts(1_000 + n, 0)),
        tenant_id: tenant.to_owned(),
        alert_type: "route.failing".into(),
        subject: format!("route-{n}"),
        state: StoredState::Open,
        summary: "failing".into(),
        opened_at_ms: 1_000 + n as i64,
        last_seen_at_ms: 1_000 + n as i64,
        acknowledged_at_ms: None,
        resolved_at_ms: None,
        occurrences: n,
        notifications: 1,
    }
}

/// Resolved alerts go once their resolution is old enough; open and
/// acknowledged ones, and other tenants' alerts, stay.
async fn resolved_alerts_expire_and_open_ones_stay(engine: Engine) {
    let rows = AlertRows::new(engine.store.catalog_rows().unwrap());
    let resolved = |n: u64, at: i64| AlertRecord {
        state: StoredState::Resolved,
        resolved_at_ms: Some(at),
        ..alert("acme", n)
    };
    let acknowledged = AlertRecord {
        state: StoredState::Acknowledged,
        acknowledged_at_ms: Some(2_000),
        ..alert("acme", 3)
    };
    for alert in [
        resolved(0, 5_000),
        resolved(1, 9_000),
        resolved(2, 7_000),
        acknowledged.clone(),
        alert("acme", 4),
        AlertRecord {
            state: StoredState::Resolved,
            resolved_at_ms: Some(1),
            ..alert("acme-eu", 5)
        },
    ] {
        rows.put(&alert).unwrap();
    }
    assert_eq!(rows.expire("acme", 4_999).unwrap(), (0, Some(5_000)));
    assert_eq!(rows.expire("acme", 7_000).unwrap(), (2, Some(9_000)));
    let left: Vec<String> = rows
        .all("acme")
        .unwrap()
        .into_iter()
        .map(|a| a.subject)
        .collect();
    assert_eq!(left, ["route-4", "route-3", "route-1"]);
    assert_eq!(rows.expire("acme", i64::MAX).unwrap(), (1, None));
    assert_eq!(rows.all("acme").unwrap(), [alert("acme", 4), acknowledged]);
    assert_eq!(
        rows.all("acme-eu").unwrap().len(),
        1,
        "another tenant's stay"
    );
}

async fn alerts_are_kept_per_tenant_newest_first(engine: Engine) {
    let rows = AlertRows::new(engine.store.catalog_rows().unwrap());
    for n in 0..3 {
        rows.put(&alert("acme", n)).unwrap();
    }
    rows.put(&alert("acme-eu", 9)).unwrap();
    let all = rows.all("acme").unwrap();
    let subjects: Vec<&str> = all.iter().map(|a| a.subject.as_str()).collect();
    assert_eq!(subjects, ["route-2", "route-1", "route-0"]);

    let mut changed = all[1].clone();
    changed.state = StoredState::Acknowledged;
    changed.acknowledged_at_ms = Some(5_000);
    rows.put(&changed).unwrap();
    assert_eq!(
        rows.get("acme", &changed.id).unwrap(),
        Some(changed.clone())
    );
    assert_eq!(
        rows.all("acme").unwrap().len(),
        3,
        "a change is no new alert"
    );

    let settings = StoredSettings {
        sink: Some(StoredSink {
            url: "https://ops.example/alerts".into(),
            format: SinkFormat::Slack,
            sealed_secret: vec![1, 2, 3],
        }),
        rules: Vec::new(),
    };
    assert_eq!(rows.settings("acme").unwrap(), StoredSettings::default());
    rows.put_settings("acme", &settings).unwrap();
    assert_eq!(rows.settings("acme").unwrap(), settings);

    rows.drop_tenant("acme").unwrap();
    assert!(rows.all("acme").unwrap().is_empty());
    assert_eq!(rows.settings("acme").unwrap(), StoredSettings::default());
    assert_eq!(
        rows.all("acme-eu").unwrap().len(),
        1,
        "other tenants keep theirs"
    );
}

/// An alert's row changes as often as its condition is seen, and nothing
/// follows alerts between processes: writing one must not move the
/// catalog version, which makes every other replica re-read its tenants.
async fn an_alert_written_leaves_the_catalog_version(engine: Engine) {
    let rows = AlertRows::new(engine.store.catalog_rows().unwrap());
    let before = engine.store.catalog_version().unwrap();
    for n in 0..3 {
        rows.put(&alert("acme", n)).unwrap();
    }
    assert_eq!(engine.store.catalog_version().unwrap(), before);
}
