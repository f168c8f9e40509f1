//! A tenant's alert settings in the plan: one step, after the tenant's other
//! resources, when they differ.

use super::{changed, created, Action, Change, Op, Options, Plan, Resource, SecretChange, Step};
use crate::apply::{
    alerts::{rule_fields, sink_fields, CurrentAlerts, DesiredAlerts},
    state::{CurrentTenant, DesiredTenant},
};

fn resource(tenant: &str) -> Resource {
    Resource {
        kind: "alerts",
        tenant: tenant.to_owned(),
        name: None,
    }
}

fn step(action: Action, tenant: &str, want: &DesiredAlerts, fields: Vec<Change>) -> Step {
    let send_secret = fields.iter().any(|f| matches!(f, Change::Secret { .. }));
    Step {
        action,
        resource: resource(tenant),
        fields,
        ops: vec![Op::SetAlerts {
            tenant: tenant.to_owned(),
            alerts: want.clone(),
            send_secret,
        }],
    }
}

fn secret(want: &DesiredAlerts, change: SecretChange) -> Option<Change> {
    (want.sink.is_some() && want.sink_secret.is_some()).then_some(Change::Secret {
        field: "sink.secret",
        secret: change,
    })
}

/// A new tenant's alert settings, unless the file leaves them at hookd's.
pub(super) fn create(plan: &mut Plan, want: &DesiredTenant) {
    let Some(alerts) = &want.alerts else {
        return;
    };
    if alerts.sink.is_none() && alerts.rules.is_empty() {
        return;
    }
    let mut fields = created(sink_fields(alerts.sink.as_ref()));
    fields.extend(created(
        rule_fields(alerts, None)
            .into_iter()
            .map(|(_, new)| new)
            .collect(),
    ));
    fields.extend(secret(alerts, SecretChange::Set));
    plan.changes
        .push(step(Action::Create, &want.id, alerts, fields));
}

/// An existing tenant's alert settings against hookd's.
///
/// A tenant's alert settings in the plan: one step, after the tenant's
/// other resources, when the sink, a rule the file names or the sink's
/// secret to send differs; nothing when the file has no `alerts:`.
pub(super) fn update(
    plan: &mut Plan,
    want: &DesiredTenant,
    have: &CurrentTenant,
    options: Options,
) {
    let Some(alerts) = &want.alerts else {
        return;
    };
    let none = CurrentAlerts::default();
    let current = have.alerts.as_ref().unwrap_or(&none);
    let mut fields = changed(
        sink_fields(current.sink.as_ref()),
        sink_fields(alerts.sink.as_ref()),
    );
    let (old, new) = rule_fields(alerts, Some(current)).into_iter().unzip();
    fields.extend(changed(old, new));
    let secret = match (&current.sink, current.sink_has_secret) {
        (Some(_), true) if options.rotate_secrets => secret(alerts, SecretChange::Changed),
        (Some(_), true) => None,
        _ => secret(alerts, SecretChange::Set),
    };
    fields.extend(secret);
    if !fields.is_empty() {
        plan.changes
            .push(step(Action::Update, &want.id, alerts, fields));
    }
}
