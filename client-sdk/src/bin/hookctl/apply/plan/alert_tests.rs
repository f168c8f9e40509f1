//! The planner on a tenant's `alerts:`: set after a new tenant, compared by
//! the sink and the rule types the file names, the sink's secret sent only
//! on the sink's creation or when rotating, and left alone when absent.

use hookd_proto::domain::AlertType;
use serde_json::json;

use super::*;
use crate::apply::{alerts::CurrentAlerts, desired::desired, file::parse, state::CurrentTenant};

fn wanted(yaml: &str) -> Vec<DesiredTenant> {
    desired(parse(yaml).unwrap(), false).unwrap()
}

/// hookd holding what `yaml` describes, alert rules as GetAlertSettings
/// answers them: the file's values, and route.failing's mode filled in.
fn holding(yaml: &str) -> Vec<CurrentTenant> {
    wanted(yaml)
        .into_iter()
        .map(|t| CurrentTenant {
            id: t.id,
            alerts: t.alerts.map(applied),
            state: t.state,
            ..Default::default()
        })
        .collect()
}

fn applied(want: DesiredAlerts) -> CurrentAlerts {
    let mut rules = want.rules;
    if let Some(failing) = rules.get_mut(&AlertType::RouteFailing) {
        failing.mode.get_or_insert_with(|| "last_attempt".into());
    }
    CurrentAlerts {
        sink_has_secret: want.sink.is_some(),
        sink: want.sink,
        overridden: rules.keys().copied().collect(),
        rules,
    }
}

fn heads(plan: &Plan) -> Vec<String> {
    plan.changes
        .iter()
        .map(|s| format!("{:?} {}", s.action, s.resource))
        .collect()
}

const ALERTED: &str = "
tenants:
  - id: acme
    alerts:
      sink: {url: https://ops.test/alerts, format: slack, secret: {env: SINK_SECRET}}
      rules:
        - {type: route.failing, threshold: 3, mode: first_failure}
        - {type: verification.failure_spike, enabled: false}
";

#[test]
fn a_new_tenants_alerts_are_set_after_it_and_not_again() {
    let plan = plan(&wanted(ALERTED), &[], Options::default()).unwrap();
    assert_eq!(heads(&plan), ["Create tenant acme", "Create alerts acme"]);
    let fields = &plan.changes[1].fields;
    assert!(fields.contains(&Change::Value {
        field: "sink.url",
        old: Value::Null,
        new: json!("https://ops.test/alerts"),
    }));
    assert!(fields.contains(&Change::Secret {
        field: "sink.secret",
        secret: SecretChange::Set,
    }));
    let again = super::plan(&wanted(ALERTED), &holding(ALERTED), Options::default()).unwrap();
    assert!(again.is_empty(), "{again:?}");
}

#[test]
fn a_rule_compares_only_the_keys_the_file_sets() {
    let mut current = holding(ALERTED);
    let alerts = current[0].alerts.as_mut().unwrap();
    let failing = alerts.rules.get_mut(&AlertType::RouteFailing).unwrap();
    failing.window_secs = Some(900.0);
    assert!(plan(&wanted(ALERTED), &current, Options::default())
        .unwrap()
        .is_empty());
    let alerts = current[0].alerts.as_mut().unwrap();
    alerts
        .rules
        .get_mut(&AlertType::RouteFailing)
        .unwrap()
        .threshold = Some(9);
    let plan = plan(&wanted(ALERTED), &current, Options::default()).unwrap();
    assert_eq!(heads(&plan), ["Update alerts acme"]);
    assert_eq!(
        plan.changes[0].fields,
        [Change::Value {
            field: "route.failing",
            old: json!({"enabled": true, "threshold": 9, "mode": "first_failure"}),
            new: json!({"enabled": true, "threshold": 3, "mode": "first_failure"}),
        }]
    );
}

#[test]
fn the_sink_secret_is_sent_on_its_creation_or_when_rotating() {
    let mut current = holding(ALERTED);
    let rotate = Options {
        rotate_secrets: true,
        ..Options::default()
    };
    let plan_rotating = plan(&wanted(ALERTED), &current, rotate).unwrap();
    assert_eq!(
        plan_rotating.changes[0].fields,
        [Change::Secret {
            field: "sink.secret",
            secret: SecretChange::Changed,
        }]
    );
    current[0].alerts.as_mut().unwrap().sink = None;
    let plan = plan(&wanted(ALERTED), &current, Options::default()).unwrap();
    let Op::SetAlerts { send_secret, .. } = &plan.changes[0].ops[0] else {
        panic!("{:?}", plan.changes[0].ops);
    };
    assert!(send_secret);
}

#[test]
fn a_tenant_without_alerts_leaves_them_and_an_empty_one_removes_the_sink() {
    let current = holding(ALERTED);
    let untouched = plan(
        &wanted("tenants: [{id: acme}]"),
        &current,
        Options::default(),
    )
    .unwrap();
    assert!(untouched.is_empty(), "{untouched:?}");
    let emptied = plan(
        &wanted("tenants: [{id: acme, alerts: {}}]"),
        &current,
        Options::default(),
    )
    .unwrap();
    assert_eq!(heads(&emptied), ["Update alerts acme"]);
    assert_eq!(
        emptied.changes[0].fields[0],
        Change::Value {
            field: "sink.url",
            old: json!("https://ops.test/alerts"),
            new: Value::Null,
        }
    );
}

#[test]
fn an_unknown_alert_type_or_an_inline_sink_secret_is_refused() {
    let typo = "tenants: [{id: a, alerts: {rules: [{type: route.fail}]}}]";
    let err = desired(parse(typo).unwrap(), false).unwrap_err();
    assert!(
        format!("{err:#}").contains("alerts.rules[0].type"),
        "{err:#}"
    );
    let inline = "tenants: [{id: a, alerts: {sink: {url: https://x.test, secret: {value: s}}}}]";
    let err = desired(parse(inline).unwrap(), false).unwrap_err();
    assert!(
        format!("{err:#}").contains("--allow-inline-secrets"),
        "{err:#}"
    );
}
