//! The planner on hand-made states: what it creates, updates, deletes and
//! leaves, field by field, and the order of its steps.

use serde_json::json;

use super::*;
use crate::apply::{
    desired::desired,
    file::parse,
    state::{CurrentTenant, TenantState},
};

fn wanted(yaml: &str) -> Vec<DesiredTenant> {
    desired(parse(yaml).unwrap(), false).unwrap()
}

/// hookd holding exactly what `yaml` describes, as if applied.
fn holding(yaml: &str) -> Vec<CurrentTenant> {
    wanted(yaml)
        .into_iter()
        .map(|t| CurrentTenant {
            id: t.id,
            has_verify_token: t.verify_token.is_some(),
            state: t.state,
            ..Default::default()
        })
        .collect()
}

fn heads(plan: &Plan) -> Vec<String> {
    plan.changes
        .iter()
        .map(|s| format!("{:?} {}", s.action, s.resource))
        .collect()
}

const ACME: &str = "
tenants:
  - id: acme
    destination_url: https://acme.test/in
    secret: {env: ACME_SECRET}
    routes:
      - name: audit
        destination_url: https://audit.test/in
        filter: {body: {type: order.paid}}
    contracts:
      - type: order.paid
        schema: {type: object, required: [id]}
        example: {type: order.paid, id: 1}
";

#[test]
fn a_new_tenant_comes_before_its_routes_and_contracts() {
    let plan = plan(&wanted(ACME), &[], Options::default()).unwrap();
    assert_eq!(
        heads(&plan),
        [
            "Create tenant acme",
            "Create route acme/audit",
            "Create contract acme/order.paid"
        ]
    );
    let fields = &plan.changes[0].fields;
    assert!(fields.contains(&Change::Value {
        field: "destination_url",
        old: Value::Null,
        new: json!("https://acme.test/in"),
    }));
    assert!(fields.contains(&Change::Secret {
        field: "secret",
        secret: SecretChange::Set
    }));
}

#[test]
fn what_hookd_already_has_plans_nothing() {
    let plan = plan(&wanted(ACME), &holding(ACME), Options::default()).unwrap();
    assert!(plan.is_empty(), "{plan:?}");
    assert!(plan.notes.is_empty(), "{:?}", plan.notes);
}

#[test]
fn a_changed_field_is_one_update_with_old_and_new() {
    let mut current = holding(ACME);
    current[0].state.settings.tolerance_secs = 600;
    let audit = current[0].state.routes.get_mut("audit").unwrap();
    audit.max_in_flight = 2;
    let plan = plan(&wanted(ACME), &current, Options::default()).unwrap();
    assert_eq!(
        heads(&plan),
        ["Update tenant acme", "Update route acme/audit"]
    );
    assert_eq!(
        plan.changes[0].fields,
        [Change::Value {
            field: "tolerance_secs",
            old: json!(600),
            new: json!(300)
        }]
    );
    let Op::UpdateTenant { fields, .. } = &plan.changes[0].ops[0] else {
        panic!("{:?}", plan.changes[0].ops);
    };
    assert_eq!(fields, &["tolerance_secs"]);
    assert_eq!(
        plan.changes[1].fields,
        [Change::Value {
            field: "max_in_flight",
            old: json!(2),
            new: json!(8)
        }]
    );
}

#[test]
fn a_contract_compares_as_json_not_as_text() {
    let mut current = holding(ACME);
    let key = ("order.paid".to_owned(), None);
    let body = current[0].state.contracts.get_mut(&key).unwrap();
    body.schema = serde_json::from_str(r#"{"required":["id"],"type":"object"}"#).unwrap();
    assert!(plan(&wanted(ACME), &current, Options::default())
        .unwrap()
        .is_empty());
    current[0].state.contracts.get_mut(&key).unwrap().schema = json!({"type": "object"});
    let plan = plan(&wanted(ACME), &current, Options::default()).unwrap();
    assert_eq!(heads(&plan), ["Update contract acme/order.paid"]);
    assert_eq!(plan.changes[0].fields.len(), 1, "only the schema changed");
}

#[test]
fn what_the_file_does_not_name_is_left_unless_pruned() {
    let mut current = holding(ACME);
    current.extend(holding("tenants: [{id: old}]"));
    current[0]
        .state
        .routes
        .insert("legacy".into(), RouteSettings::default());
    let kept = plan(&wanted(ACME), &current, Options::default()).unwrap();
    assert!(kept.is_empty());
    assert_eq!(
        kept.notes,
        [
            "route acme/legacy is not in the file: left as it is (--prune deletes it)",
            "tenant old is not in the file: left as it is (--prune deletes it)",
        ]
    );
    let prune = Options {
        prune: true,
        ..Options::default()
    };
    let pruned = plan(&wanted(ACME), &current, prune).unwrap();
    assert_eq!(
        heads(&pruned),
        ["Delete route acme/legacy", "Delete tenant old"]
    );
}

#[test]
fn config_file_tenants_are_never_changed_or_deleted() {
    let mut current = holding("tenants: [{id: acme, tolerance_secs: 9}, {id: cfg}]");
    for tenant in &mut current {
        tenant.from_config = true;
    }
    let prune = Options {
        prune: true,
        ..Options::default()
    };
    let plan = plan(&wanted("tenants: [{id: acme}]"), &current, prune).unwrap();
    assert!(plan.is_empty(), "{plan:?}");
    assert_eq!(plan.notes.len(), 2, "{:?}", plan.notes);
    assert!(plan.notes[0].contains("acme is declared in hookd's config file"));
}

#[test]
fn secrets_are_sent_on_create_and_otherwise_only_when_rotating() {
    let file = "tenants: [{id: acme, scheme: meta, secret: {env: S}, verify_token: {env: V}}]";
    let current = holding(file);
    assert!(plan(&wanted(file), &current, Options::default())
        .unwrap()
        .is_empty());
    let rotate = Options {
        rotate_secrets: true,
        ..Options::default()
    };
    let plan = plan(&wanted(file), &current, rotate).unwrap();
    assert_eq!(heads(&plan), ["Update tenant acme"]);
    let secrets: Vec<_> = plan.changes[0].fields.iter().collect();
    assert_eq!(
        secrets,
        [
            &Change::Secret {
                field: "verify_token",
                secret: SecretChange::Changed
            },
            &Change::Secret {
                field: "secret",
                secret: SecretChange::Changed
            }
        ]
    );
    assert!(matches!(plan.changes[0].ops[1], Op::RotateSecret { .. }));
}

#[test]
fn a_verify_token_follows_the_file_by_presence() {
    let with = "tenants: [{id: acme, scheme: meta, verify_token: {file: v.txt}}]";
    let without = "tenants: [{id: acme, scheme: meta}]";
    let set = plan(&wanted(with), &holding(without), Options::default()).unwrap();
    assert_eq!(
        set.changes[0].fields,
        [Change::Secret {
            field: "verify_token",
            secret: SecretChange::Set
        }]
    );
    let removed = plan(&wanted(without), &holding(with), Options::default()).unwrap();
    let Op::UpdateTenant { verify_token, .. } = &removed.changes[0].ops[0] else {
        panic!("{:?}", removed.changes[0].ops);
    };
    assert_eq!(verify_token, &Some(None));
}

#[test]
fn an_event_id_field_change_is_refused_before_anything_changes() {
    let current = holding("tenants: [{id: acme, event_id_field: id}]");
    let err = plan(
        &wanted("tenants: [{id: acme}]"),
        &current,
        Options::default(),
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("tenants[acme].event_id_field") && err.contains("\"id\" -> null"),
        "{err}"
    );
}

#[test]
fn the_default_route_takes_only_a_filter_and_a_delay() {
    let current = holding("tenants: [{id: acme}]");
    let file =
        "tenants: [{id: acme, routes: [{name: default, filter: {body: {a: 1}}, delay_ms: 500}]}]";
    let plan = plan(&wanted(file), &current, Options::default()).unwrap();
    assert_eq!(heads(&plan), ["Update tenant acme"]);
    assert_eq!(
        plan.changes[0].fields,
        [
            Change::Value {
                field: "default_route_filter",
                old: Value::Null,
                new: json!({"body": {"a": 1}})
            },
            Change::Value {
                field: "default_route_delay_ms",
                old: Value::Null,
                new: json!(500)
            }
        ]
    );
    let bad = "tenants: [{id: acme, routes: [{name: default, max_in_flight: 2}]}]";
    let err = desired(parse(bad).unwrap(), false).unwrap_err();
    assert!(
        format!("{err:#}").contains("tenants[acme]: routes[0]: the default route takes only"),
        "{err:#}"
    );
}

#[test]
fn defaults_fill_what_the_file_leaves_out() {
    let tenant = TenantState {
        settings: TenantSettings {
            rate_limit: Some(crate::apply::state::Rate::new(2.5, None)),
            ..Default::default()
        },
        ..Default::default()
    };
    let current = vec![CurrentTenant {
        id: "acme".into(),
        state: tenant,
        ..Default::default()
    }];
    let file = "tenants: [{id: acme, scheme: standard, rate_limit: {per_sec: 2.5, burst: 3}}]";
    assert!(plan(&wanted(file), &current, Options::default())
        .unwrap()
        .is_empty());
}

#[test]
fn inline_secrets_and_duplicates_are_refused_with_their_path() {
    let inline = parse("tenants: [{id: acme, secret: {value: whsec_x}}]").unwrap();
    let err = format!("{:#}", desired(inline, false).unwrap_err());
    assert!(
        err.contains("tenants[acme]: secret: an inline value is refused"),
        "{err}"
    );
    let inline = parse("tenants: [{id: acme, secret: {value: whsec_x}}]").unwrap();
    assert!(desired(inline, true).is_ok());
    let twice = parse("tenants: [{id: acme}, {id: acme}]").unwrap();
    let err = format!("{:#}", desired(twice, false).unwrap_err());
    assert!(
        err.contains("tenants[1].id: tenant \"acme\" is named twice"),
        "{err}"
    );
    let scheme = parse("tenants: [{id: acme, scheme: strype}]").unwrap();
    let err = format!("{:#}", desired(scheme, false).unwrap_err());
    assert!(err.contains("tenants[acme]: scheme:"), "{err}");
}
