//! The planner: the file's tenants against hookd's, as the steps that make
//! hookd match, in an order that respects dependencies.

#[cfg(test)]
mod alert_tests;
mod alerts;
#[cfg(test)]
mod tests;

use std::collections::{BTreeMap, BTreeSet};

use anyhow::bail;
use serde::Serialize;
use serde_json::Value;

use super::{
    alerts::DesiredAlerts,
    secret::SecretRef,
    state::{
        contract_name, ContractBody, ContractKey, CurrentTenant, DesiredTenant, Field,
        RouteSettings, TenantSettings,
    },
};

/// What the planner may do besides creating and updating.
#[derive(Debug, Clone, Copy, Default)]
pub struct Options {
    /// Delete API-created resources the file does not name.
    pub prune: bool,
    /// Send the file's secrets and verify tokens to tenants that exist.
    pub rotate_secrets: bool,
}

/// Everything apply would do, and what it leaves alone and why.
///
/// The planner: the file's tenants against hookd's, as the steps that make
/// hookd match (create, update, delete per resource, field by field), in an
/// order that respects dependencies: a tenant before its routes,
/// contracts and alert settings, a tenant's deletions before its creations
/// (freeing route slots), and whole tenants deleted last. Pure: no I/O, no secret read.
#[derive(Debug, Default, Serialize)]
pub struct Plan {
    /// The changes, in the order apply makes them.
    pub changes: Vec<Step>,
    /// What is left as it is (not in the file without `--prune`, read-only).
    pub notes: Vec<String>,
}

impl Plan {
    /// Whether apply would change nothing.
    pub fn is_empty(&self) -> bool {
        self.changes.is_empty()
    }
}

/// One resource's change.
#[derive(Debug, Serialize)]
pub struct Step {
    /// What happens to it.
    pub action: Action,
    /// Which resource.
    pub resource: Resource,
    /// Its fields that change (none for a deletion).
    pub fields: Vec<Change>,
    /// The calls that make the change.
    #[serde(skip)]
    pub ops: Vec<Op>,
}

/// What a step does to its resource.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// It does not exist yet.
    Create,
    /// Some fields change.
    Update,
    /// It goes (`--prune`).
    Delete,
}

/// A tenant, a route, a contract or a tenant's alert settings.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Resource {
    /// `tenant`, `route`, `contract` or `alerts`.
    pub kind: &'static str,
    /// The tenant it is or belongs to.
    pub tenant: String,
    /// The route's name or the contract's `type[@version]`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

impl std::fmt::Display for Resource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.name {
            Some(name) => write!(f, "{} {}/{name}", self.kind, self.tenant),
            None => write!(f, "{} {}", self.kind, self.tenant),
        }
    }
}

/// One field's change; a secret's value is never part of it.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum Change {
    /// `old -> new` (`null`: none).
    Value {
        /// The field's name, as in the file.
        field: &'static str,
        /// What hookd has.
        old: Value,
        /// What the file wants.
        new: Value,
    },
    /// A secret or verify token.
    Secret {
        /// `secret` or `verify_token`.
        field: &'static str,
        /// What happens to it.
        secret: SecretChange,
    },
}

/// What happens to a secret, the only thing diff says of it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SecretChange {
    /// Set where there was none.
    Set,
    /// Replaced by the file's.
    Changed,
    /// Removed.
    Removed,
}

/// One control-plane call (or a few, for a tenant's creation).
#[derive(Debug, Clone)]
pub enum Op {
    /// CreateTenant (then disable it or set the default route's filter if
    /// the file says so).
    CreateTenant {
        /// The new tenant's id.
        id: String,
        /// Its settings.
        settings: TenantSettings,
        /// Its first secret; `None`: hookd generates one.
        secret: Option<SecretRef>,
        /// Its verify token.
        verify_token: Option<SecretRef>,
    },
    /// UpdateTenant of `fields` (and the default route's filter).
    UpdateTenant {
        /// The tenant.
        id: String,
        /// What it should be.
        settings: TenantSettings,
        /// The fields of `settings` to send.
        fields: Vec<&'static str>,
        /// `Some(None)`: remove it.
        verify_token: Option<Option<SecretRef>>,
    },
    /// RotateSecret to the file's secret.
    RotateSecret {
        /// The tenant.
        id: String,
        /// Its new secret.
        secret: SecretRef,
    },
    /// CreateRoute.
    CreateRoute {
        /// The tenant.
        tenant: String,
        /// The route's name.
        name: String,
        /// Its settings.
        settings: RouteSettings,
    },
    /// UpdateRoute of `fields`.
    UpdateRoute {
        /// The tenant.
        tenant: String,
        /// The route's name.
        name: String,
        /// What it should be.
        settings: RouteSettings,
        /// The fields of `settings` to send.
        fields: Vec<&'static str>,
    },
    /// DeleteRoute (without force).
    DeleteRoute {
        /// The tenant.
        tenant: String,
        /// The route's name.
        name: String,
    },
    /// PutContract.
    PutContract {
        /// The tenant.
        tenant: String,
        /// The contract's type and version.
        key: ContractKey,
        /// Its schema and example.
        body: ContractBody,
    },
    /// DeleteContract.
    DeleteContract {
        /// The tenant.
        tenant: String,
        /// The contract's type and version.
        key: ContractKey,
    },
    /// SetAlertSettings: the tenant's sink and rules, replaced whole.
    SetAlerts {
        /// The tenant.
        tenant: String,
        /// What they should be.
        alerts: DesiredAlerts,
        /// Send the sink's secret (its creation, or `--rotate-secrets`).
        send_secret: bool,
    },
    /// DeleteTenant, with everything under it.
    DeleteTenant {
        /// The tenant.
        id: String,
    },
}

/// The plan that makes hookd's tenants (`current`) match the file's
/// (`desired`). Fails, before any change, on a change hookd cannot make
/// (a tenant's `event_id_field`).
pub fn plan(
    desired: &[DesiredTenant],
    current: &[CurrentTenant],
    options: Options,
) -> anyhow::Result<Plan> {
    let existing: BTreeMap<&str, &CurrentTenant> =
        current.iter().map(|t| (t.id.as_str(), t)).collect();
    let mut plan = Plan::default();
    for want in desired {
        match existing.get(want.id.as_str()) {
            None => create_tenant(&mut plan, want),
            Some(have) if have.from_config => plan.notes.push(format!(
                "tenant {} is declared in hookd's config file: read-only over the API, skipped",
                want.id
            )),
            Some(have) => update_tenant(&mut plan, want, have, options)?,
        }
    }
    let named: BTreeSet<&str> = desired.iter().map(|t| t.id.as_str()).collect();
    for have in current.iter().filter(|t| !named.contains(t.id.as_str())) {
        match (have.from_config, options.prune) {
            (true, true) => plan.notes.push(format!(
                "tenant {} is declared in hookd's config file: not deleted",
                have.id
            )),
            (true, false) => {}
            (false, true) => plan.changes.push(Step {
                action: Action::Delete,
                resource: tenant_resource(&have.id),
                fields: Vec::new(),
                ops: vec![Op::DeleteTenant {
                    id: have.id.clone(),
                }],
            }),
            (false, false) => plan.notes.push(left(&tenant_resource(&have.id))),
        }
    }
    Ok(plan)
}

fn left(resource: &Resource) -> String {
    format!("{resource} is not in the file: left as it is (--prune deletes it)")
}

fn tenant_resource(id: &str) -> Resource {
    Resource {
        kind: "tenant",
        tenant: id.to_owned(),
        name: None,
    }
}

fn route_resource(tenant: &str, name: &str) -> Resource {
    Resource {
        kind: "route",
        tenant: tenant.to_owned(),
        name: Some(name.to_owned()),
    }
}

fn contract_resource(tenant: &str, key: &ContractKey) -> Resource {
    Resource {
        kind: "contract",
        tenant: tenant.to_owned(),
        name: Some(contract_name(key)),
    }
}

/// The fields of a new resource: every one that is set.
fn created(fields: Vec<Field>) -> Vec<Change> {
    fields
        .into_iter()
        .filter(|(_, value)| !value.is_null())
        .map(|(field, new)| Change::Value {
            field,
            old: Value::Null,
            new,
        })
        .collect()
}

/// The fields that differ between `old` and `new` (the same list, in the
/// same order, from one type's `fields`).
fn changed(old: Vec<Field>, new: Vec<Field>) -> Vec<Change> {
    old.into_iter()
        .zip(new)
        .filter(|((_, old), (_, new))| old != new)
        .map(|((field, old), (_, new))| Change::Value { field, old, new })
        .collect()
}

fn names(changes: &[Change]) -> Vec<&'static str> {
    changes
        .iter()
        .map(|change| match change {
            Change::Value { field, .. } | Change::Secret { field, .. } => *field,
        })
        .collect()
}

fn create_tenant(plan: &mut Plan, want: &DesiredTenant) {
    let mut fields = created(want.state.settings.fields());
    for (field, secret) in [
        ("secret", &want.secret),
        ("verify_token", &want.verify_token),
    ] {
        if secret.is_some() {
            fields.push(Change::Secret {
                field,
                secret: SecretChange::Set,
            });
        }
    }
    plan.changes.push(Step {
        action: Action::Create,
        resource: tenant_resource(&want.id),
        fields,
        ops: vec![Op::CreateTenant {
            id: want.id.clone(),
            settings: want.state.settings.clone(),
            secret: want.secret.clone(),
            verify_token: want.verify_token.clone(),
        }],
    });
    for (name, route) in &want.state.routes {
        plan.changes.push(create_route(&want.id, name, route));
    }
    for (key, body) in &want.state.contracts {
        plan.changes.push(put_contract(&want.id, key, body, None));
    }
    alerts::create(plan, want);
}

fn update_tenant(
    plan: &mut Plan,
    want: &DesiredTenant,
    have: &CurrentTenant,
    options: Options,
) -> anyhow::Result<()> {
    let (old, new) = (&have.state.settings, &want.state.settings);
    if old.event_id_field != new.event_id_field {
        bail!(
            "tenants[{}].event_id_field: hookd sets it at creation only ({} -> {}); \
             delete the tenant and apply again to change it",
            want.id,
            Value::from(old.event_id_field.clone()),
            Value::from(new.event_id_field.clone()),
        );
    }
    let mut fields = changed(old.fields(), new.fields());
    let mut ops = Vec::new();
    let verify_token = match (&want.verify_token, have.has_verify_token) {
        (Some(token), false) => Some((SecretChange::Set, Some(token.clone()))),
        (Some(token), true) if options.rotate_secrets => {
            Some((SecretChange::Changed, Some(token.clone())))
        }
        (None, true) => Some((SecretChange::Removed, None)),
        _ => None,
    };
    if let Some((secret, _)) = &verify_token {
        fields.push(Change::Secret {
            field: "verify_token",
            secret: *secret,
        });
    }
    if !fields.is_empty() {
        ops.push(Op::UpdateTenant {
            id: want.id.clone(),
            settings: new.clone(),
            fields: names(&fields),
            verify_token: verify_token.map(|(_, token)| token),
        });
    }
    if let Some(secret) = want.secret.clone().filter(|_| options.rotate_secrets) {
        fields.push(Change::Secret {
            field: "secret",
            secret: SecretChange::Changed,
        });
        ops.push(Op::RotateSecret {
            id: want.id.clone(),
            secret,
        });
    }
    if !ops.is_empty() {
        plan.changes.push(Step {
            action: Action::Update,
            resource: tenant_resource(&want.id),
            fields,
            ops,
        });
    }
    update_routes(plan, want, have, options);
    update_contracts(plan, want, have, options);
    alerts::update(plan, want, have, options);
    Ok(())
}

fn update_routes(plan: &mut Plan, want: &DesiredTenant, have: &CurrentTenant, options: Options) {
    let id = want.id.as_str();
    for name in &have.read_only_routes {
        if want.state.routes.contains_key(name) {
            plan.notes.push(format!(
                "route {id}/{name} is declared in hookd's config file: read-only, skipped"
            ));
        }
    }
    for name in have.state.routes.keys() {
        if want.state.routes.contains_key(name) {
            continue;
        }
        let resource = route_resource(id, name);
        if !options.prune {
            plan.notes.push(left(&resource));
            continue;
        }
        plan.changes.push(Step {
            action: Action::Delete,
            resource,
            fields: Vec::new(),
            ops: vec![Op::DeleteRoute {
                tenant: id.to_owned(),
                name: name.clone(),
            }],
        });
    }
    for (name, route) in &want.state.routes {
        if have.read_only_routes.contains(name) {
            continue;
        }
        let Some(old) = have.state.routes.get(name) else {
            plan.changes.push(create_route(id, name, route));
            continue;
        };
        let fields = changed(old.fields(), route.fields());
        if fields.is_empty() {
            continue;
        }
        plan.changes.push(Step {
            action: Action::Update,
            resource: route_resource(id, name),
            ops: vec![Op::UpdateRoute {
                tenant: id.to_owned(),
                name: name.clone(),
                settings: route.clone(),
                fields: names(&fields),
            }],
            fields,
        });
    }
}

fn create_route(tenant: &str, name: &str, route: &RouteSettings) -> Step {
    Step {
        action: Action::Create,
        resource: route_resource(tenant, name),
        fields: created(route.fields()),
        ops: vec![Op::CreateRoute {
            tenant: tenant.to_owned(),
            name: name.to_owned(),
            settings: route.clone(),
        }],
    }
}

fn update_contracts(plan: &mut Plan, want: &DesiredTenant, have: &CurrentTenant, options: Options) {
    let id = want.id.as_str();
    for key in &have.read_only_contracts {
        if want.state.contracts.contains_key(key) {
            plan.notes.push(format!(
                "contract {id}/{} is declared in hookd's config file: read-only, skipped",
                contract_name(key)
            ));
        }
    }
    for key in have.state.contracts.keys() {
        if want.state.contracts.contains_key(key) {
            continue;
        }
        let resource = contract_resource(id, key);
        if !options.prune {
            plan.notes.push(left(&resource));
            continue;
        }
        plan.changes.push(Step {
            action: Action::Delete,
            resource,
            fields: Vec::new(),
            ops: vec![Op::DeleteContract {
                tenant: id.to_owned(),
                key: key.clone(),
            }],
        });
    }
    for (key, body) in &want.state.contracts {
        if have.read_only_contracts.contains(key) {
            continue;
        }
        let old = have.state.contracts.get(key);
        if old != Some(body) {
            plan.changes.push(put_contract(id, key, body, old));
        }
    }
}

fn put_contract(
    tenant: &str,
    key: &ContractKey,
    body: &ContractBody,
    old: Option<&ContractBody>,
) -> Step {
    let (action, fields) = match old {
        Some(old) => (Action::Update, changed(old.fields(), body.fields())),
        None => (Action::Create, created(body.fields())),
    };
    Step {
        action,
        resource: contract_resource(tenant, key),
        fields,
        ops: vec![Op::PutContract {
            tenant: tenant.to_owned(),
            key: key.clone(),
            body: body.clone(),
        }],
    }
}
